package sim

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

func rcc(id raft.ID) raft.ConfChange { return raft.ConfChange{Type: raft.RemovePeer, ID: id} }
func acc(id raft.ID) raft.ConfChange { return raft.ConfChange{Type: raft.AddPeer, ID: id} }

var (
	seedFlag      = flag.Uint64("seed", 0, "replay only this seed of TestSimSeeds")
	seedsFlag     = flag.Int("seeds", 0, "number of seeds for TestSimSeeds (default 6000; 500 with -short or -race)")
	seedStartFlag = flag.Uint64("seedstart", 1, "first seed of TestSimSeeds")
	traceFlag     = flag.Bool("simtrace", false, "with -seed: log the whole event trace")
)

// seedOptions derives a run's shape from its seed.
func seedOptions(seed uint64) RunOptions {
	o := RunOptions{Options: Options{Seed: seed, Nodes: 3}, FaultMs: 3000, ConvergeMs: 15000}
	if seed%2 == 1 {
		o.Nodes = 5
		o.Membership = seed%3 == 0
	}
	return o
}

// ring keeps the last lines of a trace.
type ring struct {
	lines []string
	next  int
	full  bool
}

func (r *ring) add(s string) {
	if len(r.lines) < cap(r.lines) {
		r.lines = append(r.lines, s)
		return
	}
	r.lines[r.next] = s
	r.next = (r.next + 1) % len(r.lines)
	r.full = true
}

func (r *ring) String() string {
	out := append(slices.Clone(r.lines[r.next:]), r.lines[:r.next]...)
	return strings.Join(out, "\n")
}

func replayHint(seed uint64) string {
	return fmt.Sprintf("replay: go test ./internal/sim -run TestSimSeeds -seed=%d -v", seed)
}

// failSeed reruns a failing seed with tracing on (runs are deterministic)
// and reports the end of the trace.
func failSeed(t *testing.T, seed uint64, err error) {
	t.Helper()
	tail := &ring{lines: make([]string, 0, 60)}
	o := seedOptions(seed)
	o.Trace = tail.add
	_, err2 := Run(o)
	t.Fatalf("seed %d: %v\n%s\nrerun with trace: %v\nlast events:\n%s", seed, err, replayHint(seed), err2, tail)
}

func TestSimSeeds(t *testing.T) {
	if *seedFlag != 0 {
		o := seedOptions(*seedFlag)
		if *traceFlag {
			o.Trace = func(s string) { t.Log(s) }
		}
		st, err := Run(o)
		t.Logf("seed %d (%d nodes, membership %v): %+v", *seedFlag, o.Nodes, o.Membership, st)
		if err != nil {
			failSeed(t, *seedFlag, err)
		}
		return
	}
	n := *seedsFlag
	if n == 0 {
		n = 6000
		if testing.Short() || raceEnabled {
			n = 500
		}
	}
	var total Stats
	start := time.Now()
	for seed := *seedStartFlag; seed < *seedStartFlag+uint64(n); seed++ {
		st, err := Run(seedOptions(seed))
		if err != nil {
			failSeed(t, seed, err)
		}
		total.Events += st.Events
		total.Messages += st.Messages
		total.Accepted += st.Accepted
		total.Committed += st.Committed
		total.Crashes += st.Crashes
		total.Partitions += st.Partitions
		total.Snapshots += st.Snapshots
		total.Terms += st.Terms
		total.ConfChanges += st.ConfChanges
		total.Reads += st.Reads
		total.ReadsServed += st.ReadsServed
	}
	el := time.Since(start)
	t.Logf("%d seeds in %v: %.0f seeds/s; events %d, messages %d, proposals accepted %d / committed %d, crashes %d, partitions %d, snapshots sent %d, leader terms %d, membership changes %d, reads %d / served %d",
		n, el.Round(time.Millisecond), float64(n)/el.Seconds(), total.Events, total.Messages,
		total.Accepted, total.Committed, total.Crashes, total.Partitions, total.Snapshots, total.Terms, total.ConfChanges, total.Reads, total.ReadsServed)
}

func TestSimDeterministic(t *testing.T) {
	trace := func(seed uint64) []string {
		var lines []string
		o := seedOptions(seed)
		o.Trace = func(s string) { lines = append(lines, s) }
		if _, err := Run(o); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		return lines
	}
	for _, seed := range []uint64{7, 8, 9} {
		a, b := trace(seed), trace(seed)
		if !slices.Equal(a, b) || len(a) < 10 {
			t.Fatalf("seed %d: traces differ (%d vs %d lines)", seed, len(a), len(b))
		}
	}
}

// waitLeader runs until a leader is ready.
func waitLeader(t *testing.T, c *Cluster) int {
	t.Helper()
	for range 200 {
		if l := c.Leader(); l >= 0 {
			return l
		}
		if err := c.RunFor(10); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("no leader: %s", c.describe())
	return -1
}

// proposeSettled proposes k entries through the leader and lets them commit.
func proposeSettled(t *testing.T, c *Cluster, k int) {
	t.Helper()
	waitLeader(t, c)
	if got := c.Propose(k); got != k {
		t.Fatalf("leader accepted %d of %d", got, k)
	}
	if err := c.RunFor(100); err != nil {
		t.Fatal(err)
	}
}

func converge(t *testing.T, c *Cluster) {
	t.Helper()
	if err := c.Converge(10000); err != nil {
		t.Fatal(err)
	}
	if err := c.checkAccepted(); err != nil {
		t.Fatal(err)
	}
}

func TestCrashRestartScenario(t *testing.T) {
	c := NewCluster(Options{Seed: 42, Nodes: 3})
	proposeSettled(t, c, 30)
	committed := c.chk.maxCommit

	// The leader accepts more and dies before syncing them.
	l := waitLeader(t, c)
	c.nodes[l].disk.crashOnSync = true
	c.Propose(5)
	// Its sync runs behind, at its next tick at the latest.
	if err := c.RunFor(20); err != nil {
		t.Fatal(err)
	}
	if c.nodes[l].up {
		t.Fatal("leader did not crash on sync")
	}
	// A follower of the new leader dies after sending, before applying.
	// (Which survivor leads is the elections' choice: since the ranked
	// elections after a leader's death, a fixed pick was the new leader,
	// which then died applying its first entry and left one node.)
	nl := waitLeader(t, c)
	f := 3 - l - nl // the third node
	c.nodes[f].crashOnApply = true
	proposeSettled(t, c, 10)
	if err := c.RunFor(200); err != nil {
		t.Fatal(err)
	}
	if c.nodes[f].up {
		t.Fatal("follower did not crash on apply")
	}
	// And a clean crash with nothing unsynced kept.
	c.Crash(nl, 0)
	c.Restart(l)
	c.Restart(f)
	c.Restart(nl)
	proposeSettled(t, c, 10)
	converge(t, c)
	if c.stats.FinalIndex <= committed {
		t.Fatalf("final index %d not past %d", c.stats.FinalIndex, committed)
	}
	st := c.Stats()
	if st.Crashes != 3 || st.Committed < 40 {
		t.Fatalf("stats %+v", st)
	}
	// Everything committed before the crashes is still applied everywhere
	// (digests agree at every common index, checked as they are applied).
	for _, n := range c.nodes {
		if n.kv.applied != c.stats.FinalIndex {
			t.Fatalf("node %d applied %d", n.id, n.kv.applied)
		}
	}
}

func TestPartitionHealScenario(t *testing.T) {
	c := NewCluster(Options{Seed: 7, Nodes: 5})
	proposeSettled(t, c, 20)
	old := waitLeader(t, c)
	minority := []int{old, (old + 1) % 5}
	var majority []int
	for i := range 5 {
		if !slices.Contains(minority, i) {
			majority = append(majority, i)
		}
	}
	c.Partition(minority, majority)
	// The old leader still accepts proposals, which can never commit.
	stale := c.proposeOn(c.nodes[old], 5)
	if stale != 5 {
		t.Fatalf("old leader accepted %d", stale)
	}
	lost := slices.Clone(c.accepted[len(c.accepted)-5:])
	if err := c.RunFor(1000); err != nil {
		t.Fatal(err)
	}
	if c.nodes[old].softState().Role == raft.Leader {
		t.Fatal("minority leader did not step down (check-quorum)")
	}
	nl := waitLeader(t, c)
	if !slices.Contains(majority, nl) {
		t.Fatalf("leader %d is not in the majority", nl)
	}
	proposeSettled(t, c, 20)
	c.Heal()
	converge(t, c)
	for _, d := range lost {
		if _, ok := c.chk.applied[d]; ok {
			t.Fatalf("a proposal accepted by the partitioned leader was applied: %q", d)
		}
	}
	if st := c.Stats(); st.Committed != 40 {
		t.Fatalf("committed %d proposals, want 40", st.Committed)
	}
}

func TestMembershipScenario(t *testing.T) {
	c := NewCluster(Options{Seed: 99, Nodes: 5})
	proposeSettled(t, c, 10)
	change := func(cc func(lead *simNode) error) {
		t.Helper()
		for range 50 {
			l := waitLeader(t, c)
			if err := cc(c.nodes[l]); err == nil {
				c.process(c.nodes[l])
				if err := c.RunFor(300); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err := c.RunFor(50); err != nil {
				t.Fatal(err)
			}
		}
		t.Fatal("change never accepted")
	}
	// Remove the leader itself, then a follower.
	change(func(lead *simNode) error { return lead.drv.Node.ProposeConfChange(rcc(lead.id)) })
	change(func(lead *simNode) error {
		peers := lead.drv.Node.Status().Peers
		for _, p := range peers {
			if p != lead.id {
				return lead.drv.Node.ProposeConfChange(rcc(p))
			}
		}
		return nil
	})
	proposeSettled(t, c, 10)
	// A brand-new node joins, behind a snapshot most likely.
	joiner := c.addNode(nil)
	change(func(lead *simNode) error { return lead.drv.Node.ProposeConfChange(acc(joiner.id)) })
	proposeSettled(t, c, 10)
	converge(t, c)
	lead := c.nodes[c.Leader()]
	if peers := lead.drv.Node.Status().Peers; len(peers) != 4 || !slices.Contains(peers, joiner.id) {
		t.Fatalf("members %v", peers)
	}
	if joiner.kv.applied != c.stats.FinalIndex {
		t.Fatalf("joiner applied %d of %d", joiner.kv.applied, c.stats.FinalIndex)
	}
}
