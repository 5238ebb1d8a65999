package wal

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Append buffers records at the end of the log. Their indexes must run on
// from LastIndex()+1 and their terms must not go down. They are durable after
// the next Sync; until then a crash may drop any suffix of them.
//
// The log keeps the records' Data (its cache of recent entries returns it
// from Entries) without copying it: the caller must not change it after.
func (w *WAL) Append(recs []Record) error {
	w.mu.Lock()
	defer w.unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.checkBatch(recs); err != nil {
		return err
	}
	for i := range recs {
		rec := recs[i]
		rec.Data = rec.Data[:len(rec.Data):len(rec.Data)]
		if err := w.appendOne(rec); err != nil {
			return w.fail(err)
		}
	}
	if len(w.buf) >= flushBytes {
		if err := w.flush(); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// checkBatch validates a whole batch before anything is changed.
func (w *WAL) checkBatch(recs []Record) error {
	next, term := w.lastIndex()+1, w.lastTerm()
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Index != next:
			return fmt.Errorf("wal: append of index %d, want %d", r.Index, next)
		case r.Term < term:
			return fmt.Errorf("wal: entry %d has term %d below %d", r.Index, r.Term, term)
		case r.Type == metaType:
			return fmt.Errorf("wal: record type %#x is reserved", r.Type)
		case len(r.Data) > MaxRecordSize:
			return fmt.Errorf("wal: entry %d has %d bytes, limit %d", r.Index, len(r.Data), MaxRecordSize)
		}
		next, term = next+1, r.Term
	}
	return nil
}

// appendOne encodes one checked record, starting a new segment first when
// the active one is full (unless it holds nothing but its opening state
// record: a record larger than SegmentSize gets a segment of its own).
func (w *WAL) appendOne(rec Record) error {
	s := w.active()
	if used := s.size + int64(len(w.buf)); used > metaFrame && used+frameLen(len(rec.Data)) > w.opts.SegmentSize {
		if err := w.rollover(); err != nil {
			return err
		}
		s = w.active()
	}
	off := s.size + int64(len(w.buf))
	w.buf = appendFrame(w.buf, rec.Index, rec.Term, rec.Type, rec.Data)
	w.ents.push(entLoc{seg: s, off: off, term: rec.Term, size: uint32(len(rec.Data))})
	w.cache.add(rec)
	w.dirty.data = true
	return nil
}

// rollover seals the active segment (written out and fsynced in full, so
// that only the last segment can ever have a torn tail) and starts the next.
func (w *WAL) rollover() error {
	if err := w.flush(); err != nil {
		return err
	}
	s := w.active()
	f, err := w.file(s)
	if err != nil {
		return err
	}
	if err := w.cutFill(s, f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return w.createSegment(s.seq+1, w.lastIndex()+1)
}

// flush writes the buffer to the active segment, without fsync.
func (w *WAL) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	s := w.active()
	f, err := w.file(s)
	if err != nil {
		return err
	}
	if err := w.fillAhead(s, f, s.size+int64(len(w.buf))); err != nil {
		return err
	}
	n, err := f.WriteAt(w.buf, s.size)
	s.size += int64(n)
	if err != nil {
		return err
	}
	if cap(w.buf) > 4*flushBytes {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
	return nil
}

// SetHardState records hs; it becomes durable with the next Sync. The term
// must not go down, and a vote cast in a term cannot change in that term.
func (w *WAL) SetHardState(hs HardState) error {
	w.mu.Lock()
	defer w.unlock()
	if err := w.usable(); err != nil {
		return err
	}
	cur := w.meta.hs
	switch {
	case hs == cur:
		return nil
	case hs.Term < cur.Term:
		return fmt.Errorf("wal: hard state term %d below %d", hs.Term, cur.Term)
	case hs.Term == cur.Term && cur.Vote != 0 && hs.Vote != cur.Vote:
		return fmt.Errorf("wal: vote in term %d changed from %d to %d", hs.Term, cur.Vote, hs.Vote)
	}
	w.meta.hs = hs
	w.dirty.hs = true
	return nil
}

// Sync makes every Append, SetHardState and TruncateFrom so far durable with
// one fsync of the active segment (plus a directory sync when a segment was
// created). The hard state's Commit must not exceed LastIndex().
//
// The fsync of the active segment runs without mu: appends, reads and
// the hard state go on meanwhile (a raft leader's next batch is written
// while the last one syncs); what they add is durable after the next
// Sync. Syncs, Compact, Release and Close take turns (syncTurn).
func (w *WAL) Sync() error {
	w.syncTurn <- struct{}{}
	defer func() { <-w.syncTurn }()
	f, err := w.prepareSync()
	if f == nil || err != nil {
		return err
	}
	err = f.Sync()
	w.mu.Lock()
	defer w.unlock()
	w.syncing = false
	if err != nil {
		return w.fail(err)
	}
	return nil
}

// prepareSync runs syncPrepare under mu.
func (w *WAL) prepareSync() (vfs.File, error) {
	w.mu.Lock()
	defer w.unlock()
	return w.syncPrepare()
}

// syncPrepare writes out everything buffered and returns the file whose
// fsync is left to do without mu (nil when it did all there was under
// mu: nothing to fsync, or a directory to sync as well, which is rare).
func (w *WAL) syncPrepare() (vfs.File, error) {
	if err := w.usable(); err != nil {
		return nil, err
	}
	if err := w.stageHardState(); err != nil {
		return nil, err
	}
	if !w.dirty.data || w.dirty.dir {
		return nil, w.syncFiles()
	}
	if err := w.flush(); err != nil {
		return nil, w.fail(err)
	}
	f, err := w.file(w.active())
	if err != nil {
		return nil, w.fail(err)
	}
	w.dirty.data = false // what is written from now on is dirty again
	w.syncing = true
	return f, nil
}

// takeSyncTurn waits for a Sync's fsync running without mu to end; the
// caller releases the turn with the returned function.
func (w *WAL) takeSyncTurn() func() {
	w.syncTurn <- struct{}{}
	return func() { <-w.syncTurn }
}

// Flush hands every Append, SetHardState and TruncateFrom so far to the
// operating system without fsync: they survive the process being killed,
// not the machine losing power. The next Sync makes them durable.
func (w *WAL) Flush() error {
	w.mu.Lock()
	defer w.unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.stageHardState(); err != nil {
		return err
	}
	if err := w.flush(); err != nil {
		return w.fail(err)
	}
	return nil
}

// Dirty reports whether anything written since the last Sync is not yet
// fsynced.
func (w *WAL) Dirty() bool {
	w.mu.Lock()
	defer w.unlock()
	return w.dirty.data || w.dirty.hs || w.dirty.dir || w.syncing
}

// EntriesDurable reports whether every entry and the hard state's term
// and vote are fsynced: Dirty but for a commit index not yet written (a
// follower's commit advances after the entries' sync, and a commit-only
// change asks for no fsync, so Dirty can stay true while a log idles).
func (w *WAL) EntriesDurable() bool {
	w.mu.Lock()
	defer w.unlock()
	if w.dirty.data || w.dirty.dir || w.syncing {
		return false
	}
	return !w.dirty.hs || w.meta.hs.Term == w.logHS.Term && w.meta.hs.Vote == w.logHS.Vote
}

// stageHardState buffers a changed hard state as a state record.
func (w *WAL) stageHardState() error {
	if !w.dirty.hs {
		return nil
	}
	if c, last := w.meta.hs.Commit, w.lastIndex(); c > last {
		return fmt.Errorf("wal: hard state commit %d beyond last index %d", c, last)
	}
	w.logHS = w.meta.hs
	w.writeMeta()
	w.dirty.hs = false
	return nil
}

func (w *WAL) sync() error {
	if err := w.stageHardState(); err != nil {
		return err
	}
	return w.syncFiles()
}

// syncFiles writes the buffer out and fsyncs what needs it: the active
// segment and the directory, together when both need it and the options
// allow (a new log's first sync, a segment rollover).
func (w *WAL) syncFiles() error {
	if w.dirty.data {
		if err := w.flush(); err != nil {
			return w.fail(err)
		}
	}
	var dirErr chan error
	if w.dirty.data && w.dirty.dir && w.opts.ParallelSync {
		dirErr = make(chan error, 1)
		go func() { dirErr <- w.fs.SyncDir(w.dir) }()
	}
	if w.dirty.data {
		f, err := w.file(w.active())
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			if dirErr != nil {
				<-dirErr
			}
			return w.fail(err)
		}
		w.dirty.data = false
	}
	if w.dirty.dir {
		err := error(nil)
		if dirErr != nil {
			err = <-dirErr
		} else {
			err = w.fs.SyncDir(w.dir)
		}
		if err != nil {
			return w.fail(err)
		}
		w.dirty.dir = false
	}
	return nil
}

// TruncateFrom drops entries index.. (a conflicting tail). It is recorded
// as a state record, so it is durable after the next Sync and a crash before
// then leaves the old tail. Dropping committed entries, or entries covered by
// the snapshot, is refused; index > LastIndex() is a no-op.
func (w *WAL) TruncateFrom(index uint64) error {
	w.mu.Lock()
	defer w.unlock()
	if err := w.usable(); err != nil {
		return err
	}
	switch {
	case index > w.lastIndex():
		return nil
	case index <= w.meta.base:
		return ErrCompacted
	case index <= max(w.meta.hs.Commit, w.logHS.Commit, w.meta.snapIndex):
		return fmt.Errorf("wal: truncation from %d would drop committed entries (commit %d, snapshot %d)",
			index, max(w.meta.hs.Commit, w.logHS.Commit), w.meta.snapIndex)
	}
	w.ents.truncate(int(index - w.meta.base - 1))
	w.cache.truncate(index)
	w.writeMeta()
	return nil
}
