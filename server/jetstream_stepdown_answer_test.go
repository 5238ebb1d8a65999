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

// slowSyncFS makes each fsync of a stream's raft log take delay (slowSync
// if zero) while armed: a slow disk, under which a group's demotion waits
// in its Ready.
type slowSyncFS struct {
	vfs.FS
	armed atomic.Bool
	delay time.Duration
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

// TestJetStreamClusterStepdownForwardedToNewLeader: a call that reaches a
// demoted leader (its serving flag still up: its disk is slow) while the
// new leader does not serve yet (its disk is slow too, so its first
// entry takes a while to commit) gets exactly one answer, the real one:
// the demoted replica forwards it and the new leader answers once it
// serves. It answered 10008 (the stepdown) before; a demoted replica that
// stayed silent left it unanswered.
func TestJetStreamClusterStepdownForwardedToNewLeader(t *testing.T) {
	const delay = 400 * time.Millisecond
	fss := []*slowSyncFS{{FS: vfs.Default, delay: delay}, {FS: vfs.Default, delay: delay}, {FS: vfs.Default, delay: delay}}
	c := runJSClusterWith(t, 3, func(i int, o *Options) { o.fsys = fss[i] })
	_, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "SDF", Subjects: []string{"sdf"}, Replicas: 3})
	serving := func(i int) bool {
		m := c.replicaOn(c.servers[i], "SDF")
		return m != nil && m.answersAsLeader()
	}
	// demotedPending: i still serves but its group no longer leads.
	demotedPending := func(i int) bool {
		m := c.replicaOn(c.servers[i], "SDF")
		return m != nil && m.isLeader() && !m.answersAsLeader()
	}
	tested := map[string]int{}
	for round := 0; round < 16 && (tested["STREAM.LEADER.STEPDOWN"] == 0 || tested["STREAM.INFO"] == 0); round++ {
		old := -1
		waitFor(t, 10*time.Second, "a stream leader", func() bool {
			for i := range c.servers {
				if serving(i) {
					old = i
					return true
				}
			}
			return false
		})
		nc := connectNATS(t, c.servers[old].ClientURL())
		for _, f := range fss {
			f.armed.Store(true)
		}
		if m, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.SDF", nil, 5*time.Second); err != nil || !isSuccess(m.Data) {
			t.Fatalf("round %d: the first stepdown: %v %v", round, m, err)
		}
		caught := false
		waitFor(t, 10*time.Second, "the old leader demoted", func() bool {
			caught = demotedPending(old)
			return caught || !c.replicaOn(c.servers[old], "SDF").isLeader()
		})
		nobodyServes := true
		for i := range c.servers {
			nobodyServes = nobodyServes && !serving(i)
		}
		if caught && nobodyServes {
			// The case under test: alternate between a change and a read.
			call := "STREAM.LEADER.STEPDOWN"
			if round%2 == 1 {
				call = "STREAM.INFO"
			}
			tested[call]++
			b := collectAnswers(t, nc, "$JS.API."+call+".SDF", 5*time.Second)
			if len(b) != 1 {
				t.Fatalf("round %d: %s in the handover: %d answers: %q", round, call, len(b), b)
			}
			if !isSuccess(b[0]) && !strings.Contains(string(b[0]), `"leader":`) {
				t.Fatalf("round %d: %s in the handover: %s", round, call, b[0])
			}
			t.Logf("round %d: %s answered once: %.120s", round, call, b[0])
		} else {
			t.Logf("round %d: not the case under test (old leader flagged: %v)", round, caught)
		}
		for _, f := range fss {
			f.armed.Store(false)
		}
		nc.Close()
	}
	if tested["STREAM.LEADER.STEPDOWN"] == 0 {
		t.Fatalf("never caught a handover with the old leader flagged and the new one not serving: %v", tested)
	}
}

// collectAnswers sends one request to subject and returns every answer
// that came within d: the test is that nothing more comes.
func collectAnswers(t *testing.T, nc *nats.Conn, subject string, d time.Duration) [][]byte {
	t.Helper()
	inbox := nats.NewInbox()
	answers := make(chan []byte, 8)
	sub, err := nc.Subscribe(inbox, func(m *nats.Msg) { answers <- m.Data })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	end := time.After(d)
	for {
		select {
		case b := <-answers:
			out = append(out, b)
		case <-end:
			return out
		}
	}
}

func isSuccess(b []byte) bool {
	var r struct {
		Success bool `json:"success"`
	}
	return json.Unmarshal(b, &r) == nil && r.Success
}
