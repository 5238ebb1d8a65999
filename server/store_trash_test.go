package server

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A restarted server discards its replicas' stores (each is rebuilt from
// its raft log) by moving them into the trash, which a background
// goroutine empties; the replicas come back with every message.
func TestJetStreamClusterRestartDiscardsStoresIntoTrash(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 4
	for i := range n {
		name := fmt.Sprintf("T%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{fmt.Sprintf("t.%d", i)}, Replicas: 3})
		for range 3 {
			publishThroughMoves(t, js, fmt.Sprintf("t.%d", i))
		}
		c.waitAllApplied(t, name, 3, 3, 10*time.Second)
	}
	c.servers[2].Shutdown()
	c.servers[2] = runServer(t, c.opts[2])
	c.waitMetaLeader()
	for i := range n {
		c.waitAllApplied(t, fmt.Sprintf("T%d", i), 3, 3, 20*time.Second)
	}
	js2 := c.servers[2].js.Load()
	if got := js2.trash.seq.Load(); got < n {
		t.Fatalf("%d store directories went to the trash on the restart, want %d", got, n)
	}
	waitFor(t, 10*time.Second, "the trash emptied", func() bool {
		ents, err := os.ReadDir(js2.trashDir())
		return (err == nil && len(ents) == 0 || os.IsNotExist(err)) && !js2.trash.running.Load()
	})
}
