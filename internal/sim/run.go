package sim

import (
	"fmt"
	"slices"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// RunOptions configures a randomized run (Run).
type RunOptions struct {
	Options
	FaultMs    int64 // virtual time with faults and clients
	ConvergeMs int64 // virtual time allowed to converge once healed
	Membership bool  // also add and remove members at random
}

// Run simulates a cluster under random faults for FaultMs, heals everything,
// and checks that it converges: every live member applies the same log,
// including every committed proposal, within ConvergeMs.
func Run(o RunOptions) (Stats, error) {
	c := NewCluster(o.Options)
	c.membership = o.Membership
	c.faultEnd = o.FaultMs
	c.faultGap = []int64{40, 120, 250}[c.rng.IntN(3)]
	c.randomizeNetwork()
	c.q.push(event{at: 1 + c.rng.Int64N(20), kind: evClient})
	c.q.push(event{at: 50 + c.rng.Int64N(200), kind: evFault})
	if err := c.RunFor(o.FaultMs); err != nil {
		return c.Stats(), err
	}
	c.HealAll()
	if err := c.Converge(o.ConvergeMs); err != nil {
		return c.Stats(), err
	}
	if err := c.checkAccepted(); err != nil {
		return c.Stats(), err
	}
	if err := c.QuiescePhase(o.ConvergeMs); err != nil {
		return c.Stats(), err
	}
	err := c.checkAccepted()
	return c.Stats(), err
}

func (c *Cluster) randomizeNetwork() {
	c.net = netConf{
		drop:     c.rng.Float64() * 0.15,
		dup:      c.rng.Float64() * 0.1,
		reorder:  c.rng.Float64() * 0.2,
		minDelay: 1 + c.rng.Int64N(3),
		jitter:   c.rng.Int64N(10),
	}
	c.tracef("network %+v", c.net)
}

// clientStep has a client propose through the node it believes leads.
func (c *Cluster) clientStep() {
	if c.now >= c.faultEnd {
		return
	}
	c.q.push(event{at: c.now + 2 + c.rng.Int64N(20), kind: evClient})
	n := c.nodes[c.rng.IntN(len(c.nodes))]
	if !n.up {
		return
	}
	if c.rng.IntN(3) == 0 {
		c.issueRead(n) // on any node: followers forward to their leader
		return
	}
	if ss := n.softState(); ss.Role != raft.Leader && ss.Lead != raft.None {
		n = c.nodes[int(ss.Lead)-1]
	}
	if n.softState().Role != raft.Leader {
		return
	}
	c.proposeOn(n, 1+c.rng.IntN(3))
}

// faultStep injects one random fault.
func (c *Cluster) faultStep() {
	if c.now >= c.faultEnd {
		return
	}
	c.q.push(event{at: c.now + 10 + c.rng.Int64N(c.faultGap), kind: evFault})
	n := c.nodes[c.rng.IntN(len(c.nodes))]
	if l := c.anyLeader(); l != nil && c.rng.IntN(3) == 0 {
		n = l // leaders are where the interesting failures are
	}
	if c.membership && c.rng.IntN(4) == 0 {
		c.randomConfChange()
		return
	}
	switch r := c.rng.IntN(100); {
	case r < 12: // crash now, losing part of what was not synced
		c.crash(n, c.rng.IntN(len(n.disk.pending)+1))
		c.scheduleRestart(n)
	case r < 20: // crash inside the next Ready, before its sync
		if n.up {
			n.disk.crashOnSync = true
			c.scheduleRestart(n)
		}
	case r < 26: // crash after sending, before applying
		if n.up {
			n.crashOnApply = true
			c.scheduleRestart(n)
		}
	case r < 34:
		c.Restart(n.idx)
	case r < 54:
		c.randomPartition()
	case r < 62:
		c.Heal()
	case r < 70:
		c.randomizeNetwork()
	case r < 80:
		c.randomTransfer()
	}
}

// anyLeader returns an up node that believes it leads (ready or not).
func (c *Cluster) anyLeader() *simNode {
	var best *simNode
	for _, n := range c.nodes {
		if ss := n.softState(); ss.Role == raft.Leader && (best == nil || ss.Term > best.softState().Term) {
			best = n
		}
	}
	return best
}

func (c *Cluster) scheduleRestart(n *simNode) {
	c.q.push(event{at: c.now + 20 + c.rng.Int64N(800), kind: evRestart, node: n.idx, gen: n.inc})
}

// randomPartition splits the nodes in two (sometimes one way only) until a
// later fault or a scheduled heal.
func (c *Cluster) randomPartition() {
	order := c.rng.Perm(len(c.nodes))
	if l := c.anyLeader(); l != nil && c.rng.IntN(2) == 0 {
		// Put the leader in the smaller side.
		k := slices.Index(order, l.idx)
		order[0], order[k] = order[k], order[0]
	}
	k := 1 + c.rng.IntN(len(c.nodes)/2)
	side := make([]bool, len(c.nodes))
	for _, i := range order[:k] {
		side[i] = true
	}
	oneWay := c.rng.IntN(4) == 0
	for a := range c.nodes {
		for b := range c.nodes {
			c.cut[a][b] = side[a] != side[b] && (!oneWay || side[a])
		}
	}
	c.partGen++
	c.stats.Partitions++
	c.tracef("partition %v one-way=%v", order[:k], oneWay)
	c.q.push(event{at: c.now + 50 + c.rng.Int64N(1500), kind: evHeal, gen: c.partGen})
}

func (c *Cluster) randomTransfer() {
	l := c.Leader()
	if l < 0 {
		return
	}
	lead := c.nodes[l]
	peers := lead.drv.Node.Status().Peers
	to := peers[c.rng.IntN(len(peers))]
	if err := lead.drv.Node.TransferLeadership(to); err == nil {
		c.tracef("node %d transfers leadership to %d", lead.id, to)
	}
	c.process(lead)
}

// randomConfChange removes a member (keeping at least three) or adds back
// a node that is not one.
func (c *Cluster) randomConfChange() {
	l := c.Leader()
	if l < 0 {
		return
	}
	lead := c.nodes[l]
	peers := lead.drv.Node.Status().Peers
	var cc raft.ConfChange
	if len(peers) > 3 && c.rng.IntN(2) == 0 {
		cc = raft.ConfChange{Type: raft.RemovePeer, ID: peers[c.rng.IntN(len(peers))]}
	} else {
		var out []raft.ID
		for _, n := range c.nodes {
			if !slices.Contains(peers, n.id) {
				out = append(out, n.id)
			}
		}
		if len(out) == 0 {
			return
		}
		cc = raft.ConfChange{Type: raft.AddPeer, ID: out[c.rng.IntN(len(out))]}
	}
	if err := lead.drv.Node.ProposeConfChange(cc); err == nil {
		c.tracef("node %d proposes %+v", lead.id, cc)
	}
	c.process(lead)
}

// HealAll ends every fault: partitions heal, crashed nodes restart, armed
// crashes are disarmed and the network stops losing messages.
func (c *Cluster) HealAll() {
	c.faultEnd = c.now
	c.Heal()
	c.net = netConf{minDelay: 1, jitter: 4}
	for _, n := range c.nodes {
		n.disk.crashOnSync, n.crashOnApply = false, false
		c.Restart(n.idx)
	}
}

// Converge waits until a leader is ready, has committed a marker entry of
// its own, and every live member has applied exactly the leader's log.
func (c *Cluster) Converge(limit int64) error {
	deadline := c.now + limit
	var marker string
	var markedAt int64
	for c.now < deadline {
		if err := c.RunFor(20); err != nil {
			return err
		}
		l := c.Leader()
		if l < 0 {
			continue
		}
		lead := c.nodes[l]
		if _, done := c.chk.applied[marker]; marker == "" || !done && c.now-markedAt > 500 {
			marker = fmt.Sprintf("marker %d", c.now)
			if lead.drv.Node.Propose([]byte(marker)) == nil {
				markedAt = c.now
				c.process(lead)
			}
			continue
		}
		if c.converged(lead, marker) {
			return nil
		}
	}
	return fmt.Errorf("no convergence within %dms after healing: %s", limit, c.describe())
}

func (c *Cluster) converged(lead *simNode, marker string) bool {
	if _, ok := c.chk.applied[marker]; !ok {
		return false
	}
	st := lead.drv.Node.Status()
	if st.Commit < c.chk.maxCommit || lead.kv.applied != st.Commit {
		return false
	}
	for _, id := range st.Peers {
		n := c.nodes[int(id)-1]
		if !n.up || n.kv.applied != lead.kv.applied {
			return false
		}
	}
	c.stats.FinalIndex = lead.kv.applied
	return true
}

// checkAccepted verifies that every accepted proposal that committed is
// applied on every member (they all stopped at the same index).
func (c *Cluster) checkAccepted() error {
	for _, data := range c.accepted {
		idx, ok := c.chk.applied[data]
		if !ok {
			continue
		}
		c.stats.Committed++
		if idx > c.stats.FinalIndex {
			return fmt.Errorf("proposal %q committed at %d beyond the converged index %d", data, idx, c.stats.FinalIndex)
		}
	}
	return nil
}

func (c *Cluster) describe() string {
	s := ""
	for _, n := range c.nodes {
		if !n.up {
			s += fmt.Sprintf("[%d down] ", n.id)
			continue
		}
		st := n.drv.Node.Status()
		s += fmt.Sprintf("[%d %s t%d lead=%d commit=%d applied=%d last=%d peers=%v] ",
			n.id, st.Role, st.Term, st.Lead, st.Commit, n.kv.applied, st.LastIndex, st.Peers)
	}
	return s
}

// Stats returns the run's counters so far.
func (c *Cluster) Stats() Stats {
	s := c.stats
	s.Accepted = len(c.accepted)
	s.Terms = len(c.chk.leaders)
	s.ConfChanges = c.chk.confChanges
	s.VirtualMs = c.now
	return s
}
