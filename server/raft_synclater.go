package server

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A leader's own log fsync runs aside (raft.Driver.SyncLater): the group
// goroutine saves a batch, sends it to the followers, starts the fsync on
// a goroutine of its own and goes on stepping the followers' answers and
// proposing the next batch meanwhile. The core counts the leader's own
// copy toward a commit only once the fsync ended (raft.Config.SyncedSelf,
// Node.LogSynced), so a committed entry is durable on a quorum: two
// followers' fsyncs commit an entry even before the leader's own ended.
// Groups driven by a raftHost (the simulator) sync in place.

// raftSyncsAside bounds the fsyncs of one group's log running aside at
// once; batches saved meanwhile wait for one fsync begun once it ended
// (raft.Driver.StartOwed): group commit, as the fsync in place had.
const raftSyncsAside = 1

// syncedAside is the end of one fsync run aside.
type syncedAside struct {
	index, term uint64
	err         error
}

// Full reports that the group has raftSyncsAside fsyncs running (group
// goroutine only).
func (g *raftGroup) Full() bool { return g.syncingAside >= raftSyncsAside }

// Start runs fsync on a goroutine of its own; the group goroutine hears
// of its end on synced (logSyncedAside).
func (g *raftGroup) Start(fsync func() error, index, term uint64) {
	g.syncingAside++
	g.srv.wg.Add(1)
	go func() {
		defer g.srv.wg.Done()
		g.synced <- syncedAside{index: index, term: term, err: fsync()}
	}()
}

// logSyncedAside tells the core that an fsync run aside ended; a failed
// one stops the group, as a failed fsync in place does.
func (g *raftGroup) logSyncedAside(r syncedAside) error {
	g.syncingAside--
	if r.err != nil {
		return fmt.Errorf("raft: syncing: %w", r.err)
	}
	g.drv.Node.LogSynced(r.index, r.term)
	return g.drv.StartOwed()
}

// SyncStart begins a leader's pipelined sync (raft.SyncStarter) when the
// log syncs every batch (the durable default) and owes nothing else: a
// vote or a directory sync owed is made in place.
func (l *walLog) SyncStart() (func() error, bool, error) {
	if l.inline || l.syncEvery > 0 || l.mustFsync || len(l.owed) > 0 {
		return nil, false, nil
	}
	l.mu.Lock()
	err := l.bgErr
	l.mu.Unlock()
	if err != nil {
		return nil, false, err
	}
	fsync, err := l.w.SyncStart()
	if err != nil {
		return nil, false, err
	}
	return fsync, true, nil
}

var _ raft.SyncStarter = (*walLog)(nil)
var _ raft.SyncLater = (*raftGroup)(nil)
