package proto

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// recorder renders every operation it receives as one canonical line.
type recorder struct {
	ops  []string
	fail error
}

func (r *recorder) add(s string) error { r.ops = append(r.ops, s); return r.fail }
func (r *recorder) ProcessConnect(a []byte) error {
	return r.add("CONNECT " + string(a))
}
func (r *recorder) ProcessPub(s, rep []byte, hdr int, msg []byte) error {
	return r.add(fmt.Sprintf("PUB %q %q %d %q", s, rep, hdr, msg))
}
func (r *recorder) ProcessSub(s, q, sid []byte) error {
	return r.add(fmt.Sprintf("SUB %q %q %q", s, q, sid))
}
func (r *recorder) ProcessUnsub(sid []byte, max int64) error {
	return r.add(fmt.Sprintf("UNSUB %q %d", sid, max))
}
func (r *recorder) ProcessPing() error { return r.add("PING") }
func (r *recorder) ProcessPong() error { return r.add("PONG") }

var testLimits = Limits{MaxControlLine: 4096, MaxPayload: 1024}

func parseAll(t testing.TB, chunks ...[]byte) ([]string, error) {
	r := &recorder{}
	p := New(r, testLimits)
	p.Headers = true
	for _, c := range chunks {
		// Give the parser its own copy and scribble over it afterwards, so a
		// parser that keeps references to a read buffer is caught.
		cp := append([]byte(nil), c...)
		err := p.Parse(cp)
		for i := range cp {
			cp[i] = '#'
		}
		if err != nil {
			return r.ops, err
		}
	}
	return r.ops, nil
}

func TestParseOps(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"PING\r\n", []string{"PING"}},
		{"ping\r\npong\r\n", []string{"PING", "PONG"}},
		{"PING\n", []string{"PING"}},
		{"CONNECT {\"verbose\":false}\r\n", []string{`CONNECT {"verbose":false}`}},
		{"PUB foo 5\r\nhello\r\n", []string{`PUB "foo" "" -1 "hello"`}},
		{"pub  foo\tbar  5\r\nhello\r\n", []string{`PUB "foo" "bar" -1 "hello"`}},
		{"PUB foo 0\r\n\r\n", []string{`PUB "foo" "" -1 ""`}},
		{"PUB foo 4\r\n\r\n\r\n\r\n", []string{`PUB "foo" "" -1 "\r\n\r\n"`}},
		{"HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", []string{`PUB "foo" "" 12 "NATS/1.0\r\n\r\nhi"`}},
		{"HPUB foo r 12 12\r\nNATS/1.0\r\n\r\n\r\n", []string{`PUB "foo" "r" 12 "NATS/1.0\r\n\r\n"`}},
		{"SUB foo 1\r\nSUB foo.* q 2\r\n", []string{`SUB "foo" "" "1"`, `SUB "foo.*" "q" "2"`}},
		{"UNSUB 1\r\nUNSUB 2 10\r\n", []string{`UNSUB "1" 0`, `UNSUB "2" 10`}},
		{"INFO {}\r\nPING\r\n", []string{"PING"}},
	}
	for _, c := range cases {
		got, err := parseAll(t, []byte(c.in))
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Fatalf("%q:\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	long := "PUB " + strings.Repeat("a", 5000) + " 1\r\nx\r\n"
	cases := []struct {
		in   string
		want *Error
	}{
		{"FOO\r\n", ErrUnknownOp},
		{"PUBX foo 1\r\n", ErrUnknownOp},
		{"X", ErrUnknownOp},
		{"\r\n", ErrUnknownOp},
		{"MSG foo 1 1\r\nx\r\n", ErrUnknownOp},
		{"+OK\r\n", ErrUnknownOp},
		{"PUB foo 3\r\nhello\r\n", ErrUnknownOp},
		{"PUB foo 5\r\nhi\r\n\r\nxx", ErrUnknownOp},
		{"PUB\r\n", ErrUnknownOp},
		{"PUB foo\r\n", ErrBadArgs},
		{"PUB foo bar\r\n", ErrBadArgs},
		{"PUB a b c d\r\n", ErrBadArgs},
		{"HPUB foo 10 5\r\n", ErrBadArgs},
		{"SUB foo\r\n", ErrBadArgs},
		{"UNSUB 1 x\r\n", ErrBadArgs},
		{"PUB foo 2000\r\n", ErrMaxPayload},
		{"HPUB foo 10 2000\r\n", ErrMaxPayload},
		{long, ErrMaxControlLine},
		{"PING x\r\n", ErrUnknownOp},
	}
	for _, c := range cases {
		_, err := parseAll(t, []byte(c.in))
		if !errors.Is(err, c.want) {
			t.Fatalf("%q: got %v want %v", c.in, err, c.want)
		}
	}
}

func TestHPubNeedsHeaders(t *testing.T) {
	p := New(&recorder{}, testLimits)
	if err := p.Parse([]byte("HPUB foo 12 12\r\nNATS/1.0\r\n\r\n\r\n")); err != ErrUnknownOp {
		t.Fatalf("got %v", err)
	}
}

func TestRequireConnect(t *testing.T) {
	r := &recorder{}
	p := New(r, testLimits)
	p.RequireConnect = true
	if err := p.Parse([]byte("PING\r\n")); err != ErrAuthorization {
		t.Fatalf("got %v", err)
	}
	p = New(r, testLimits)
	p.RequireConnect = true
	if err := p.Parse([]byte("CONNECT {}\r\n")); err != nil {
		t.Fatal(err)
	}
}

func TestHandlerErrorStops(t *testing.T) {
	boom := errors.New("boom")
	r := &recorder{fail: boom}
	p := New(r, testLimits)
	if err := p.Parse([]byte("PING\r\nPING\r\n")); err != boom || len(r.ops) != 1 {
		t.Fatalf("err %v ops %v", err, r.ops)
	}
}

var splitCorpus = []string{
	"CONNECT {\"verbose\":false,\"headers\":true}\r\nPING\r\n",
	"PUB foo.bar reply 11\r\nhello world\r\nSUB foo.> q1 7\r\nUNSUB 7 3\r\n",
	"HPUB a.b _INBOX.x 18 23\r\nNATS/1.0\r\nK: V\r\n\r\nhello\r\nPONG\r\n",
	"PUB x 0\r\n\r\nPUB y 2\r\n\r\n\r\nPING\r\n",
}

// Every split point must give the same operations as the whole buffer.
func TestSplitEverywhere(t *testing.T) {
	for _, in := range splitCorpus {
		whole, err := parseAll(t, []byte(in))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i <= len(in); i++ {
			for j := i; j <= len(in); j++ {
				got, err := parseAll(t, []byte(in[:i]), []byte(in[i:j]), []byte(in[j:]))
				if err != nil || strings.Join(got, "|") != strings.Join(whole, "|") {
					t.Fatalf("split %d,%d of %q: %v\n got %q\nwant %q", i, j, in, err, got, whole)
				}
			}
		}
	}
}

func TestByteAtATime(t *testing.T) {
	in := strings.Join(splitCorpus, "")
	whole, _ := parseAll(t, []byte(in))
	var chunks [][]byte
	for i := range len(in) {
		chunks = append(chunks, []byte{in[i]})
	}
	got, err := parseAll(t, chunks...)
	if err != nil || strings.Join(got, "|") != strings.Join(whole, "|") {
		t.Fatalf("%v %q", err, got)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range splitCorpus {
		f.Add([]byte(s), uint16(3))
	}
	f.Add([]byte("PUB foo 2000\r\n"), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		whole, werr := parseAll(t, data)
		at := int(cut) % (len(data) + 1)
		split, serr := parseAll(t, data[:at], data[at:])
		if (werr == nil) != (serr == nil) || (werr != nil && werr.Error() != serr.Error()) {
			t.Fatalf("errors differ: whole %v split %v", werr, serr)
		}
		if strings.Join(whole, "|") != strings.Join(split, "|") {
			t.Fatalf("ops differ:\n%q\n%q", whole, split)
		}
	})
}

type nopHandler struct{}

func (nopHandler) ProcessConnect([]byte) error                   { return nil }
func (nopHandler) ProcessPub(_, _ []byte, _ int, _ []byte) error { return nil }
func (nopHandler) ProcessSub(_, _, _ []byte) error               { return nil }
func (nopHandler) ProcessUnsub([]byte, int64) error              { return nil }
func (nopHandler) ProcessPing() error                            { return nil }
func (nopHandler) ProcessPong() error                            { return nil }

func BenchmarkParsePub(b *testing.B) {
	msg := []byte(strings.Repeat("PUB foo.bar 128\r\n"+strings.Repeat("x", 128)+"\r\n", 100))
	p := New(nopHandler{}, Limits{MaxControlLine: 4096, MaxPayload: 1 << 20})
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Parse(msg); err != nil {
			b.Fatal(err)
		}
	}
}
