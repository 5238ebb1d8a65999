package server

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// countingSM records applied normal entries.
type countingSM struct {
	mu      sync.Mutex
	applied []string
	lead    raft.SoftState
}

func (c *countingSM) Restore(raft.Snapshot) error { return nil }
func (c *countingSM) Apply(ents []raft.Entry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range ents {
		if e.Type == raft.EntryNormal {
			c.applied = append(c.applied, string(e.Data))
		}
	}
	return nil
}
func (c *countingSM) leaderChanged(st raft.SoftState) {
	c.mu.Lock()
	c.lead = st
	c.mu.Unlock()
}
func (c *countingSM) snapshot() ([]string, raft.SoftState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.applied...), c.lead
}

// runMemRaftGroups starts a 3-server cluster and a raft group named name
// on every server, each with an in-memory log and a countingSM.
func runMemRaftGroups(t *testing.T, name string) ([]raft.ID, []*countingSM, []*raftGroup) {
	t.Helper()
	servers := runCluster(t, 3, nil)
	var peers []raft.ID
	for _, s := range servers {
		peers = append(peers, raftID(s.Name()))
	}
	sms := make([]*countingSM, 3)
	groups := make([]*raftGroup, 3)
	for i, s := range servers {
		sms[i] = &countingSM{}
		g, err := s.startRaftGroup(name, peers, raft.NewMemoryStorage(), sms[i])
		if err != nil {
			t.Fatal(err)
		}
		groups[i] = g
	}
	return peers, sms, groups
}

func TestRaftGroupOverRoutes(t *testing.T) {
	_, sms, groups := runMemRaftGroups(t, "T")
	leader := -1
	waitFor(t, 10*time.Second, "a ready leader", func() bool {
		for i, sm := range sms {
			if _, st := sm.snapshot(); st.Role == raft.Leader && st.LeaderReady {
				leader = i
				return true
			}
		}
		return false
	})
	for i := 0; i < 100; i++ {
		groups[leader].Propose([]byte(fmt.Sprint(i)), nil)
	}
	waitFor(t, 10*time.Second, "replication", func() bool {
		for _, sm := range sms {
			if a, _ := sm.snapshot(); len(a) != 100 {
				return false
			}
		}
		return true
	})
	for _, sm := range sms {
		a, _ := sm.snapshot()
		for i, v := range a {
			if v != fmt.Sprint(i) {
				t.Fatalf("order differs at %d: %q", i, v)
			}
		}
	}
}

func TestRaftGroupWALRestart(t *testing.T) {
	servers := runCluster(t, 3, nil)
	var peers []raft.ID
	for _, s := range servers {
		peers = append(peers, raftID(s.Name()))
	}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	start := func() ([]*countingSM, []*raftGroup) {
		sms := make([]*countingSM, 3)
		groups := make([]*raftGroup, 3)
		for i, s := range servers {
			log, err := openWALLog(vfs.Default, dirs[i], 0, t.Logf)
			if err != nil {
				t.Fatal(err)
			}
			sms[i] = &countingSM{}
			if groups[i], err = s.startRaftGroup("W", peers, log, sms[i]); err != nil {
				t.Fatal(err)
			}
		}
		return sms, groups
	}
	sms, groups := start()
	leader := waitLeader(t, sms)
	for i := 0; i < 50; i++ {
		groups[leader].Propose([]byte(fmt.Sprint(i)), nil)
	}
	waitApplied(t, sms, 50)
	for _, g := range groups {
		g.stop()
	}
	// Restarted from their logs, the groups replay the same 50 entries and
	// keep going.
	sms, groups = start()
	waitApplied(t, sms, 50)
	leader = waitLeader(t, sms)
	groups[leader].Propose([]byte("50"), nil)
	waitApplied(t, sms, 51)
	for _, sm := range sms {
		a, _ := sm.snapshot()
		for i, v := range a {
			if v != fmt.Sprint(i) {
				t.Fatalf("entry %d = %q", i, v)
			}
		}
	}
}

func waitLeader(t *testing.T, sms []*countingSM) int {
	leader := -1
	waitFor(t, 10*time.Second, "a ready leader", func() bool {
		for i, sm := range sms {
			if _, st := sm.snapshot(); st.Role == raft.Leader && st.LeaderReady {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

func waitApplied(t *testing.T, sms []*countingSM, n int) {
	waitFor(t, 10*time.Second, fmt.Sprintf("%d applied everywhere", n), func() bool {
		for _, sm := range sms {
			if a, _ := sm.snapshot(); len(a) != n {
				return false
			}
		}
		return true
	})
}
