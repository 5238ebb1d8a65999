package server

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
)

// feedFrags runs the route read loop's RAFTF handling over a byte stream.
func feedFrags(t *testing.T, r *route, s *Server) error {
	t.Helper()
	for {
		line, err := r.br.ReadSlice('\n')
		if err != nil {
			return nil // end of input
		}
		args, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("RAFTF "))
		if !ok {
			t.Fatalf("unexpected line %q", line)
		}
		if err := s.routeRaftFrag(r, args); err != nil {
			return err
		}
	}
}

func piece(id, total, off int, data string) string {
	return fmt.Sprintf("RAFTF %d %d %d %d\r\n%s\r\n", id, total, off, len(data), data)
}

func TestRaftFragReassembly(t *testing.T) {
	s := &Server{}
	// Two messages interleaved, an orphan later piece of an unknown id
	// (skipped, and the stream stays in step), and a piece out of order.
	in := piece(1, 6, 0, "abc") + piece(2, 4, 0, "wx") + piece(9, 10, 5, "zzzzz") +
		piece(1, 6, 3, "def") + piece(3, 4, 2, "qq") + piece(2, 4, 2, "yz")
	r := &route{br: bufio.NewReader(strings.NewReader(in))}
	if err := feedFrags(t, r, s); err != nil {
		t.Fatal(err)
	}
	if len(r.frags.open) != 0 || len(r.frags.order) != 0 {
		t.Fatalf("left open: %v %v", r.frags.open, r.frags.order)
	}
	// A gap drops the reassembly.
	r = &route{br: bufio.NewReader(strings.NewReader(piece(4, 9, 0, "abc") + piece(4, 9, 6, "ghi")))}
	if err := feedFrags(t, r, s); err != nil || len(r.frags.open) != 0 {
		t.Fatalf("gap: %v, open %v", err, r.frags.open)
	}
	// The oldest is evicted beyond raftFragMaxOpen.
	var b strings.Builder
	for id := 1; id <= raftFragMaxOpen+1; id++ {
		b.WriteString(piece(id, 10, 0, "x"))
	}
	r = &route{br: bufio.NewReader(strings.NewReader(b.String()))}
	if err := feedFrags(t, r, s); err != nil || len(r.frags.open) != raftFragMaxOpen || r.frags.open[1] != nil {
		t.Fatalf("eviction: %v, open %d", err, len(r.frags.open))
	}
	// Malformed input is an error (the route closes), never a panic.
	for _, bad := range []string{
		"RAFTF 1 4 0 5\r\nabcde\r\n", // beyond total
		"RAFTF 1 4 0\r\n",            // missing field
		"RAFTF 1 -4 0 1\r\nx\r\n",    // negative total
		"RAFTF 1 4 0 2\r\nabXX",      // bad piece end
	} {
		r = &route{br: bufio.NewReader(strings.NewReader(bad))}
		if err := feedFrags(t, r, s); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A spool file that cannot be written still has its piece read in full,
// so the route's stream stays in step (the transfer alone is dropped).
func TestRaftFragSpoolWriteFailure(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "spool")
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // writes now fail
	fr := &raftFrag{total: 10, spool: f}
	src := bytes.NewReader([]byte("0123456789rest"))
	werr, rerr := fr.read(src, 10)
	if werr == nil || rerr != nil || fr.have() != 10 || src.Len() != 4 {
		t.Fatalf("werr %v rerr %v have %d left %d", werr, rerr, fr.have(), src.Len())
	}
}
