package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Options configures a simulated cluster.
type Options struct {
	Seed  uint64
	Nodes int // 3 or 5
	// Trace, if set, receives one line per notable event.
	Trace func(string)
}

// Stats summarises a run.
type Stats struct {
	Events, Messages, Dropped      int
	Accepted, Committed            int // client proposals accepted by a leader / later applied
	Crashes, Partitions, Snapshots int
	Reads, ReadsServed             int    // linearizable reads requested / served
	Terms                          int    // distinct terms with a leader
	Quiesced                       int    // runs whose group quiesced (QuiescePhase)
	ConfChanges                    int    // membership changes applied
	FinalIndex                     uint64 // applied index everyone converged to
	VirtualMs                      int64
}

// netConf is the network's current misbehaviour.
type netConf struct {
	drop, dup, reorder float64 // probabilities per message
	minDelay, jitter   int64   // ms
}

// simNode is one simulated machine.
type simNode struct {
	lazy         *raft.LazySync // the leader's sync behind, run at the next tick
	id           raft.ID
	idx          int
	up           bool
	inc          uint64 // incarnation: bumped by every crash
	disk         *disk
	kv           *KV
	drv          *raft.Driver
	crashOnApply bool
	tickEvery    int64
	peers        []raft.ID // initial membership (nil for a joining node)
	lastSoft     raft.SoftState
	view         map[raft.ID]raft.PeerHealth // node liveness (quiesce.go)
}

// Cluster is a deterministic simulation of a raft group.
type Cluster struct {
	rng   *rand.Rand
	seed  uint64
	now   int64
	q     queue
	nodes []*simNode
	cut   [][]bool // cut[from][to]: messages from → to are lost
	net   netConf
	chk   *checker
	err   error
	trace func(string)
	stats Stats

	faultEnd   int64  // clients and faults stop at this virtual time
	faultGap   int64  // upper bound of the time between two faults
	membership bool   // the fault injector changes membership too
	partGen    uint64 // generation of the current partition
	snapEvery  uint64 // compact a node's log every that many applied entries
	maxBatch   int
	nextVal    int
	accepted   []string   // payloads of accepted proposals
	reads      []*simRead // requested and not yet served, in request order
	nextRead   int
}

// violation marks an invariant failure (as opposed to a simulated crash).
type violation struct{ err error }

func (v violation) Error() string { return v.err.Error() }
func (v violation) Unwrap() error { return v.err }

// NewCluster starts a cluster of opts.Nodes founding members.
func NewCluster(opts Options) *Cluster {
	c := &Cluster{
		rng:   rand.New(rand.NewPCG(opts.Seed, 0x73696d)),
		seed:  opts.Seed,
		chk:   newChecker(),
		trace: opts.Trace,
		net:   netConf{minDelay: 1, jitter: 4},
	}
	c.snapEvery = 10 + c.rng.Uint64N(90)
	c.maxBatch = 64 << c.rng.IntN(7)
	peers := make([]raft.ID, opts.Nodes)
	for i := range peers {
		peers[i] = raft.ID(i + 1)
	}
	for range opts.Nodes {
		c.addNode(peers)
	}
	return c
}

// addNode creates a machine with an empty disk and starts it. Founding
// members get the initial peers; later ones join with none.
func (c *Cluster) addNode(peers []raft.ID) *simNode {
	n := &simNode{id: raft.ID(len(c.nodes) + 1), idx: len(c.nodes), disk: newDisk(), peers: peers}
	c.nodes = append(c.nodes, n)
	for i := range c.cut {
		c.cut[i] = append(c.cut[i], false)
	}
	c.cut = append(c.cut, make([]bool, len(c.nodes)))
	id := n.id
	n.disk.observe = func(s *raft.Snapshot, e []raft.Entry, h *raft.HardState) error {
		if err := c.chk.onSave(id, s, e, h); err != nil {
			return violation{err}
		}
		return nil
	}
	c.start(n)
	return n
}

func (c *Cluster) tracef(format string, args ...any) {
	if c.trace != nil {
		c.trace(fmt.Sprintf("%6dms ", c.now) + fmt.Sprintf(format, args...))
	}
}

func (c *Cluster) fail(err error) {
	if c.err == nil {
		c.err = fmt.Errorf("t=%dms: %w", c.now, err)
		c.tracef("VIOLATION: %v", err)
	}
}

// start boots a node from its disk.
func (c *Cluster) start(n *simNode) {
	n.kv = NewKV()
	c.chk.kvs[n.id] = n.kv
	cfg := raft.DefaultConfig(n.id, n.peers)
	cfg.HeartbeatTicks = 2
	cfg.MaxInflight = 8
	cfg.MaxBatchBytes = c.maxBatch
	rng := rand.New(rand.NewPCG(c.seed^uint64(n.id)<<32, n.inc))
	cfg.Rand = rng.IntN
	cfg.Quiesce = true
	cfg.PeerHealth = func(id raft.ID) raft.PeerHealth { return n.view[id] }
	drv, err := raft.NewDriver(cfg, n.disk, transport{c, n}, machine{c, n})
	if err != nil {
		c.fail(fmt.Errorf("node %d restart: %w", n.id, err))
		return
	}
	drv.Observe = func(rd *raft.Ready) {
		if err := c.chk.onReady(n.id, rd); err != nil {
			c.fail(err)
		}
		if c.trace != nil && rd.SoftState != n.lastSoft {
			n.lastSoft = rd.SoftState
			c.tracef("node %d: %+v", n.id, rd.SoftState)
		}
	}
	drv.Reads = func(rs []raft.ReadState) { c.onReadStates(n, rs) }
	drv.SyncBehind = func(sync func() error) raft.SyncJob {
		j := raft.NewLazySync(sync)
		n.lazy = j
		return j
	}
	n.drv, n.up = drv, true
	n.tickEvery = 9 + c.rng.Int64N(3)
	c.q.push(event{at: c.now + 1 + c.rng.Int64N(n.tickEvery), kind: evTick, node: n.idx, gen: n.inc})
	c.tracef("node %d starts (incarnation %d)", n.id, n.inc)
	c.process(n)
}

// crash kills a node; keep is how many unsynced writes reach the disk.
func (c *Cluster) crash(n *simNode, keep int) {
	if !n.up {
		return
	}
	c.tracef("node %d crashes keeping %d of %d unsynced writes", n.id, keep, len(n.disk.pending))
	n.up = false
	n.inc++
	n.drv, n.crashOnApply = nil, false
	c.stats.Crashes++
	if err := n.disk.crash(keep); err != nil {
		c.fail(fmt.Errorf("node %d crash: %w", n.id, err))
		return
	}
	if err := c.chk.rebuild(n.id, n.disk.durable); err != nil {
		c.fail(err)
	}
}

// process drives a node's Ready loop until it is idle, then maybe compacts.
func (c *Cluster) process(n *simNode) {
	for c.err == nil && n.up {
		done, err := n.drv.Process()
		if errors.Is(err, errCrash) {
			c.crash(n, c.rng.IntN(len(n.disk.pending)+1))
			return
		}
		if err != nil {
			c.fail(fmt.Errorf("node %d: %w", n.id, err))
			return
		}
		if !done {
			break
		}
	}
	if c.err == nil && n.up {
		c.serveReads(n)
		c.maybeCompact(n)
	}
}

func (c *Cluster) maybeCompact(n *simNode) {
	first, _ := n.disk.durable.FirstIndex()
	if n.kv.applied < first || n.kv.applied-first+1 < c.snapEvery {
		return
	}
	err := n.drv.Compact(n.kv.applied, n.kv.Snapshot())
	if errors.Is(err, errCrash) { // in the sync behind it waited for first
		c.crash(n, c.rng.IntN(len(n.disk.pending)+1))
		return
	}
	if err != nil && !errors.Is(err, raft.ErrSnapshotTemporarilyUnavailable) {
		c.fail(fmt.Errorf("node %d compact at %d: %w", n.id, n.kv.applied, err))
	}
}

type transport struct {
	c    *Cluster
	from *simNode
}

func (t transport) Send(msgs []raft.Message) {
	for _, m := range msgs {
		t.c.send(t.from, m)
	}
}

// send puts a message on the wire: it may be lost, delayed, reordered
// (delayed a lot) or duplicated.
func (c *Cluster) send(from *simNode, m raft.Message) {
	c.stats.Messages++
	if m.Type == raft.MsgSnap {
		c.stats.Snapshots++
	}
	to := int(m.To) - 1
	if to < 0 || to >= len(c.nodes) || c.cut[from.idx][to] || c.rng.Float64() < c.net.drop {
		c.stats.Dropped++
		return
	}
	copies := 1
	if c.rng.Float64() < c.net.dup {
		copies = 2
	}
	for range copies {
		delay := c.net.minDelay + c.rng.Int64N(c.net.jitter+1)
		if c.rng.Float64() < c.net.reorder {
			delay += c.rng.Int64N(60)
			if c.rng.IntN(20) == 0 {
				delay += c.rng.Int64N(500) // a message from the past
			}
		}
		c.q.push(event{at: c.now + delay, kind: evDeliver, msg: m})
	}
}

type machine struct {
	c *Cluster
	n *simNode
}

func (m machine) Restore(s raft.Snapshot) error {
	if err := m.n.kv.Restore(s.Data); err != nil {
		return violation{err}
	}
	if err := m.c.chk.onRestore(m.n.id, &s, m.n.kv); err != nil {
		return violation{err}
	}
	return nil
}

func (m machine) Apply(ents []raft.Entry) error {
	if m.n.crashOnApply {
		return errCrash
	}
	for i := range ents {
		e := &ents[i]
		if e.Index != m.n.kv.applied+1 {
			return violation{fmt.Errorf("node %d applies %d after %d", m.n.id, e.Index, m.n.kv.applied)}
		}
		m.n.kv.apply(e)
		if err := m.c.chk.onApply(m.n.id, e, m.n.kv); err != nil {
			return violation{err}
		}
	}
	return nil
}

// step handles one event.
func (c *Cluster) step(ev event) {
	c.stats.Events++
	switch ev.kind {
	case evTick:
		n := c.nodes[ev.node]
		if !n.up || n.inc != ev.gen {
			return
		}
		if c.look(n) {
			n.drv.Node.LivenessChanged()
		}
		if n.lazy != nil { // a leader's sync behind runs at its next tick
			n.lazy.Due()
			n.lazy = nil
		}
		if err := n.drv.Tick(); err != nil {
			c.fail(fmt.Errorf("node %d tick: %w", n.id, err))
			return
		}
		c.process(n)
		c.q.push(event{at: c.now + n.tickEvery, kind: evTick, node: n.idx, gen: n.inc})
	case evDeliver:
		from, to := int(ev.msg.From)-1, int(ev.msg.To)-1
		n := c.nodes[to]
		if !n.up || c.cut[from][to] {
			c.stats.Dropped++
			return
		}
		if c.trace != nil {
			c.tracef("deliver %s", ev.msg)
		}
		if err := n.drv.Step(ev.msg); err != nil {
			c.fail(fmt.Errorf("node %d step %s: %w", n.id, ev.msg, err))
			return
		}
		c.process(n)
	case evRestart:
		if n := c.nodes[ev.node]; !n.up && n.inc == ev.gen {
			c.start(n)
		}
	case evHeal:
		if ev.gen == c.partGen {
			c.Heal()
		}
	case evClient:
		c.clientStep()
	case evFault:
		c.faultStep()
	}
}

// RunFor runs the simulation for ms virtual milliseconds and returns the
// first invariant violation.
func (c *Cluster) RunFor(ms int64) error {
	end := c.now + ms
	for c.err == nil && len(c.q.evs) > 0 && c.q.peek().at <= end {
		ev := c.q.pop()
		c.now = ev.at
		c.step(ev)
	}
	if c.err == nil {
		c.now = end
	}
	return c.err
}

// Crash kills node i now; keep unsynced writes survive.
func (c *Cluster) Crash(i, keep int) { c.crash(c.nodes[i], keep) }

// Restart boots a crashed node i from its disk.
func (c *Cluster) Restart(i int) {
	if n := c.nodes[i]; !n.up {
		c.start(n)
	}
}

// Partition splits the nodes into groups that cannot talk to each other.
// Nodes not listed form one more group.
func (c *Cluster) Partition(groups ...[]int) {
	group := make([]int, len(c.nodes))
	for i := range group {
		group[i] = -1
	}
	for g, members := range groups {
		for _, i := range members {
			group[i] = g
		}
	}
	for a := range c.nodes {
		for b := range c.nodes {
			c.cut[a][b] = group[a] != group[b]
		}
	}
	c.partGen++
	c.stats.Partitions++
	c.tracef("partition %v", groups)
}

// Heal removes every partition.
func (c *Cluster) Heal() {
	for a := range c.cut {
		for b := range c.cut[a] {
			c.cut[a][b] = false
		}
	}
	c.partGen++
	c.tracef("heal")
}

// Leader returns the index of an up node that is leader and ready, or -1.
func (c *Cluster) Leader() int {
	best, term := -1, uint64(0)
	for _, n := range c.nodes {
		if ss := n.softState(); ss.LeaderReady && ss.Term >= term {
			best, term = n.idx, ss.Term
		}
	}
	return best
}

func (n *simNode) softState() raft.SoftState {
	if !n.up {
		return raft.SoftState{}
	}
	return n.drv.Node.SoftState()
}

// Propose has the current leader propose k compare-and-set commands and
// returns how many it accepted.
func (c *Cluster) Propose(k int) int {
	l := c.Leader()
	if l < 0 {
		return 0
	}
	return c.proposeOn(c.nodes[l], k)
}

func (c *Cluster) proposeOn(n *simNode, k int) int {
	ok := 0
	for range k {
		key := "k" + strconv.Itoa(c.rng.IntN(4))
		expected := n.kv.Get(key)
		if c.rng.IntN(4) == 0 && c.nextVal > 0 {
			expected = "v" + strconv.Itoa(c.rng.IntN(c.nextVal)) // likely stale
		}
		val := "v" + strconv.Itoa(c.nextVal)
		c.nextVal++
		data := CAS(key, expected, val)
		if err := n.drv.Node.Propose(data); err == nil {
			ok++
			c.accepted = append(c.accepted, string(data))
		}
	}
	if ok > 0 {
		c.tracef("node %d accepted %d proposals", n.id, ok)
	}
	c.process(n)
	return ok
}
