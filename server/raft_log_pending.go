package server

import (
	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"path/filepath"
	"runtime"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A new stream's replica makes its group directory, the incarnation record
// and the log's first segment without fsyncing each one after the other
// (seven fsyncs in a row were half of a stream create's time): the fsyncs
// they need are handed to the group's log, which runs them together with
// its first fsync (walLog.fsync). The raft driver syncs the log before the
// group sends anything that promises durability (a vote, an append
// response) or applies anything, so the directory is durable before anyone
// relies on what it holds. A power loss before that leaves no directory
// (a replica that never started here) or a directory without its
// incarnation record, which is then made again when the stream starts
// again; nothing in it was acknowledged.

// pendingSyncs are fsyncs still owed by a group directory made unsynced.
type pendingSyncs []func() error

// makeGroupDir makes a group directory with its incarnation record (the
// empty file named marker, stream_incarnation.go), and returns the fsyncs
// that make them durable: the directory holding each directory made, and
// dir itself when it was there already. The record is empty (a hard link
// to one empty file, stream_incarnation_link.go): its directory's fsync
// makes it durable, no fsync of its own is needed. A directory made here
// is new: the group's log opens in it (raft_log_layout.go), creating its
// first segment, and the log's first fsync syncs the directory with that
// segment (wal.syncFiles), the record (and owner mark) made before it
// included. One fsync of the directory covers all its new entries.
func (js *jetStream) makeGroupDir(dir, marker string) (pendingSyncs, error) {
	fs := js.fs
	js.ensureIncarnationSource() // stream_incarnation_link.go
	parents, err := vfs.MkdirAllUnsynced(fs, dir, 0o750)
	if err != nil {
		return nil, err
	}
	if err := js.makeEmptyRecord(filepath.Join(dir, marker)); err != nil { // stream_incarnation_link.go
		return nil, err
	}
	var p pendingSyncs
	for _, d := range parents {
		p = append(p, func() error { return fs.SyncDir(d) })
	}
	if len(parents) == 0 { // dir was there (with a log, perhaps): the log may create no segment
		p = append(p, func() error { return fs.SyncDir(dir) })
	}
	return p, nil
}

// run runs every sync, at the same time when parallel (on the operating
// system's file system concurrent fsyncs share a journal commit), and
// returns the first error.
func (p pendingSyncs) run(parallel bool) error {
	if !parallel || len(p) < 2 {
		for _, f := range p {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make(chan error, len(p)-1)
	for _, f := range p[1:] {
		go func() { errs <- recoveredSync(f) }()
	}
	err := p[0]()
	for range len(p) - 1 {
		if e := <-errs; err == nil {
			err = e
		}
	}
	return err
}

// fsync makes the log durable, together with the fsyncs its directory
// still owes (see pendingSyncs).
//
// It first yields the processor: the goroutines this one just readied
// (the route writers holding a leader's appends, sent before its own
// fsync, or the pub acks of the batch just applied) sit in this
// processor's run queue, and a goroutine blocked in fsync keeps its
// processor until the runtime's monitor takes it back, which can be
// milliseconds later. Yielding lets them write first.
func (l *walLog) fsync() error {
	lattrace.Mark("fsync.start", 0)
	if lattrace.On {
		defer lattrace.Mark("fsync.end", 0)
	}
	if !l.inline {
		runtime.Gosched()
	}
	lattrace.Mark("fsync.call", 0)
	if len(l.owed) == 0 {
		return l.w.Sync()
	}
	all := append(pendingSyncs{l.w.Sync}, l.owed...)
	if err := all.run(vfs.SyncsInParallel(l.fs) && !l.inline); err != nil {
		return err
	}
	l.owed = nil
	return nil
}
