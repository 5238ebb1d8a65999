package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestZZFdProbe(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 20
	for i := range n {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("F%d", i), Subjects: []string{fmt.Sprintf("f.%d", i)}, Replicas: 3})
	}
	for i := range n {
		publishThroughMoves(t, js, fmt.Sprintf("f.%d", i))
	}
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	time.Sleep(3 * time.Second)
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		p, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if strings.HasPrefix(p, "/tmp") || strings.HasPrefix(p, "/") {
			t.Log(p)
		}
	}
}
