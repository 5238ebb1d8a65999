package server

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go/jetstream"
)

// A stream whose leader's raft group halts while the group sleeps
// (quiescent) gets a new leader: the leader's server is still up and
// its route busy, so node liveness (raft_live.go) shows it alive, but
// its group is gone and the quiet followers must not wait for it.
func TestJetStreamClusterQuietLeaderHaltElects(t *testing.T) {
	setForTest(t, &haltRestartFirst, time.Hour) // the halted replica stays halted
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "Q", Subjects: []string{"q"}, Replicas: 3})
	if _, err := js.Publish(ctx(t), "q", []byte("x")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	victim := c.waitLeaderIndex(t, "Q")
	g := c.servers[victim].raftGroup(streamGroupName(globalAccountName, "Q"))
	g.control(func(*raft.Node) { panic("test: the leader's group breaks while asleep") })
	waitFor(t, 10*time.Second, "Q halted on its leader", func() bool { return g.healthy() != nil })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Q:\n%s", c.raftViews("Q"))
		}
	})
	start := time.Now()
	_, js2 := jsClient(t, c.servers[(victim+1)%3])
	waitFor(t, 20*time.Second, "a publish accepted by a new leader", func() bool {
		pctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := js2.Publish(pctx, "q", []byte("y"), jetstream.WithMsgID("y"))
		return err == nil
	})
	t.Logf("a new leader %v after the halt", time.Since(start))
}
