package server

import (
	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A leader's own log sync runs behind its group (raft.Driver.SyncBehind):
// its appends leave, the entries committed by its followers are applied,
// and its next batch is written while its last one is fsynced. It counts
// itself toward a commit once its sync ended, so two followers that
// synced commit an entry in a group of three without it: the follower's
// fsync, not two fsyncs in a row, is what a publish waits for.

// behindJob is a sync running on a goroutine of its own.
type behindJob struct {
	done  chan error
	ended bool
	err   error
}

func (j *behindJob) Done(wait bool) (bool, error) {
	if j.ended {
		return true, j.err
	}
	if wait {
		j.err, j.ended = <-j.done, true
		return true, j.err
	}
	select {
	case j.err = <-j.done:
		j.ended = true
	default:
	}
	return j.ended, j.err
}

// syncBehind starts a sync of the group's log on a goroutine of its own;
// it nudges the group (synced) when it ends. A log whose sync is no fsync
// (sync_interval set) or that owes other fsyncs first (a new group's
// directories, a vote) syncs at once instead.
func (g *raftGroup) syncBehind(sync func() error) raft.SyncJob {
	if l, ok := g.log.(*walLog); !ok || !l.mayFsyncBehind() {
		return &behindJob{ended: true, err: sync()}
	}
	lattrace.Mark("sync.behind", 0)
	j := &behindJob{done: make(chan error, 1)}
	g.syncs.Add(1)
	go func() {
		defer g.syncs.Done()
		j.done <- recoveredSync(sync)
		select {
		case g.synced <- struct{}{}:
		default:
		}
	}()
	return j
}

// mayFsyncBehind reports whether Sync is a plain fsync of the log that
// another goroutine may run while the group goes on (group goroutine).
func (l *walLog) mayFsyncBehind() bool {
	return l.syncEvery <= 0 && !l.mustFsync && len(l.owed) == 0
}

// hostedSyncBehind is syncBehind for a hosted group (the simulator): a
// raft.LazySync, run when the driver waits for it or at the next tick.
func (g *raftGroup) hostedSyncBehind(sync func() error) raft.SyncJob {
	j := raft.NewLazySync(sync)
	g.lazy = j
	return j
}

// reapOnTick collects the sync behind at a tick: a hosted group's runs
// now.
func (g *raftGroup) reapOnTick() error {
	if g.lazy != nil {
		g.lazy.Due()
		g.lazy = nil
	}
	return g.drv.Reap(false)
}
