package consumer

import (
	"strings"
	"testing"
	"time"
)

func TestParseAckSubject(t *testing.T) {
	v1 := AckSubject{Stream: "ORDERS", Consumer: "C", Deliveries: 2, SSeq: 10, CSeq: 7, TS: 1700000000000000000, Pending: 3}
	v2 := v1
	v2.V2, v2.Domain, v2.AccHash = true, "hub", AccountHash("ACC")
	for _, a := range []AckSubject{v1, v2} {
		subj := string(AppendAckSubject(nil, &a))
		got, ok := ParseAckSubject(subj)
		if !ok || got != a {
			t.Fatalf("%s: %+v %v", subj, got, ok)
		}
	}
	if s := string(AppendAckSubject(nil, &v1)); s != "$JS.ACK.ORDERS.C.2.10.7.1700000000000000000.3" {
		t.Fatalf("v1 subject %s", s)
	}
	noDomain := v2
	noDomain.Domain = ""
	if s := string(AppendAckSubject(nil, &noDomain)); !strings.HasPrefix(s, "$JS.ACK._."+noDomain.AccHash+".ORDERS.C.") {
		t.Fatalf("v2 without domain: %s", s)
	}
	// Extra tokens after the pending count (a random token) are accepted, as nats.go does.
	if got, ok := ParseAckSubject("$JS.ACK._.HASH.S.C.1.2.3.4.5.rnd"); !ok || got.Pending != 5 || got.Domain != "" || got.AccHash != "HASH" {
		t.Fatalf("v2 with random token: %+v %v", got, ok)
	}
	for _, bad := range []string{
		"", "$JS.ACK.", "$JS.ACK.S.C.1.2.3.4", "$JS.ACK.S.C.1.2.3.4.5.6", // 6, 8 tokens
		"$JS.ACK.S.C.1.2.3.4.5.", "$JS.ACK.S..1.2.3.4.5", "$JS.ACK.S.C.1.2.x.4.5", "$JS.ACK.S.C.1.2.-3.4.5",
		"$JS.ACK.S.C.1.2.3.99999999999999999999.5", "$JS.ACK.S.C.1.2.3.18446744073709551615.5",
		"$JS.ACK._.H.S.C.1.2.3.4.5.r..x", "$JS.ACK._.H.S.C.1.2.3.4.5.r.", "$JS.NAK.S.C.1.2.3.4.5",
	} {
		if a, ok := ParseAckSubject(bad); ok {
			t.Fatalf("%q parsed: %+v", bad, a)
		}
	}
}

func TestParseAckSubjectAllocates(t *testing.T) {
	subj := "$JS.ACK.hub.HASH.ORDERS.C.2.10.7.1700000000000000000.3.rnd"
	if n := testing.AllocsPerRun(100, func() { ParseAckSubject(subj) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// TestAccountHash: nats-server's token for the global account, as its
// ack subjects carry it.
func TestAccountHash(t *testing.T) {
	h := AccountHash("$G")
	if len(h) != 8 || h != AccountHash("$G") || h == AccountHash("$H") {
		t.Fatalf("hash %q", h)
	}
	for _, c := range h {
		if !strings.ContainsRune("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", c) {
			t.Fatalf("hash %q", h)
		}
	}
}

func TestParseAckBody(t *testing.T) {
	cases := []struct {
		body string
		kind AckKind
		arg  string
	}{
		{"", AckAck, ""}, {"+ACK", AckAck, ""}, {"+OK", AckAck, ""},
		{"-NAK", AckNak, ""}, {`-NAK {"delay": 5000000000}`, AckNak, `{"delay": 5000000000}`},
		{"+WPI", AckProgress, ""}, {"+WPI ", AckUnknown, ""},
		{"+NXT", AckNext, ""}, {`+NXT {"batch":2}`, AckNext, `{"batch":2}`},
		{"+TERM", AckTerm, ""}, {"+TERM  poison pill ", AckTerm, "poison pill"},
		{"+ACKX", AckUnknown, ""}, {"junk", AckUnknown, ""},
	}
	for _, c := range cases {
		k, arg := ParseAckBody([]byte(c.body))
		if k != c.kind || string(arg) != c.arg {
			t.Fatalf("%q: %v %q", c.body, k, arg)
		}
	}
	for arg, want := range map[string]time.Duration{"": 0, `{"delay": 5000000000}`: 5 * time.Second, "2s": 2 * time.Second} {
		if d, ok := ParseNakDelay([]byte(arg)); !ok || d != want {
			t.Fatalf("%q: %v %v", arg, d, ok)
		}
	}
	for _, arg := range []string{"{", "soon", `{"delay":"x"}`} {
		if _, ok := ParseNakDelay([]byte(arg)); ok {
			t.Fatalf("%q parsed", arg)
		}
	}
}

func FuzzParseAckSubject(f *testing.F) {
	f.Add("$JS.ACK.S.C.1.2.3.4.5")
	f.Add("$JS.ACK._.HASH.S.C.1.2.3.4.5")
	f.Add("$JS.ACK.d.HASH.S.C.1.2.3.4.5.r.s")
	f.Fuzz(func(t *testing.T, subj string) {
		a, ok := ParseAckSubject(subj)
		if !ok {
			return
		}
		// What parses re-encodes to a subject that parses the same.
		again, ok := ParseAckSubject(string(AppendAckSubject(nil, &a)))
		if !ok || again != a {
			t.Fatalf("%q: %+v, re-encoded %+v %v", subj, a, again, ok)
		}
	})
}
