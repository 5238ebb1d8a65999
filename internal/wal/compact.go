package wal

import (
	"fmt"
	"path/filepath"
)

// Compact drops the entries up to upTo (they are in a snapshot). Logically
// the log then starts at upTo+1: FirstIndex() == upTo+1, Term(upTo) is still
// known, Entries below upTo+1 are ErrCompacted. The new compaction point is
// fsynced, then the oldest segments holding no entry above upTo are deleted;
// entries <= upTo sharing a segment with later ones stay on disk until that
// segment goes. upTo above LastIndex() is ErrUnavailable; upTo at or below
// the current compaction point only retries the deletion of old segments.
func (w *WAL) Compact(upTo uint64) error {
	defer w.takeSyncTurn()()
	w.mu.Lock()
	defer w.unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if upTo > w.meta.base {
		if upTo > w.lastIndex() {
			return ErrUnavailable
		}
		w.meta.baseTerm = w.loc(upTo).term
		w.ents.dropFront(int(upTo - w.meta.base))
		w.meta.base = upTo
		w.cache.compact(upTo)
		w.writeMeta()
		if err := w.syncFiles(); err != nil {
			return err
		}
	}
	return w.removeSegments()
}

// removeSegments deletes the oldest segments that no live entry needs. It
// only ever removes a prefix of the segments, so a state record that
// truncated entries of an older segment never goes before those entries.
func (w *WAL) removeSegments() error {
	keep := w.active()
	if w.ents.len() > 0 {
		keep = w.ents.at(0).seg
	}
	n := 0
	for n < len(w.segs)-1 && w.segs[n] != keep {
		n++
	}
	if n == 0 {
		return nil
	}
	var err error
	removed := 0
	for _, s := range w.segs[:n] {
		if err = w.fs.Remove(s.path); err != nil {
			break
		}
		if s.f != nil { // Release may have closed it
			s.f.Close()
			s.f = nil
		}
		removed++
		w.opts.Logf("wal %s: removed %s", w.dir, filepath.Base(s.path))
	}
	w.segs = append([]*segment(nil), w.segs[removed:]...)
	if removed > 0 {
		if serr := w.fs.SyncDir(w.dir); err == nil {
			err = serr
		}
	}
	if err != nil {
		return fmt.Errorf("wal: removing old segments: %w", err)
	}
	return nil
}

// SaveSnapshotMeta durably records that a snapshot covers the log up to
// index (whose term is term). When the log holds index with that term the
// entries stay (Compact drops them later); otherwise (a snapshot installed
// from the leader) the whole log is discarded and restarts after index:
// FirstIndex() == LastIndex()+1 == index+1, Term(index) == term. The state
// record and everything buffered before it are fsynced before it returns.
func (w *WAL) SaveSnapshotMeta(index, term uint64) error {
	w.mu.Lock()
	defer w.unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if index > maxIndex {
		return fmt.Errorf("wal: snapshot index %d out of range", index)
	}
	if index < w.meta.snapIndex {
		return fmt.Errorf("wal: snapshot at %d is older than the one at %d", index, w.meta.snapIndex)
	}
	if !w.holds(index, term) {
		if err := w.resetTo(index, term); err != nil {
			return err
		}
	}
	w.meta.snapIndex, w.meta.snapTerm = index, term
	w.writeMeta()
	return w.syncFiles()
}

// holds reports whether the log (or its compaction point) has entry index
// with the given term.
func (w *WAL) holds(index, term uint64) bool {
	switch {
	case index < w.meta.base || index > w.lastIndex():
		return false
	case index == w.meta.base:
		return w.meta.baseTerm == term
	}
	return w.loc(index).term == term
}

// resetTo discards the whole log; it restarts after index.
func (w *WAL) resetTo(index, term uint64) error {
	if index < w.meta.base {
		return fmt.Errorf("wal: snapshot at %d conflicts with the compacted log (compacted to %d): %w",
			index, w.meta.base, ErrCompacted)
	}
	if c := max(w.meta.hs.Commit, w.logHS.Commit); index < c {
		return fmt.Errorf("wal: snapshot at %d (term %d) would discard committed entries up to %d", index, term, c)
	}
	if term < w.meta.baseTerm {
		return fmt.Errorf("wal: snapshot term %d below the compaction point's %d", term, w.meta.baseTerm)
	}
	w.ents = locIndex{}
	w.meta.base, w.meta.baseTerm = index, term
	w.cache.reset(index + 1)
	return nil
}
