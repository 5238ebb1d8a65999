package wal

import (
	"errors"
	"fmt"
	"io"
)

// maxReadRun bounds one ReadAt when several entries are read back together.
const maxReadRun = 1 << 20

// Entries returns the entries [lo, hi): as many as fit in maxBytes (each
// counted as its Data plus a 29-byte header), but at least one. Entries below
// FirstIndex() are ErrCompacted, hi above LastIndex()+1 is ErrUnavailable.
// Recent entries come from memory; the Data of returned records must not be
// modified.
func (w *WAL) Entries(lo, hi, maxBytes uint64) ([]Record, error) {
	w.mu.Lock()
	defer w.unlock()
	switch {
	case w.shut:
		return nil, ErrClosed
	case lo <= w.meta.base:
		return nil, ErrCompacted
	case hi > w.lastIndex()+1:
		return nil, ErrUnavailable
	case lo >= hi:
		return nil, nil
	}
	hi = lo + w.fit(lo, hi, maxBytes)
	out := make([]Record, 0, hi-lo)
	diskHi := min(hi, max(lo, w.cache.lo))
	if lo < diskHi {
		var err error
		if out, err = w.readDisk(out, lo, diskHi); err != nil {
			return nil, err
		}
	}
	for i := diskHi; i < hi; i++ {
		out = append(out, w.cache.get(i))
	}
	return out, nil
}

// fit counts the entries from lo (below hi) that fit in maxBytes, at least 1.
func (w *WAL) fit(lo, hi, maxBytes uint64) uint64 {
	total := uint64(frameLen(int(w.loc(lo).size)))
	n := uint64(1)
	for ; lo+n < hi; n++ {
		total += uint64(frameLen(int(w.loc(lo + n).size)))
		if total > maxBytes {
			break
		}
	}
	return n
}

// readDisk appends entries [lo, hi) read back from the segment files,
// checking every checksum again. Entries adjacent in a file are read with
// one ReadAt.
func (w *WAL) readDisk(out []Record, lo, hi uint64) ([]Record, error) {
	last := w.loc(hi - 1)
	if s := w.active(); last.seg == s && last.off+frameLen(int(last.size)) > s.size {
		if err := w.flush(); err != nil {
			return nil, w.fail(err)
		}
	}
	for i := lo; i < hi; {
		start := w.loc(i)
		j, end := i+1, start.off+frameLen(int(start.size))
		for ; j < hi && end-start.off < maxReadRun; j++ {
			next := w.loc(j)
			if next.seg != start.seg || next.off != end {
				break
			}
			end += frameLen(int(next.size))
		}
		var err error
		if out, err = w.readRun(out, i, j, end); err != nil {
			return nil, err
		}
		i = j
	}
	return out, nil
}

// readRun reads entries [lo, hi), adjacent in one segment and ending at end.
func (w *WAL) readRun(out []Record, lo, hi uint64, end int64) ([]Record, error) {
	s, start := w.loc(lo).seg, w.loc(lo).off
	f, err := w.file(s)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, end-start)
	if n, err := f.ReadAt(buf, start); err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		return nil, err
	}
	var p int64
	for i := lo; i < hi; i++ {
		f, ok := parseFrame(buf[p:])
		if !ok || f.typ == metaType || f.index != i || f.term != w.loc(i).term {
			return nil, fmt.Errorf("%w: %s: entry %d at offset %d reads back damaged",
				ErrCorrupt, s.path, i, start+p)
		}
		out = append(out, Record{Index: f.index, Term: f.term, Type: f.typ, Data: f.data[:len(f.data):len(f.data)]})
		p += f.size
	}
	return out, nil
}

// Term returns the term of entry index, for index in
// [FirstIndex()-1, LastIndex()]; FirstIndex()-1 is the compaction point.
func (w *WAL) Term(index uint64) (uint64, error) {
	w.mu.Lock()
	defer w.unlock()
	switch {
	case w.shut:
		return 0, ErrClosed
	case index == w.meta.base:
		return w.meta.baseTerm, nil
	case index < w.meta.base:
		return 0, ErrCompacted
	case index > w.lastIndex():
		return 0, ErrUnavailable
	}
	return w.loc(index).term, nil
}

// cache keeps the most recent entries: a contiguous suffix of the log in a
// ring that grows up to cacheEntries records and holds at most cacheBytes of
// data (but always the last record).
type cache struct {
	ring  []Record
	head  int // ring position of the oldest record
	n     int
	lo    uint64 // index of the oldest record; the next index when empty
	bytes int
}

func (c *cache) reset(next uint64) { *c = cache{lo: next} }

func (c *cache) at(k int) *Record { return &c.ring[(c.head+k)%len(c.ring)] }

func (c *cache) get(i uint64) Record { return *c.at(int(i - c.lo)) }

// add appends the record that just became the last of the log.
func (c *cache) add(r Record) {
	if c.n == 0 {
		c.lo, c.head = r.Index, 0
	}
	if c.n == len(c.ring) {
		if len(c.ring) < cacheEntries {
			c.grow()
		} else {
			c.evict()
		}
	}
	*c.at(c.n) = r
	c.n++
	c.bytes += len(r.Data)
	for c.n > 1 && c.bytes > cacheBytes {
		c.evict()
	}
}

func (c *cache) grow() {
	ring := make([]Record, min(max(8, 2*len(c.ring)), cacheEntries))
	for k := 0; k < c.n; k++ {
		ring[k] = *c.at(k)
	}
	c.ring, c.head = ring, 0
}

// evict drops the oldest record.
func (c *cache) evict() {
	r := c.at(0)
	c.bytes -= len(r.Data)
	*r = Record{}
	c.head = (c.head + 1) % len(c.ring)
	c.n--
	c.lo++
}

// truncate drops index.. .
func (c *cache) truncate(index uint64) {
	keep := 0
	if index > c.lo {
		keep = int(min(index-c.lo, uint64(c.n)))
	}
	for k := keep; k < c.n; k++ {
		r := c.at(k)
		c.bytes -= len(r.Data)
		*r = Record{}
	}
	c.n = keep
	if keep == 0 {
		c.lo = index
	}
}

// compact drops ..base.
func (c *cache) compact(base uint64) {
	for c.n > 0 && c.lo <= base {
		c.evict()
	}
}
