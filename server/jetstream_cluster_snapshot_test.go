package server

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// checkReplicaContents compares every message of every replica of name
// with the first replica's.
func checkReplicaContents(t *testing.T, c *jsTestCluster, name string) {
	t.Helper()
	reps := c.replicas(name)
	var st StreamState
	reps[0].st().FastState(&st)
	for _, m := range reps[1:] {
		for seq := st.FirstSeq; seq <= st.LastSeq; seq++ {
			a, ea := reps[0].st().LoadMsg(seq, nil)
			b, eb := m.st().LoadMsg(seq, nil)
			if ea != eb || (ea == nil && !sameMsg(a, b)) {
				t.Fatalf("seq %d: %s has %+v %v, %s has %+v %v", seq, reps[0].jsa.js.srv.Name(), a, ea,
					m.jsa.js.srv.Name(), b, eb)
			}
		}
	}
	for _, m := range reps { // every block was read: damage would show
		if lost := m.st().State().Lost; lost != nil && len(lost.Msgs) > 0 {
			t.Fatalf("%s lost messages %v", m.jsa.js.srv.Name(), lost.Msgs)
		}
	}
}

// linkedSnapshotDirs lists the snapshot directories of every replica.
func linkedSnapshotDirs(c *jsTestCluster, name string) map[string][]string {
	out := map[string][]string{}
	for _, m := range c.replicas(name) {
		m.mu.Lock()
		dir := m.groupDir
		m.mu.Unlock()
		ents, _ := m.jsa.js.fs.ReadDir(filepath.Join(dir, snapsDir))
		for _, e := range ents {
			out[m.jsa.js.srv.Name()] = append(out[m.jsa.js.srv.Name()], e.Name())
		}
	}
	return out
}

// Replicas of a file stream take linked snapshots (no message copied) and
// restart from them: after every server was stopped and started again,
// each replica restored its store from its snapshot directory and the
// entries after it, and all hold the same messages. Erasing a message
// that the restored store shares with the snapshot directory must not
// change the directory: a later restart restores the snapshot's state
// and then applies the erase from the log again.
func TestJetStreamClusterRestartFromLinkedSnapshots(t *testing.T) {
	setForTest(t, &snapshotEvery, 100)
	setForTest(t, &fileStoreBlockSize, 2048) // sealed blocks to share
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "LS", Subjects: []string{"ls.>"}, Replicas: 3,
		MaxMsgsPerSubject: 40})
	publish := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			m := nats.NewMsg(fmt.Sprintf("ls.k%d", i%25))
			m.Data = []byte(fmt.Sprintf("payload %d", i))
			if i%9 == 0 {
				m.Header.Set(JSMsgId, fmt.Sprintf("id-%d-%d", n, i))
			}
			if ack, err := clusterCASPublish(nc, m); err != nil || ack.Error != nil {
				t.Fatalf("publish %d: %+v %v", i, ack, err)
			}
		}
	}
	publish(1200)
	if err := st.DeleteMsg(ctx(t), 1190); err != nil {
		t.Fatal(err)
	}
	dirs := linkedSnapshotDirs(c, "LS")
	if len(dirs) != 3 {
		t.Fatalf("not every replica took a linked snapshot: %v", dirs)
	}
	// At most three directories live at once: the durable snapshot's, one
	// still being written (on a loaded machine the next snapshot can start
	// before the previous write finished) and the newest one.
	for srv, names := range dirs {
		if len(names) > 3 {
			t.Fatalf("%s keeps %d snapshot directories: %v", srv, len(names), names)
		}
	}
	restartAll := func() {
		t.Helper()
		c.restartAll(t)
		nc, js = jsClient(t, c.servers[0])
		awaitNewLeader(t, c, nc, "LS", "")
		var err error
		if st, err = js.Stream(ctx(t), "LS"); err != nil {
			t.Fatal(err)
		}
	}
	restartAll()
	info, err := st.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	checkReplicasAgree(t, c, "LS", info.State.Msgs)
	checkReplicaContents(t, c, "LS")
	for _, m := range c.replicas("LS") {
		m.mu.Lock()
		installs := m.installs
		m.mu.Unlock()
		if installs == 0 {
			t.Fatalf("%s did not restore a snapshot at start", m.jsa.js.srv.Name())
		}
	}
	// Erase the first live message, which lies in a block the restored
	// stores share with their snapshot directories, then restart again
	// at once: the replicas restore the same snapshots (unless the erase
	// was the entry that made one due) and apply the erase after them.
	first := info.State.FirstSeq
	snaps := map[*stream]linkedSnap{}
	for _, m := range c.replicas("LS") {
		snap, err := m.wal.Snapshot()
		linked, ok := snap.Local.(linkedSnap)
		if err != nil || snap.IsEmpty() || !ok {
			t.Fatalf("%s: no linked snapshot after the restart: %T %v", m.jsa.js.srv.Name(), snap.Local, err)
		}
		snaps[m] = linked
	}
	if err := st.SecureDeleteMsg(ctx(t), first); err != nil {
		t.Fatal(err)
	}
	checkReplicasAgree(t, c, "LS", info.State.Msgs-1)
	for m, linked := range snaps { // as a lagging follower would get them
		full, err := expandForTest(m, linked)
		if err != nil {
			t.Logf("%s: snapshot replaced meanwhile: %v", m.jsa.js.srv.Name(), err)
			continue
		}
		r := &raftReader{b: full}
		r.bytes()
		if !slices.ContainsFunc(snapMsgs(t, r.b), func(s string) bool { return strings.HasPrefix(s, fmt.Sprint(first)+" ") }) {
			t.Fatalf("%s: the snapshot taken before the erase lost message %d", m.jsa.js.srv.Name(), first)
		}
	}
	restartAll()
	publish(50)
	info, err = st.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	checkReplicasAgree(t, c, "LS", info.State.Msgs)
	checkReplicaContents(t, c, "LS")
	if _, err := st.GetMsg(ctx(t), first); err == nil {
		t.Fatalf("the erased message %d is back", first)
	}
}

// A follower that was down while the leader took several snapshots
// catches up from the leader's log (which keeps twice the stream's
// messages in entries below a snapshot), not from a snapshot of the whole
// stream.
func TestJetStreamClusterCatchupFromLogAfterSnapshots(t *testing.T) {
	setForTest(t, &snapshotEvery, 100)
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "CL", Subjects: []string{"cl.>"}, Replicas: 3})
	down := c.stopFollower(st.CachedInfo().Cluster.Leader)
	for i := 0; i < 1000; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg(fmt.Sprintf("cl.k%d", i%10))); err != nil || ack.Error != nil {
			t.Fatalf("publish %d: %+v %v", i, ack, err)
		}
	}
	for _, m := range c.replicas("CL") {
		m.mu.Lock()
		snap := m.snapIndex
		m.mu.Unlock()
		if m.isLeader() && snap < 500 {
			t.Fatalf("the leader's last snapshot is at %d: the follower would not need the log below it", snap)
		}
	}
	c.servers[down] = runServer(t, c.opts[down])
	checkReplicasAgree(t, c, "CL", 1000)
	checkReplicaContents(t, c, "CL")
	for _, m := range c.replicas("CL") {
		m.mu.Lock()
		received := m.received
		m.mu.Unlock()
		if received != 0 {
			t.Fatalf("%s installed %d snapshots from the leader", m.jsa.js.srv.Name(), received)
		}
	}
}

// A replicated file stream's store syncs every sync_interval like a
// single server's, so the files of blocks its limits dropped go away while
// the server runs (they used to stay until it stopped).
func TestJetStreamClusterStoreDropsOldBlockFiles(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 1024)
	c := runJSClusterWith(t, 3, func(_ int, o *Options) { o.SyncInterval = 50 * time.Millisecond })
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "OB", Subjects: []string{"ob"}, Replicas: 3, MaxMsgs: 20})
	for i := 0; i < 600; i++ {
		if ack, err := clusterCASPublish(nc, nats.NewMsg("ob")); err != nil || ack.Error != nil {
			t.Fatalf("publish %d: %+v %v", i, ack, err)
		}
	}
	checkReplicasAgree(t, c, "OB", 20)
	blockFiles := func(m *stream) int {
		ents, _ := os.ReadDir(filepath.Join(m.jsa.dir, "OB", "msgs"))
		n := 0
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".blk") || strings.HasSuffix(e.Name(), ".blz") {
				n++
			}
		}
		return n
	}
	waitFor(t, 10*time.Second, "old block files removed", func() bool {
		for _, m := range c.replicas("OB") {
			if blockFiles(m) > 6 {
				return false
			}
		}
		return true
	})
}
