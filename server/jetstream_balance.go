package server

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Stream leaders spread evenly over the servers. A new stream's first
// leader is spread by a hash, but a server that was away leads nothing when
// it comes back: its streams elected leaders among the others (at ~1,500
// streams 733/714/31 after a restart), and they stay there. Every second
// each server counts, from the leader map every server keeps, how many
// replicated streams each live server leads against its fair share (a
// stream of n live members adds 1/n to each); a server above its share
// hands some of its streams to a member below its share, one that holds the
// whole log, at most a round's budget (below). Transfers go only from
// above to below, so the spread narrows round after round and stops within
// one of even; nobody elects, the leader hands over (raft's leadership
// transfer: the target campaigns at once, with the whole log).
//
// How many a round moves (balanceBudget) grows with the server's excess
// over its share, from leaderBalanceMax up to leaderBalanceCap: a server
// back from a restart among 10,000 streams is ~3,333 short, and at 32
// per round evening took minutes; a small imbalance still moves in small
// batches. The bound keeps a round's transfers, each one election of the
// target, from flooding the restarted server.
//
// A round scans every assignment, so it runs only when its outcome may
// differ from the last one's (balanceDue): a leadership changed, an
// assignment changed, a route came or went, or the last round started
// transfers (one may have been refused: try again). Otherwise a round runs
// every leaderBalanceIdle, in case something changed unseen (a leadership
// of an older peer expiring). With 10,000 idle streams a scan per second
// on every server was most of an idle cluster's work.

var (
	leaderBalanceEvery = time.Second
	leaderBalanceIdle  = 30 * time.Second
	leaderBalanceMax   = 32  // moves a round may always make
	leaderBalanceCap   = 512 // moves a round makes at most
)

// balanceBudget is how many leaderships a round may hand over when this
// server leads excess more than its share: all of the excess, within
// [leaderBalanceMax, leaderBalanceCap].
func balanceBudget(excess float64) int {
	return min(leaderBalanceCap, max(leaderBalanceMax, int(math.Ceil(excess))))
}

// balanceState is what the last round saw (balanceLoop's goroutine only,
// but the counters).
type balanceState struct {
	leaders <-chan struct{} // leaderMap.changed at the last round
	streams <-chan struct{} // jsCluster.changed at the last round
	routes  string          // routesFingerprint at the last round
	held    string          // holdFingerprint at the last round (jetstream_balance_hold.go)
	moved   bool            // the last round started transfers
	last    time.Time
	polls   atomic.Uint64 // looks taken (tests)
	rounds  atomic.Uint64 // rounds run (tests)
	// transfers counts the leadership transfers this server's rounds
	// started (tests).
	transfers atomic.Uint64
}

// balanceDue reports whether a round is due now, and if so notes what it
// will see (the change signals are taken before the round reads, so a
// change made during the round makes the next one due).
func (jc *jsCluster) balanceDue(now time.Time) bool {
	b := &jc.balance
	jc.leaders.mu.Lock()
	leaders := jc.leaders.changed
	jc.leaders.mu.Unlock()
	jc.mu.Lock()
	streams := jc.changed
	jc.mu.Unlock()
	routes := routesFingerprint(jc.js.srv.routeList())
	held := jc.holdFingerprint()
	if !b.moved && leaders == b.leaders && streams == b.streams && routes == b.routes && held == b.held &&
		now.Sub(b.last) < leaderBalanceIdle {
		return false
	}
	b.leaders, b.streams, b.routes, b.held, b.last = leaders, streams, routes, held, now
	return true
}

// leaderMove hands the leadership of sa to the server to.
type leaderMove struct {
	sa *streamAssignment
	to string
}

// planLeaderMoves picks up to max of the streams led (those me leads) to
// hand to a member below its share, while me is above its own. A move
// also needs me to lead at least two more than the member: each one then
// narrows the spread, and the servers stop within one of each other's
// share. leads and share are each live server's leaderships and fair
// share; leads is updated with the moves planned. max is the round's
// budget (balanceBudget). A server in held (catching up after a restart)
// is never a target.
func planLeaderMoves(me string, led []*streamAssignment, leads map[string]int, share map[string]float64, held map[string]bool, max int) []leaderMove {
	var out []leaderMove
	for _, sa := range led {
		if len(out) >= max || float64(leads[me]) <= share[me] {
			break
		}
		best, bestGap := "", 0.0
		for _, p := range sa.Peers {
			sh, live := share[p]
			if p == me || !live || held[p] || leads[me]-leads[p] < 2 {
				continue
			}
			if gap := sh - float64(leads[p]); gap > 0 && gap > bestGap {
				best, bestGap = p, gap
			}
		}
		if best != "" {
			out = append(out, leaderMove{sa: sa, to: best})
			leads[me]--
			leads[best]++
		}
	}
	return out
}

// balanceLoop looks every leaderBalanceEvery whether a round is due and
// runs it.
func (jc *jsCluster) balanceLoop() {
	s := jc.js.srv
	defer s.wg.Done()
	for !s.sleepOnClock(leaderBalanceEvery) {
		jc.balance.polls.Add(1)
		jc.sayCatchingUp() // jetstream_balance_hold.go
		if jc.balanceDue(s.clock.Now()) {
			jc.balance.moved = jc.balanceLeaders() > 0
		}
	}
}

// balanceLeaders runs one round: counts, plans, and starts the transfers;
// it returns the number of transfers asked for.
func (jc *jsCluster) balanceLeaders() int {
	jc.balance.rounds.Add(1)
	if jc.catchingUp() {
		return 0 // nothing moves away from a server catching up
	}
	s := jc.js.srv
	me := s.Name()
	live := map[string]bool{me: true}
	for _, p := range s.routePeers() {
		live[p] = true
	}
	now := s.clock.Now()
	leads, share := map[string]int{}, map[string]float64{}
	var led []*streamAssignment
	refs := jc.replicatedAssignments()
	keys := make([]string, len(refs))
	for i, r := range refs {
		keys[i] = leaderKey(r.account, r.sa.Config.Name)
	}
	leaders := jc.leaders.getEach(keys, now)
	for i, r := range refs {
		sa := r.sa
		n := 0
		for _, p := range sa.Peers {
			if live[p] {
				n++
			}
		}
		if n == 0 {
			continue
		}
		for _, p := range sa.Peers {
			if live[p] {
				share[p] += 1 / float64(n)
			}
		}
		if l := leaders[i]; l != "" {
			leads[l]++
			if l == me {
				led = append(led, sa)
			}
		}
	}
	held := map[string]bool{}
	for _, h := range jc.heldServers() {
		held[h] = true
	}
	moves := planLeaderMoves(me, led, leads, share, held, balanceBudget(float64(leads[me])-share[me]))
	for _, mv := range moves {
		jc.moveLeader(mv)
	}
	return len(moves)
}

// assignmentRef is an assignment with its account.
type assignmentRef struct {
	account string
	sa      *streamAssignment
}

// replicatedAssignments lists the assignments of streams with two or more
// replicas. Only the walk holds jc.mu: the leader balancer looks each one
// up in the leader map after it, while a route's read loop may be waiting
// for jc.mu (an API request handled inline). Assignments are replaced,
// never changed in place, so reading them unlocked is safe.
func (jc *jsCluster) replicatedAssignments() []assignmentRef {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	var out []assignmentRef
	for acc, streams := range jc.streams {
		for _, sa := range streams {
			if len(sa.Peers) >= 2 {
				out = append(out, assignmentRef{acc, sa})
			}
		}
	}
	return out
}

// moveLeader asks the group of mv's stream, if led here, to hand its
// leadership to mv.to if that member is current; the group's
// goroutine decides, without waiting (a busy group is skipped this round).
func (jc *jsCluster) moveLeader(mv leaderMove) {
	jsa := jc.js.account(mv.sa.Account)
	if jsa == nil {
		return
	}
	mset := jsa.lookup(mv.sa.Config.Name)
	if mset == nil {
		return
	}
	g := mset.groupNow()
	if g == nil {
		return
	}
	to := raftID(mv.to)
	g.tryControl(func(n *raft.Node) {
		st := n.Status()
		pr, ok := st.Progress[to]
		// The member is current: it holds the whole log, its server is
		// live and it answered lately (not a replica whose group has not
		// started again since its server came back).
		current := ok && pr.Match == st.LastIndex && pr.Live && pr.RecentActive
		if st.Role == raft.Leader && st.LeaderReady && current && st.Transferee == raft.None {
			if n.TransferLeadership(to) == nil {
				jc.balance.transfers.Add(1)
			}
		}
	})
}
