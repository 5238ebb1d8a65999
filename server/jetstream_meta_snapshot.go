package server

import (
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Meta snapshots: the meta group's state is the set of stream assignments.
// Every metaSnapshotEvery applied entries the group compacts its log into
// a snapshot of that set (JSON, sorted, so replicas write the same bytes);
// a server restarting from it, or a lagging member installing it, starts
// the replicas it is a peer of and drops those it no longer is.

var metaSnapshotEvery uint64 = 1024

type metaSnapshot struct {
	Streams []*streamAssignment `json:"streams"`
	// Reqs is the table of applied request ids, oldest first
	// (jetstream_meta_reqid.go); absent from an older version's.
	Reqs []metaReqRec `json:"reqs,omitempty"`
}

// wantSnapshot fixes the state at the applied index on the group
// goroutine by listing the assignments (pointers: an assignment is never
// changed once stored, jsCluster.apply replaces it); sorting and encoding
// them runs on the snapshot's goroutine. Encoding 8,000 assignments here
// held the meta group (and every create behind it) for 300-660 ms each
// 1,024 entries.
//
// A snapshot holds every assignment, so one every metaSnapshotEvery
// entries made a create cost more the more streams there were: at 10,000
// streams, 10,000 assignments encoded, written and fsynced every 1,024
// creates (0.3-0.6 ms of a processor per create on every server, against
// some 2 ms for the rest of it). A snapshot is therefore due only once the
// entries since the last one are at least as many as the assignments
// (metaSnapshotDue): encoding stays O(1) per entry, and the log a restart
// replays beside the snapshot is at most about the snapshot's size.
func (m *metaSM) wantSnapshot() (uint64, func() (snapPayload, error), bool) {
	since := m.applied - m.snapshot
	if since < metaSnapshotEvery || !metaSnapshotDue(since, m.jc.assignmentCount()) {
		return 0, nil, false
	}
	m.snapshot = m.applied
	list := m.jc.assignmentList()
	reqs := m.jc.reqList()
	return m.applied, func() (snapPayload, error) { return snapPayload{data: encodeMetaSnapshot(list, reqs)}, nil }, true
}

// metaSnapshotDue reports whether since applied entries (at least
// metaSnapshotEvery) call for a snapshot of assignments assignments.
func metaSnapshotDue(since uint64, assignments int) bool {
	return since >= metaSnapshotEvery && since >= uint64(assignments)
}

// assignmentCount is the number of assignments of every account.
func (jc *jsCluster) assignmentCount() int {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return jc.assigned
}

// assignmentList lists every account's assignments, in no order.
func (jc *jsCluster) assignmentList() []*streamAssignment {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	list := make([]*streamAssignment, 0, jc.assigned)
	for _, acc := range jc.streams {
		for _, sa := range acc {
			list = append(list, sa)
		}
	}
	return list
}

// encodeMetaSnapshot sorts list (by account, then name: every replica
// writes the same bytes) and encodes it.
func encodeMetaSnapshot(list []*streamAssignment, reqs []metaReqRec) []byte {
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if a.Account != b.Account {
			return a.Account < b.Account
		}
		return a.Config.Name < b.Config.Name
	})
	b, _ := json.Marshal(&metaSnapshot{Streams: list, Reqs: reqs})
	return b
}

// Restore replaces the assignments with a snapshot's and brings the local
// replicas in line.
func (m *metaSM) Restore(snap raft.Snapshot) error {
	if snap.IsEmpty() {
		return nil
	}
	data, err := snapshotBytes(m.jc.js.fs, snap) // a large one stays on disk
	if err != nil {
		return err
	}
	var ms metaSnapshot
	if err := json.Unmarshal(data, &ms); err != nil {
		return err
	}
	m.applied, m.snapshot = snap.Index, snap.Index
	m.jc.js.srv.metaHeld.Store(true)
	m.jc.restoreAssignments(ms.Streams)
	m.jc.restoreReqs(ms.Reqs)
	m.jc.replayedTo(m.applied) // jetstream_group_name.go
	m.endReplayIfDone()        // jetstream_replay_leaves.go
	return nil
}

func (jc *jsCluster) restoreAssignments(list []*streamAssignment) {
	streams := map[string]map[string]*streamAssignment{}
	for _, sa := range list {
		if streams[sa.Account] == nil {
			streams[sa.Account] = map[string]*streamAssignment{}
		}
		streams[sa.Account][sa.Config.Name] = sa
	}
	jc.mu.Lock()
	old := jc.streams
	jc.streams = streams
	jc.placed, jc.firstLeads, jc.assigned = nil, nil, 0
	jc.subjects = nil // rebuilt at the next create's overlap check
	jc.resetOldNamesLocked()
	for _, sa := range list {
		jc.countPlacedLocked(sa, 1)
	}
	jc.streamsChangedLocked()
	jc.mu.Unlock()
	// Replicas of streams that are gone, or that left this server.
	for acc, names := range old {
		jsa := jc.js.account(acc)
		if jsa == nil {
			continue
		}
		for name, osa := range names {
			switch sa := streams[acc][name]; {
			case sa == nil:
				jsa.stopReplica(name, true, osa)
			case !jc.isPeer(sa):
				if mset := jsa.lookup(name); mset != nil {
					jc.startLeaving(jsa, mset, sa) // as when a meta entry moves it
				}
			}
			if streams[acc][name] == nil {
				jc.leaders.forget(leaderKey(acc, name))
			}
		}
	}
	var start []*streamAssignment
	for _, sa := range list {
		jsa := jc.js.account(sa.Account)
		if jsa == nil {
			jc.warnNoAccount(sa)
		}
		if jsa == nil || !jc.isPeer(sa) || jsa.lookup(sa.Config.Name) != nil {
			continue
		}
		start = append(start, sa)
	}
	jc.startReplicas(start, startRestored)
}

// restoreWorkers bounds the replicas a snapshot restore starts at once.
const restoreWorkers = 8

// startReplicas starts the replicas of list, restoreWorkers at a time (a
// restart with thousands of streams reads and opens each one's files: one
// after another that took most of the restart), and returns once all have
// started or failed. how is startReplica's.
func (jc *jsCluster) startReplicas(list []*streamAssignment, how replicaStart) {
	s := jc.js.srv
	t0 := s.clock.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(restoreWorkers, len(list)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(list); i = int(next.Add(1) - 1) {
				sa := list[i]
				jsa := jc.js.account(sa.Account)
				if jsa == nil {
					continue
				}
				if _, err := jsa.startReplica(sa, how); err != nil && !errors.Is(err, errReplicaDeferred) {
					s.Errorf("JetStream cluster: starting replica of %q: %v", sa.Config.Name, err)
				}
			}
		}()
	}
	wg.Wait()
	if len(list) >= 100 {
		s.Noticef("JetStream cluster: started %d replicas in %v (%v after the server's start)", len(list),
			s.clock.Since(t0).Round(time.Millisecond), s.clock.Since(s.start).Round(time.Millisecond))
	}
}
