package server

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The background scrub (issue 19): damage appearing in a running replica's
// store is found without a read touching it and without a restart of the
// server, and the replica is repaired while the stream stays available.

// scrubOpts makes the scrub run every 100 ms at 64 MiB/s.
func scrubOpts(_ int, o *Options) {
	o.JetStreamScrubInterval = 100 * time.Millisecond
	o.JetStreamScrubRate = 64 << 20
	o.NoLog = os.Getenv("TERN_TEST_LOG") == ""
}

// storeBlocks lists the sealed block files of the stream's current store
// under a server's JetStream directory (not the raft snapshots' links):
// every .blk of the store directory written last, but its newest (the
// active block).
func storeBlocks(t *testing.T, streamDir string) []string {
	t.Helper()
	byDir := map[string][]string{}
	var newestDir string
	var newest time.Time
	filepath.Walk(streamDir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() || !strings.HasSuffix(p, ".blk") || strings.Contains(p, "_raft_") {
			return nil
		}
		d := filepath.Dir(p)
		byDir[d] = append(byDir[d], p)
		if fi.ModTime().After(newest) {
			newest, newestDir = fi.ModTime(), d
		}
		return nil
	})
	out := byDir[newestDir]
	sort.Strings(out)
	if len(out) < 3 {
		t.Fatalf("too few blocks under %s: %v", streamDir, out)
	}
	return out[:len(out)-1]
}

func TestJetStreamClusterScrubBitFlip(t *testing.T) {
	testScrubRepair(t, func(t *testing.T, blocks []string, _ repairFile) {
		p := blocks[1]
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x10
		writeInPlace(t, p, b) // the snapshot's link sees it too
	})
}

func TestJetStreamClusterScrubTruncate(t *testing.T) {
	testScrubRepair(t, func(t *testing.T, blocks []string, _ repairFile) {
		fi, err := os.Stat(blocks[1])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(blocks[1], fi.Size()/3); err != nil {
			t.Fatal(err)
		}
	})
}

func TestJetStreamClusterScrubDeleteBlock(t *testing.T) {
	testScrubRepair(t, func(t *testing.T, blocks []string, _ repairFile) {
		if err := os.Remove(blocks[1]); err != nil {
			t.Fatal(err)
		}
	})
}

func TestJetStreamClusterScrubStaleBlock(t *testing.T) {
	testScrubRepair(t, func(t *testing.T, blocks []string, stale repairFile) {
		for _, p := range blocks {
			if filepath.Base(p) == stale.name {
				if err := os.Remove(p); err != nil { // a new inode: the snapshot's link keeps the real one
					t.Fatal(err)
				}
				if err := os.WriteFile(p, stale.data, 0o640); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatalf("block %s is not sealed: %v", stale.name, blocks)
	})
}

// testScrubRepair damages a sealed block of one follower's store while
// every server runs; the scrub must find it, the replica must be restarted
// in place and hold every message again, publishes must go on meanwhile,
// and every server leading in turn must serve every acknowledged message.
func testScrubRepair(t *testing.T, damage func(t *testing.T, blocks []string, stale repairFile)) {
	setForTest(t, &snapshotEvery, 100)
	setForTest(t, &fileStoreBlockSize, 64<<10)
	c := runJSClusterWith(t, 3, scrubOpts)
	nc := connectNATS(t, c.servers[0].ClientURL())
	js, _ := jetstream.New(nc)
	st := createStream(t, js, jetstream.StreamConfig{Name: "REP", Subjects: []string{"rep.>"}, Replicas: 3, Storage: jetstream.FileStorage})
	leader := st.CachedInfo().Cluster.Leader
	want := map[uint64][32]byte{}
	publish := func(from, to int) {
		for i := from; i <= to; i++ {
			data := repairData(i)
			ack, err := js.Publish(ctx(t), fmt.Sprintf("rep.%d", i%7), data)
			if err != nil {
				t.Fatal(err)
			}
			want[ack.Sequence] = sha256.Sum256(data)
		}
	}
	down := -1
	for i, s := range c.servers {
		if s.Name() != leader {
			down = i
		}
	}
	streamDir := filepath.Join(c.opts[down].StoreDir, "jetstream", globalAccountName, "streams", "REP")
	const half = repairMsgs / 2
	publish(1, 20)
	waitFor(t, 10*time.Second, "the follower applied 20 messages", func() bool {
		m := c.servers[down].js.Load().account(globalAccountName).lookup("REP")
		var ss StreamState
		m.st().FastState(&ss)
		return ss.LastSeq == 20
	})
	stale := copyActiveBlock(t, streamDir) // the second block, partly written
	publish(21, half)
	c.waitAllApplied(t, "REP", 3, half, 10*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("group views: %s", c.groupViews("REP"))
		}
	})
	old := c.servers[down].js.Load().account(globalAccountName).lookup("REP")
	damage(t, storeBlocks(t, streamDir), stale)
	t0 := time.Now()
	publish(half+1, repairMsgs) // the stream stays available meanwhile
	t.Logf("published the second half in %v", time.Since(t0))

	var last string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the damaged replica: %s", last)
		}
	})
	waitFor(t, 30*time.Second, "the damaged replica restarted and holding every message", func() bool {
		m := c.servers[down].js.Load().account(globalAccountName).lookup("REP")
		if m == nil {
			return false
		}
		var ss StreamState
		m.st().FastState(&ss)
		last = fmt.Sprintf("restarted %v msgs %d last %d scrub damage %d", m != old, ss.Msgs, ss.LastSeq, m.scrubLost.Load())
		if m == old {
			return false
		}
		m.mu.Lock()
		gdir := m.groupDir
		m.mu.Unlock()
		_, err := os.Stat(filepath.Join(gdir, repairMarker))
		return ss.Msgs == repairMsgs && ss.LastSeq == repairMsgs && os.IsNotExist(err)
	})
	// A later pass finds the replica whole.
	sc := c.servers[down].js.Load().scrub.Load()
	passes := sc.passes.Load()
	waitFor(t, 10*time.Second, "two more scrub passes", func() bool { return sc.passes.Load() >= passes+2 })
	m := c.servers[down].js.Load().account(globalAccountName).lookup("REP")
	if m.scrubLost.Load() != 0 {
		t.Fatalf("the repaired replica still has %d damaged messages", m.scrubLost.Load())
	}
	m.mu.Lock()
	t.Logf("the repaired replica installed %d snapshots, %d of them from the leader", m.installs, m.received)
	m.mu.Unlock()
	nc.Close()
	t.Logf("repaired after %v", time.Since(t0))

	// Every replica holds every acknowledged message, byte for byte (once
	// it has applied them: a follower may lag the acknowledgements).
	c.waitAllApplied(t, "REP", 3, repairMsgs, 20*time.Second)
	for _, m := range c.replicas("REP") {
		if got := replicaDigest(m, want); got != "" {
			t.Fatalf("%s: %s", m.jsa.js.srv.Name(), got)
		}
	}
	// And every server, leading in turn, reports the same state.
	rc := connectNATS(t, c.servers[down].ClientURL())
	defer rc.Close()
	seen := viewUnderEachLeader(t, rc, "REP", 3, 120*time.Second, func(ctx context.Context, js jetstream.JetStream) (string, string, bool) {
		s, err := js.Stream(ctx, "REP")
		if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Cluster.Leader == "" {
			return "", "", false
		}
		info := s.CachedInfo()
		return info.Cluster.Leader, fmt.Sprintf("msgs=%d first=%d last=%d bytes=%d", info.State.Msgs,
			info.State.FirstSeq, info.State.LastSeq, info.State.Bytes), true
	})
	names := sameUnderEachLeader(t, "stream REP", seen)
	if !strings.HasPrefix(seen[names[0]], fmt.Sprintf("msgs=%d first=1 last=%d ", repairMsgs, repairMsgs)) {
		t.Fatalf("stream state %s, want %d messages", seen[names[0]], repairMsgs)
	}
	t.Logf("every server led after %v", time.Since(t0))
	for _, m := range c.replicas("REP") {
		if m.scrubLost.Load() != 0 {
			t.Fatalf("%s: %d damaged messages", m.jsa.js.srv.Name(), m.scrubLost.Load())
		}
	}
}

// replicaDigest reads every message of want from the replica's store and
// describes the first difference ("" when none).
func replicaDigest(m *stream, want map[uint64][32]byte) string {
	var ss StreamState
	m.st().FastState(&ss)
	if ss.Msgs != uint64(len(want)) {
		return fmt.Sprintf("%d messages, want %d", ss.Msgs, len(want))
	}
	var sm StoreMsg
	for seq, sum := range want {
		got, err := m.st().LoadMsg(seq, &sm)
		if err != nil {
			return fmt.Sprintf("seq %d: %v", seq, err)
		}
		if sha256.Sum256(got.Msg) != sum {
			return fmt.Sprintf("seq %d: wrong payload", seq)
		}
	}
	return ""
}

// A stream on one server has no peer to repair from: the scrub reports the
// damage in the log and /healthz, and changes nothing.
func TestJetStreamScrubReportsR1Damage(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 64<<10)
	o := testOptions()
	o.JetStream, o.StoreDir = true, t.TempDir()
	scrubOpts(0, o)
	s := runServer(t, o)
	_, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "ONE", Subjects: []string{"one.>"}, Storage: jetstream.FileStorage})
	for i := 1; i <= repairMsgs; i++ {
		if _, err := js.Publish(ctx(t), "one.x", repairData(i)); err != nil {
			t.Fatal(err)
		}
	}
	health := func() string {
		if h := s.jsHealth(httptest.NewRequest("GET", "/healthz", nil)); h != nil {
			return h.Error
		}
		return ""
	}
	sc := s.js.Load().scrub.Load()
	passes := sc.passes.Load()
	waitFor(t, 10*time.Second, "two scrub passes", func() bool { return sc.passes.Load() >= passes+2 })
	if h := health(); h != "" {
		t.Fatalf("healthz before any damage: %s", h)
	}
	blocks := storeBlocks(t, filepath.Join(o.StoreDir, "jetstream", globalAccountName, "streams", "ONE"))
	if err := os.Remove(blocks[2]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "healthz reporting the damage", func() bool {
		return strings.Contains(health(), "JetStream stream '$G > ONE' is damaged")
	})
	t.Logf("healthz: %s", health())
	m := s.js.Load().account(globalAccountName).lookup("ONE")
	var ss StreamState
	m.st().FastState(&ss)
	if ss.Msgs != repairMsgs {
		t.Fatalf("the scrub changed the stream: %d messages", ss.Msgs)
	}
}

// Scrubbing touches no raft group: idle streams stay asleep through
// scrub passes.
func TestJetStreamClusterScrubKeepsGroupsAsleep(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 64<<10)
	c := runJSClusterWith(t, 3, scrubOpts)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q.>"}, Replicas: 3, Storage: jetstream.FileStorage})
	for i := 1; i <= 100; i++ {
		if _, err := js.Publish(ctx(t), "q.x", repairData(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	var passes [3]uint64
	for i, s := range c.servers {
		passes[i] = s.js.Load().scrub.Load().passes.Load()
	}
	waitFor(t, 10*time.Second, "three scrub passes on every server", func() bool {
		for i, s := range c.servers {
			if s.js.Load().scrub.Load().passes.Load() < passes[i]+3 {
				return false
			}
			if a := c.groupsAwake(); a != "" {
				t.Fatalf("groups woke during the scrub: %s", a)
			}
		}
		return true
	})
}

// The scrub's config keys (Tern only): sizes and durations as nats-server
// writes them, 0 turning the scrub off; other unknown keys stay errors.
func TestScrubConfigKeys(t *testing.T) {
	dir := t.TempDir()
	o, err := ProcessConfigFile(optsWriteConf(t, dir, "a.conf", "jetstream { scrub_rate: \"8M\", scrub_interval: \"5m\" }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o.JetStreamScrubRate != 8<<20 || o.scrubRate() != 8<<20 || o.scrubInterval() != 5*time.Minute {
		t.Fatalf("rate %d interval %v", o.JetStreamScrubRate, o.JetStreamScrubInterval)
	}
	o, err = ProcessConfigFile(optsWriteConf(t, dir, "b.conf", "jetstream { scrub_rate: 0 }\n"))
	if err != nil || o.scrubRate() != 0 {
		t.Fatalf("scrub_rate 0: rate %d, %v", o.scrubRate(), err)
	}
	if o := (&Options{}); o.scrubRate() != defaultScrubRate || o.scrubInterval() != defaultScrubInterval {
		t.Fatalf("defaults: %d %v", o.scrubRate(), o.scrubInterval())
	}
	if _, err := ProcessConfigFile(optsWriteConf(t, dir, "c.conf", "jetstream { scrub_speed: 8M }\n")); err == nil {
		t.Fatal("an unknown jetstream key was accepted")
	}
}

// An R1 stream of a cluster is replicated through a group of one: it has
// no peer to repair from, so damage is reported, and the replica is not
// restarted (that would discard its good messages with the damaged ones).
func TestJetStreamClusterScrubReportsR1Damage(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 64<<10)
	c := runJSClusterWith(t, 3, scrubOpts)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "ONE", Subjects: []string{"one.>"}, Storage: jetstream.FileStorage})
	for i := 1; i <= repairMsgs; i++ {
		if _, err := js.Publish(ctx(t), "one.x", repairData(i)); err != nil {
			t.Fatal(err)
		}
	}
	reps := c.replicas("ONE")
	if len(reps) != 1 {
		t.Fatalf("%d replicas of an R1 stream", len(reps))
	}
	m := reps[0]
	s := m.jsa.js.srv
	var o *Options
	for i := range c.servers {
		if c.servers[i] == s {
			o = c.opts[i]
		}
	}
	blocks := storeBlocks(t, filepath.Join(o.StoreDir, "jetstream", globalAccountName, "streams", "ONE"))
	if err := os.Remove(blocks[2]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "healthz reporting the damage", func() bool {
		h := s.jsHealth(httptest.NewRequest("GET", "/healthz", nil))
		return h != nil && strings.Contains(h.Error, "JetStream stream '$G > ONE' is damaged")
	})
	sc := s.js.Load().scrub.Load()
	passes := sc.passes.Load()
	waitFor(t, 10*time.Second, "two more scrub passes", func() bool { return sc.passes.Load() >= passes+2 })
	if now := s.js.Load().account(globalAccountName).lookup("ONE"); now != m {
		t.Fatal("the R1 replica was restarted")
	}
	var ss StreamState
	m.st().FastState(&ss)
	if ss.Msgs != repairMsgs {
		t.Fatalf("%d messages, want %d: the scrub changed the stream", ss.Msgs, repairMsgs)
	}
}

// The scrub reads at most scrub_rate bytes a second of the server's clock:
// on a manual clock, a pass over the sealed blocks ends only once the
// clock has advanced their size divided by the rate.
func TestJetStreamScrubPacedOnClock(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 64<<10)
	const rate = 64 << 10
	s, m, nc := runManualClockServer(t, func(o *Options) {
		o.JetStreamScrubRate, o.JetStreamScrubInterval = rate, time.Minute
	})
	js, _ := jetstream.New(nc)
	createStream(t, js, jetstream.StreamConfig{Name: "ONE", Subjects: []string{"one.>"}, Storage: jetstream.FileStorage})
	for i := 1; i <= 200; i++ {
		if _, err := js.Publish(ctx(t), "one.x", repairData(i)); err != nil {
			t.Fatal(err)
		}
	}
	var sealed int64
	for _, p := range storeBlocks(t, filepath.Join(s.getOpts().StoreDir, "jetstream", globalAccountName, "streams", "ONE")) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		sealed += fi.Size()
	}
	sc := s.js.Load().scrub.Load()
	waitFor(t, 5*time.Second, "the scrub waiting for its first pass", func() bool { return sc.waits.Load() == 1 })
	m.Advance(time.Minute)
	secs := 0
	for seen := uint64(1); ; {
		waitFor(t, 5*time.Second, "the scrub pacing or done", func() bool { return sc.waits.Load() > seen })
		if sc.passes.Load() > 0 { // waiting for the next pass
			break
		}
		seen = sc.waits.Load()
		m.Advance(time.Second)
		if secs++; secs > 100 {
			t.Fatal("no pass after 100 s of the clock")
		}
	}
	want := int(sealed / rate)
	t.Logf("%d bytes of sealed blocks scrubbed in %d s of the clock at %d B/s", sealed, secs, rate)
	if secs < want-1 || secs > want+1 {
		t.Fatalf("a pass over %d bytes took %d s of the clock, want about %d", sealed, secs, want)
	}
}
