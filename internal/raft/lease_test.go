package raft

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
)

// testTick is the real time a tick stands for in these tests; the lease
// is 6 of them, inside the 10-tick election timeout less the slack a
// driver's ticks may have (server/raft.go).
const testTick = 50 * time.Millisecond

func leaseConfig(clk *clock.Manual) func(*Config) {
	return func(c *Config) {
		c.Lease = 6 * testTick
		c.Now = clk.Now
	}
}

// newLeaseNet elects 1 in a group of three whose nodes share clk, commits
// two entries and lets one heartbeat round renew the lease.
func newLeaseNet(t *testing.T, mod func(*Config)) (*testNet, readLog, *clock.Manual) {
	clk := clock.NewManual(time.Unix(1_000_000, 0))
	lc := leaseConfig(clk)
	n := newTestNet(t, func(c *Config) {
		lc(c)
		if mod != nil {
			mod(c)
		}
	}, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a", "b")
	n.tick(n.cfgs[1].HeartbeatTicks)
	return n, captureReads(n), clk
}

// tickClock ticks the net k times, the clock moving one tick each.
func tickClock(n *testNet, clk *clock.Manual, k int) {
	for range k {
		clk.Advance(testTick)
		n.tick(1)
	}
}

// A leader under a lease answers a read at once with its commit index:
// no heartbeat goes out for it.
func TestLeaseLeaderAnswersAtOnce(t *testing.T) {
	n, reads, _ := newLeaseNet(t, nil)
	commit := n.raft(1).log.committed
	if idx, ok := n.node(1).LeaseRead(); !ok || idx != commit {
		t.Fatalf("LeaseRead = %d, %v; want %d, true", idx, ok, commit)
	}
	n.sent = nil
	if err := n.node(1).ReadIndex([]byte("r")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(reads[1]) != 1 || reads[1][0].Index != commit {
		t.Fatalf("read states %+v, want one at %d", reads[1], commit)
	}
	if hb := countType(n.sent, MsgHeartbeat); hb != 0 {
		t.Fatalf("%d heartbeats sent for a read under a lease", hb)
	}
}

// A follower's read is answered by the leader under its lease without a
// heartbeat round: one message there, one back.
func TestLeaseFollowerReadOneRoundTrip(t *testing.T) {
	n, reads, _ := newLeaseNet(t, nil)
	n.sent = nil
	if err := n.node(2).ReadIndex([]byte("f")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(reads[2]) != 1 || reads[2][0].Index != n.raft(1).log.committed {
		t.Fatalf("follower read states %+v", reads[2])
	}
	if hb := countType(n.sent, MsgHeartbeat); hb != 0 || len(n.sent) != 2 {
		t.Fatalf("sent %v, want a ReadIndex and its answer only", n.sent)
	}
}

// The clock alone ends a lease: a leader that did not tick (a process
// stopped with SIGSTOP, whose clock moved on) has none when it wakes, and
// its reads wait for a heartbeat round.
func TestLeaseExpiresWithTheClock(t *testing.T) {
	n, reads, clk := newLeaseNet(t, nil)
	clk.Advance(n.cfgs[1].Lease)
	if _, ok := n.node(1).LeaseRead(); ok {
		t.Fatal("lease still valid once its length passed")
	}
	n.drop = func(m Message) bool { return m.Type == MsgHeartbeatResp }
	if err := n.node(1).ReadIndex([]byte("r")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(reads[1]) != 0 {
		t.Fatalf("read answered without a lease or a heartbeat ack: %+v", reads[1])
	}
	n.drop = nil
	n.tick(n.cfgs[1].HeartbeatTicks)
	if len(reads[1]) != 1 {
		t.Fatalf("read states %+v, want the one read answered by the round", reads[1])
	}
	if _, ok := n.node(1).LeaseRead(); !ok {
		t.Fatal("the round's acknowledgement did not renew the lease")
	}
}

// The lease runs from when the round was sent, not from when its
// acknowledgements arrived.
func TestLeaseStartsWhenTheRoundWasSent(t *testing.T) {
	n, _, clk := newLeaseNet(t, nil)
	clk.Advance(n.cfgs[1].Lease) // the first lease is gone
	var held []Message
	n.drop = func(m Message) bool {
		if m.Type == MsgHeartbeatResp {
			held = append(held, m)
			return true
		}
		return false
	}
	n.tick(n.cfgs[1].HeartbeatTicks) // round sent now (t0)
	if len(held) == 0 {
		t.Fatal("no heartbeat answered")
	}
	clk.Advance(n.cfgs[1].Lease - testTick) // answers arrive late
	n.drop = nil
	for _, m := range held {
		if err := n.node(1).Step(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := n.node(1).LeaseRead(); !ok {
		t.Fatal("no lease from a quorum's acknowledgement")
	}
	clk.Advance(testTick)
	if _, ok := n.node(1).LeaseRead(); ok {
		t.Fatal("lease outlived t0 + Lease: it was counted from the acknowledgement")
	}
}

// An isolated leader's lease ends before the others can elect a leader,
// with the clock moving one tick per tick.
func TestLeaseEndsBeforeANewLeader(t *testing.T) {
	n, _, clk := newLeaseNet(t, nil)
	n.isolate(1)
	for i := range 100 {
		tickClock(n, clk, 1)
		_, valid := n.node(1).LeaseRead()
		for _, id := range []ID{2, 3} {
			if n.raft(id).role == Leader {
				if valid {
					t.Fatalf("tick %d: %d leads while 1 holds a lease", i, id)
				}
				return
			}
		}
	}
	t.Fatal("no new leader in 100 ticks")
}

// A leader that starts a transfer holds no lease again in its term: the
// transferee campaigns past its voters' leases.
func TestLeaseBarredByTransfer(t *testing.T) {
	n, _, _ := newLeaseNet(t, nil)
	n.drop = func(m Message) bool { return m.Type == MsgTimeoutNow }
	if err := n.node(1).TransferLeadership(2); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if _, ok := n.node(1).LeaseRead(); ok {
		t.Fatal("lease valid during a transfer")
	}
	tickClockNoAdvance(n, 2*n.cfgs[1].ElectionTicks) // the transfer is abandoned
	if n.raft(1).role != Leader || n.raft(1).ls.transferee != None {
		t.Fatalf("node 1: %s, transferee %d", n.raft(1).role, n.raft(1).ls.transferee)
	}
	if _, ok := n.node(1).LeaseRead(); ok {
		t.Fatal("lease valid again after an abandoned transfer")
	}
}

func tickClockNoAdvance(n *testNet, k int) { n.tick(k) }

// A quiet leader sends no heartbeats and holds no lease; a read wakes it
// and waits for a round, which renews the lease.
func TestLeaseNoneWhileQuiet(t *testing.T) {
	n, reads, clk := newLeaseNet(t, func(c *Config) { c.Quiesce = true })
	tickClock(n, clk, 2*n.cfgs[1].ElectionTicks)
	if !n.node(1).Quiescent() {
		t.Fatal("leader did not quiesce")
	}
	if _, ok := n.node(1).LeaseRead(); ok {
		t.Fatal("a quiet leader holds a lease")
	}
	n.sent = nil
	if err := n.node(1).ReadIndex([]byte("q")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(reads[1]) != 1 || countType(n.sent, MsgHeartbeat) == 0 {
		t.Fatalf("read states %+v after %d heartbeats", reads[1], countType(n.sent, MsgHeartbeat))
	}
	if _, ok := n.node(1).LeaseRead(); !ok {
		t.Fatal("the woken leader's round gave no lease")
	}
}

// A follower takes no quiesce heartbeat sent before a round it answered
// (one delayed past the leader's waking): quiet, it could forget its
// leader at once while the leader holds a lease.
func TestLeaseStaleQuiesceRefused(t *testing.T) {
	n, _, _ := newLeaseNet(t, func(c *Config) { c.Quiesce = true })
	r2 := n.raft(2)
	stale := Message{Type: MsgHeartbeat, From: 1, To: 2, Term: r2.term, Commit: r2.log.committed,
		Index: r2.hbRound - 1, Quiesce: true}
	if err := n.node(2).Step(stale); err != nil {
		t.Fatal(err)
	}
	if n.node(2).Quiescent() {
		t.Fatal("follower quiesced on a heartbeat older than a round it answered")
	}
}

// A node restarted from stored state grants no vote for an election
// timeout: it may have acknowledged a round of a leader whose lease holds.
func TestLeaseRestartGuard(t *testing.T) {
	n, _, clk := newLeaseNet(t, nil)
	n.down[1] = true // the old leader is gone (its lease with it, eventually)
	n.restart(3)
	n.node(2).Campaign()
	n.settle()
	if n.raft(2).role == Leader {
		t.Fatal("a restarted node helped elect a leader at once")
	}
	tickClock(n, clk, 3*n.cfgs[1].ElectionTicks)
	if l := n.leader(); l != 2 && l != 3 {
		t.Fatalf("no leader after the guard: %d", l)
	}
}

// Without a lease, restarted nodes vote at once as before.
func TestNoLeaseNoRestartGuard(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.down[1] = true
	n.restart(3)
	n.elect(2)
}

func TestLeaseConfigNeedsClock(t *testing.T) {
	c := DefaultConfig(1, []ID{1})
	c.Lease = time.Second
	if _, err := NewNode(c, NewMemoryStorage()); err == nil {
		t.Fatal("a lease without a clock was accepted")
	}
}

// Reads keep a group awake (a quiet leader has no lease, so each wake
// would cost a round); once they stop, it quiesces.
func TestLeaseReadsKeepTheGroupAwake(t *testing.T) {
	n, _, clk := newLeaseNet(t, func(c *Config) { c.Quiesce = true })
	for i := range 3 * n.cfgs[1].ElectionTicks {
		if _, ok := n.node(1).LeaseRead(); !ok {
			t.Fatalf("tick %d: no lease while reads come", i)
		}
		tickClock(n, clk, 1)
	}
	tickClock(n, clk, 2*n.cfgs[1].ElectionTicks)
	if !n.node(1).Quiescent() {
		t.Fatal("leader did not quiesce once reads stopped")
	}
}
