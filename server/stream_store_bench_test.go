package server

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkStreamProcessMsgMemR1 runs a one-server memory stream's apply
// (processJetStreamMsg: decide and the store call) without the wire: the
// cost a publish pays under stream.mu, where a store panic is recovered.
func BenchmarkStreamProcessMsgMemR1(b *testing.B) {
	s := runJSServer(b)
	_, js := jsClient(b, s)
	if _, err := js.CreateStream(ctx(b), jetstream.StreamConfig{Name: "B", Subjects: []string{"b"}, Storage: jetstream.MemoryStorage, MaxMsgs: 1000}); err != nil {
		b.Fatal(err)
	}
	mset := s.js.Load().account(globalAccountName).lookup("B")
	payload := make([]byte, 128)
	b.ReportAllocs()
	for b.Loop() {
		m := inMsg{subj: "b", msg: payload, ts: 1}
		mset.mu.Lock()
		out := mset.processJetStreamMsg(&m)
		mset.mu.Unlock()
		if out.err != nil {
			b.Fatal(out.err)
		}
	}
}
