package server

import "github.com/nats-io/nats-server/v2/internal/raft"

// A leader whose raft group halts (raft_panic.go, a failed write) resigns
// (leaderChanged), but its server stays up and its route busy, so node
// liveness (raft_live.go) shows it alive. Followers asleep in a quiet
// group would wait for it without end: nothing else wakes them, and the
// stream had no leader until an operator acted. So a server that hears
// the resignation of the leader its local replica follows wakes that
// replica's node (raft.Node.LeaderStopped): its election clock runs, and
// with no heartbeat from the halted leader it campaigns after an election
// timeout. After an ordinary resignation (a stepdown, a transfer) the
// followers are awake already or follow the new leader, and nothing
// happens.

// wakeFollowerOf wakes the local replica of the stream if it follows
// server name's leadership in term asleep. It never blocks (a group whose
// control queue is full is busy, not asleep).
func (jc *jsCluster) wakeFollowerOf(account, stream, name string, term uint64) {
	jsa := jc.js.account(account)
	if jsa == nil {
		return
	}
	mset := jsa.lookup(stream)
	if mset == nil {
		return
	}
	if g := mset.groupNow(); g != nil {
		g.leaderStopped(name, term)
	}
}

// leaderStopped wakes the group's node if it follows server name's
// leadership in term asleep (raft.Node.LeaderStopped). It never blocks:
// a group whose control queue is full is busy, not asleep.
func (g *raftGroup) leaderStopped(name string, term uint64) {
	lead := raftID(name)
	g.tryControl(func(n *raft.Node) { n.LeaderStopped(lead, term) })
}
