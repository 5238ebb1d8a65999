package server

import (
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// groupSyncFS makes each fsync of a file of a stream's raft group take
// groupSyncDelay while armed, and counts the fsyncs that ended.
type groupSyncFS struct {
	vfs.FS
	armed atomic.Bool
	ended atomic.Int64
}

const groupSyncDelay = 3 * time.Second

func (f *groupSyncFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, "_raft_"+string(os.PathSeparator)+"S-") {
		return file, err
	}
	return &groupSyncFile{File: file, fs: f}, nil
}

type groupSyncFile struct {
	vfs.File
	fs *groupSyncFS
}

func (h *groupSyncFile) Sync() error {
	if !h.fs.armed.Load() {
		return h.File.Sync()
	}
	time.Sleep(groupSyncDelay) // the disk's slowness, not a wait for a condition
	err := h.File.Sync()
	h.fs.ended.Add(1)
	return err
}

// TestJetStreamClusterCreateAnsweredBeforeFirstSync: a new stream's first
// leader serves, and its creation is answered, while its group's first
// fsync still runs (raftGroup.serveFirstTerm): nothing the answer promises
// depends on it. A publish right after waits for it and is stored. Before,
// the answer waited for the first leader's fsync and then for the origin's
// own replica's group goroutine (a fresh status for the answer's cluster
// section), itself in its first fsync.
func TestJetStreamClusterCreateAnsweredBeforeFirstSync(t *testing.T) {
	fss := []*groupSyncFS{{FS: vfs.Default}, {FS: vfs.Default}, {FS: vfs.Default}}
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.fsys = fss[i] })
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "WARM", Subjects: []string{"warm"}, Replicas: 3})
	for _, f := range fss {
		f.armed.Store(true)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FAST", Subjects: []string{"fast"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	ended := int64(0)
	for _, f := range fss {
		ended += f.ended.Load()
	}
	if ended > 0 {
		t.Fatalf("the create was answered after %d of its groups' fsyncs ended, want before the first", ended)
	}
	for _, f := range fss {
		f.armed.Store(false) // the fsyncs under way still take their time
	}
	pctx, pcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer pcancel()
	ack, err := js.Publish(pctx, "fast", []byte("x"))
	if err != nil || ack.Sequence != 1 {
		t.Fatalf("publish right after the create: %+v %v", ack, err)
	}
}
