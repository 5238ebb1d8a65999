package server

import (
	"reflect"
	"testing"
)

func TestStreamEntryCodecRoundTrip(t *testing.T) {
	in := &streamEntry{op: streamOpMsg, origin: "n1", reply: "_INBOX.a.b",
		m: inMsg{subj: "orders.1", hdr: []byte("NATS/1.0\r\nA: b\r\n\r\n"), msg: []byte("hi"), ts: -42}}
	data := encodeStreamEntry(in)
	want := *in
	want.m.reply = in.reply
	var got streamEntry
	got.seq, got.cfg = 7, &StreamConfig{} // reset by the decode
	if err := decodeStreamEntryAt(&got, data, ""); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode: %+v %v, want %+v", got, err, want)
	}
	if err := decodeStreamEntryAt(&got, data, "n1"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode on the proposer: %+v %v, want %+v", got, err, want)
	}
	// Another server neither answers nor needs the reply.
	want.origin, want.reply, want.m.reply = "", "", ""
	if err := decodeStreamEntryAt(&got, data, "n2"); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode elsewhere: %+v %v, want %+v", got, err, want)
	}
	for n := range data {
		if err := decodeStreamEntryAt(&got, data[:n], ""); err == nil {
			t.Fatalf("a cut entry (%d of %d bytes) decoded", n, len(data))
		}
	}
}
