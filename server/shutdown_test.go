package server

import (
	"testing"
	"time"
)

// Shutdown waits for every goroutine; those that sleep between rounds
// (usage reports every second, leader announcements, route redials) wake
// as soon as it begins. They used to wake only when Shutdown was done —
// after their own sleep ran out — so stopping a clustered server took
// up to a second.
func TestShutdownWakesSleepers(t *testing.T) {
	c := runJSCluster(t, 3)
	waitFor(t, 10*time.Second, "a meta leader", func() bool {
		for _, s := range c.servers {
			if js := s.js.Load(); js != nil && js.cluster != nil && js.cluster.isMetaLeader() {
				return true
			}
		}
		return false
	})
	for _, s := range c.servers {
		t0 := time.Now()
		s.Shutdown()
		if took := time.Since(t0); took > 400*time.Millisecond {
			t.Fatalf("%s: Shutdown took %v", s.Name(), took)
		}
	}
}
