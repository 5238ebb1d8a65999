package server

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterCreateRetryAfterLostAnswer: a create whose entry
// was committed and applied, but whose answer was lost in a crash of the
// meta leader that proposed it (its origin), leaves its client timing out.
// The client retries: the same configuration finds the stream (success,
// as nats-server answers an identical create), a different one gets
// "stream name already in use". The crash between the apply and the
// answer is made with a test hook: on the origin, the answer to this
// create goes to an inbox nobody reads (as if the server died as it
// applied the entry), and the origin is then shut down and restarted (it
// replays the entry from its log without answering it).
func TestJetStreamClusterCreateRetryAfterLostAnswer(t *testing.T) {
	var origin atomic.Value // the name of the server whose answer is lost
	origin.Store("")
	var held atomic.Int64
	testHookMetaAnswer = func(s *Server, me *metaEntry) {
		if me.Op == "add" && me.SA.Config.Name == "RETRY" && s.Name() == origin.Load().(string) && held.CompareAndSwap(0, 1) {
			me.Reply = "_INBOX.lost-in-the-crash" // the first answer only
		}
	}
	t.Cleanup(func() { testHookMetaAnswer = nil }) // after the cluster stopped
	c := runJSCluster(t, 3)
	leader := c.waitMetaLeader()
	origin.Store(leader.Name())
	idx, other := 0, c.servers[0]
	for i, s := range c.servers {
		if s == leader {
			idx = i
		} else {
			other = s
		}
	}
	_, js := jsClient(t, other)
	cfg := jetstream.StreamConfig{Name: "RETRY", Subjects: []string{"retry.>"}, Replicas: 3}
	tctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err := js.CreateStream(tctx, cfg)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || held.Load() != 1 {
		t.Fatalf("the create whose answer was lost: %v (answers held %d), want a timeout", err, held.Load())
	}
	leader.Shutdown()
	c.servers[idx] = runServer(t, c.opts[idx])
	c.waitMetaLeader()

	for _, s := range []*Server{other, c.servers[idx]} {
		_, js := jsClient(t, s)
		st := createStream(t, js, cfg) // fails the test on an error
		if info := st.CachedInfo(); info.Config.Name != "RETRY" || len(info.Config.Subjects) != 1 {
			t.Fatalf("retry through %s: stream info %+v", s.Name(), info.Config)
		}
		diff := cfg
		diff.Subjects = []string{"retry.other.>"}
		_, err := js.CreateStream(ctx(t), diff)
		if !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			t.Fatalf("retry through %s with another configuration: %v, want %v", s.Name(), err, jetstream.ErrStreamNameAlreadyInUse)
		}
	}
}
