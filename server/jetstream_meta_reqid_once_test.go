package server

import (
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// A stream write's request id is computed once per request on a server:
// on the meta leader, for a client connected to it, it was computed to
// check for a repeat and again for the entry; on another server, to check
// for a repeat and again to hold it.
func TestJetStreamClusterMetaRequestIDComputedOnce(t *testing.T) {
	var mu sync.Mutex
	computed := map[string]int{}
	testHookRequestID = func(s *Server) {
		mu.Lock()
		defer mu.Unlock()
		computed[s.Name()]++
	}
	t.Cleanup(func() { testHookRequestID = nil }) // after the cluster stopped
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	counts := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := computed
		computed = map[string]int{}
		return out
	}
	for i, s := range []*Server{ml, via} {
		_, js := jsClient(t, s)
		name := []string{"ONCE_LEADER", "ONCE_OTHER"}[i]
		counts()
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3})
		got := counts()
		if got[s.Name()] != 1 {
			t.Errorf("a create through %s (meta leader: %v): its request id computed there %d times",
				s.Name(), s == ml, got[s.Name()])
		}
		if s != ml && got[ml.Name()] != 1 {
			t.Errorf("a create through %s: computed %d times on the meta leader", s.Name(), got[ml.Name()])
		}
	}
}
