package server

import (
	"fmt"
	"slices"
	"strings"
)

// The quiescence phase of a simulator run (after the faults stopped and
// everything converged): every raft group of every server quiesces; a
// server cut off from the others while they are quiet wakes but
// disrupts no stream it does not lead; a server killed while its groups
// are quiet loses the streams it led to new leaders within 5 s (node
// liveness wakes their followers); back, its routes up well before it
// runs any group, it catches up within 5 s without a write.
func (w *simWorld) quiescePhase() {
	if !w.runUntil(w.now+10_000, w.allAsleep) {
		w.fail("groups awake 10 s after convergence: %s", w.awakeReport())
		return
	}
	w.stats.Quiesced++
	if cut := w.leaderless(); cut != nil {
		lead := map[string]*simNode{}
		for _, cfg := range w.streams {
			lead[cfg.Name] = w.streamLeader(cfg.Name)
		}
		for b := range w.nodes {
			w.cut[cut.idx][b], w.cut[b][cut.idx] = b != cut.idx, b != cut.idx
		}
		w.logf("quiesce: %s cut off", cut.name)
		w.runUntil(w.now+3_000, nil)
		w.healNet()
		if !w.runUntil(w.now+10_000, w.allAsleep) {
			w.fail("groups awake 10 s after %s came back: %s", cut.name, w.awakeReport())
			return
		}
		for name, n := range lead {
			if l := w.streamLeader(name); l != n {
				w.fail("stream %s: the cut-off follower %s disrupted its leader %s", name, cut.name, n.name)
				return
			}
		}
	}
	victim := w.streamLeader(w.streams[w.rng.IntN(len(w.streams))].Name)
	// Streams whose group can lose a member: a move the faults cut short
	// may leave one with two (then it waits for the victim, quiet or not).
	var expect []string
	for _, cfg := range w.streams {
		if l := w.streamLeader(cfg.Name); len(l.stream(cfg.Name).group.statusSnapshot().Peers) >= 3 {
			expect = append(expect, cfg.Name)
		}
	}
	w.logf("quiesce: %s killed while its groups are quiet", victim.name)
	victim.crash()
	led := func() bool {
		for _, name := range expect {
			if w.streamLeader(name) == nil {
				return false
			}
		}
		return true
	}
	if !w.runUntil(w.now+5_000, led) {
		w.fail("streams without a leader 5 s after %s was killed while quiet", victim.name)
		return
	}
	// The survivors quiesce without the victim, which has fallen behind
	// (each new leader's first entry). It comes back slowly: its peers
	// see it live (routes up) for 1.2-2.5 s before it runs any group,
	// longer than a server keeps messages for groups it does not run
	// yet (raft_early.go). Its replicas then catch up on their own: no
	// client writes, and no wake-up of their leaders is left to hear.
	// (A group left with two members by a move cut short waits awake.)
	w.runUntil(w.now+10_000, w.allAsleep)
	late := 1_200 + w.rng.Int64N(1_300)
	w.logf("quiesce: %s live again, its groups start %d ms later", victim.name, late)
	victim.booting = true
	w.runUntil(w.now+late, nil)
	victim.start()
	if !w.runUntil(w.now+5_000, w.converged) {
		w.fail("%s not caught up 5 s after its groups started late while the others were quiet: %s",
			victim.name, w.convergeReport())
	}
}

// allAsleep: every group of every up server is quiescent (but for the
// replicas of servers no longer in the stream's placement: a removal
// that a power loss undid leaves one campaigning until it is stopped).
func (w *simWorld) allAsleep() bool { return w.awakeReport() == "" }

func (w *simWorld) awakeReport() string {
	var awake []string
	for _, n := range w.upNodes() {
		for _, g := range n.liveGroups() {
			if !g.asleep() && !w.leftOver(n, g) {
				st := g.drv.Node.Status()
				awake = append(awake, fmt.Sprintf("%s/%s (%s, lead %d)", n.name, g.name, st.Role, st.Lead))
			}
		}
	}
	return strings.Join(awake, ", ")
}

// leftOver reports whether g is the replica of a stream whose placement
// no longer holds n.
func (w *simWorld) leftOver(n *simNode, g *raftGroup) bool {
	jc := n.cluster()
	if jc == nil {
		return false
	}
	for _, cfg := range w.streams {
		sa := jc.assignment(globalAccountName, cfg.Name)
		if sa != nil && sa.groupName() == g.name {
			return !slices.Contains(sa.Peers, n.name)
		}
	}
	return false
}

// leaderless returns an up server that leads no stream, or nil.
func (w *simWorld) leaderless() *simNode {
	for _, n := range w.upNodes() {
		leads := false
		for _, cfg := range w.streams {
			if w.streamLeader(cfg.Name) == n {
				leads = true
			}
		}
		if !leads {
			return n
		}
	}
	return nil
}
