package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// assignedCounts reads s's running count of assignments and counts them.
func assignedCounts(s *Server) (kept, counted int) {
	jc := s.js.Load().cluster
	jc.mu.Lock()
	defer jc.mu.Unlock()
	for _, acc := range jc.streams {
		counted += len(acc)
	}
	return jc.assigned, counted
}

// waitAssigned waits for every server of servers to hold want assignments,
// failing at once if a server's running count differs from a full count.
func waitAssigned(t *testing.T, servers []*Server, want int) {
	t.Helper()
	for _, s := range servers {
		waitFor(t, 10*time.Second, fmt.Sprintf("%d assignments on %s", want, s.Name()), func() bool {
			kept, counted := assignedCounts(s)
			if kept != counted {
				t.Fatalf("%s keeps a count of %d assignments, holds %d", s.Name(), kept, counted)
			}
			return counted == want
		})
	}
}

// The meta group's running count of assignments (what a snapshot decision
// reads, instead of counting them on every applied batch) stays equal to
// a full count across creates, updates, scales, deletes and a snapshot
// installed over a server's own older assignments.
func TestJetStreamClusterAssignedCountKept(t *testing.T) {
	setForTest(t, &metaSnapshotEvery, 8)
	c := runJSCluster(t, 3)
	// The server stopped below leads the meta group: its survivors elect
	// another before the creates that follow (the failover runs every time).
	down := c.metaLeaderIndex()
	_, js := jsClient(t, c.notMetaLeader(c.servers[down]))
	for i := 0; i < 6; i++ {
		name := fmt.Sprint("S", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 1 + 2*(i%2)})
	}
	if _, err := js.UpdateStream(ctx(t), jetstream.StreamConfig{Name: "S1", Subjects: []string{"S1"}, Replicas: 3, MaxMsgs: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.UpdateStream(ctx(t), jetstream.StreamConfig{Name: "S2", Subjects: []string{"S2"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx(t), "S3"); err != nil {
		t.Fatal(err)
	}
	waitAssigned(t, c.servers, 5)

	c.servers[down].Shutdown()
	// A meta request sent while the dead server is still believed to lead
	// the meta group is dropped unanswered (as in nats-server): wait for the
	// new meta leader first.
	c.waitMetaLeader()
	for i := 0; i < 10; i++ {
		name := fmt.Sprint("T", i)
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name}, Replicas: 3})
		if i%2 == 0 {
			if err := js.DeleteStream(ctx(t), name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := js.DeleteStream(ctx(t), "S0"); err != nil {
		t.Fatal(err)
	}
	waitAssigned(t, c.except(down), 9)
	for _, s := range c.except(down) {
		waitFor(t, 5*time.Second, "meta log compacted on "+s.Name(), func() bool {
			first, _ := s.js.Load().cluster.meta.log.FirstIndex()
			return first > 1
		})
	}
	c.servers[down] = runServer(t, c.opts[down]) // installs the snapshot over S0..S5
	waitAssigned(t, c.servers, 9)
	c.servers[down].Shutdown()
	c.servers[down] = runServer(t, c.opts[down]) // restarts from its own snapshot
	waitAssigned(t, c.servers, 9)
}
