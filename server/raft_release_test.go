package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/nats-io/nats-server/v2/internal/testutil"
)

// publishThroughMoves publishes once, again while the stream answers
// 10008: the leader balance may be moving the new streams' leaderships
// (a request reaching a leader that just resigned gets 10008, as from
// nats-server).
func publishThroughMoves(t *testing.T, js jetstream.JetStream, subject string) {
	t.Helper()
	for try := 0; ; try++ {
		_, err := js.Publish(ctx(t), subject, []byte("x"))
		var apiErr *jetstream.APIError
		if err == nil {
			return
		}
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10008 || try == 20 {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond) // polling for the new leader
	}
}

// walFilesOpen counts this process's descriptors open on raft log
// segments under the cluster's store directories.
func (c *jsTestCluster) walFilesOpen(t *testing.T) int {
	t.Helper()
	return testutil.OpenFiles(t, func(p string) bool {
		return strings.HasSuffix(p, ".wal") && slices.ContainsFunc(c.opts, func(o *Options) bool { return strings.HasPrefix(p, o.StoreDir) })
	})
}

// An idle replicated stream keeps no raft log file open: a group that
// falls asleep closes its log's segments, and the next publish opens them
// again. With one descriptor per group and stream, 10,000 idle streams
// ran a server out of descriptors (EMFILE) when they were published to.
func TestJetStreamClusterIdleStreamsHoldNoLogFiles(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 8
	for i := range n {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("F%d", i), Subjects: []string{fmt.Sprintf("f.%d", i)}, Replicas: 3})
	}
	for round := 1; round <= 2; round++ {
		for i := range n {
			publishThroughMoves(t, js, fmt.Sprintf("f.%d", i))
		}
		waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
		if open := c.walFilesOpen(t); open != 0 {
			t.Fatalf("round %d: %d raft log files open with every group asleep", round, open)
		}
	}
	for i := range n {
		name := fmt.Sprintf("F%d", i)
		c.waitAllApplied(t, name, 3, 2, 10*time.Second)
	}
}
