package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// recover rebuilds the WAL's state from the segment files in dir.
func (w *WAL) recover() error {
	segs, err := w.listSegments()
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return w.createSegment(1, 1)
	}
	r := replay{first: 1}
	var fileLen int64
	for i, s := range segs {
		var err error
		if fileLen, err = w.recoverSegment(&r, s, i == len(segs)-1); err != nil {
			return err
		}
	}
	if err := r.finish(); err != nil {
		return err
	}
	if err := w.cutTornTail(fileLen); err != nil {
		return err
	}
	for _, e := range r.ents {
		w.ents.push(e)
	}
	w.meta, w.logHS = r.meta, r.meta.hs
	w.cache.reset(w.lastIndex() + 1)
	if w.active().size == 0 {
		w.writeMeta() // a fresh or fully torn last segment
	}
	return nil
}

// listSegments returns the segment files of dir in seq order, unopened.
func (w *WAL) listSegments() ([]*segment, error) {
	des, err := w.fs.ReadDir(w.dir)
	if err != nil {
		return nil, err
	}
	var segs []*segment
	for _, de := range des {
		seq, first, ok := parseSegName(de.Name())
		if !ok || de.IsDir() {
			if strings.HasSuffix(de.Name(), ".wal") {
				w.opts.Logf("wal %s: ignoring %s", w.dir, de.Name())
			}
			continue
		}
		if n := len(segs); n > 0 && segs[n-1].seq == seq {
			return nil, fmt.Errorf("%w: two segments with seq %d", ErrCorrupt, seq)
		}
		segs = append(segs, &segment{seq: seq, first: first, path: filepath.Join(w.dir, de.Name())})
	}
	return segs, nil // ReadDir sorts by name; zero padding makes that seq order
}

func parseSegName(name string) (seq, first uint64, ok bool) {
	base, found := strings.CutSuffix(name, ".wal")
	a, b, dash := strings.Cut(base, "-")
	if !found || !dash || len(a) != 20 || len(b) != 20 {
		return 0, 0, false
	}
	seq, err1 := strconv.ParseUint(a, 10, 64)
	first, err2 := strconv.ParseUint(b, 10, 64)
	return seq, first, err1 == nil && err2 == nil && seq > 0
}

// recoverSegment opens s and replays it into r; s.size becomes the length
// of its valid prefix, and the file's length is returned.
func (w *WAL) recoverSegment(r *replay, s *segment, last bool) (int64, error) {
	flag := os.O_RDONLY
	if last {
		flag = os.O_RDWR
	}
	f, err := w.fs.OpenFile(s.path, flag, 0)
	if err != nil {
		return 0, err
	}
	s.f = f
	w.segs = append(w.segs, s)
	data, err := readAll(f)
	if err != nil {
		return 0, err
	}
	s.size, err = r.scan(s, data, last)
	if err == nil && last && keepZeroTail(s, data) {
		return s.size, nil // a zero-filled tail stays (fill.go)
	}
	return int64(len(data)), err
}

// cutTornTail truncates the last segment, of fileLen bytes, to its valid
// prefix, durably. It runs only once the whole log replayed cleanly, so a
// failed Open changes nothing on disk.
func (w *WAL) cutTornTail(fileLen int64) error {
	s := w.active()
	if s.size == fileLen {
		return nil
	}
	w.opts.Logf("wal %s: truncating torn tail of %s at %d (%d bytes dropped)",
		w.dir, filepath.Base(s.path), s.size, fileLen-s.size)
	if err := s.f.Truncate(s.size); err != nil {
		return err
	}
	return s.f.Sync()
}

func readAll(f interface {
	io.ReaderAt
	Stat() (os.FileInfo, error)
}) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	data := make([]byte, fi.Size())
	n, err := f.ReadAt(data, 0)
	if errors.Is(err, io.EOF) && n == len(data) {
		err = nil
	}
	return data[:n], err
}

// replay is the log state rebuilt while reading segments in order.
type replay struct {
	ents    []entLoc // contiguous entries from first
	first   uint64
	known   bool   // a state record was seen, so first is meaningful
	holeEnd uint64 // entries up to here were found missing
	meta    metaState
}

func (r *replay) next() uint64 { return r.first + uint64(len(r.ents)) }

// scan replays the frames of one segment and returns the length of its
// valid prefix.
func (r *replay) scan(s *segment, data []byte, last bool) (int64, error) {
	var off int64
	for off < int64(len(data)) {
		f, ok := parseFrame(data[off:])
		if !ok {
			return r.damaged(s, data, off, last)
		}
		if err := r.apply(f, s, off); err != nil {
			return 0, fmt.Errorf("%w: %s at offset %d: %v", ErrCorrupt, s.path, off, err)
		}
		off += f.size
	}
	return off, nil
}

// damaged decides what a bad frame at off means: a torn tail (the valid
// prefix ends there) or corruption.
func (r *replay) damaged(s *segment, data []byte, off int64, last bool) (int64, error) {
	if !last {
		return 0, fmt.Errorf("%w: %s: damaged frame at offset %d of a sealed segment", ErrCorrupt, s.path, off)
	}
	if p := r.validAfter(data, off+1); p >= 0 && !zeroSector(data[:p], off) {
		return 0, fmt.Errorf("%w: %s: damaged frame at offset %d followed by a valid one at %d",
			ErrCorrupt, s.path, off, p)
	}
	return off, nil
}

// sectorSize is the unit a disk writes whole (or not at all).
const sectorSize = 512

// zeroSector reports whether the damaged frame at from, up to the valid
// frame that ends data, holds the mark of a lost sector write: an aligned
// sector of zeros, or zeros from from to the end of its sector covering at
// least a frame's length and checksum (no frame has both zero). The last
// segment's records overwrite a zero-filled tail (fill.go), and a power
// cut can keep a later sector of those overwrites while losing an earlier
// one, which then reads as the fill's zeros: a torn tail, although valid
// frames follow it. (The sector holding the valid frame's start was
// written, so the partial stretch before it is not looked at.) A frame
// damaged otherwise (a flipped bit, stale bytes) has no such stretch and
// stays corruption, unless its payload itself holds an aligned sector of
// zeros: then its damage is taken for a torn tail, the trade etcd's WAL
// makes for its torn last entry.
func zeroSector(data []byte, from int64) bool {
	end := int64(len(data))
	first := (from/sectorSize + 1) * sectorSize
	if first <= end && first-from >= offIndex && allZero(data[from:first]) {
		return true
	}
	for lo := first; lo+sectorSize <= end; lo += sectorSize {
		if allZero(data[lo : lo+sectorSize]) {
			return true
		}
	}
	return false
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// validAfter returns the offset of the first valid frame at or after from
// whose index is plausible for this log, or -1. Index 0 is never plausible,
// which lets zero-filled tails through quickly.
func (r *replay) validAfter(data []byte, from int64) int64 {
	lo := max(r.meta.base, 1)
	for p := from; p+hdrSize <= int64(len(data)); p++ {
		b := data[p:]
		if int64(le.Uint32(b[offLen:])) > int64(len(b)-hdrSize) {
			continue
		}
		hi := r.next() + uint64(len(b))/hdrSize
		if idx := le.Uint64(b[offIndex:]); idx < lo || idx > hi {
			continue
		}
		if _, ok := parseFrame(b); ok {
			return p
		}
	}
	return -1
}

// apply replays one valid frame.
func (r *replay) apply(f frame, s *segment, off int64) error {
	if off == 0 && f.typ != metaType {
		return errors.New("segment does not start with a state record")
	}
	if f.typ == metaType {
		m, ok := decodeMeta(f)
		if !ok {
			return errors.New("malformed state record")
		}
		r.applyMeta(f.index, m)
		return nil
	}
	if !r.known || f.index != r.next() {
		return fmt.Errorf("entry %d out of sequence (want %d)", f.index, r.next())
	}
	if t, ok := r.prevTerm(); ok && f.term < t {
		return fmt.Errorf("entry %d has term %d below its predecessor's %d", f.index, f.term, t)
	}
	r.ents = append(r.ents, entLoc{seg: s, off: off, term: f.term, size: uint32(len(f.data))})
	return nil
}

// prevTerm is the term of entry next()-1, when known.
func (r *replay) prevTerm() (uint64, bool) {
	if n := len(r.ents); n > 0 {
		return r.ents[n-1].term, true
	}
	if r.next()-1 == r.meta.base {
		return r.meta.baseTerm, true
	}
	return 0, false
}

// applyMeta replays a state record written when the last index was last.
func (r *replay) applyMeta(last uint64, m metaState) {
	switch n := r.next(); {
	case !r.known || last >= n: // entries up to last are not here
		r.holeEnd = max(r.holeEnd, last)
		r.ents, r.first = r.ents[:0], last+1
	case last+1 < n: // a truncation; what was missing above last no longer matters
		r.holeEnd = min(r.holeEnd, last)
		if last+1 <= r.first {
			r.ents, r.first = r.ents[:0], last+1
		} else {
			r.ents = r.ents[:last+1-r.first]
		}
	}
	r.known = true
	if m.base >= r.first {
		k := min(m.base+1-r.first, uint64(len(r.ents)))
		r.ents, r.first = r.ents[k:], r.first+k
	}
	r.meta = m
}

// finish checks the replayed log as a whole.
func (r *replay) finish() error {
	if !r.known {
		return nil // nothing valid at all: an empty log
	}
	switch last := r.next() - 1; {
	case r.holeEnd > r.meta.base:
		return fmt.Errorf("%w: entries %d..%d are missing (compacted only to %d)",
			ErrCorrupt, r.meta.base+1, r.holeEnd, r.meta.base)
	case r.first != r.meta.base+1:
		return fmt.Errorf("%w: log starts at %d, compaction point is %d", ErrCorrupt, r.first, r.meta.base)
	case r.meta.hs.Commit > last:
		return fmt.Errorf("%w: commit index %d beyond the last entry %d", ErrCorrupt, r.meta.hs.Commit, last)
	}
	return nil
}
