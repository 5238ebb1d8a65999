package server

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterStoreFailureLeavesGroupDirSynced: a replica whose
// store failed to open starts again later, serves, and its group
// directory survives a power loss with its incarnation record and log. A
// start that had made the group directory beside the failing store (the
// two made at once, tried in this session and dropped: it cost more CPU
// than it saved on a loaded machine) left it unsynced for the next start,
// which found the record and owed no fsync: the directory then lost its
// record and log in the power loss.
func TestJetStreamClusterStoreFailureLeavesGroupDirSynced(t *testing.T) {
	fss := []*vfs.MemFS{vfs.NewMem(), vfs.NewMem(), vfs.NewMem()}
	var failed atomic.Bool
	// A replica's store touches the disk at its open only to look for its
	// directory (store.FileStoreConfig.New): an I/O error there makes it
	// open the usual way, which fails when the directory cannot be made.
	fss[2].InjectError(func(op, name string) error {
		if failed.Load() || !strings.HasSuffix(name, "/SF/msgs") {
			return nil
		}
		if op == "mkdir" {
			failed.Store(true)
		}
		if op == "stat" || op == "mkdir" {
			return errors.New("injected store failure")
		}
		return nil
	})
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.fsys = fss[i] })
	nc, js := jsClient(t, c.servers[0])
	cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The create may wait for an election when S3 was its first leader.
	if _, err := js.CreateStream(cctx, jetstream.StreamConfig{Name: "SF", Subjects: []string{"sf"}, Replicas: 3}); err != nil {
		t.Logf("create: %v", err)
	}
	waitFor(t, 10*time.Second, "the injected failure", failed.Load)
	if c.replicaOn(c.servers[2], "SF") != nil {
		t.Fatal("S3 started its replica although its store failed")
	}
	c.servers[2].Shutdown()
	c.servers[2] = runServer(t, c.opts[2])
	waitFor(t, 20*time.Second, "S3's replica", func() bool { return c.replicaOn(c.servers[2], "SF") != nil })
	awaitNewLeader(t, c, nc, "SF", "")
	if _, err := js.Publish(ctx(t), "sf", []byte("x")); err != nil {
		t.Fatal(err)
	}
	checkReplicasAgree(t, c, "SF", 1)
	js3 := c.servers[2].js.Load()
	dir := js3.groupDir(js3.cluster.assignment(globalAccountName, "SF"))
	c.servers[2].Shutdown()
	fss[2].Crash()
	if !js3.hasIncarnation(dir) {
		ents, err := fss[2].ReadDir(dir)
		t.Fatalf("after a power loss S3's group directory %s lost its record: %v %v", dir, ents, err)
	}
}
