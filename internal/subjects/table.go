// Package subjects keeps the per-subject state of a stream store: for
// each subject with live messages, how many there are and the first and
// last sequence. A store of fresh subjects (one new subject per message,
// as compare-and-set and KV workloads have) does one lookup that misses
// and one insert per message, on every replica, into a table that may
// hold millions of subjects. A Go map of pointers made that cost several
// cache misses per lookup, rehashed every key (reading its bytes) as it
// grew, and gave the garbage collector two objects per subject to mark.
//
// A Table instead keeps each entry inline, with the hash stored beside
// it and the subject's bytes in an append-only byte arena, so:
//   - a lookup that misses reads one line of one-byte tags, and never a
//     slot or the key bytes;
//   - growing moves slots without rehashing or reading keys;
//   - the table holds no pointers the collector must follow but one per
//     part;
//   - no single operation moves more than one part (at most partMax
//     slots): the table grows by splitting parts (extendible hashing),
//     never by copying everything at once.
//
// Bytes once written to an arena are never changed: a compaction or a
// split writes new arenas. Subject strings handed out by All are views
// of arena bytes and stay valid for as long as a caller keeps them.
//
// A Table is not safe for concurrent use, except that lookups (Get, All,
// Keys, Len) may run together while nothing changes it.
package subjects

import (
	"hash/maphash"
	"iter"
	"math"
	"unsafe"
)

// State is one subject's live messages: their count and the first and
// last sequence.
type State struct {
	Msgs, First, Last uint64
}

const (
	partMin = 8    // slots of a new part
	partMax = 4096 // a part this size splits instead of growing
	// A part grows or splits when an insert would fill more than 3/4 of
	// its slots: linear probing stays short below that.
	loadNum, loadDen = 3, 4
	// An arena is compacted when more than half of it (and at least
	// compactMin bytes) belongs to deleted subjects.
	compactMin = 4096
)

// Table maps subjects to their State.
type Table struct {
	seed  maphash.Seed
	dir   []dirEntry // indexed by the top depth bits of a subject's hash
	depth uint8
	n     int
	spare *part // a replaced part whose tags and slots a split may reuse
}

// dirEntry is a part with copies of its tags and slots headers, so that a
// lookup reads the directory (small, cache-hot) and then the tags.
type dirEntry struct {
	tags  []uint8
	slots []slot
	p     *part
}

// part is an open-addressing hash table with linear probing over the
// subjects whose hashes start with the same depth bits. tags[i] is 0 when
// slot i is empty, else a 7-bit digest of its hash with the top bit set:
// probing compares tags and reads a slot only when its tag matches.
type part struct {
	depth  uint8  // how many top bits of the hash its subjects share
	prefix uint64 // those bits
	used   int
	tags   []uint8
	slots  []slot // as many as tags, a power of two
	keys   []byte // arena of subject bytes
	dead   int    // arena bytes of deleted subjects
}

type slot struct {
	hash uint64
	off  uint32 // the subject's bytes are keys[off:off+klen]
	klen uint32
	st   State
}

func tagOf(h uint64) uint8 { return uint8(h>>32) | 0x80 }

// New returns an empty table.
func New() *Table {
	t := &Table{seed: maphash.MakeSeed(), dir: make([]dirEntry, 1)}
	t.point(newPart(0, 0, partMin))
	return t
}

func newPart(depth uint8, prefix uint64, size int) *part {
	return &part{depth: depth, prefix: prefix, tags: make([]uint8, size), slots: make([]slot, size)}
}

// Len is the number of subjects.
func (t *Table) Len() int { return t.n }

func (t *Table) hash(key string) uint64 { return maphash.String(t.seed, key) }

func (t *Table) entry(h uint64) *dirEntry {
	if t.depth == 0 {
		return &t.dir[0]
	}
	return &t.dir[h>>(64-t.depth)]
}

// find returns the part of hash h and key's slot in it (-1: absent).
func (t *Table) find(h uint64, key string) (*part, int) {
	e := t.entry(h)
	tags, mask, tag := e.tags, len(e.tags)-1, tagOf(h)
	for i := int(h) & mask; ; i = (i + 1) & mask {
		switch tags[i] {
		case 0:
			return e.p, -1
		case tag:
			if s := &e.slots[i]; s.hash == h && int(s.klen) == len(key) && e.p.key(s) == key {
				return e.p, i
			}
		}
	}
}

// Get returns key's state (false when key has none).
func (t *Table) Get(key string) (State, bool) {
	p, i := t.find(t.hash(key), key)
	if i < 0 {
		return State{}, false
	}
	return p.slots[i].st, true
}

// Put sets key's state, adding key when it is new.
func (t *Table) Put(key string, st State) {
	h := t.hash(key)
	if p, i := t.find(h, key); i >= 0 {
		p.slots[i].st = st
		return
	}
	t.insert(h, key, st)
}

// Add counts a new last message seq of key (a new key starts at seq) and
// returns key's state before (false: key was new).
func (t *Table) Add(key string, seq uint64) (State, bool) {
	h := t.hash(key)
	if p, i := t.find(h, key); i >= 0 {
		s := &p.slots[i].st
		prev := *s
		s.Msgs++
		s.Last = seq
		return prev, true
	}
	t.insert(h, key, State{Msgs: 1, First: seq, Last: seq})
	return State{}, false
}

// Delete removes key (nothing when it is absent).
func (t *Table) Delete(key string) {
	if p, i := t.find(t.hash(key), key); i >= 0 {
		p.remove(i)
		t.n--
	}
}

// All yields every subject and its state, in no particular order. The
// table must not change during the iteration.
func (t *Table) All() iter.Seq2[string, State] {
	return func(yield func(string, State) bool) {
		for i := 0; i < len(t.dir); {
			p := t.dir[i].p
			for k, tag := range p.tags {
				if tag != 0 && !yield(p.key(&p.slots[k]), p.slots[k].st) {
					return
				}
			}
			i += 1 << (t.depth - p.depth) // a part covers that many entries in a row
		}
	}
}

// Keys yields every subject, in no particular order. The table must not
// change during the iteration (the subjects may be kept and used after).
func (t *Table) Keys() iter.Seq[string] {
	return func(yield func(string) bool) {
		for k := range t.All() {
			if !yield(k) {
				return
			}
		}
	}
}

// insert adds key, known to be absent.
func (t *Table) insert(h uint64, key string, st State) {
	p := t.entry(h).p
	for (p.used+1)*loadDen > len(p.slots)*loadNum || arenaFull(p, key) {
		if len(p.slots) < partMax && !arenaFull(p, key) {
			p.rebuild(len(p.slots) * 2)
			t.point(p)
			break
		}
		t.split(p)
		p = t.entry(h).p
	}
	p.put(h, key, st)
	t.n++
}

// arenaFull reports whether key would not fit p's arena (32-bit offsets).
func arenaFull(p *part, key string) bool {
	return uint64(len(p.keys))+uint64(len(key)) > math.MaxUint32
}

// split replaces full part p by two parts of one more hash bit.
func (t *Table) split(p *part) {
	if p.depth == t.depth {
		if t.depth == 63 {
			panic("subjects: hash bits exhausted") // would take 2^63 parts
		}
		dir := make([]dirEntry, 2*len(t.dir))
		for i, e := range t.dir {
			dir[2*i], dir[2*i+1] = e, e
		}
		t.dir, t.depth = dir, t.depth+1
	}
	bit := uint64(1) << (63 - p.depth)
	lo, hi := t.reusePart(p.depth+1, p.prefix<<1), newPart(p.depth+1, p.prefix<<1|1, len(p.slots))
	// Each half gets an arena as large as p's live keys: about what it
	// holds when it splits in turn, so its inserts never copy it.
	live := len(p.keys) - p.dead
	lo.keys, hi.keys = make([]byte, 0, live), make([]byte, 0, live)
	for k, tag := range p.tags {
		if tag == 0 {
			continue
		}
		q, s := lo, &p.slots[k]
		if s.hash&bit != 0 {
			q = hi
		}
		q.put(s.hash, p.key(s), s.st)
	}
	t.point(lo)
	t.point(hi)
	// p is unreachable now: its tags and slots serve the next split. Its
	// arena does not (subjects handed out may still view it), and the
	// spare does not hold on to it.
	t.spare = &part{tags: p.tags, slots: p.slots}
}

// reusePart returns an empty part of partMax slots, made from the arrays of
// the part the last split replaced when there is one: a table of fresh
// subjects splits every few thousand inserts, and reusing one part's
// arrays saves allocating and faulting in a new one each time.
func (t *Table) reusePart(depth uint8, prefix uint64) *part {
	sp := t.spare
	t.spare = nil
	if sp == nil || len(sp.slots) != partMax {
		return newPart(depth, prefix, partMax)
	}
	clear(sp.tags)
	clear(sp.slots)
	return &part{depth: depth, prefix: prefix, tags: sp.tags, slots: sp.slots}
}

// point makes p's directory entries point to p and its current slots.
func (t *Table) point(p *part) {
	span := 1 << (t.depth - p.depth) // p covers span entries from first
	first := int(p.prefix) << (t.depth - p.depth)
	for i := first; i < first+span; i++ {
		t.dir[i] = dirEntry{p.tags, p.slots, p}
	}
}

func (p *part) key(s *slot) string {
	if s.klen == 0 {
		return ""
	}
	return unsafe.String(&p.keys[s.off], int(s.klen))
}

// put stores key in p's first free slot of its probe; p has room.
func (p *part) put(h uint64, key string, st State) {
	mask := len(p.slots) - 1
	i := int(h) & mask
	for p.tags[i] != 0 {
		i = (i + 1) & mask
	}
	p.tags[i] = tagOf(h)
	p.slots[i] = slot{hash: h, off: uint32(len(p.keys)), klen: uint32(len(key)), st: st}
	p.keys = append(p.keys, key...)
	p.used++
}

// remove empties slot i, shifting later slots of the same probe run back
// so that lookups need no tombstones.
func (p *part) remove(i int) {
	mask := len(p.slots) - 1
	p.dead += int(p.slots[i].klen)
	p.used--
	for j := (i + 1) & mask; p.tags[j] != 0; j = (j + 1) & mask {
		home := int(p.slots[j].hash) & mask
		// Slot j may move to i when its home is not in (i, j] (cyclically).
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			p.tags[i], p.slots[i] = p.tags[j], p.slots[j]
			i = j
		}
	}
	p.tags[i], p.slots[i] = 0, slot{}
	if p.dead > compactMin && 2*p.dead > len(p.keys) {
		p.compactKeys()
	}
}

// compactKeys copies the live subjects to a new arena; slots stay put.
func (p *part) compactKeys() {
	keys := make([]byte, 0, len(p.keys)-p.dead)
	for k, tag := range p.tags {
		if tag != 0 {
			s := &p.slots[k]
			off := len(keys)
			keys = append(keys, p.key(s)...)
			s.off = uint32(off)
		}
	}
	p.keys, p.dead = keys, 0
}

// rebuild moves p's subjects to size new slots and a compact arena.
func (p *part) rebuild(size int) {
	old := *p
	p.tags, p.slots = make([]uint8, size), make([]slot, size)
	p.keys, p.used, p.dead = make([]byte, 0, len(old.keys)-old.dead), 0, 0
	for k, tag := range old.tags {
		if tag != 0 {
			s := &old.slots[k]
			p.put(s.hash, old.key(s), s.st)
		}
	}
}
