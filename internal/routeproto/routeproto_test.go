package routeproto

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

var testLimits = Limits{MaxMsg: 1 << 20, MaxRaft: 8 << 20, MaxPiece: 8 << 20, MaxTotal: 1 << 34, MaxBatch: 1 << 20}

// show renders the fields of op's kind, for comparisons.
func show(op *Op) string {
	switch op.Kind {
	case Msg:
		return fmt.Sprintf("RMSG %s %s %q %c %q %d %d", op.Account, op.Subject, op.Reply, op.Mode, op.Queues, op.Hdr, op.Size)
	case Sub, Unsub:
		return fmt.Sprintf("%s %s %s %q", op.Name, op.Account, op.Subject, op.Queue)
	case Raft:
		return fmt.Sprintf("RAFT %d", op.Size)
	case RaftFrag:
		return fmt.Sprintf("RAFTF %d %d %d %d", op.ID, op.Total, op.Offset, op.Size)
	case RaftBatch:
		return fmt.Sprintf("RAFTB %d", op.Size)
	case Info:
		return "INFO " + string(op.Arg)
	case Ping:
		return "PING"
	case Pong:
		return "PONG"
	}
	return "unknown " + string(op.Name)
}

func TestParse(t *testing.T) {
	for in, want := range map[string]string{
		"RMSG $G foo - 1 - 0 5\r\n":                 `RMSG $G foo "" 1 "" 0 5`,
		"RMSG $G foo _INBOX.x 0 q1,q2 3 10\r\n":     `RMSG $G foo "_INBOX.x" 0 "q1,q2" 3 10`,
		"RMSG  A\tfoo.bar  -  2  -  0  0":           `RMSG A foo.bar "" 2 "" 0 0`,
		"RMSG $G DIRECT.GET.S.$O.b.M.> - 1 - 0 1\n": `RMSG $G DIRECT.GET.S.$O.b.M.> "" 1 "" 0 1`,
		"RMSG $G foo _INBOX.y 3 q1 0 2\r\n":         `RMSG $G foo "_INBOX.y" 3 "q1" 0 2`,
		"RS+ $G foo.*\r\n":                          `RS+ $G foo.* ""`,
		"RS- $G foo q\r\n":                          `RS- $G foo "q"`,
		"RAFT 0\r\n":                                "RAFT 0",
		"RAFT 8388608\r\n":                          "RAFT 8388608",
		"RAFTB 1048576\r\n":                         "RAFTB 1048576",
		"RAFTB 0000012\r\n":                         "RAFTB 12",
		"RAFTF 18446744073709551615 10 4 6\r\n":     "RAFTF 18446744073709551615 10 4 6",
		"RAFTF 1 17179869184 0 8388608\r\n":         "RAFTF 1 17179869184 0 8388608",
		`INFO {"server_id":"x"}` + "\r\n":           `INFO {"server_id":"x"}`,
		"PING\r\n":                                  "PING",
		"PONG\r\n":                                  "PONG",
		"LS+ $G foo\r\n":                            "unknown LS+",
		"\r\n":                                      "unknown ",
		"RMSG $G foo - 1 - 000000000000000002 2\n":  `RMSG $G foo "" 1 "" 2 2`,
	} {
		var op Op
		if err := Parse([]byte(in), &testLimits, &op); err != nil {
			t.Errorf("Parse(%q): %v", in, err)
			continue
		}
		if got := show(&op); got != want {
			t.Errorf("Parse(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for in, want := range map[string]error{
		"RMSG B x - 1 - -1 0\r\n":                             ErrSize, // the line that panicked the server
		"RMSG B x - 1 - 0 -1\r\n":                             ErrSize,
		"RMSG B x - 1 - +1 2\r\n":                             ErrSize,
		"RMSG B x - 1 - 3 2\r\n":                              ErrSize,
		"RMSG B x - 1 - 0 0x10\r\n":                           ErrSize,
		"RMSG B x - 1 - 0 1e3\r\n":                            ErrSize,
		"RMSG B x - 1 - 0 9999999999999999999\r\n":            ErrSize,
		"RMSG B x - 1 - 0 1048577\r\n":                        ErrTooBig,
		"RMSG B x - 1 - 0\r\n":                                ErrArgs,
		"RMSG B x - 1 - 0 1 2\r\n":                            ErrArgs,
		"RMSG B x..y - 1 - 0 1\r\n":                           ErrSubject,
		"RMSG B .x - 1 - 0 1\r\n":                             ErrSubject,
		"RMSG B x y. 1 - 0 1\r\n":                             ErrSubject,
		"RMSG B x\ry - 1 - 0 1\r\n":                           ErrSubject,
		"RMSG B x - 4 - 0 1\r\n":                              ErrMode,
		"RMSG B x - 10 - 0 1\r\n":                             ErrMode,
		"RS+ $G\r\n":                                          ErrArgs,
		"RS- $G a b c\r\n":                                    ErrArgs,
		"RAFT -1\r\n":                                         ErrSize,
		"RAFT\r\n":                                            ErrArgs,
		"RAFT 1 2\r\n":                                        ErrArgs,
		"RAFT 8388609\r\n":                                    ErrTooBig,
		"RAFTB 1048577\r\n":                                   ErrTooBig,
		"RAFTB\r\n":                                           ErrArgs,
		"RAFTB x\r\n":                                         ErrSize,
		"RAFTF 1 0 0 0\r\n":                                   ErrSize,
		"RAFTF 1 10 -1 5\r\n":                                 ErrSize,
		"RAFTF 1 10 8 5\r\n":                                  ErrSize,
		"RAFTF 1 10 11 0\r\n":                                 ErrSize,
		"RAFTF 18446744073709551616 10 0 5\r\n":               ErrSize,
		"RAFTF 1 17179869185 0 5\r\n":                         ErrTooBig,
		"RAFTF 1 17179869184 0 8388609\r\n":                   ErrTooBig,
		"RAFTF 1 10 0\r\n":                                    ErrArgs,
		"RAFTF 1 999999999999999999 0 999999999999999999\r\n": ErrTooBig,
	} {
		var op Op
		if err := Parse([]byte(in), &testLimits, &op); err != want {
			t.Errorf("Parse(%q) = %v, want %v", in, err, want)
		}
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	lines := [][]byte{
		[]byte("RMSG $G foo.bar _INBOX.abc.def 1 q1,q2 12 128\r\n"),
		[]byte("RS+ $G foo.> workers\r\n"),
		[]byte("RAFTF 12 1000000 0 65536\r\n"),
		[]byte("RAFT 100\r\n"),
		[]byte("RAFTB 0000100\r\n"),
	}
	var op Op
	for _, l := range lines {
		if n := testing.AllocsPerRun(100, func() { _ = Parse(l, &testLimits, &op) }); n != 0 {
			t.Errorf("Parse(%q): %v allocations", l, n)
		}
	}
}

func TestNextQueue(t *testing.T) {
	for in, want := range map[string]string{
		"a":       "a",
		"a,b,c":   "a|b|c",
		",,a,,b,": "a|b",
		",":       "",
		"":        "",
	} {
		var got []string
		for q, rest := NextQueue([]byte(in)); len(q) > 0; q, rest = NextQueue(rest) {
			got = append(got, string(q))
		}
		if s := strings.Join(got, "|"); s != want {
			t.Errorf("NextQueue(%q) = %q, want %q", in, s, want)
		}
	}
}

// FuzzParse checks that Parse never panics and that whatever it accepts
// is within its limits and survives a round trip through the wire form.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"RMSG $G foo - 1 - 0 5\r\n", "RMSG $G foo _INBOX.x 0 q1,q2 3 10\r\n", "RMSG B x - 1 - -1 0\r\n",
		"RS+ $G foo.* q\r\n", "RS- $G foo\r\n", "RAFT 100\r\n", "RAFTF 7 100 50 50\r\n",
		`INFO {"server_id":"x","peers":["nats-route://127.0.0.1:1"]}` + "\r\n", "PING\r\n",
		"RAFTF 1 10 8 5\r\n", "RMSG B x - 1 - 0 99999999999999999999\r\n", "RAFTB 0000064\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var op Op
		if err := Parse(line, &testLimits, &op); err != nil {
			return
		}
		switch op.Kind {
		case Msg:
			if op.Hdr < 0 || op.Hdr > op.Size || op.Size > testLimits.MaxMsg || !sublist.ValidPublishSubject(op.Subject) {
				t.Fatalf("accepted %q as %s", line, show(&op))
			}
		case Raft:
			if op.Size < 0 || op.Size > testLimits.MaxRaft {
				t.Fatalf("accepted %q as %s", line, show(&op))
			}
		case RaftBatch:
			if op.Size < 0 || op.Size > testLimits.MaxBatch {
				t.Fatalf("accepted %q as %s", line, show(&op))
			}
		case RaftFrag:
			if op.Offset < 0 || op.Size < 0 || op.Total <= 0 || op.Offset+int64(op.Size) > op.Total ||
				op.Total > testLimits.MaxTotal || op.Size > testLimits.MaxPiece {
				t.Fatalf("accepted %q as %s", line, show(&op))
			}
		default:
			return
		}
		// The canonical form of what was accepted parses to the same.
		var again Op
		canon := []byte(wire(&op))
		if err := Parse(canon, &testLimits, &again); err != nil || show(&again) != show(&op) {
			t.Fatalf("%q → %q → %s (%v), want %s", line, canon, show(&again), err, show(&op))
		}
	})
}

// wire renders an accepted sized operation in its canonical wire form.
func wire(op *Op) string {
	dashed := func(b []byte) string {
		if b == nil {
			return "-"
		}
		return string(b)
	}
	switch op.Kind {
	case Msg:
		return fmt.Sprintf("RMSG %s %s %s %c %s %d %d\r\n", op.Account, op.Subject, dashed(op.Reply), op.Mode, dashed(op.Queues), op.Hdr, op.Size)
	case Raft:
		return fmt.Sprintf("RAFT %d\r\n", op.Size)
	case RaftBatch:
		return fmt.Sprintf("RAFTB %d\r\n", op.Size)
	}
	return fmt.Sprintf("RAFTF %d %d %d %d\r\n", op.ID, op.Total, op.Offset, op.Size)
}
