package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/testutil/faultfs"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// ackedPublisher publishes numbered messages to a subject, each until
// acknowledged under one message id (a publish that timed out but was
// stored is not stored twice), and remembers what was acknowledged. A
// 10077 "store failed" answer fails the test: it says "not stored", and
// in these tests every message is stored by the replicas that did not
// fail.
type ackedPublisher struct {
	t    *testing.T
	js   jetstream.JetStream
	subj string
	want map[uint64][32]byte
	next int
}

func (p *ackedPublisher) publish() {
	p.t.Helper()
	p.next++
	data := []byte(fmt.Sprintf("message %d %0100d", p.next, 0))
	deadline := time.Now().Add(30 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ack, err := p.js.Publish(pctx, p.subj, data, jetstream.WithMsgID(fmt.Sprintf("id-%d", p.next)))
		cancel()
		if err == nil {
			p.want[ack.Sequence] = sha256.Sum256(data)
			return
		}
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == 10077 {
			p.t.Fatalf("message %d answered 'store failed' (%v), yet the other replicas store it", p.next, err)
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("message %d never acknowledged: %v", p.next, err)
		}
	}
}

// TestJetStreamClusterStoreWriteErrorHalts: a write of one replica's store
// fails with an I/O error (EIO: a failing disk), on a follower or on the
// leader. That replica's group halts (a leader hands its leadership
// over) and the replica restarts from its log and catches up, as after a
// panic; the stream keeps taking writes, no client is told "store failed"
// for a message the others stored, the replicas end equal message for
// message, and nothing counts as broken once the replica runs again.
// Before, the failing replica's store refused every later write on its
// own: a follower silently diverged (its group never halted: "halted"
// times out), a leader answered 10077 to every publish (the stream
// refused writes cluster-wide). "sync": the write that fails is an idle
// follower's periodic store sync (sync_interval set): its group halts at
// once, not at its next entry, which may be long in coming (without it
// "halted" times out, as nothing is published meanwhile). Every halt is
// logged without a panic or a stack (checkHaltLogged).
func TestJetStreamClusterStoreWriteErrorHalts(t *testing.T) {
	for _, where := range []string{"follower", "leader", "sync"} {
		t.Run(where, func(t *testing.T) { testStoreWriteErrorHalts(t, where) })
	}
}

func testStoreWriteErrorHalts(t *testing.T, where string) {
	sep := string(os.PathSeparator)
	if where != "sync" {
		setForTest(t, &fileStoreBlockSize, 4<<10) // the apply writes when a block fills (sealed, its index written)
	}
	setForTest(t, &haltRestartFirst, 200*time.Millisecond)
	fss := make([]*faultfs.ErrFS, 3)
	for i := range fss {
		fss[i] = &faultfs.ErrFS{FS: vfs.Default, Match: sep + "BAD" + sep + "msgs" + sep}
	}
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		o.fsys = fss[i]
		if where == "sync" {
			o.SyncInterval = 100 * time.Millisecond
		}
	})
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Replicas: 3})
	p := &ackedPublisher{t: t, js: js, subj: "bad", want: map[uint64][32]byte{}}
	for range 20 {
		p.publish()
	}
	victim, s, name, g, old := c.badVictim(t, where)
	logs := &captureLog{} // trace_redact_test.go
	s.SetLogger(logs, false, false)
	fss[victim].Fails.Store(1)
	if where == "sync" { // one message buffered for the victim's next sync, then nothing
		p.publish()
		waitFor(t, 10*time.Second, "the periodic sync's write failed", func() bool { return fss[victim].Failed.Load() > 0 })
	}
	for i := 0; fss[victim].Failed.Load() == 0; i++ {
		if i == 200 {
			t.Fatal("the failing write never came")
		}
		p.publish()
	}
	waitFor(t, 10*time.Second, "BAD's group halted on the victim", func() bool { return g.healthy() != nil })
	checkHaltLogged(t, logs, where == "sync")
	for range 20 { // the stream stays available meanwhile
		p.publish()
	}
	c.waitReplicaRestarted(t, s, name, g, old)
	waitFor(t, 10*time.Second, "/healthz 200 on the victim", func() bool {
		return s.jsHealth(httptest.NewRequest("GET", "/healthz", nil)) == nil
	})
	if n := s.js.Load().brokenStores.Load(); n != 0 {
		t.Fatalf("%d broken stores counted after the restart, want 0", n)
	}
	for range 20 {
		p.publish()
	}
	c.waitAllApplied(t, "BAD", 3, uint64(len(p.want)), 20*time.Second)
	for _, m := range c.replicas("BAD") {
		if got := replicaDigest(m, p.want); got != "" {
			t.Fatalf("%s: %s", m.jsa.js.srv.Name(), got)
		}
	}
}

// checkHaltLogged: the halt of a replica whose store failed to write is
// logged as the expected failure it is (a failing disk), with no
// goroutine stack nor panic text, which read as a bug; a halt after a
// failed periodic sync (sync) says the replica restarts and catches up.
// Before, that halt was a deliberate panic of a control call, recovered
// by the group loop, which logged the panic and a full stack.
func checkHaltLogged(t *testing.T, logs *captureLog, sync bool) {
	t.Helper()
	waitFor(t, 10*time.Second, "the halt logged", func() bool { return strings.Contains(logs.text(), "halt") })
	text := logs.text()
	if strings.Contains(text, "goroutine ") || strings.Contains(strings.ToLower(text), "panic") {
		t.Fatalf("the halt after a store write error logged a panic or a stack:\n%s", text)
	}
	const note = "store sync failed: "
	const restarts = ": halting replica; it restarts and catches up from its peers"
	if sync && !(strings.Contains(text, "stream '$G > BAD': "+note) && strings.Contains(text, restarts)) {
		t.Fatalf("no line says the replica halts after its failed sync:\n%s", text)
	}
}
