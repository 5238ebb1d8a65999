package server

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
)

// TestStreamEntryLoneExpectBytes: a publish whose only header is the
// expectation of a subject's last sequence is encoded, when the proposer
// allows it, as streamOpMsgExpect with the sequence as a uvarint (these
// exact bytes), and decodes to the streamOpMsg entry with the header byte
// for byte as sent.
func TestStreamEntryLoneExpectBytes(t *testing.T) {
	hdr := []byte("NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 300\r\n\r\n")
	in := &streamEntry{op: streamOpMsg, origin: "n1", reply: "r", compact: true,
		m: inMsg{subj: "kv.a", hdr: hdr, msg: []byte("v"), ts: 5}}
	data := encodeStreamEntry(in)
	want := []byte{'S', 2, 'n', '1', 1, 'r', 10, 4, 'k', 'v', '.', 'a', 0xac, 0x02, 1, 'v'}
	if !bytes.Equal(data, want) {
		t.Fatalf("encoded %q, want %q", data, want)
	}
	var got streamEntry
	if err := decodeStreamEntryAt(&got, data, ""); err != nil {
		t.Fatal(err)
	}
	exp := *in
	exp.compact, exp.m.reply = false, "r"
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("decoded %+v, want %+v", got, exp)
	}
	for n := range data {
		if err := decodeStreamEntryAt(&got, data[:n], ""); err == nil {
			t.Fatalf("a cut entry (%d of %d bytes) decoded", n, len(data))
		}
	}
	// Without compact (an older replica), the header travels as it is.
	in.compact = false
	if data := encodeStreamEntry(in); data[0] != streamOpMsg || !bytes.Contains(data, hdr) {
		t.Fatalf("without compact: %q", data)
	}
}

// TestLoneExpectOnlyCanonical: only the exact header that the decode
// rebuilds takes the compact form; everything else keeps its bytes.
func TestLoneExpectOnlyCanonical(t *testing.T) {
	h := func(v string) string { return "NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: " + v + "\r\n\r\n" }
	for _, c := range []struct {
		hdr string
		n   uint64
		ok  bool
	}{
		{h("0"), 0, true},
		{h("18446744073709551615"), 1<<64 - 1, true},
		{h("18446744073709551616"), 0, false}, // overflows
		{h("99999999999999999999"), 0, false},
		{h("007"), 0, false}, // a leading zero would not come back
		{h(""), 0, false},
		{h(" 1"), 0, false},
		{h("1 "), 0, false},
		{h("-1"), 0, false},
		{"NATS/1.0\r\nNats-Expected-Last-Subject-Sequence:1\r\n\r\n", 0, false},
		{"NATS/1.0\r\nnats-expected-last-subject-sequence: 1\r\n\r\n", 0, false},
		{"NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 1\r\nA: b\r\n\r\n", 0, false},
		{"NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: 1\r\n", 0, false},
		{"NATS/1.0 \r\nNats-Expected-Last-Subject-Sequence: 1\r\n\r\n", 0, false},
		{"", 0, false},
	} {
		n, ok := loneExpectSeq([]byte(c.hdr))
		if n != c.n || ok != c.ok {
			t.Errorf("%q: %d %v, want %d %v", c.hdr, n, ok, c.n, c.ok)
		}
		if ok && string(appendLoneExpect(nil, n)) != c.hdr {
			t.Errorf("%q rebuilt as %q", c.hdr, appendLoneExpect(nil, n))
		}
		e := &streamEntry{op: streamOpMsg, compact: true, m: inMsg{subj: "s", hdr: []byte(c.hdr)}}
		var got streamEntry
		if err := decodeStreamEntryAt(&got, encodeStreamEntry(e), ""); err != nil || string(got.m.hdr) != c.hdr {
			t.Errorf("%q round trip: %q %v", c.hdr, got.m.hdr, err)
		}
	}
}

// FuzzStreamEntry decodes a stream log entry as a replica does (entries
// come from the leader); whatever decodes re-encodes to an entry that
// decodes the same, and a compact entry's header is the canonical one.
func FuzzStreamEntry(f *testing.F) {
	for _, e := range []*streamEntry{
		{op: streamOpMsg, origin: "n1", reply: "r", compact: true, m: inMsg{subj: "a", hdr: appendLoneExpect(nil, 7), msg: []byte("x"), ts: 1}},
		{op: streamOpMsg, origin: "n1", m: inMsg{subj: "a", hdr: []byte("NATS/1.0\r\nA: b\r\n\r\n"), msg: []byte("x")}},
		{op: streamOpDelete, seq: 3, erase: true},
		{op: streamOpExpire, cutoff: -5},
		{op: streamOpConsumer, cons: []byte{1, 2}},
	} {
		f.Add(encodeStreamEntry(e))
	}
	f.Add(binary.AppendUvarint([]byte{'S', 0, 0, 0, 1, 'a'}, 1<<63))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e streamEntry
		if decodeStreamEntryAt(&e, data, "") != nil {
			return
		}
		if data[0] == streamOpMsgExpect {
			if _, ok := loneExpectSeq(e.m.hdr); !ok || e.op != streamOpMsg {
				t.Fatalf("compact entry decoded to op %c header %q", e.op, e.m.hdr)
			}
		}
		e.compact = data[0] == streamOpMsgExpect
		var again streamEntry
		if err := decodeStreamEntryAt(&again, encodeStreamEntry(&e), ""); err != nil {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
		e.compact = false
		if e.op == streamOpMsg && !reflect.DeepEqual(again, e) {
			t.Fatalf("re-decoded %+v, want %+v", again, e)
		}
	})
}
