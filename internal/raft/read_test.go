package raft

import (
	"errors"
	"fmt"
	"testing"
)

// readLog collects the ReadStates every node's driver hands out.
type readLog map[ID][]ReadState

func captureReads(n *testNet) readLog {
	got := readLog{}
	for _, id := range n.ids {
		d := n.drv[id]
		d.Reads = func(rs []ReadState) { got[id] = append(got[id], rs...) }
	}
	return got
}

func (l readLog) ctxs(id ID) []string {
	var out []string
	for _, rs := range l[id] {
		out = append(out, string(rs.Ctx))
	}
	return out
}

func countType(msgs []Message, t MessageType) int {
	k := 0
	for _, m := range msgs {
		if m.Type == t {
			k++
		}
	}
	return k
}

func newReadNet(t *testing.T, mod func(*Config)) (*testNet, readLog) {
	n := newTestNet(t, mod, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a", "b")
	return n, captureReads(n)
}

// The leader answers only after a quorum acknowledged a heartbeat sent
// after the request, with the commit index it had when asked.
func TestReadIndexLeaderWaitsForQuorumAck(t *testing.T) {
	n, reads := newReadNet(t, nil)
	commit := n.raft(1).log.committed
	lost := true
	n.drop = func(m Message) bool { return lost && m.Type == MsgHeartbeatResp }
	if err := n.node(1).ReadIndex([]byte("r1")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(reads[1]) != 0 {
		t.Fatalf("read answered without any heartbeat ack: %+v", reads[1])
	}
	// One follower's ack makes a quorum of three with the leader.
	n.drop = func(m Message) bool { return m.Type == MsgHeartbeatResp && m.From == 3 }
	n.tick(n.cfgs[1].HeartbeatTicks)
	if len(reads[1]) != 1 || reads[1][0].Index != commit || string(reads[1][0].Ctx) != "r1" {
		t.Fatalf("read states %+v, want one at %d", reads[1], commit)
	}
}

// Many requests between two Readys share one heartbeat per follower.
func TestReadIndexBatchesRequests(t *testing.T) {
	n, reads := newReadNet(t, nil)
	n.sent = nil
	for i := range 10 {
		if err := n.node(1).ReadIndex(fmt.Appendf(nil, "r%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	n.settle()
	if hb := countType(n.sent, MsgHeartbeat); hb != 2 {
		t.Fatalf("%d heartbeats for 10 reads, want 2 (one per follower)", hb)
	}
	if len(reads[1]) != 10 {
		t.Fatalf("%d read states, want 10", len(reads[1]))
	}
	for i, rs := range reads[1] {
		if string(rs.Ctx) != fmt.Sprintf("r%d", i) || rs.Index != n.raft(1).log.committed {
			t.Fatalf("read state %d: %+v", i, rs)
		}
	}
}

// A follower forwards to the leader and gets the leader's index back.
func TestReadIndexFollowerForwards(t *testing.T) {
	n, reads := newReadNet(t, nil)
	// The follower lags: it has not learnt the last commit yet.
	n.drop = func(m Message) bool { return m.To == 2 && (m.Type == MsgApp || m.Type == MsgHeartbeat) }
	n.propose(1, "c")
	n.drop = nil
	want := n.raft(1).log.committed
	if n.raft(2).log.committed >= want {
		t.Fatalf("follower not behind: %d >= %d", n.raft(2).log.committed, want)
	}
	if err := n.node(2).ReadIndex([]byte("f")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(reads[2]) != 1 || reads[2][0].Index != want || string(reads[2][0].Ctx) != "f" {
		t.Fatalf("follower read states %+v, want index %d", reads[2], want)
	}
	if len(reads[1]) != 0 {
		t.Fatalf("leader kept the follower's read: %+v", reads[1])
	}
}

func TestReadIndexWithoutLeader(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	if err := n.node(2).ReadIndex([]byte("x")); !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("read with no leader known: %v", err)
	}
}

// The key safety property: an isolated leader that still believes it
// leads never answers a read made after the partition, even once a new
// leader has committed writes.
func TestReadIndexStaleLeaderNeverAnswers(t *testing.T) {
	noCQ := func(c *Config) { c.CheckQuorum = false } // so node 1 keeps believing
	n, reads := newReadNet(t, noCQ)
	n.isolate(1)
	n.elect(2)
	n.propose(2, "after")
	if err := n.node(1).ReadIndex([]byte("stale")); err != nil {
		t.Fatal(err)
	}
	n.tick(50)
	if r := n.raft(1); r.role != Leader || len(reads[1]) != 0 {
		t.Fatalf("stale leader: role %s, read states %+v", r.role, reads[1])
	}
	n.heal()
	n.tick(10)
	if r := n.raft(1); r.role == Leader || len(reads[1]) != 0 {
		t.Fatalf("after heal: role %s, read states %+v", r.role, reads[1])
	}
}

// An acknowledgement of an earlier round confirms nothing newer: r1's
// round is answered late, after r2's round left; only r1 is served.
func TestReadIndexOldRoundAckDoesNotConfirm(t *testing.T) {
	n, reads := newReadNet(t, nil)
	var held []Message
	n.drop = func(m Message) bool {
		if m.Type == MsgHeartbeatResp {
			held = append(held, m)
			return true
		}
		return false
	}
	if err := n.node(1).ReadIndex([]byte("r1")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	old := held
	if len(old) != 2 || old[0].Index != 1 {
		t.Fatalf("held %v, want the 2 answers of round 1", old)
	}
	n.drop = func(m Message) bool { return m.Type == MsgHeartbeatResp } // round 2's are lost
	if err := n.node(1).ReadIndex([]byte("r2")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	n.drop = nil
	for _, m := range old {
		if err := n.node(1).Step(m); err != nil {
			t.Fatal(err)
		}
	}
	n.settle()
	if got := reads.ctxs(1); len(got) != 1 || got[0] != "r1" {
		t.Fatalf("read states %v, want [r1]: round 1's acks confirmed r2", got)
	}
	n.tick(n.cfgs[1].HeartbeatTicks) // a periodic heartbeat of round 2
	if got := reads.ctxs(1); len(got) != 2 || got[1] != "r2" {
		t.Fatalf("read states %v after round 2 was acknowledged", got)
	}
}

// A leader that steps down drops its pending reads, its own and
// forwarded ones, and never answers them.
func TestReadIndexDroppedOnLeaderChange(t *testing.T) {
	n, reads := newReadNet(t, nil)
	n.drop = func(m Message) bool { return m.Type == MsgHeartbeatResp }
	if err := n.node(1).ReadIndex([]byte("mine")); err != nil {
		t.Fatal(err)
	}
	if err := n.node(3).ReadIndex([]byte("fwd")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(n.raft(1).ls.reads.pending) != 2 {
		t.Fatalf("pending %d, want 2", len(n.raft(1).ls.reads.pending))
	}
	if err := n.node(1).TransferLeadership(2); err != nil {
		t.Fatal(err)
	}
	n.settle()
	n.drop = nil
	if n.leader() != 2 {
		t.Fatalf("leader %d, want 2", n.leader())
	}
	n.tick(20)
	if len(reads[1]) != 0 || len(reads[3]) != 0 || countType(n.sent, MsgReadIndexResp) != 0 {
		t.Fatalf("dropped reads answered: %+v %+v", reads[1], reads[3])
	}
}

// Before its NoOp commits, a leader holds reads; they are answered at an
// index that covers everything earlier leaders committed.
func TestReadIndexWaitsForLeaderCommit(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	reads := captureReads(n)
	n.drop = func(m Message) bool { return m.Type == MsgAppResp }
	n.elect(1)
	if err := n.node(1).ReadIndex([]byte("early")); err != nil {
		t.Fatal(err)
	}
	n.settle()
	if len(reads[1]) != 0 || n.raft(1).ls.reads.round != 0 {
		t.Fatalf("read started before the leader committed: %+v", reads[1])
	}
	n.drop = nil
	n.tick(n.cfgs[1].HeartbeatTicks) // a heartbeat answer makes the leader resend
	noop := n.raft(1).ls.noopIndex
	if len(reads[1]) != 1 || reads[1][0].Index < noop {
		t.Fatalf("read states %+v, want one at >= %d", reads[1], noop)
	}
}

func TestReadIndexSingleNode(t *testing.T) {
	n := newTestNet(t, nil, 1)
	reads := captureReads(n)
	n.elect(1)
	n.propose(1, "x")
	if err := n.node(1).ReadIndex([]byte("solo")); err != nil {
		t.Fatal(err)
	}
	n.process() // no message exchanged
	if len(reads[1]) != 1 || reads[1][0].Index != n.raft(1).log.committed {
		t.Fatalf("read states %+v", reads[1])
	}
}
