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

// TestJetStreamClusterStepdownWithMemberDown: a stepdown answered success
// has moved the leadership. With one follower's server down, the leader
// picked the most caught-up member, the dead one half of the time (both
// hold the whole log), raft abandoned that transfer after an election
// timeout and the old leader stayed leader, though the client had been
// told success (a new stream's first leader, which has not heard from its
// members yet, hit the same). Now the transfer prefers active members and
// is retried, and the success waits for the group's demotion.
func TestJetStreamClusterStepdownWithMemberDown(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "SDD", Subjects: []string{"sdd"}, Replicas: 3})
	c.logViewsOnFailure(t, "SDD")
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx(t), "sdd", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	leading := func(i int) bool {
		m := c.replicaOn(c.servers[i], "SDD")
		return m != nil && m.isLeader() && m.groupLeads()
	}
	// A follower's server goes; the live ones hold the whole log.
	down := -1
	waitFor(t, 10*time.Second, "a stream leader", func() bool {
		for i := range c.servers {
			if leading(i) {
				down = (i + 1) % 3
				return true
			}
		}
		return false
	})
	c.servers[down].Shutdown()
	live := c.servers[(down+1)%3]
	nc := connectNATS(t, live.ClientURL())
	for round := 0; round < 6; round++ {
		old := -1
		waitFor(t, 10*time.Second, "a stream leader", func() bool {
			for i := range c.servers {
				if i != down && leading(i) {
					old = i
					return true
				}
			}
			return false
		})
		m, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.SDD", nil, 5*time.Second)
		if err != nil {
			t.Fatalf("round %d: stepdown: %v", round, err)
		}
		if !isSuccess(m.Data) {
			t.Fatalf("round %d: stepdown: %s", round, m.Data)
		}
		// Success: the old leader's group was demoted (its serving flag
		// drops once that is persisted).
		waitFor(t, 3*time.Second, "the old leader demoted after a successful stepdown", func() bool {
			return !c.replicaOn(c.servers[old], "SDD").isLeader()
		})
	}
}

func isSuccess(b []byte) bool {
	var r struct {
		Success bool `json:"success"`
	}
	return json.Unmarshal(b, &r) == nil && r.Success
}
