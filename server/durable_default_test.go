package server

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/store"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// Durable by default (issue 19): with no sync_interval configured, an R1
// file stream acknowledges a publish only once an fsync covers it, so a
// power loss right after the acks (no clock advanced, no periodic sync)
// keeps every acknowledged message.
func TestDurableDefaultR1(t *testing.T) {
	fsys := vfs.NewMem()
	s, _, nc := runManualClockServer(t, func(o *Options) { o.fsys = fsys })
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"file"}`)
	for i := 1; i <= 3; i++ {
		wantPubOK(t, jsPubRaw(t, nc, "s", "x"), "S", uint64(i))
	}
	mset := s.js.Load().account(globalAccountName).lookup("S")
	dir := filepath.Join(mset.jsa.dir, "S", "msgs")
	fsys.Crash()
	st, err := store.OpenFileStore(fsys, dir, store.FileStoreConfig{}, store.StoreLimits{})
	if err != nil {
		t.Fatalf("reopen after the crash: %v", err)
	}
	defer st.Stop()
	if got := st.State().Msgs; got != 3 {
		t.Fatalf("%d of 3 acknowledged messages survived the power loss", got)
	}
}

// errFenced fails every file operation of a server whose machine lost
// power: nothing it does after the cut reaches the disk.
var errFenced = errors.New("fenced: the machine lost power")

// Durable by default, replicated: with no sync_interval configured every
// replica fsyncs its raft log before it answers an append, so an
// acknowledged publish survives all three servers losing power at once.
func TestDurableDefaultCluster(t *testing.T) {
	disks := make([]*vfs.MemFS, 3)
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		disks[i] = vfs.NewMem()
		o.fsys = disks[i]
	})
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "D", Subjects: []string{"d.>"}, Replicas: 3})
	const n = 100
	for i := 1; i <= n; i++ {
		ack, err := js.Publish(ctx(t), fmt.Sprintf("d.%d", i%7), []byte(fmt.Sprintf("m%d", i)))
		if err != nil || ack.Sequence != uint64(i) {
			t.Fatalf("publish %d: %+v %v", i, ack, err)
		}
	}
	nc.Close()
	powerCut(disks, c.servers)
	for i := range c.servers {
		c.servers[i] = runServer(t, c.opts[i])
	}
	c.waitMetaLeader()
	nc, js = jsClient(t, c.servers[1])
	// (A request in the first moments after a whole-cluster restart can
	// go unanswered while the leader's interest spreads: retried.)
	var st jetstream.Stream
	var err error
	waitFor(t, 15*time.Second, "the stream's leader answering", func() bool {
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		st, err = js.Stream(c, "D")
		return err == nil
	})
	for i := 1; i <= n; i++ {
		var m *jetstream.RawStreamMsg
		waitFor(t, 10*time.Second, "the message back", func() bool {
			m, err = st.GetMsg(ctx(t), uint64(i))
			return err == nil
		})
		if string(m.Data) != fmt.Sprintf("m%d", i) {
			t.Fatalf("seq %d holds %q after the power loss", i, m.Data)
		}
	}
}

// /jsz and /varz show the effective setting: the default acknowledges
// after an fsync (sync_always) with a background sync every 2 minutes; an
// explicit interval is an opt-out and shows as one.
func TestDurableDefaultMonitoring(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		always   bool
		want     JetStreamConfig
	}{
		{"default", 0, false, JetStreamConfig{SyncInterval: 2 * time.Minute, SyncAlways: true}},
		{"always", 0, true, JetStreamConfig{SyncInterval: 2 * time.Minute, SyncAlways: true}},
		{"opt-out", time.Second, false, JetStreamConfig{SyncInterval: time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions()
			o.JetStream, o.StoreDir, o.HTTPHost, o.HTTPPort = true, t.TempDir(), "127.0.0.1", RANDOM_PORT
			o.SyncInterval, o.SyncAlways = tc.interval, tc.always
			s := runServer(t, o)
			var jsz JSInfo
			httpJSON(t, s, "/jsz", &jsz)
			var varz struct {
				JetStream JetStreamVarz `json:"jetstream"`
			}
			httpJSON(t, s, "/varz", &varz)
			for what, got := range map[string]JetStreamConfig{"jsz": jsz.Config, "varz": *varz.JetStream.Config} {
				if got.SyncInterval != tc.want.SyncInterval || got.SyncAlways != tc.want.SyncAlways {
					t.Errorf("%s: sync_interval %v sync_always %v, want %v %v", what, got.SyncInterval, got.SyncAlways,
						tc.want.SyncInterval, tc.want.SyncAlways)
				}
			}
		})
	}
}

// powerCut fences disks (nothing written from now on is kept), shuts the
// servers down and drops from each disk what was not fsynced.
func powerCut(disks []*vfs.MemFS, servers []*Server) {
	for _, d := range disks {
		d.InjectError(func(string, string) error { return errFenced })
	}
	for _, s := range servers {
		s.Shutdown()
	}
	for _, d := range disks {
		d.Crash()
		d.InjectError(nil)
	}
}

// A stream whose creation was answered exists after a power loss right
// after the answer, with its configuration (its directories and metadata
// were fsynced into their parents first).
func TestDurableStreamCreate(t *testing.T) {
	disk := vfs.NewMem()
	o := testOptions()
	o.JetStream, o.StoreDir, o.fsys = true, t.TempDir(), disk
	s := runServer(t, o)
	_, js := jsClient(t, s)
	for _, name := range []string{"A", "B"} {
		createStream(t, js, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"}, MaxMsgs: 77})
	}
	powerCut([]*vfs.MemFS{disk}, []*Server{s})
	s = runServer(t, o)
	_, js = jsClient(t, s)
	for _, name := range []string{"A", "B"} {
		st, err := js.Stream(ctx(t), name)
		if err != nil {
			t.Fatalf("stream %s after the power loss: %v", name, err)
		}
		if st.CachedInfo().Config.MaxMsgs != 77 {
			t.Fatalf("stream %s came back with %+v", name, st.CachedInfo().Config)
		}
		ack, err := js.Publish(ctx(t), name+".x", nil)
		if err != nil || ack.Sequence != 1 {
			t.Fatalf("publish to %s after the power loss: %+v %v", name, ack, err)
		}
	}
}

// A stream whose deletion was answered does not come back after a power
// loss right after the answer.
func TestDurableStreamDelete(t *testing.T) {
	disk := vfs.NewMem()
	o := testOptions()
	o.JetStream, o.StoreDir, o.fsys = true, t.TempDir(), disk
	s := runServer(t, o)
	_, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "A", Subjects: []string{"a"}})
	createStream(t, js, jetstream.StreamConfig{Name: "B", Subjects: []string{"b"}})
	if _, err := js.Publish(ctx(t), "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx(t), "A"); err != nil {
		t.Fatal(err)
	}
	powerCut([]*vfs.MemFS{disk}, []*Server{s})
	s = runServer(t, o)
	_, js = jsClient(t, s)
	if _, err := js.Stream(ctx(t), "A"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("deleted stream A after the power loss: %v", err)
	}
	if _, err := js.Stream(ctx(t), "B"); err != nil {
		t.Fatalf("stream B after the power loss: %v", err)
	}
}

// The publishes of one read buffer share one fsync: their acks are handed
// to the group commit at the end of the read, so the fsync does not start
// with the first publish and leave the rest to a second.
func TestDurableDefaultOneFsyncPerRead(t *testing.T) {
	fsys := vfs.NewMem()
	var syncs atomic.Int64
	fsys.InjectError(func(op, name string) error {
		if op == "sync" && strings.HasSuffix(name, ".blk") { // the messages' block
			syncs.Add(1)
		}
		return nil
	})
	s, _, nc := runManualClockServer(t, func(o *Options) { o.fsys = fsys })
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"file"}`)
	for round := 0; round < 5; round++ {
		before := syncs.Load()
		r := dialRaw(t, s)
		r.line() // INFO
		var b strings.Builder
		b.WriteString("CONNECT {\"verbose\":false}\r\nSUB acks 1\r\n")
		const n = 300
		for range n {
			b.WriteString("PUB s acks 1\r\nx\r\n")
		}
		r.send(b.String())
		for range n {
			if l := r.line(); !strings.HasPrefix(l, "MSG acks 1 ") {
				t.Fatalf("got %q", l)
			}
			r.line()
		}
		if got := syncs.Load() - before; got != 1 {
			t.Fatalf("round %d: %d fsyncs for one read of %d publishes, want 1", round, got, n)
		}
	}
}
