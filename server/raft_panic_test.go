package server

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/testutil/faultfs"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterRaftPanicShutdown: a panic in one stream group's
// log write path halts that group (on a follower: the group goroutine's
// Sync; on a leader: its sync running behind), never the process, and
// leaves no lock held: the server's Shutdown returns (it hung in the
// log's Close on the WAL mutex the panic left locked), the group is
// reported halted (/healthz) and the other stream keeps working meanwhile,
// and a restart pending does not hold Shutdown up.
func TestJetStreamClusterRaftPanicShutdown(t *testing.T) {
	for _, where := range []string{"follower", "leader", "loop"} {
		t.Run(where, func(t *testing.T) { testRaftPanicShutdown(t, where) })
	}
}

// testRaftPanicShutdown panics in BAD's group on one server: where is
// "follower" or "leader" (a write to its log: the group goroutine's
// Sync, or the leader's sync running behind) or "loop" (the group loop
// itself, outside the driver: a control function).
func testRaftPanicShutdown(t *testing.T, where string) {
	setForTest(t, &haltRestartFirst, time.Hour) // the group stays halted (stream_halt_restart_test.go restarts it)
	fss := make([]*faultfs.PanicFS, 3)
	for i := range fss {
		fss[i] = &faultfs.PanicFS{FS: vfs.Default, AtOnly: true, Match: string(os.PathSeparator) + streamGroupName(globalAccountName, "BAD") + string(os.PathSeparator)}
	}
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.fsys = fss[i] })
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Replicas: 3})
	createStream(t, js, jetstream.StreamConfig{Name: "GOOD", Subjects: []string{"good"}, Replicas: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "bad", []byte("before")); err != nil {
		t.Fatal(err)
	}
	victim := c.waitLeaderIndex(t, "BAD")
	if where != "leader" {
		victim = (victim + 1) % 3
	}
	s := c.servers[victim]
	g := s.raftGroup(streamGroupName(globalAccountName, "BAD"))
	if g == nil {
		t.Fatal("no group BAD on the victim")
	}
	if where == "loop" {
		g.control(func(*raft.Node) { panic("test: loop bug") })
		fss[victim].Fired.Store(true) // nothing to wait for below
	} else {
		fss[victim].Write.Store(true)
	}
	// Publish until the armed write fired (a leader writes every entry, a
	// follower every one it receives).
	for i := 0; !fss[victim].Fired.Load(); i++ {
		if i == 200 {
			t.Fatal("the armed write never came")
		}
		pctx, pcancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = js.Publish(pctx, "bad", []byte("x"))
		pcancel()
	}
	waitFor(t, 10*time.Second, "BAD halted on the victim", func() bool { return g.healthy() != nil })
	if h := s.jsHealth(httptest.NewRequest("GET", "/healthz", nil)); h == nil || h.StatusCode != 503 || !strings.Contains(h.Error, "halted") {
		t.Fatalf("/healthz does not report the halted group: %+v", h)
	}
	// A client of the broken stream gets an answer (an ack from the
	// replicas still working, or an error) within its timeout, and its
	// connection goes on serving: the other stream keeps working, through
	// the victim too.
	_, gjs := jsClient(t, s)
	bctx, bcancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, _ = gjs.Publish(bctx, "bad", []byte("after"))
	bcancel()
	for i := 0; i < 10; i++ {
		pctx, pcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := gjs.Publish(pctx, "good", []byte("y")); err != nil {
			pcancel()
			t.Fatalf("GOOD publish %d: %v", i, err)
		}
		pcancel()
	}
	done := make(chan struct{})
	go func() { s.Shutdown(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown of the server whose group panicked did not return")
	}
}
