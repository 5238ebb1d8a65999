package raft

import "fmt"

// SyncJob is a sync of the log running behind the driver (SyncBehind).
type SyncJob interface {
	// Done reports whether the sync ended, and its error; with wait it
	// waits for the end first. Once it reported the end it keeps
	// reporting it.
	Done(wait bool) (bool, error)
}

// LazySync is a SyncJob for a deterministic host (the simulators): the
// sync runs on the host's goroutine when the driver waits for it or once
// the host marked it Due (at the node's next tick), so the host's order
// decides, and a crash before then loses what it would have made durable
// while the followers' answers may commit the entries.
type LazySync struct {
	sync  func() error
	due   bool
	ended bool
	err   error
}

// NewLazySync returns a LazySync that runs sync.
func NewLazySync(sync func() error) *LazySync { return &LazySync{sync: sync} }

// Due lets the next Done run the sync without waiting being asked.
func (j *LazySync) Due() { j.due = true }

// Done runs the sync if waited for or due, and reports its end.
func (j *LazySync) Done(wait bool) (bool, error) {
	if !j.ended && (wait || j.due) {
		j.err, j.ended = j.sync(), true
	}
	return j.ended, j.err
}

// behindSync is the driver's record of a leader's log syncing behind:
// the job running and the last entry it makes durable, and the last
// entry saved since (which the next job covers).
type behindSync struct {
	job         SyncJob
	index, term uint64
	owedIndex   uint64 // 0: nothing saved since the job started
	owedTerm    uint64
}

// SyncPending reports whether entries saved behind are not yet reported
// durable: a sync runs, or is owed. The driver's owner calls Reap when
// the job ends (and does not let the group sleep meanwhile).
func (d *Driver) SyncPending() bool {
	return d.behind.job != nil || d.behind.owedIndex != 0
}

// Reap collects the sync running behind if it ended (or, with wait, once
// it ends): the node learns its entries are durable (a leader counts
// itself for them), and a sync of the entries saved since starts. An
// error means the group must stop, as for Process.
func (d *Driver) Reap(wait bool) (err error) {
	defer halted(&err)
	b := &d.behind
	if b.job != nil {
		ended, err := b.job.Done(wait)
		if !ended {
			return nil
		}
		b.job = nil
		if err != nil {
			return fmt.Errorf("raft: syncing: %w", err)
		}
		d.Node.Persisted(b.index, b.term)
	}
	if b.owedIndex != 0 {
		b.index, b.term = b.owedIndex, b.owedTerm
		b.owedIndex, b.owedTerm = 0, 0
		b.job = d.SyncBehind(d.Log.Sync)
	}
	return nil
}

// catchUp waits until everything saved behind is durable and reported:
// before a Ready that promises durability (a vote, an append's answer,
// a snapshot) or does not lead, and before a compaction.
func (d *Driver) catchUp() error {
	for d.SyncPending() {
		if err := d.Reap(true); err != nil {
			return err
		}
	}
	return nil
}

// mayGoBehind reports whether rd's entries may sync behind: a leader's
// batch that changes neither term nor vote, installs no snapshot and
// sends only what promises nothing about its own log (Ready.leaderOnly).
func (d *Driver) mayGoBehind(rd *Ready) bool {
	return d.SyncBehind != nil && rd.leaderOnly()
}

// processBehind handles a leader's Ready without waiting for its own
// log's sync: persist (written, not synced), send, apply, advance; the
// sync runs behind, and the leader counts itself for the entries once
// Reap reports it ended. The committed entries applied may not be
// durable here yet: two followers made them durable (a quorum of three
// without the leader), and they are in this node's log.
func (d *Driver) processBehind(rd Ready) error {
	if len(rd.Entries) > 0 || rd.HardState != nil {
		if err := d.Log.Save(nil, rd.Entries, rd.HardState); err != nil {
			return fmt.Errorf("raft: persisting: %w", err)
		}
	}
	if len(rd.Messages) > 0 {
		d.Net.Send(rd.Messages)
	}
	if k := len(rd.Entries); k > 0 {
		last := rd.Entries[k-1]
		d.behind.owedIndex, d.behind.owedTerm = last.Index, last.Term
	}
	if len(rd.CommittedEntries) > 0 {
		if err := d.SM.Apply(rd.CommittedEntries); err != nil {
			return fmt.Errorf("raft: applying: %w", err)
		}
	}
	if len(rd.ReadStates) > 0 && d.Reads != nil {
		d.Reads(rd.ReadStates)
	}
	rd.behind = true
	d.Node.Advance(rd)
	if d.behind.job == nil {
		return d.Reap(false) // starts the sync of these entries
	}
	return nil
}
