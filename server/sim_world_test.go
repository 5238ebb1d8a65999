package server

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// The stream simulator: 3 or 5 real servers (JetStream, the meta group,
// replicated streams on the file and the memory store, walLog, linked
// and full snapshots) whose raft groups are driven by one goroutine in an
// order a seed chooses, over a simulated network (drop, delay, reorder,
// duplicate, partition) and simulated disks (vfs.MemFS: crashes and power
// losses drop unsynced writes and tear the last ones). Time is virtual:
// a run of seconds takes milliseconds. The checker (sim_check_test.go)
// watches every step; clients (sim_client_test.go) publish with and
// without compare-and-set expectations.

// simEvent is something that happens at a virtual time; ties run in the
// order they were scheduled.
type simEvent struct {
	at, seq int64
	fn      func()
}

type simQueue []*simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || q[i].at == q[j].at && q[i].seq < q[j].seq
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(*simEvent)) }
func (q *simQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

var simDebugGroup = os.Getenv("SIM_DEBUG_GROUP")

const simDebugEvery = 1

// simNet is the network's current misbehaviour.
type simNet struct {
	drop, dup        float64 // probability per message
	minDelay, jitter int64   // ms; jitter reorders
}

// simWorld is one simulated cluster.
type simWorld struct {
	opts  simOptions
	rng   *rand.Rand
	now   int64 // virtual ms since the start
	seq   int64
	q     simQueue
	nodes []*simNode
	// damaged is the server whose store the last damage fault hit, until
	// it has repaired every replica (sim_damage_test.go).
	damaged *simNode
	byID    map[raft.ID]*simNode
	cut     [][]bool // cut[a][b]: messages a → b are lost
	net     simNet
	chk     *simChecker
	stats   simStats
	err     error // the first invariant broken
	trace   []string
	// clients and the operations they issued (sim_client_test.go).
	clients []*simClient
	ops     []*simOp
	reads   []*simRead // sim_read_test.go
	streams []StreamConfig
	cons    simConsumerClient
	// clk is every server's clock: virtual time, advanced before each
	// event (its timers' callbacks run then, on this goroutine).
	clk *clock.Manual
}

type simOptions struct {
	seed     uint64
	nodes    int
	duration int64 // ms of faults and clients; then heal and converge
	verbose  bool
	// always runs the servers with sync_interval: always; without it and
	// without optOut they run the default config. Both are durable: a
	// publish is acknowledged once fsynced, a crash is a power loss of
	// the machine (unsynced writes dropped, the last ones torn) and all
	// machines may lose power at once.
	always bool
	// optOut runs the servers with an explicit sync_interval of 2 minutes
	// (the documented opt-out): a crash is a kill -9, the kernel keeping
	// what the process wrote.
	optOut bool
	// powerLoss makes every crash a power loss under optOut too: a
	// measurement of what the opt-out loses (-sim.powerloss; the run
	// reports lost acknowledged publishes instead of failing).
	powerLoss bool
	// sabotage, if set, makes a replica skip applying an entry (the
	// checker's own test: a divergence must be caught).
	sabotage func(n *simNode, e *raft.Entry) bool
	dir      string // the store directory on every node's MemFS
	// consumers adds a pull consumer client of stream F (sim_consumer_test.go).
	consumers bool
	// reads adds readers (sim_read_test.go) and lets the streams serve
	// direct gets; staleReads runs the servers with stale_direct_reads
	// (the check's own test: a stale read must be caught).
	reads, staleReads bool
}

// durable reports whether the servers acknowledge only what is fsynced.
func (o simOptions) durable() bool { return !o.optOut }

// syncInterval is the servers' Options.SyncInterval: 0 (the default
// config) unless the run opts out.
func (o simOptions) syncInterval() time.Duration {
	if o.optOut {
		return 2 * time.Minute
	}
	return 0
}

type simStats struct {
	Events, Messages, Dropped, Spooled      int
	Crashes, PowerLosses, Partitions, Moves int
	Damages                                 int // stores damaged (sim_damage_test.go)
	Acked, Rejected, Unknown                int
	Installs, LocalRestores                 int
	Lost                                    int // acknowledged publishes lost (-sim.powerloss)
	Reads                                   int // reads answered (simOptions.reads)
	Quiesced                                int // runs whose groups all quiesced (sim_quiesce_test.go)
}

// simNode is one machine: a disk that outlives its server incarnations.
type simNode struct {
	w    *simWorld
	idx  int
	name string
	id   raft.ID
	disk *vfs.MemFS
	fs   *simFS // this incarnation's view of disk
	srv  *Server
	inc  int
	up   bool
	// booting: the server is starting but runs no group yet; its peers
	// see it live (its routes are up), what they send it is lost
	// (quiescePhase: a replica that starts late).
	booting bool
	// groups are the raft groups of this incarnation, in start order;
	// hostGroup is told of them (from this goroutine in practice, but a
	// lock keeps it safe from any).
	mu     sync.Mutex
	groups []*raftGroup
	halted map[*raftGroup]bool
	// view is the node liveness this node's groups see, looked at on
	// every tick as a server's raft clock does (raft_live.go).
	view map[raft.ID]raft.PeerHealth
}

func newSimWorld(o simOptions) *simWorld {
	w := &simWorld{opts: o, rng: rand.New(rand.NewPCG(o.seed, 0x7465726e)), byID: map[raft.ID]*simNode{},
		net: simNet{minDelay: 1, jitter: 4}}
	w.clk = clock.NewManual(w.virtual())
	w.chk = newSimChecker(w)
	names := make([]string, o.nodes)
	for i := range names {
		names[i] = fmt.Sprintf("S%d", i+1)
	}
	for i, name := range names {
		n := &simNode{w: w, idx: i, name: name, id: raftID(name), disk: vfs.NewMem()}
		w.nodes = append(w.nodes, n)
		w.byID[n.id] = n
		// The meta group's members, as a first start would have
		// learned them from the routes, durable before anything else.
		dir := filepath.Join(o.dir, "jetstream", "_raft_", metaGroupName)
		b, _ := json.Marshal(names)
		if err := vfs.MkdirAllSynced(n.disk, dir, 0o750); err != nil {
			panic(err)
		}
		if err := vfs.WriteFileAtomic(n.disk, filepath.Join(dir, "peers.json"), b); err != nil {
			panic(err)
		}
	}
	w.cut = make([][]bool, o.nodes)
	for i := range w.cut {
		w.cut[i] = make([]bool, o.nodes)
	}
	return w
}

func (w *simWorld) at(delay int64, fn func()) {
	w.seq++
	heap.Push(&w.q, &simEvent{at: w.now + delay, seq: w.seq, fn: fn})
}

func (w *simWorld) logf(format string, args ...any) {
	line := fmt.Sprintf("%7dms ", w.now) + fmt.Sprintf(format, args...)
	if simDebugGroup != "" {
		fmt.Fprintln(os.Stderr, line)
	}
	w.trace = append(w.trace, line)
	if len(w.trace) > 400 {
		w.trace = w.trace[len(w.trace)-300:]
	}
}

// fail records the first broken invariant; the run stops at the next event.
func (w *simWorld) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf(format, args...)
		w.logf("VIOLATION: %v", w.err)
	}
}

// runUntil runs events until virtual time end (or a violation).
func (w *simWorld) runUntil(end int64, done func() bool) bool {
	for w.q.Len() > 0 && w.err == nil {
		if done != nil && done() {
			return true
		}
		e := w.q[0]
		if e.at > end {
			break
		}
		heap.Pop(&w.q)
		w.advance(e.at)
		w.stats.Events++
		e.fn()
	}
	w.advance(max(w.now, end))
	return done != nil && done()
}

// advance moves virtual time, and the servers' clock with it.
func (w *simWorld) advance(to int64) {
	if to > w.now {
		w.now = to
		w.clk.Advance(w.virtual().Sub(w.clk.Now()))
	}
}

// virtual is the wall-clock time the simulation shows its servers.
func (w *simWorld) virtual() time.Time {
	return time.Unix(1_700_000_000, 0).Add(time.Duration(w.now) * time.Millisecond)
}

// start boots a new incarnation of n's server on its disk.
func (n *simNode) start() {
	w := n.w
	n.inc++
	n.fs = &simFS{FS: n.disk}
	n.groups, n.halted = nil, map[*raftGroup]bool{}
	o := &Options{ServerName: n.name, Host: "127.0.0.1", DontListen: true, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: w.opts.dir, SyncAlways: w.opts.always, SyncInterval: w.opts.syncInterval(),
		JetStreamStaleDirectReads: w.opts.staleReads, fsys: n.fs, clock: w.clk, raftHost: &simHost{n: n, inc: n.inc}}
	s, err := NewServer(o)
	if err != nil {
		w.fail("%s: NewServer: %v", n.name, err)
		return
	}
	s.SetLogger(simLog{n, n.inc}, false, false)
	n.srv = s
	n.up, n.booting = true, false
	s.Start()
	acc := s.globalAccount()
	inc := n.inc
	if _, err := acc.subscribeInternal(simReplyPrefix+">", "", func(_ *subscription, _ *client, _ *Account, subject, _ string, _, msg []byte) {
		w.onReply(n, inc, subject, msg)
	}); err != nil {
		w.fail("%s: reply subscription: %v", n.name, err)
	}
	if w.opts.consumers {
		w.subscribeConsumerClient(n, inc)
	}
	if w.opts.reads {
		w.subscribeReadClient(n)
	}
	w.logf("%s: started (incarnation %d)", n.name, n.inc)
	n.pump()
	tickInc := n.inc
	var tick func()
	tick = func() {
		if !n.up || n.inc != tickInc {
			return
		}
		n.tick()
		w.at(raftTick.Milliseconds(), tick)
	}
	w.at(w.rng.Int64N(raftTick.Milliseconds())+1, tick)
	var duties func()
	duties = func() {
		if !n.up || n.inc != tickInc {
			return
		}
		n.duties()
		w.at(leaderAnnounceEvery.Milliseconds(), duties)
	}
	w.at(w.rng.Int64N(leaderAnnounceEvery.Milliseconds())+1, duties)
	var leavers func()
	leavers = func() {
		if !n.up || n.inc != tickInc {
			return
		}
		if jc := n.cluster(); jc != nil {
			jc.stepLeavers()
			n.pump()
		}
		w.at(leaveLookEvery.Milliseconds(), leavers)
	}
	w.at(w.rng.Int64N(leaveLookEvery.Milliseconds())+1, leavers)
}

// duties runs what a server's own goroutines do every second: leader
// announcements and membership reconciliation, usage reports, and a
// sync of every replicated file store.
func (n *simNode) duties() {
	jc := n.cluster()
	if jc == nil {
		return
	}
	jc.reannounce()
	jc.reportUsage()
	for _, mset := range n.srv.js.Load().replicatedStreams() {
		if err := mset.st().Sync(); err != nil && err != ErrStoreClosed {
			n.w.fail("%s: syncing stream %s: %v", n.name, mset.name, err)
		}
	}
	n.pump()
}

// crash stops n at once: what it did not sync is lost (and the last
// unsynced writes of each file may survive in part: a torn write).
func (n *simNode) crash() {
	if !n.up {
		return
	}
	w := n.w
	n.up = false
	n.fs.fence()
	if w.opts.durable() || w.opts.powerLoss {
		// How much of each file's unsynced tail survives depends on the
		// file and one draw per crash, not on the order the file system
		// visits its files in (a map's: random).
		salt := w.rng.Uint64()
		n.disk.CrashKeep(func(name string, _ int) int {
			h := fnv.New64a()
			h.Write([]byte(name))
			return int((h.Sum64() ^ salt) % 4096)
		})
		w.logf("%s: lost power", n.name)
	} else {
		n.disk.Kill()
		w.logf("%s: killed", n.name)
	}
	// The old incarnation's goroutines and timers stop; its disk writes
	// fail from now on (the fence), so nothing it does after the crash
	// reaches the disk.
	n.srv.Shutdown()
	n.srv = nil
	n.groups = nil
}

// tick advances every group of n by one tick; as on a server, a group
// asleep (quiescent) gets none, and every group hears of a change of the
// node liveness view first.
func (n *simNode) tick() {
	now := n.w.virtual()
	changed := n.look()
	for _, g := range n.liveGroups() {
		if changed {
			g.onLiveness()
		}
		if g.asleep() {
			if err := g.settle(); err != nil {
				n.halt(g, err)
			}
			continue
		}
		err := g.onTick(now)
		if err == nil {
			err = g.settle()
		}
		if err != nil {
			n.halt(g, err)
		}
	}
	n.pump()
}

// look updates n's node liveness view: a peer is live while it is up and
// no partition separates them; its epoch is its incarnation. It reports
// whether the view changed.
func (n *simNode) look() bool {
	view := map[raft.ID]raft.PeerHealth{}
	for _, m := range n.w.nodes {
		if m != n && (m.up || m.booting) && !n.w.cut[n.idx][m.idx] && !n.w.cut[m.idx][n.idx] {
			inc := m.inc
			if m.booting {
				inc++ // the incarnation starting
			}
			view[m.id] = raft.PeerHealth{Live: true, Quiesces: true, Epoch: uint64(inc)}
		}
	}
	if maps.Equal(view, n.view) {
		return false
	}
	n.view = view
	return true
}

func (n *simNode) liveGroups() []*raftGroup {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*raftGroup, 0, len(n.groups))
	for _, g := range n.groups {
		select {
		case <-g.quit:
			continue
		default:
		}
		if !n.halted[g] {
			out = append(out, g)
		}
	}
	return out
}

// halt marks a group that stopped on an error; on a live node that is a
// broken invariant (a storage failure or a core panic).
func (n *simNode) halt(g *raftGroup, err error) {
	n.mu.Lock()
	n.halted[g] = true
	n.mu.Unlock()
	g.fail(err)
	n.w.fail("%s: group %s halted: %v", n.name, g.name, err)
}

// pump runs every group's queued work (messages, proposals, control
// calls) and processes its Readys, until no group has any left. Applying
// a meta entry may start groups, which are pumped too.
func (n *simNode) pump() {
	defer n.w.chk.observe(n)
	for round := 0; n.up; round++ {
		if round > 10_000 {
			n.w.fail("%s: groups never run out of work", n.name)
			return
		}
		worked := false
		for _, g := range n.liveGroups() {
			did, err := n.runGroup(g)
			if err != nil {
				n.halt(g, err)
				continue
			}
			worked = worked || did
		}
		if !worked {
			return
		}
	}
}

// runGroup takes one of each kind of work the group has waiting, as the
// group goroutine's select would, and settles.
func (n *simNode) runGroup(g *raftGroup) (bool, error) {
	did := false
	select {
	case <-g.inbox.ready:
		did = true
		if err := g.step(); err != nil {
			return did, err
		}
	default:
	}
	select {
	case <-g.props.ready:
		did = true
		g.propose()
	default:
	}
	select {
	case <-g.reads.ready:
		did = true
		g.startReads()
	default:
	}
	if len(g.ctrl) > 0 || len(g.halts) > 0 {
		did = true
		if err := g.runControls(); err != nil {
			return did, err
		}
	}
	if !did {
		return false, nil
	}
	return true, g.settle()
}

// simHost is the raftHost of one incarnation of a node.
type simHost struct {
	n   *simNode
	inc int
}

func (h *simHost) hostGroup(s *Server, g *raftGroup) {
	n := h.n
	n.mu.Lock()
	n.groups = append(n.groups, g)
	n.mu.Unlock()
	g.drv.SM = n.w.chk.wrap(n, g)
	if snap, err := g.log.Snapshot(); err == nil && !snap.IsEmpty() {
		n.w.stats.LocalRestores++ // restored from its own log's snapshot at start
		if simDebugGroup != "" {
			n.w.logf("%s %s: started from its snapshot at %d", n.name, g.name, snap.Index)
		}
	}
}

func (h *simHost) peerHealth(_ *Server, id raft.ID) raft.PeerHealth { return h.n.view[id] }

func (h *simHost) transport(s *Server, group string) raft.Transport {
	return &simTransport{h: h, group: group}
}

// simTransport carries a group's messages as the bytes a route would:
// every message is encoded, and a snapshot held as a local file (linked
// or spooled) is expanded first, so nothing local crosses.
type simTransport struct {
	h     *simHost
	group string
}

func (t *simTransport) Send(msgs []raft.Message) {
	n := t.h.n
	if !n.up || n.inc != t.h.inc {
		return
	}
	for i := range msgs {
		n.w.send(n, t.group, &msgs[i])
	}
}

// send encodes m and schedules its delivery under the network's faults.
func (w *simWorld) send(from *simNode, group string, m *raft.Message) {
	to := w.byID[m.To]
	if to == nil {
		return
	}
	w.stats.Messages++
	if simDebugGroup != "" && (group == simDebugGroup || simDebugGroup == "*") && w.stats.Messages%simDebugEvery == 0 {
		w.logf("%s %s: %v", from.name, group, m)
	}
	out := *m
	if m.Snapshot != nil && m.Snapshot.Local != nil {
		data, err := from.expandSnapshot(group, m.Snapshot)
		if err != nil {
			w.logf("%s: snapshot for %s not sent: %v", from.name, to.name, err)
			return
		}
		snap := *m.Snapshot
		snap.Data, snap.Local = data, nil
		out.Snapshot = &snap
	}
	payload := appendRaftPayload(nil, group, &out)
	if w.cut[from.idx][to.idx] || w.rng.Float64() < w.net.drop {
		w.stats.Dropped++
		return
	}
	copies := 1
	if w.rng.Float64() < w.net.dup {
		copies = 2
	}
	inc := to.inc
	for range copies {
		delay := w.net.minDelay + w.rng.Int64N(w.net.jitter+1)
		w.at(delay, func() { w.deliver(from, to, inc, payload) })
	}
}

// deliver hands a payload to its group at to, in memory or, for a large
// one at random, through a spool file as a route receives big snapshots.
func (w *simWorld) deliver(from, to *simNode, inc int, payload []byte) {
	if !to.up || to.inc != inc || w.cut[from.idx][to.idx] {
		w.stats.Dropped++
		return
	}
	var err error
	if len(payload) > 4096 && w.rng.IntN(2) == 0 {
		w.stats.Spooled++
		err = to.deliverSpooled(payload)
	} else {
		err = to.srv.deliverRaft(payload, true)
	}
	if err != nil {
		w.fail("%s: a message from %s was refused: %v", to.name, from.name, err)
		return
	}
	to.pump()
}

func (n *simNode) deliverSpooled(payload []byte) error {
	spool, err := n.srv.createSpool(uint64(n.w.seq))
	if err != nil {
		return err
	}
	if _, err := spool.Write(payload); err != nil {
		spool.discard()
		return err
	}
	return n.srv.deliverSpooled(spool, len(payload))
}

// expandSnapshot reads the data of a snapshot held as a local file, as
// the route sender does (stream_snapshot_send.go).
func (n *simNode) expandSnapshot(group string, snap *raft.Snapshot) ([]byte, error) {
	var f vfs.File
	var size int64
	var err error
	switch l := snap.Local.(type) {
	case spooledSnap:
		f, _, err = l.open(n.srv.jsFS())
		size = l.Size
		if err == nil {
			buf := make([]byte, size)
			_, err = f.ReadAt(buf, l.Off)
			f.Close()
			return buf, err
		}
	case linkedSnap:
		g := n.srv.raftGroup(group)
		if g == nil {
			return nil, fmt.Errorf("no group %s", group)
		}
		ex, ok := g.sm.(snapshotExpander)
		if !ok {
			return nil, fmt.Errorf("group %s cannot expand", group)
		}
		f, size, err = ex.expandSnapshot(snap.Local)
	default:
		return nil, fmt.Errorf("unknown local snapshot %T", snap.Local)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, size)
	_, err = f.ReadAt(buf, 0)
	return buf, err
}

// upNodes lists the running nodes in index order.
func (w *simWorld) upNodes() []*simNode {
	var out []*simNode
	for _, n := range w.nodes {
		if n.up {
			out = append(out, n)
		}
	}
	return out
}

// simFS is one incarnation's view of a node's disk: once fenced (the
// incarnation crashed) every operation fails, so a goroutine of a dead
// server cannot write to the disk its successor uses.
type simFS struct {
	vfs.FS
	mu     sync.RWMutex
	fenced bool
}

func (f *simFS) fence() {
	f.mu.Lock()
	f.fenced = true
	f.mu.Unlock()
}

func (f *simFS) check() error {
	if f.fenced {
		return vfs.ErrCrashed
	}
	return nil
}

func (f *simFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if err := f.check(); err != nil {
		return nil, err
	}
	return f.FS.OpenFile(name, flag, perm)
}

func (f *simFS) do(op func() error) error {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if err := f.check(); err != nil {
		return err
	}
	return op()
}

func (f *simFS) Remove(name string) error { return f.do(func() error { return f.FS.Remove(name) }) }
func (f *simFS) RemoveAll(name string) error {
	return f.do(func() error { return f.FS.RemoveAll(name) })
}
func (f *simFS) Rename(a, b string) error { return f.do(func() error { return f.FS.Rename(a, b) }) }
func (f *simFS) Link(a, b string) error   { return f.do(func() error { return f.FS.Link(a, b) }) }
func (f *simFS) SyncDir(dir string) error { return f.do(func() error { return f.FS.SyncDir(dir) }) }
func (f *simFS) MkdirAll(dir string, perm os.FileMode) error {
	return f.do(func() error { return f.FS.MkdirAll(dir, perm) })
}

// sortedNames lists map keys in order (deterministic iteration).
func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// simLog puts a server's warnings and errors (and, verbose, its notices)
// in the run's trace.
type simLog struct {
	n   *simNode
	inc int
}

func (l simLog) line(level, format string, v ...any) {
	if !l.n.up || l.n.inc != l.inc {
		return // a crashed incarnation going down
	}
	l.n.w.logf("%s %s: %s", l.n.name, level, fmt.Sprintf(format, v...))
}
func (l simLog) Noticef(format string, v ...any) {
	if l.n.w.opts.verbose {
		l.line("notice", format, v...)
	}
}
func (l simLog) Warnf(format string, v ...any)  { l.line("warn", format, v...) }
func (l simLog) Errorf(format string, v ...any) { l.line("error", format, v...) }
func (l simLog) Fatalf(format string, v ...any) {
	l.n.w.fail("%s fatal: %s", l.n.name, fmt.Sprintf(format, v...))
}
func (l simLog) Debugf(string, ...any) {}
func (l simLog) Tracef(string, ...any) {}
