package sim

import (
	"fmt"
	"maps"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Quiescence in the simulator. Every node sees the others' health as a
// server sees its routes: a peer is live while it is up and no partition
// cuts them apart (either way); its epoch is its incarnation. A node
// looks at that view on each of its ticks and tells its raft node when it
// changed (Node.LivenessChanged), as the server's raft clock does.

// look updates n's liveness view and reports whether it changed.
func (c *Cluster) look(n *simNode) bool {
	view := map[raft.ID]raft.PeerHealth{}
	for _, m := range c.nodes {
		if m != n && m.up && !c.cut[n.idx][m.idx] && !c.cut[m.idx][n.idx] {
			view[m.id] = raft.PeerHealth{Live: true, Quiesces: true, Epoch: m.inc}
		}
	}
	if maps.Equal(view, n.view) {
		return false
	}
	n.view = view
	return true
}

// QuiescePhase runs once the cluster converged with no fault left: the
// members quiesce; a follower cut off while they are quiet wakes but does
// not disrupt the leader; a leader killed while quiet is replaced within
// a second (node liveness wakes its followers); back, it converges.
func (c *Cluster) QuiescePhase(convergeMs int64) error {
	if err := c.runUntilQuiet(2000); err != nil {
		return err
	}
	c.stats.Quiesced++
	l := c.Leader()
	lead := c.nodes[l]
	term := lead.softState().Term
	for _, id := range lead.drv.Node.Status().Peers {
		if f := c.nodes[int(id)-1]; f != lead {
			c.Partition([]int{f.idx})
			c.tracef("quiesce: node %d cut off", f.id)
			if err := c.RunFor(1000); err != nil {
				return err
			}
			c.Heal()
			if err := c.runUntilQuiet(2000); err != nil {
				return err
			}
			if nl := c.Leader(); nl != l || c.nodes[nl].softState().Term != term {
				return fmt.Errorf("quiesce: cut-off follower %d disrupted leader %d (term %d): %s", f.id, lead.id, term, c.describe())
			}
			break
		}
	}
	c.tracef("quiesce: leader %d killed while quiet", lead.id)
	c.crash(lead, 0)
	deadline := c.now + 1000
	for c.Leader() < 0 {
		if c.now >= deadline {
			return fmt.Errorf("quiesce: no leader 1 s after the quiet leader %d died: %s", lead.id, c.describe())
		}
		if err := c.RunFor(10); err != nil {
			return err
		}
	}
	c.Restart(lead.idx)
	return c.Converge(convergeMs)
}

// runUntilQuiet runs until every member known to the leader is quiet.
func (c *Cluster) runUntilQuiet(limit int64) error {
	deadline := c.now + limit
	for !c.quiet() {
		if c.now >= deadline {
			return fmt.Errorf("quiesce: members awake %d ms after convergence: %s", limit, c.describe())
		}
		if err := c.RunFor(10); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) quiet() bool {
	l := c.Leader()
	if l < 0 {
		return false
	}
	for _, id := range c.nodes[l].drv.Node.Status().Peers {
		if n := c.nodes[int(id)-1]; !n.up || !n.drv.Node.Quiescent() {
			return false
		}
	}
	return true
}
