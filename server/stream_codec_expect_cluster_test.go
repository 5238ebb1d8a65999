package server

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterLoneExpectEntries: compare-and-set publishes to an
// R3 stream take the compact log form (streamOpMsgExpect) only while every
// replica reads it; with a replica speaking an older route protocol (a
// rolling upgrade) no entry of that form reaches any log. Either way every
// replica stores each header byte for byte as the client sent it, and the
// replicas agree.
func TestJetStreamClusterLoneExpectEntries(t *testing.T) {
	for _, older := range []bool{false, true} {
		t.Run(fmt.Sprintf("older=%v", older), func(t *testing.T) {
			c := runJSClusterWith(t, 3, func(i int, o *Options) {
				if older && i == 2 {
					o.routeProto = routeProtoCompactExpect - 1
				}
			})
			nc, js := jsClient(t, c.servers[0])
			defer nc.Close()
			createStream(t, js, jetstream.StreamConfig{Name: "LE", Subjects: []string{"le.>"}, Replicas: 3, Storage: jetstream.FileStorage})
			sent := map[uint64][]byte{} // stream sequence -> the header sent
			cas := 0
			for i := 0; i < 5; i++ {
				last := uint64(0)
				for j := 0; j < 3; j++ {
					subj := fmt.Sprintf("le.%d", i)
					ack, err := js.Publish(ctx(t), subj, []byte("v"), jetstream.WithExpectLastSequencePerSubject(last))
					if err != nil {
						t.Fatal(err)
					}
					sent[ack.Sequence], last = appendLoneExpect(nil, last), ack.Sequence
					cas++
				}
			}
			// Not the canonical lone header: stays as it is.
			other := nats.Header{}
			other.Set(JSExpectedLastSubjSeq, "0")
			other.Set("A", "b")
			ack, err := js.PublishMsg(ctx(t), &nats.Msg{Subject: "le.x", Header: other, Data: []byte("v")})
			if err != nil {
				t.Fatal(err)
			}
			sent[ack.Sequence] = nil
			checkReplicasAgree(t, c, "LE", uint64(len(sent)))
			want := cas
			if older {
				want = 0
			}
			for _, m := range c.replicas("LE") {
				for seq, hdr := range sent {
					sm, err := m.st().LoadMsg(seq, nil)
					if err != nil {
						t.Fatalf("%s: seq %d: %v", m.jsa.js.srv.Name(), seq, err)
					}
					if hdr != nil && !bytes.Equal(sm.Hdr, hdr) || hdr == nil && !bytes.Contains(sm.Hdr, []byte("A: b\r\n")) {
						t.Fatalf("%s: seq %d stored header %q, want %q", m.jsa.js.srv.Name(), seq, sm.Hdr, hdr)
					}
				}
				if got := countLogOps(t, m, streamOpMsgExpect); got != want {
					t.Fatalf("%s: %d compact entries in the log, want %d", m.jsa.js.srv.Name(), got, want)
				}
			}
		})
	}
}

// countLogOps counts the entries of mset's raft log whose op is op.
func countLogOps(t *testing.T, mset *stream, op byte) int {
	t.Helper()
	mset.mu.Lock()
	g := mset.group
	mset.mu.Unlock()
	first, _ := g.log.FirstIndex()
	last, _ := g.log.LastIndex()
	ents, err := g.log.Entries(first, last+1, math.MaxUint64)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if len(e.Data) > 0 && e.Data[0] == op {
			n++
		}
	}
	return n
}
