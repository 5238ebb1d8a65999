package server

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The leaders of replicated streams subscribe their subjects in the queue
// group streamIngestQueue; a client that asks for a subscription in that
// group is refused as a permissions violation (the connection stays up),
// so it cannot join the leaders' group and take publishes that would then
// not be stored. The client sits beside the publisher on a server that
// does not lead the stream, where a local queue member would be preferred
// to the remote leader.
func TestJetStreamClusterIngestQueueReserved(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "IQ", Subjects: []string{"iq.>"}, Replicas: 3})
	var follower *Server
	for _, s := range c.servers {
		if s.Name() != st.CachedInfo().Cluster.Leader {
			follower = s
		}
	}
	errs := make(chan error, 4)
	rogue := connectNATS(t, follower.ClientURL(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	sub, err := rogue.QueueSubscribeSync("iq.>", streamIngestQueue)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		want := fmt.Sprintf("Permissions Violation for Subscription to %q using queue %q", "iq.>", streamIngestQueue)
		if !errors.Is(err, nats.ErrPermissionViolation) || !strings.Contains(err.Error(), want) {
			t.Fatalf("async error %v, want %s", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the SUB in the reserved queue group was not refused")
	}
	if !rogue.IsConnected() {
		t.Fatal("the connection closed on the refused SUB")
	}
	// Another queue group of the same subjects is served as usual.
	other, err := rogue.QueueSubscribeSync("iq.>", "workers")
	if err != nil {
		t.Fatal(err)
	}
	if err := rogue.Flush(); err != nil {
		t.Fatal(err)
	}

	pc, pjs := jsClient(t, follower)
	defer pc.Close()
	const n = 20
	for i := range n {
		if _, err := pjs.Publish(ctx(t), fmt.Sprintf("iq.%d", i), []byte("x")); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	info, err := st.Info(ctx(t))
	if err != nil || info.State.Msgs != n {
		t.Fatalf("stream holds %+v (%v), want %d messages", info.State, err, n)
	}
	if m, err := sub.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("the refused subscription got %s", m.Subject)
	}
	for i := range n {
		if _, err := other.NextMsg(5 * time.Second); err != nil {
			t.Fatalf("queue group workers: message %d: %v", i, err)
		}
	}
}
