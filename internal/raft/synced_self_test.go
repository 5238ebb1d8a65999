package raft

import "testing"

// laterLog is a log whose syncs can run aside; laterSyncs keeps them
// without running them, as an fsync not yet ended.
type laterLog struct{ LogStore }

func (l laterLog) SyncStart() (func() error, bool, error) {
	return func() error { return l.LogStore.Sync() }, true, nil
}

type laterSyncs struct {
	started []struct{ index, term uint64 }
}

func (s *laterSyncs) Full() bool { return false }
func (s *laterSyncs) Start(fsync func() error, index, term uint64) {
	s.started = append(s.started, struct{ index, term uint64 }{index, term})
}

// A leader whose fsync runs aside (Config.SyncedSelf, Driver.SyncLater)
// counts its own copy toward a commit only once told it is durable: one
// follower's answer does not commit an entry the leader has not synced,
// the leader's sync then does, and two followers' answers commit without
// it.
func TestSyncedSelfLeaderCountsItselfOnceSynced(t *testing.T) {
	n := newTestNet(t, func(c *Config) { c.SyncedSelf = true }, 1, 2, 3)
	n.elect(1)
	later := &laterSyncs{}
	n.drv[1].Log = laterLog{n.drv[1].Log}
	n.drv[1].SyncLater = later
	lead := n.raft(1)

	// Only node 2 hears of x and answers.
	n.drop = func(m Message) bool { return m.To == 3 || m.From == 3 }
	if err := n.node(1).Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(later.started) == 0 {
		t.Fatal("the leader's sync did not run aside")
	}
	x := lead.log.lastIndex()
	if lead.log.committed >= x {
		t.Fatalf("x (%d) committed (%d) with only one follower durable and the leader's sync still running", x, lead.log.committed)
	}
	if got := n.raft(2).log.lastIndex(); got != x {
		t.Fatalf("node 2 holds up to %d, want %d", got, x)
	}
	last := later.started[len(later.started)-1]
	n.node(1).LogSynced(last.index, last.term)
	n.settle()
	if lead.log.committed < x {
		t.Fatalf("x (%d) not committed (%d) once the leader's sync ended", x, lead.log.committed)
	}

	// A sync begun in an older term counts for nothing.
	n.drop = func(m Message) bool { return m.To == 2 || m.From == 2 }
	if err := n.node(1).Propose([]byte("y")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	y := lead.log.lastIndex()
	n.node(1).LogSynced(y, lead.term-1)
	n.settle()
	if lead.log.committed >= y {
		t.Fatalf("y (%d) committed (%d) by a sync of an older term", y, lead.log.committed)
	}

	// Two followers durable: committed without the leader's sync.
	n.drop = nil
	if err := n.node(1).Propose([]byte("z")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if z := lead.log.lastIndex(); lead.log.committed < z {
		t.Fatalf("z (%d) not committed (%d) with both followers durable", z, lead.log.committed)
	}
}
