package raft

// Ranked elections: when the server of a group's leader dies, every
// surviving follower learns it at about the same moment (node liveness,
// quiesce.go). Were each to wait out a randomized election timeout, as a
// follower does whose leader merely falls silent, the group would stay
// leaderless for up to two election timeouts, and two survivors drawing
// the same tick would split the vote and wait again (10,000 streams, kill
// -9 of one server: the last stream was led 2.2 s after the kill, the
// first one 0.5 s after it).
//
// A follower told by liveness knows its leader is gone, so the live
// voters take turns instead, in an order every member computes alike from
// the group's Seed: the first campaigns as soon as it may, the k-th
// rankStagger ticks after the one before it (an election timeout), and
// only if no candidate asked it for its vote meanwhile. As soon as it
// may: at its next tick in a quiet group (a quiet leader holds no lease,
// quiesce.go, and the follower forgets it at once); in an awake group one
// tick after the election timeout since it last heard its leader, when
// the leader's lease has run out on every member that heard the same
// heartbeat (the tick more covers the members' clocks ticking out of
// phase). A member
// that grants a pre-vote while waiting its turn waits at least
// rankStagger more (the candidate's vote request is on its way), and the
// vote request itself, of a higher term, ends the turn-taking (reset).
// The order is a hash of the seed and the member's id, so across groups
// each survivor goes first about equally often and the dead server's
// leaderships spread evenly. Whoever campaigns once falls back to the
// randomized timeout, as does a member that hears from a leader.

// rankFirst is how many ticks the first in turn waits once it may
// campaign: one (its next tick).
const rankFirst = 1

// rankStagger is how many ticks the next in turn waits after the one
// before it: an election timeout. The first in turn of every group whose
// leader's server died campaigns in the same tick, thousands at once
// after a server of a 10,000-stream cluster died, and a survivor takes
// hundreds of milliseconds to answer them all on a loaded machine; a next
// in turn that went before the pre-vote request of the first reached it
// would split the vote (with half an election timeout the dead server's
// last group was led 5.8 s after a kill -9, not 2.6 s as with randomized
// timeouts). A group whose first in turn fails is led about as late as
// with randomized timeouts, and no later.
func (r *raft) rankStagger() int { return r.t.electionTimeout }

// rankTimer starts this member's turn-taking wait: its leader's server
// died. after is when it may campaign, in ticks of electionElapsed.
func (r *raft) rankTimer(after int) {
	r.t.randomizedTimeout = after + rankFirst + r.rank()*r.rankStagger()
	r.t.ranked = true
}

// unrank ends the turn-taking: the election timeout is randomized again.
func (r *raft) unrank() {
	if r.t.ranked {
		r.t.ranked = false
		r.t.randomizedTimeout = r.t.electionTimeout + r.rand(r.t.electionTimeout)
	}
}

// rankGranted delays the turn of a member that granted a pre-vote while
// waiting it. Its election clock runs on: reset, it would renew the
// dead leader's lease (inLease) and refuse the candidate's vote request.
func (r *raft) rankGranted() {
	if r.t.ranked {
		r.t.randomizedTimeout = max(r.t.randomizedTimeout, r.t.electionElapsed+r.rankStagger())
	}
}

// A survivor may refuse the first in turn's pre-vote (in silence:
// inLease) for a leader whose lease it still protects: in a quiet group
// when its server had not yet heard of the death (the leader was quiet,
// no lease), in an awake one when its election clock counted a tick or
// two fewer than the candidate's since the leader's last heartbeat (the
// clocks tick out of phase, and a busy group misses ticks). The
// candidate would ask again only an election timeout later. So the
// survivor keeps the latest such request and answers it once it stops
// protecting that leader: when liveness made it forget a quiet leader, or
// at the tick that ends the awake leader's lease.

// holdPreVote keeps pre-vote request m, refused for a leader that was
// quiet or whose server died.
func (r *raft) holdPreVote(m Message) {
	if m.Type == MsgPreVote && (r.leadQuiet || r.t.ranked) {
		r.heldPreVote = &m
	}
}

// answerHeldPreVote answers the pre-vote request held, if any.
func (r *raft) answerHeldPreVote() {
	if m := r.heldPreVote; m != nil {
		r.heldPreVote = nil
		r.step(*m)
	}
}

// rank is this member's place among the members whose servers are live:
// how many of them come before it in the group's order.
func (r *raft) rank() int {
	mine, k := rankKey(r.seed, r.id), 0
	for _, id := range r.conf.current() {
		if id == r.id || !r.health(id).Live {
			continue
		}
		if key := rankKey(r.seed, id); key < mine || key == mine && id < r.id {
			k++
		}
	}
	return k
}

// rankKey places member id in the order of the group with seed: a
// splitmix64 finalizer of both, so that one id's place is unrelated
// across groups.
func rankKey(seed uint64, id ID) uint64 {
	x := seed ^ uint64(id)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
