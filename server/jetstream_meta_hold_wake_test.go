package server

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A held meta request waited by polling a 20 ms ticker: a hold whose
// leader stays (nothing to do until its deadline) looked 50 times a
// second. It now looks only when the meta leader or a peer's health
// changes, at its deadline, and when a copy is due again: a hold of 1 s
// in a quiet cluster looks a handful of times.
func TestJetStreamClusterMetaHoldWaitsWithoutPolling(t *testing.T) {
	holdPasses := countHoldPasses(t)
	setForTest(t, &metaHoldFor, time.Second)
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	jc := via.js.Load().cluster
	r := &apiRequest{jsa: via.js.Load().account(globalAccountName), reply: "_INBOX.nobody.answers", subject: "INFO"}
	h := r.newMetaHold("INFO", raftID(ml.Name()))
	if h == nil {
		t.Fatal("an account info not held")
	}
	start := time.Now()
	r.holdMeta(h)
	waitFor(t, 5*time.Second, "the hold ended", func() bool { return jc.metaHolds.Load() == 0 })
	if took := time.Since(start); took < metaHoldFor {
		t.Fatalf("the hold ended after %v, before its deadline", took)
	}
	n := holdPasses()[via.Name()]
	t.Logf("the hold looked %d times in %v", n, metaHoldFor)
	if n > 5 {
		t.Fatalf("a hold of %v with nothing changing looked %d times (polling)", metaHoldFor, n)
	}
}

// A held write is woken by the change it waits for: sent through a
// survivor as the meta leader shuts down, it is answered by the new
// leader, and its hold looked only a few times meanwhile.
func TestJetStreamClusterMetaHoldWokenByLeaderChange(t *testing.T) {
	holdPasses := countHoldPasses(t)
	c, ml, nc, _ := heldWriteSetup(t)
	cfg := jetstream.StreamConfig{Name: "WOKEN", Subjects: []string{"woken"}, Replicas: 3}
	start := time.Now()
	heldWriteAnswer(t, c, ml, nc, "$JS.API.STREAM.CREATE.WOKEN", mustJSON(t, cfg))
	took := time.Since(start)
	survivorsAgree(t, c, "WOKEN", "WOKEN on every survivor", func(sa *streamAssignment) bool { return sa != nil })
	passes := holdPasses()
	t.Logf("looks: %v", passes)
	for name, n := range passes {
		// Polling looked took/20ms times (40-100 here); each change of
		// the leader, its readiness or a peer's health wakes it once.
		if n > 15 {
			t.Errorf("%s: the hold looked %d times in %v", name, n, took.Round(time.Millisecond))
		}
	}
	if len(passes) == 0 {
		t.Fatal("no hold ran")
	}
}

// countHoldPasses counts the looks of every server's held requests (call
// before the cluster starts: the hook is cleared after it stopped); the
// returned function is a copy of the counts so far, by server name.
func countHoldPasses(t *testing.T) func() map[string]int {
	var mu sync.Mutex
	passes := map[string]int{}
	testHookMetaHoldPass = func(s *Server) {
		mu.Lock()
		defer mu.Unlock()
		passes[s.Name()]++
	}
	t.Cleanup(func() { testHookMetaHoldPass = nil })
	return func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(passes)
	}
}
