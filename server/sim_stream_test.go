package server

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

var (
	simSeed     = flag.Uint64("sim.seed", 0, "run the stream simulator with this one seed (a replay)")
	simSeeds    = flag.Int("sim.seeds", 0, "how many seeds the simulator tests run (0: their default)")
	simFirst    = flag.Uint64("sim.first", 1, "with -sim.seeds: the first seed")
	simNodes    = flag.Int("sim.nodes", 0, "servers per run: 3 or 5 (0: chosen by the seed)")
	simDuration = flag.Int64("sim.duration", 0, "virtual ms of faults and clients per run (0: chosen by the seed)")
	simVerbose  = flag.Bool("sim.v", false, "print the trace of every run")
	simPowerOff = flag.Bool("sim.powerloss", false, "every crash is a power loss, under the opt-out sync_interval too; "+
		"what the opt-out loses is counted (Lost), not failed")
)

// TestSimStream runs the stream simulator over a few seeds under the
// race detector (TestNoRaceSimStream runs thousands without it). A
// failing seed prints the command that replays it.
func TestSimStream(t *testing.T) {
	runSimSeeds(t, 1, 20)
	if *simSeed == 0 && *simSeeds == 0 {
		for _, seed := range simRegressionSeeds {
			if _, err := runSimStream(t, seed); err != nil {
				t.Fatalf("regression seed %d: %v\nreplay: go test ./server -run 'TestSimStream$' -count=1 -v -sim.seed=%d", seed, err, seed)
			}
		}
	}
}

// simRegressionSeeds found bugs once; they run on every TestSimStream.
//   - 2845: a replica removed from a stream deleted its raft log; a power
//     loss lost the uncommitted removal, the replay of the meta log revived
//     the replica with an empty log, and its vote elected a leader that
//     overwrote committed entries (stopReplicaIf keeps the log now).
//   - 2431: a replica that discarded its log after a deleted snapshot
//     block abstained from elections until it heard from a leader, while
//     the only other member left (the removal of the third appended, not
//     committed) needed its vote to become one: no leader ever (it votes
//     now, against the discarded log's last entry, raft.Config.
//     RecoveringFloor).
//   - 777213: two moves in a row each removed the leaving member before
//     adding its replacement, so stream F's group shrank to one member;
//     that member's damaged store was then the only copy, and the two
//     empty joiners could elect no one (nextPeerChange adds first now).
//   - 659998598: a server replaying its meta log after a power loss
//     applied an old placement of stream M without it and removed M's
//     group directory, acknowledged entries and all; the next placement
//     added it back empty, and its vote elected the old leader, whose
//     unsynced tail the power loss took (removals wait for the end of the
//     replay now: jetstream_replay_leaves.go).
//   - 659990870: a linked snapshot missing a block restored as many
//     messages, first and last as it should (the block held a message and
//     the tombstone of another of the same size); the replica diverged at
//     the next per-subject limit (a checkpoint that lists a missing block
//     is damage now: CheckpointMismatched).
var simRegressionSeeds = []uint64{2845, 2431, 777213, 659998598, 659990870}

// runSimSeeds runs count seeds from first, or what the flags ask for.
func runSimSeeds(t *testing.T, first uint64, count int) {
	if testing.Short() && *simSeed == 0 {
		t.Skip("the stream simulator runs seeds for a while")
	}
	setForTest(t, &fileStoreBlockSize, 2048) // sealed blocks: linked snapshots
	seeds := []uint64{}
	if *simSeed != 0 {
		seeds = append(seeds, *simSeed)
	} else {
		if *simSeeds != 0 {
			first, count = *simFirst, *simSeeds
		}
		for i := range uint64(count) {
			seeds = append(seeds, first+i)
		}
	}
	var total simStats
	start := time.Now()
	lossy, optOut := 0, 0 // -sim.powerloss: opt-out runs, and those that lost what they acknowledged
	for _, seed := range seeds {
		w, err := runSimStream(t, seed)
		total.add(w.stats)
		if w.opts.optOut {
			optOut++
		}
		if *simPowerOff && !w.opts.durable() && (err != nil || w.stats.Lost > 0) {
			lossy++
			t.Logf("seed %d (opt-out sync_interval, power losses): %d acknowledged publishes lost; %v", seed, w.stats.Lost, err)
			continue
		}
		if err != nil || *simVerbose {
			fmt.Fprintln(os.Stderr, strings.Join(w.trace, "\n"))
		}
		if err != nil {
			t.Fatalf("seed %d: %v\nstats %+v\nreplay: go test ./server -run 'TestSimStream$' -count=1 -v -sim.seed=%d", seed, err, w.stats, seed)
		}
	}
	t.Logf("%d seeds in %v: %+v", len(seeds), time.Since(start).Round(time.Millisecond), total)
	if *simPowerOff {
		t.Logf("-sim.powerloss: %d of %d seeds run with the opt-out sync_interval lost acknowledged publishes or "+
			"rewrote committed entries; the other %d (the default config and always) lose nothing or fail",
			lossy, optOut, len(seeds)-optOut)
	}
}

func (s *simStats) add(o simStats) {
	s.Events += o.Events
	s.Messages += o.Messages
	s.Dropped += o.Dropped
	s.Spooled += o.Spooled
	s.Crashes += o.Crashes
	s.PowerLosses += o.PowerLosses
	s.Partitions += o.Partitions
	s.Moves += o.Moves
	s.Damages += o.Damages
	s.Acked += o.Acked
	s.Rejected += o.Rejected
	s.Unknown += o.Unknown
	s.Installs += o.Installs
	s.LocalRestores += o.LocalRestores
	s.Lost += o.Lost
	s.Reads += o.Reads
	s.Quiesced += o.Quiesced
}

// runSimStream runs one seed: boot, create the streams through the meta
// group, run clients under faults, heal, converge, check.
func runSimStream(t testing.TB, seed uint64) (*simWorld, error) {
	return runSimStreamWith(t, simOptions{seed: seed})
}

func runSimStreamWith(t testing.TB, o simOptions) (*simWorld, error) {
	seed := o.seed
	o.dir, o.verbose = "/sim/store", *simVerbose
	pick := rand.New(rand.NewPCG(seed, 1))
	o.nodes = []int{3, 3, 5}[pick.IntN(3)]
	if *simNodes != 0 {
		o.nodes = *simNodes
	}
	o.duration = 2000 + pick.Int64N(6000)
	if *simDuration != 0 {
		o.duration = *simDuration
	}
	o.always = pick.IntN(2) == 0
	o.optOut = !o.always && pick.IntN(4) == 0
	o.powerLoss = o.powerLoss || *simPowerOff
	w := newSimWorld(o)
	// Snapshots often, linked or full, so that they are taken, sent and
	// installed within a short run.
	setForTest(t, &snapshotEvery, 16+w.rng.Uint64N(48))
	setForTest(t, &linkedSnapshots, w.rng.IntN(3) > 0)
	defer w.shutdown()
	w.logf("seed %d: %d servers, %d ms, always %v, opt-out %v, snapshots every %d entries, linked %v", seed, w.opts.nodes,
		w.opts.duration, w.opts.always, w.opts.optOut, snapshotEvery, linkedSnapshots)
	for _, n := range w.nodes {
		n.start()
	}
	if w.err != nil {
		return w, w.err
	}
	if !w.runUntil(w.now+20_000, w.metaLeader) {
		w.fail("no meta leader after 20 s")
		return w, w.err
	}
	w.createStreams()
	if !w.runUntil(w.now+20_000, w.streamsLed) {
		w.fail("streams without a leader 20 s after their creation")
		return w, w.err
	}
	if w.opts.consumers {
		w.cons.acked, w.cons.bound = map[uint64]bool{}, map[uint64]uint64{}
		w.cons.csqs = map[uint64]string{}
		if !w.runUntil(w.now+20_000, w.createConsumer) {
			w.fail("no consumer 20 s after its creation")
			return w, w.err
		}
	}
	w.opts.duration += w.now
	for _, cfg := range w.streams {
		w.addClient(cfg.Name)
		w.addClient(cfg.Name)
	}
	if w.opts.consumers {
		w.at(w.rng.Int64N(100)+1, w.consumerStep)
	}
	if w.opts.reads {
		for range 4 {
			w.at(w.rng.Int64N(20)+1, w.readStep)
		}
	}
	w.at(w.rng.Int64N(500), w.faultStep)
	w.runUntil(w.opts.duration, nil)
	if w.err != nil {
		return w, w.err
	}
	w.heal()
	if !w.runUntil(w.now+60_000, w.converged) {
		w.fail("no convergence 60 s after the faults stopped: %s", w.convergeReport())
	}
	if w.err == nil {
		w.quiescePhase()
	}
	if w.err == nil {
		w.final()
	}
	for _, op := range w.ops {
		if op.answers == 0 && op.errText != "no responders" {
			w.stats.Unknown++
		}
	}
	return w, w.err
}

func (w *simWorld) shutdown() {
	for _, n := range w.nodes {
		if n.up {
			n.fs.fence()
			n.srv.Shutdown()
			n.up = false
		}
	}
}

func (n *simNode) cluster() *jsCluster {
	if n.srv == nil {
		return nil
	}
	js := n.srv.js.Load()
	if js == nil {
		return nil
	}
	return js.cluster
}

func (n *simNode) stream(name string) *stream {
	if n.srv == nil {
		return nil
	}
	js := n.srv.js.Load()
	if js == nil {
		return nil
	}
	jsa := js.account(globalAccountName)
	if jsa == nil {
		return nil
	}
	jsa.mu.Lock()
	defer jsa.mu.Unlock()
	return jsa.streams[name]
}

func (w *simWorld) metaLeader() bool {
	for _, n := range w.upNodes() {
		if jc := n.cluster(); jc != nil && jc.isMetaLeader() {
			return true
		}
	}
	return false
}

// createStreams proposes the streams to the meta group through its
// leader, placed as the API would place them: one on the file store, one
// in memory.
func (w *simWorld) createStreams() {
	var leader *simNode
	for _, n := range w.upNodes() {
		if jc := n.cluster(); jc != nil && jc.isMetaLeader() {
			leader = n
		}
	}
	jc := leader.cluster()
	replicas := 3
	if w.opts.nodes == 5 && w.rng.IntN(2) == 0 {
		replicas = 5
	}
	for _, st := range []StorageType{FileStorage, MemoryStorage} {
		name := "F"
		if st == MemoryStorage {
			name = "M"
		}
		cfg := StreamConfig{Name: name, Subjects: []string{name + ".>"}, Storage: st, Replicas: replicas,
			MaxMsgsPer: 1 + w.rng.Int64N(4), AllowDirect: w.opts.reads}
		cfg.normalize()
		peers, err := jc.placePeers(cfg.Replicas, nil)
		if err != nil {
			w.fail("placing %s: %v", name, err)
			return
		}
		sa := &streamAssignment{Account: globalAccountName, Config: cfg, Peers: peers, Created: w.virtual().UTC()}
		jc.proposeMeta(&metaEntry{Op: "add", SA: sa}, func(e *ApiError) { w.fail("creating %s: %v", name, e) })
		w.streams = append(w.streams, cfg)
		w.logf("stream %s (%v, R%d, %d per subject) on %v", name, st, replicas, cfg.MaxMsgsPer, peers)
	}
	leader.pump()
}

// streamLeader returns the node serving the stream, if exactly one does.
func (w *simWorld) streamLeader(name string) *simNode {
	var lead *simNode
	for _, n := range w.upNodes() {
		if m := n.stream(name); m != nil && m.isLeader() {
			if lead != nil {
				return nil
			}
			lead = n
		}
	}
	return lead
}

func (w *simWorld) streamsLed() bool {
	for _, cfg := range w.streams {
		if w.streamLeader(cfg.Name) == nil {
			return false
		}
	}
	return true
}

// faultStep injects the next fault while the clients run.
func (w *simWorld) faultStep() {
	if w.now >= w.opts.duration {
		return
	}
	up := w.upNodes()
	switch r := w.rng.IntN(13); {
	case r < 3 && len(up) > 0:
		n := up[w.rng.IntN(len(up))]
		w.stats.Crashes++
		n.crash()
		w.at(100+w.rng.Int64N(2000), func() {
			if !n.up {
				n.start()
			}
		})
	case r == 3 && (w.opts.durable() || w.opts.powerLoss) && len(up) == len(w.nodes) && w.rng.IntN(3) == 0:
		w.stats.PowerLosses++
		w.logf("power loss")
		for _, n := range up {
			n.crash()
		}
		for _, n := range up {
			w.at(100+w.rng.Int64N(1000), func() {
				if !n.up {
					n.start()
				}
			})
		}
	case r < 6:
		w.stats.Partitions++
		w.partition()
		w.at(200+w.rng.Int64N(3000), w.healNet)
	case r == 12 && w.opts.durable() && len(up) == len(w.nodes) && !w.repairing():
		w.damageFault(up) // sim_damage_test.go
	case r >= 8 && r <= 9 && w.opts.nodes == 5:
		w.moveReplica()
	case r < 8:
		w.net = simNet{drop: w.rng.Float64() * 0.3, dup: w.rng.Float64() * 0.2, minDelay: 1 + w.rng.Int64N(5), jitter: w.rng.Int64N(60)}
		w.logf("network: %+v", w.net)
	}
	w.at(100+w.rng.Int64N(1500), w.faultStep)
}

// moveReplica takes a random server out of a stream's placement and puts
// the replacement placement picks in, as STREAM.PEER.REMOVE does, through
// the meta leader.
func (w *simWorld) moveReplica() {
	var leader *simNode
	for _, n := range w.upNodes() {
		if jc := n.cluster(); jc != nil && jc.isMetaLeader() {
			leader = n
		}
	}
	if leader == nil {
		return
	}
	jc := leader.cluster()
	cfg := w.streams[w.rng.IntN(len(w.streams))]
	sa := jc.assignment(globalAccountName, cfg.Name)
	if sa == nil || len(sa.Peers) < 2 {
		return
	}
	remove := sa.Peers[w.rng.IntN(len(sa.Peers))]
	add := jc.replacementPeer(sa, remove)
	if add == "" {
		return // no spare left: a removal alone would shrink the stream
	}
	nsa := *sa
	nsa.Peers = append(slices.DeleteFunc(slices.Clone(sa.Peers), func(p string) bool { return p == remove }), add)
	w.stats.Moves++
	w.logf("move %s: %s out, %s in (through %s)", cfg.Name, remove, add, leader.name)
	jc.proposeMeta(&metaEntry{Op: "peers", SA: &nsa, Remove: remove, Add: add}, func(*ApiError) {})
	leader.pump()
}

// partition cuts the nodes into two sides (one-way cuts now and then).
func (w *simWorld) partition() {
	side := make([]bool, len(w.nodes))
	for i := range side {
		side[i] = w.rng.IntN(2) == 0
	}
	oneWay := w.rng.IntN(4) == 0
	for a := range w.nodes {
		for b := range w.nodes {
			if side[a] != side[b] && (!oneWay || side[a]) {
				w.cut[a][b] = true
			}
		}
	}
	w.logf("partition %v (one-way %v)", side, oneWay)
}

func (w *simWorld) healNet() {
	for a := range w.cut {
		clear(w.cut[a])
	}
	w.logf("partition healed")
}

// heal ends every fault: the network works and every node runs.
func (w *simWorld) heal() {
	w.healNet()
	w.net = simNet{minDelay: 1, jitter: 4}
	for _, n := range w.nodes {
		if !n.up {
			n.start()
		}
	}
	w.logf("healed")
}

// converged: every replica of every stream (and of the meta group) has
// applied everything its leader committed, and the leader serves.
func (w *simWorld) converged() bool {
	return w.convergeReport() == ""
}

func (w *simWorld) convergeReport() string {
	for _, n := range w.nodes {
		if !n.up {
			return n.name + " is down"
		}
	}
	for _, cfg := range w.streams {
		lead := w.streamLeader(cfg.Name)
		if lead == nil {
			return "stream " + cfg.Name + " has no leader"
		}
		lg := lead.stream(cfg.Name).group
		commit, _ := lg.drv.Node.Indexes()
		sa := lead.cluster().assignment(globalAccountName, cfg.Name)
		for _, p := range sa.Peers {
			n := w.nodeNamed(p)
			m := n.stream(cfg.Name)
			if m == nil || m.group == nil {
				return fmt.Sprintf("%s has no replica of %s", p, cfg.Name)
			}
			if _, applied := m.group.drv.Node.Indexes(); applied != commit {
				return fmt.Sprintf("%s applied %s to %d of %d", p, cfg.Name, applied, commit)
			}
		}
	}
	return ""
}

func (w *simWorld) nodeNamed(name string) *simNode {
	for _, n := range w.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// final checks the converged cluster: identical stores, every
// acknowledged publish stored at its sequence, every compare-and-set
// outcome explained by the subject's history.
func (w *simWorld) final() {
	for _, cfg := range w.streams {
		lead := w.streamLeader(cfg.Name)
		sa := lead.cluster().assignment(globalAccountName, cfg.Name)
		want := simStreamDigest(lead.stream(cfg.Name), true)
		for _, p := range sa.Peers {
			if d := simStreamDigest(w.nodeNamed(p).stream(cfg.Name), true); d != want {
				w.fail("stream %s: %s's store differs from the leader %s's", cfg.Name, p, lead.name)
				return
			}
		}
		w.checkAcked(cfg, lead.stream(cfg.Name))
		w.checkCAS(cfg, lead)
	}
	if w.opts.consumers && w.err == nil {
		w.checkConsumer()
	}
	if w.opts.reads && w.err == nil {
		w.checkReads()
	}
}

// checkAcked: an acknowledged publish is in the store at its sequence, or
// was replaced by MaxMsgsPer newer messages of its subject.
func (w *simWorld) checkAcked(cfg StreamConfig, mset *stream) {
	st := mset.st()
	var sm StoreMsg
	for _, op := range w.ops {
		if op.c.stream != cfg.Name || op.answers == 0 || op.errCode != 0 {
			continue
		}
		m, err := st.LoadMsg(op.seq, &sm)
		if err == nil {
			if m.Subj != op.subj || string(m.Msg) != op.data {
				w.fail("op %d acknowledged at %d, but %d holds %s %q", op.id, op.seq, op.seq, m.Subj, m.Msg)
				return
			}
			continue
		}
		if newer := st.FilteredState(op.seq+1, op.subj).Msgs; newer < uint64(cfg.MaxMsgsPer) {
			if w.opts.powerLoss && !w.opts.durable() {
				w.stats.Lost++
				continue
			}
			w.fail("op %d (%s %q) acknowledged at %d is lost: %d newer messages on its subject", op.id, op.subj, op.data, op.seq, newer)
			return
		}
	}
}

// checkCAS walks the publish entries in log order: a compare-and-set was
// stored exactly when its expectation matched the subject's last sequence
// (known while the history has no gap), and each client was told what
// the log decided.
func (w *simWorld) checkCAS(cfg StreamConfig, lead *simNode) {
	g := streamGroupName(globalAccountName, cfg.Name)
	pubs := w.chk.pubs[g]
	var top uint64
	for i := range pubs {
		top = max(top, i)
	}
	last := map[string]uint64{}
	complete := true // every index so far was seen applied
	byOp := map[int]*simPub{}
	for i := uint64(1); i <= top; i++ {
		p, ok := pubs[i]
		if !ok {
			if _, other := w.chk.committed[g][i]; !other {
				complete = false // inside a snapshot everywhere we looked
			}
			continue
		}
		if p.op >= 0 {
			byOp[p.op] = p
		}
		if complete && p.expect >= 0 && (p.seq != 0) != (uint64(p.expect) == last[p.subj]) {
			w.fail("stream %s index %d: %s expecting %d was stored=%v, but the subject's last sequence was %d",
				cfg.Name, i, p.subj, p.expect, p.seq != 0, last[p.subj])
			return
		}
		if p.seq != 0 {
			last[p.subj] = p.seq
		}
	}
	for _, op := range w.ops {
		if op.c.stream != cfg.Name || op.answers == 0 {
			continue
		}
		p := byOp[op.id]
		switch {
		case op.errCode == 0 && p != nil && p.seq != op.seq:
			w.fail("op %d was acknowledged at %d but the log stored it at %d", op.id, op.seq, p.seq)
		case op.errCode == 10071 && p != nil && p.seq != 0:
			w.fail("op %d was rejected (wrong last sequence) but the log stored it at %d", op.id, p.seq)
		case op.errCode == 10008 && p != nil:
			w.fail("op %d was refused (10008) but its entry is in the log (index %v)", op.id, p)
		}
	}
	_ = lead
}

// The simulator replays a seed exactly: the same trace, event for event.
func TestSimStreamReplays(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 2048)
	for _, seed := range []uint64{3, 11, 26} {
		a, errA := runSimStream(t, seed)
		b, errB := runSimStream(t, seed)
		if errA != nil || errB != nil {
			t.Fatalf("seed %d: %v / %v", seed, errA, errB)
		}
		if a.stats != b.stats || strings.Join(a.trace, "\n") != strings.Join(b.trace, "\n") {
			t.Fatalf("seed %d ran differently twice:\n%+v\n%+v", seed, a.stats, b.stats)
		}
	}
	// Power losses that tear files (what survives of each file must not
	// depend on the order a map is walked in), in runs that lose data.
	for _, seed := range []uint64{5, 11} {
		a, errA := runSimStreamWith(t, simOptions{seed: seed, powerLoss: true})
		b, errB := runSimStreamWith(t, simOptions{seed: seed, powerLoss: true})
		if a.stats != b.stats || fmt.Sprint(errA) != fmt.Sprint(errB) || strings.Join(a.trace, "\n") != strings.Join(b.trace, "\n") {
			t.Fatalf("seed %d with power losses ran differently twice:\n%+v %v\n%+v %v", seed, a.stats, errA, b.stats, errB)
		}
	}
}

// The checker catches a replica that diverges: one replica skips applying
// one publish, as a nondeterministic apply would.
func TestSimStreamCatchesDivergence(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 2048)
	skipped := false
	_, err := runSimStreamWith(t, simOptions{seed: 5, sabotage: func(n *simNode, e *raft.Entry) bool {
		if skipped || n.name != "S2" || e.Type != raft.EntryNormal || len(e.Data) == 0 || e.Data[0] != streamOpMsg {
			return false
		}
		skipped = true
		return true
	}})
	if !skipped {
		t.Fatal("no publish entry reached S2")
	}
	if err == nil || !strings.Contains(err.Error(), "differs") {
		t.Fatalf("a replica that skipped a publish went unnoticed: %v", err)
	}
}
