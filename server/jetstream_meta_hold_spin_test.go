package server

import (
	"sync/atomic"
	"testing"
	"time"
)

// A held request whose copy went out and whose target then went away (no
// meta leader known: an election, a lost quorum) set its timer to the
// resend time, which had passed: the timer fired at once and the hold
// looked again and again, a busy loop until a leader was known again or
// its deadline. It now waits for the change (or its deadline) instead.
func TestJetStreamClusterMetaHoldNoBusyLoopWithoutLeader(t *testing.T) {
	var passes atomic.Int64
	var via *Server
	testHookMetaHoldPass = func(s *Server) {
		if s == via {
			passes.Add(1)
		}
	}
	t.Cleanup(func() { testHookMetaHoldPass = nil })
	setForTest(t, &metaHoldFor, 3*time.Second)
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	via = c.notMetaLeader(ml)
	jc := via.js.Load().cluster
	// A write held while a leader long gone (a name never seen) led: a
	// copy goes out at once (to ml, which ignores its unknown call).
	r := &apiRequest{jsa: via.js.Load().account(globalAccountName), reply: "_INBOX.nobody.answers", subject: "NO.SUCH.CALL"}
	r.holdMeta(&metaHold{lead: raftID("GONE"), write: true})
	waitFor(t, 2*time.Second, "the first look", func() bool { return passes.Load() > 0 })
	// No quorum: via soon knows no leader, and no copy can go out.
	for _, s := range c.servers {
		if s != via {
			s.Shutdown()
		}
	}
	waitFor(t, 5*time.Second, "no meta leader known", func() bool { return jc.metaLead() == 0 })
	at := passes.Load()
	waitFor(t, 5*time.Second, "the hold ended", func() bool { return jc.metaHolds.Load() == 0 })
	n := passes.Load() - at
	t.Logf("the hold looked %d times while no leader was known (%d in all)", n, passes.Load())
	if n > 20 {
		t.Fatalf("a hold with no leader to send to looked %d times (a busy loop)", n)
	}
}
