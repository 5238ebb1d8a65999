package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nats-io/nats-server/v2/internal/testutil"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// storeFilesOpen counts this process's descriptors open on files under
// the cluster's store directories.
func (c *jsTestCluster) storeFilesOpen(t *testing.T) int {
	t.Helper()
	return testutil.OpenFiles(t, func(p string) bool {
		return slices.ContainsFunc(c.opts, func(o *Options) bool { return strings.HasPrefix(p, o.StoreDir) })
	})
}

// With max_open_files 16 and 110 R3 streams, each server's stores and raft
// logs hold about 16 files open once the writes are synced (not one per
// stream and group), and every stream still takes publishes and answers
// reads, before and after a restart of every server: the files the
// budget closed are opened again on use. Without the budget the active
// block of every store stays open (330 descriptors here).
func TestJetStreamClusterOpenFilesBudget(t *testing.T) {
	const limit, n = 16, 110
	c := runJSClusterWith(t, 3, func(_ int, o *Options) { o.JetStreamMaxOpenFiles = limit })
	_, js := jsClient(t, c.servers[0])
	for i := range n {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("B%d", i), Subjects: []string{fmt.Sprintf("b.%d", i)}, Replicas: 3})
	}
	// Budget per server, plus a few files in use or with writes not yet
	// synced at the moment of counting.
	const bound = 3 * (limit + 8)
	settle := func(round int) {
		t.Helper()
		open := 0
		if !pollUntil(20*time.Second, func() bool { open = c.storeFilesOpen(t); return open <= bound }) {
			t.Fatalf("round %d: %d store files open, budget %d per server", round, open, limit)
		}
	}
	check := func(round int) {
		t.Helper()
		for i := range n {
			publishThroughMoves(t, js, fmt.Sprintf("b.%d", i))
		}
		for i := range n {
			st, err := js.Stream(ctx(t), fmt.Sprintf("B%d", i))
			if err != nil {
				t.Fatal(err)
			}
			for seq := uint64(1); seq <= uint64(round); seq++ {
				if _, err := st.GetMsg(ctx(t), seq); err != nil {
					t.Fatalf("round %d: stream B%d seq %d: %v", round, i, seq, err)
				}
			}
		}
		for i := range n {
			c.waitAllApplied(t, fmt.Sprintf("B%d", i), 3, uint64(round), 20*time.Second)
		}
		settle(round)
	}
	check(1)
	check(2)
	for _, s := range c.servers { // the stores may have closed every file the budget closed first
		_, open, reopens := s.js.Load().fs.(*vfs.Pool).Stats()
		t.Logf("%s: %d files open, %d reopened", s.Name(), open, reopens)
	}
	c.restartAll(t)
	nc, js := jsClient(t, c.servers[0])
	for i := range n {
		awaitNewLeader(t, c, nc, fmt.Sprintf("B%d", i), "")
	}
	check(3)
}

// max_open_files (Tern only): a positive number of files; 0, negative and
// non-numbers are configuration errors, and an embedder's negative value
// is refused by NewServer.
func TestMaxOpenFilesConfig(t *testing.T) {
	dir := t.TempDir()
	o, err := ProcessConfigFile(optsWriteConf(t, dir, "a.conf", "jetstream { max_open_files: 64 }\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o.JetStreamMaxOpenFiles != 64 || o.maxOpenFiles() != 64 {
		t.Fatalf("max_open_files 64 read as %d (%d)", o.JetStreamMaxOpenFiles, o.maxOpenFiles())
	}
	for i, bad := range []string{"0", "-5", "\"many\""} {
		conf := fmt.Sprintf("jetstream { max_open_files: %s }\n", bad)
		if _, err := ProcessConfigFile(optsWriteConf(t, dir, fmt.Sprintf("bad%d.conf", i), conf)); err == nil {
			t.Fatalf("max_open_files: %s accepted", bad)
		}
	}
	o = testOptions()
	o.JetStreamMaxOpenFiles = -1
	if _, err := NewServer(o); err == nil {
		t.Fatal("a negative JetStreamMaxOpenFiles accepted")
	}
}

// The default is a quarter of RLIMIT_NOFILE between 256 and 1024.
func TestMaxOpenFilesDefault(t *testing.T) {
	for _, c := range []struct {
		nofile uint64
		want   int
	}{{0, 256}, {1024, 256}, {2048, 512}, {20000, 1024}, {1 << 20, 1024}} {
		if got := defaultMaxOpenFiles(c.nofile); got != c.want {
			t.Fatalf("nofile %d: default %d, want %d", c.nofile, got, c.want)
		}
	}
	if got := (&Options{}).maxOpenFiles(); got != defaultMaxOpenFiles(rlimitNoFile()) {
		t.Fatalf("unset: %d", got)
	}
}

// /jsz shows the budget, the files open under it and the reopens, and a
// reload changes the limit.
func TestMaxOpenFilesJszAndReload(t *testing.T) {
	o := testOptions()
	o.JetStream, o.StoreDir, o.JetStreamMaxOpenFiles = true, t.TempDir(), 32
	s := runServer(t, o)
	info, err := s.Jsz(nil)
	if err != nil {
		t.Fatal(err)
	}
	if info.MaxOpenFiles != 32 {
		t.Fatalf("jsz max_open_files %d, want 32", info.MaxOpenFiles)
	}
	o2 := o.Clone()
	o2.JetStreamMaxOpenFiles = 8
	if err := s.ReloadOptions(o2); err != nil {
		t.Fatal(err)
	}
	if info, _ = s.Jsz(nil); info.MaxOpenFiles != 8 {
		t.Fatalf("after the reload jsz max_open_files %d, want 8", info.MaxOpenFiles)
	}
}

// A snapshot catch-up with every server's budget at 2 files: the leader
// expands its linked snapshot into an unnamed file (created, then removed,
// read through its handle while it is sent), which the budget must keep
// open; opened again by its name it was gone ("sending-N.snap: no such
// file or directory") and the replica never caught up.
func TestJetStreamClusterSnapshotCatchupFileBudget(t *testing.T) {
	setForTest(t, &minDefaultOpenFiles, 2)
	setForTest(t, &maxDefaultOpenFiles, 2)
	testSnapshotCatchup(t, jetstream.StreamConfig{Name: "SNAP", Subjects: []string{"snap.>"}, Replicas: 3})
}
