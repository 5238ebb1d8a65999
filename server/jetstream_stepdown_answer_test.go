package server

import (
	"encoding/json"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// slowSyncFS makes each fsync of a stream's raft log take slowSync while
// armed: a slow disk, under which a group's demotion waits in its Ready.
type slowSyncFS struct {
	vfs.FS
	armed atomic.Bool
	delay time.Duration // slowSync when zero
}

const slowSync = time.Second

func (f *slowSyncFS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, "_raft_"+string(os.PathSeparator)+"S-") {
		return file, err
	}
	return &slowSyncFile{File: file, fs: f}, nil
}

type slowSyncFile struct {
	vfs.File
	fs *slowSyncFS
}

func (h *slowSyncFile) Sync() error {
	if h.fs.armed.Load() {
		d := h.fs.delay
		if d == 0 {
			d = slowSync
		}
		time.Sleep(d) // the disk's slowness, not a wait for a condition
	}
	return h.File.Sync()
}

// TestJetStreamClusterStepdownOnlyLeaderAnswers: only the stream's leader
// answers a stream stepdown (as in nats-server). A leader demoted while
// its disk was slow kept its serving flag until the demotion was
// persisted, took the next stepdown, found its group no longer leading
// (or busy) and answered 10008 besides the new leader's success: a client
// could see the spurious 10008 first. Every answer to the request is
// collected through a plain subscription.
func TestJetStreamClusterStepdownOnlyLeaderAnswers(t *testing.T) {
	fss := []*slowSyncFS{{FS: vfs.Default}, {FS: vfs.Default}, {FS: vfs.Default}}
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.fsys = fss[i] })
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "SDA", Subjects: []string{"sda"}, Replicas: 3})
	leaderIdx := func() int {
		for i, s := range c.servers {
			if m := c.replicaOn(s, "SDA"); m != nil && m.isLeader() {
				return i
			}
		}
		return -1
	}
	success := func(what string, b []byte) {
		t.Helper()
		var r struct {
			Success bool `json:"success"`
		}
		if json.Unmarshal(b, &r); !r.Success {
			t.Fatalf("%s: %s", what, b)
		}
	}
	tested := 0
	for round := 0; round < 12 && tested == 0; round++ {
		waitFor(t, 10*time.Second, "a stream leader", func() bool { return leaderIdx() >= 0 })
		old := leaderIdx()
		nc := connectNATS(t, c.servers[old].ClientURL())
		answers := make(chan []byte, 8)
		inbox := nats.NewInbox()
		if _, err := nc.Subscribe(inbox, func(m *nats.Msg) { answers <- m.Data }); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		answer := func(what string) {
			t.Helper()
			if err := nc.PublishRequest("$JS.API.STREAM.LEADER.STEPDOWN.SDA", inbox, nil); err != nil {
				t.Fatal(err)
			}
			select {
			case b := <-answers:
				success(what, b)
			case <-time.After(5 * time.Second):
				t.Fatalf("round %d: %s not answered", round, what)
			}
		}
		// The old leader's disk turns slow: its demotion (a new term)
		// waits a second to be persisted.
		fss[old].armed.Store(true)
		answer("first stepdown")
		waitFor(t, 10*time.Second, "another leader", func() bool {
			for i, s := range c.servers {
				if m := c.replicaOn(s, "SDA"); i != old && m != nil && m.isLeader() {
					return true
				}
			}
			return false
		})
		if m := c.replicaOn(c.servers[old], "SDA"); m != nil && m.isLeader() {
			// The old leader does not know yet: the case under test.
			t.Logf("round %d: the old leader is still flagged", round)
			tested++
			answer("second stepdown")
			// The old leader, if it answers, does so once its group got
			// past the slow disk or its control call timed out (2 s).
			select {
			case b := <-answers:
				t.Fatalf("round %d: a second answer to the second stepdown: %s", round, b)
			case <-time.After(3 * time.Second):
			}
		}
		fss[old].armed.Store(false)
		waitFor(t, 10*time.Second, "the old leader knows it was demoted", func() bool {
			m := c.replicaOn(c.servers[old], "SDA")
			return m == nil || !m.isLeader()
		})
		nc.Close()
	}
	if tested == 0 {
		t.Fatal("no old leader still flagged as leader after the new one was: nothing tested")
	}
}

// replicaOn is s's replica of the global account's stream name, or nil.
func (c *jsTestCluster) replicaOn(s *Server, name string) *stream {
	if js := s.js.Load(); js != nil {
		if jsa := js.account(globalAccountName); jsa != nil {
			return jsa.lookup(name)
		}
	}
	return nil
}
