package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nats-io/nats-server/v2/internal/raft"
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

// TestRefusedProposalAnswered: a proposal the group refuses is answered
// on the reply subject its entry carries with 10008, so the client
// retries; an accepted one is not answered until applied.
func TestRefusedProposalAnswered(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "RP", Subjects: []string{"rp"}})
	mset := s.js.Load().account(globalAccountName).lookup("RP")
	inbox := nats.NewInbox()
	sub, _ := nc.SubscribeSync(inbox)
	nc.Flush()
	entry := func() []byte {
		return encodeStreamEntry(&streamEntry{op: streamOpMsg, origin: s.Name(), reply: inbox, m: inMsg{subj: "rp", msg: []byte("x")}})
	}
	if got := entryReply(entry()); got != inbox {
		t.Fatalf("entryReply %q, want %q", got, inbox)
	}
	mset.proposed(entry(), nil)
	mset.proposed(entry(), raft.ErrProposalDropped)
	// proposed queues its answer on the connection at once; the PONG of
	// this flush comes after anything queued before it.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := sub.Pending(); n != 1 {
		t.Fatalf("%d answers, want 1 (the refusal only)", n)
	}
	m, err := sub.NextMsg(0)
	if err != nil || !strings.Contains(string(m.Data), `"err_code":10008`) {
		t.Fatalf("refusal answer: %v %s", err, m.Data)
	}
}
