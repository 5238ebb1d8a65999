package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterReplicaCreateMakesNoStoreFiles: creating an R3
// stream makes no directory or file of its store on any server (the store
// is rebuilt from the raft log at every start; its first write makes
// them), yet every replica stores what is published, and a power loss of
// every server after the publish keeps it (the raft log has it).
func TestJetStreamClusterReplicaCreateMakesNoStoreFiles(t *testing.T) {
	fss := []*vfs.MemFS{vfs.NewMem(), vfs.NewMem(), vfs.NewMem()}
	var mu sync.Mutex
	var made []string // creations under the stream's store directory
	for i, m := range fss {
		m.InjectError(func(op, name string) error {
			if (op == "mkdir" || op == "open" || op == "link" || op == "rename") && strings.Contains(name, "/streams/LZ") {
				mu.Lock()
				made = append(made, fmt.Sprintf("S%d %s %s", i+1, op, name))
				mu.Unlock()
			}
			return nil
		})
	}
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.fsys = fss[i] })
	_, js := jsClient(t, c.servers[0])
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "LZ", Subjects: []string{"lz"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "every replica", func() bool {
		for _, s := range c.servers {
			if c.replicaOn(s, "LZ") == nil {
				return false
			}
		}
		return true
	})
	mu.Lock()
	got := append([]string(nil), made...)
	mu.Unlock()
	if len(got) > 0 {
		t.Fatalf("creating the stream made store files: %v", got)
	}
	if _, err := js.Publish(ctx(t), "lz", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	checkReplicasAgree(t, c, "LZ", 1)
	// a power cut: nothing written from here on is kept (a graceful
	// shutdown first would sync the lazily made store)
	powerCut(fss, c.servers)
	for i := range c.servers {
		c.servers[i] = runServer(t, c.opts[i])
	}
	checkReplicasAgree(t, c, "LZ", 1)
}
