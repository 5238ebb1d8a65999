package server

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Every file JetStream touches (stores, raft logs, linked snapshot
// directories, the meta log, stream metadata) goes through the injected
// file system: a cluster whose servers each stand on an in-memory FS
// writes nothing under its store directories, takes linked snapshots in
// memory and restarts from them.
func TestJetStreamClusterOnMemFS(t *testing.T) {
	setForTest(t, &snapshotEvery, 100)
	setForTest(t, &fileStoreBlockSize, 2048) // sealed blocks to link
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.fsys = vfs.NewMem() })
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "MF", Subjects: []string{"mf.>"}, Replicas: 3})
	for i := 0; i < 600; i++ {
		m := nats.NewMsg(fmt.Sprintf("mf.k%d", i%20))
		m.Data = []byte(fmt.Sprintf("payload %d", i))
		if ack, err := clusterCASPublish(nc, m); err != nil || ack.Error != nil {
			t.Fatalf("publish %d: %+v %v", i, ack, err)
		}
	}
	checkReplicasAgree(t, c, "MF", 600)
	waitFor(t, 10*time.Second, "a linked snapshot on every replica's FS", func() bool {
		return len(linkedSnapshotDirs(c, "MF")) == 3
	})
	for _, o := range c.opts {
		if ents, err := os.ReadDir(o.StoreDir); err != nil || len(ents) != 0 {
			t.Fatalf("%s: the OS store directory holds %v (%v)", o.ServerName, ents, err)
		}
		if _, err := o.fsys.Stat(filepath.Join(o.StoreDir, "jetstream", "_raft_")); err != nil {
			t.Fatalf("%s: no raft directory on the injected FS: %v", o.ServerName, err)
		}
	}
	// The scratch of a snapshot being sent when a server stopped is
	// removed when its replica starts again.
	scratch := map[string]vfs.FS{}
	for _, m := range c.replicas("MF") {
		m.mu.Lock()
		dir := filepath.Join(m.groupDir, "sending-77", "msgs")
		m.mu.Unlock()
		if err := m.jsa.js.fs.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		scratch[dir] = m.jsa.js.fs
	}
	c.restartAll(t)
	nc, js = jsClient(t, c.servers[0])
	awaitNewLeader(t, c, nc, "MF", "")
	var err error
	if st, err = js.Stream(ctx(t), "MF"); err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx(t))
	if err != nil || info.State.Msgs != 600 {
		t.Fatalf("after restart: %+v %v", info, err)
	}
	checkReplicasAgree(t, c, "MF", 600)
	checkReplicaContents(t, c, "MF")
	if len(scratch) != 3 {
		t.Fatalf("%d scratch directories made", len(scratch))
	}
	for dir, fsys := range scratch {
		if _, err := fsys.Stat(dir); !os.IsNotExist(err) {
			t.Fatalf("scratch %s left after a restart: %v", dir, err)
		}
	}
}
