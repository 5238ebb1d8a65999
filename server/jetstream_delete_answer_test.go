package server

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterDeletedStreamGoneEverywhere: once a stream's
// deletion is answered, no server answers for the stream any more. The
// meta leader answered once it had applied the deletion itself; the
// stream's leader on another server still answered STREAM.INFO until it
// applied the deletion too, so a client could find the stream it had just
// deleted (TestJetStreamClusterCreateAndPublish failed on it, 3 runs of 30
// under load). Here that server applies deletions 300 ms late.
func TestJetStreamClusterDeletedStreamGoneEverywhere(t *testing.T) {
	var slow atomic.Pointer[Server] // the stream's leader
	testHookMetaApply = func(s *Server, me *metaEntry) {
		if s == slow.Load() && me.Op == "del" {
			time.Sleep(300 * time.Millisecond) // a slow apply, not a wait for anything
		}
	}
	t.Cleanup(func() { testHookMetaApply = nil }) // after the cluster stopped
	c := runTaggedJSCluster(t)
	ml := c.metaLeaderIndex()
	on := (ml + 1) % len(c.servers) // the stream's only server: a meta follower
	_, js := jsClient(t, c.servers[ml])
	_, jsOn := jsClient(t, c.servers[on]) // its own answer comes first
	for i, r := range []int{1, 1, 1, 3} {
		name := fmt.Sprint("DEL", i)
		cfg := jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: r}
		if r == 1 {
			cfg.Placement = &jetstream.Placement{Tags: []string{fmt.Sprintf("node:%d", on)}}
		}
		st := createStream(t, js, cfg)
		slow.Store(c.serverNamed(st.CachedInfo().Cluster.Leader))
		if err := js.DeleteStream(ctx(t), name); err != nil {
			t.Fatal(err)
		}
		if _, err := jsOn.Stream(ctx(t), name); !errors.Is(err, jetstream.ErrStreamNotFound) {
			t.Fatalf("R%d: stream info right after its deletion (led by %s): %v, want not found", r, slow.Load().Name(), err)
		}
	}
}

// TestJetStreamClusterRecreateAnsweredAtOnce: a stream created under the
// name of one just deleted is answered as soon as its leader is elected.
// The deleted stream's leader's resignation stayed in the leader map as a
// tombstone of its term, and the new group's leader, of a term not above
// it, was never recorded: the create's answer waited out its 5 s for a
// leader, every time but the first (7 of 7 rounds).
func TestJetStreamClusterRecreateAnsweredAtOnce(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	cfg := jetstream.StreamConfig{Name: "RE", Subjects: []string{"re"}, Replicas: 3}
	for i := 0; i < 4; i++ {
		start := time.Now()
		createStream(t, js, cfg)
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("round %d: the create was answered after %v: it waited out its wait for a leader", i, d)
		}
		if err := js.DeleteStream(ctx(t), "RE"); err != nil {
			t.Fatal(err)
		}
	}
}
