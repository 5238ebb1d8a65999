package store

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// msgBlock is one block file. Its messages have consecutive sequences
// first..last (a skip starts a new block); dels marks the ones that are no
// longer live. The counters are always in memory; the data (cache) and the
// subject index (idx) are loaded on demand, except for the active block
// which always has both.
type msgBlock struct {
	index       uint32
	base        uint64 // every sequence <= base was assigned before this block's messages
	first, last uint64 // message sequence range; first == 0 when the block has none
	msgs, bytes uint64 // live messages and their accounted bytes
	written     uint64 // accounted bytes of every message record in the file
	dels        seqBits
	gone        seqBits   // message records no longer in the file (dropped, lost)
	maxTS       int64     // largest timestamp of a message ever written here
	tsOrder     tsOrder   // whether its live messages' timestamps grow with the sequence
	tombMax     uint64    // largest tombstone target below first (0: none)
	tombs       uint64    // tombstone records in the file
	tried       [2]uint64 // dead bytes and compaction count at the last compaction attempt
	rawLen      int64     // uncompressed length of the block's data
	compressed  bool      // sealed and stored as an S2 file
	shared      bool      // its file may have other names (a snapshot's): never write it in place
	cache       *blockCache
	idx         *blockIndex
	used        uint64 // LRU tick of the last cache or index use
	lastRead    uint64 // last record read alone from the file
	run         int    // reads in a row going forward through the block
}

// tsOrder is what a block knows of the order of its messages' timestamps.
type tsOrder uint8

const (
	tsOrdered   tsOrder = iota // every message counted here came at or after the one before
	tsUnknown                  // loaded from a checkpoint: not known until its messages are read
	tsUnordered                // some message came with an earlier timestamp than one before it
)

const (
	noOff = ^uint32(0)
	noID  = ^uint32(0)
)

// blockCache is a block's raw data and the offset of each message record.
type blockCache struct {
	data []byte
	offs []uint32 // by seq-first; noOff when there is no record
}

// blockIndex is a block's subject index: which subject each sequence has,
// each message's accounted size, and per subject its sequences in order.
type blockIndex struct {
	subjs  []string
	byName map[string]uint32 // built on demand
	posts  [][]uint32        // by subject id: offsets (seq-first), ascending
	ids    []uint32          // by offset: subject id or noID
	sizes  []uint32          // by offset: accounted size, 0 when no message
	recOff []uint32          // by offset: record offset in the raw data, noOff when none
	arena  []uint32          // chunk the first posting of new subjects come from
}

// maxSeq is the highest sequence the block accounts for.
func (b *msgBlock) maxSeq() uint64 {
	if b.first == 0 {
		return b.base
	}
	return b.last
}

// contains reports whether seq is in the block's message range.
func (b *msgBlock) contains(seq uint64) bool {
	return b.first != 0 && seq >= b.first && seq <= b.last
}

// markGone records that the message record at offset i left the file.
func (b *msgBlock) markGone(i uint64) {
	b.gone.grow(i + 1)
	b.gone.set(i)
}

// present reports whether the file still holds the message record of seq.
func (b *msgBlock) present(seq uint64) bool {
	i := seq - b.first
	return b.contains(seq) && !(i < b.gone.n && b.gone.has(i))
}

// live reports whether seq is a live message of this block.
func (b *msgBlock) live(seq uint64) bool {
	return b.contains(seq) && !b.dels.has(seq-b.first)
}

func blockName(dir string, index uint32, compressed bool) string {
	if compressed {
		return filepath.Join(dir, fmt.Sprintf("%010d.blz", index))
	}
	return filepath.Join(dir, fmt.Sprintf("%010d.blk", index))
}

// parseStoreFileName splits a block or index file name made by blockName
// or indexName into its index and extension ("blk", "blz" or "idx").
func parseStoreFileName(name string) (index uint32, ext string, ok bool) {
	if len(name) != 14 || name[10] != '.' {
		return 0, "", false
	}
	n, err := strconv.ParseUint(name[:10], 10, 32)
	switch ext = name[11:]; {
	case err != nil:
		return 0, "", false
	case ext == "blk", ext == "blz", ext == "idx":
		return uint32(n), ext, true
	}
	return 0, "", false
}

func indexName(dir string, index uint32) string {
	return filepath.Join(dir, fmt.Sprintf("%010d.idx", index))
}

func newBlockIndex() *blockIndex { return &blockIndex{} }

// lookup returns the id of subj in the block (building the name map the
// first time; from then on newSubject keeps it).
func (x *blockIndex) lookup(subj string) (uint32, bool) {
	if x.byName == nil {
		x.byName = make(map[string]uint32, len(x.subjs))
		for i, s := range x.subjs {
			x.byName[s] = uint32(i)
		}
	}
	id, ok := x.byName[subj]
	return id, ok
}

// add records that offset i holds a message on subj of the given size.
func (x *blockIndex) add(i uint32, subj string, size uint32) {
	id, ok := x.lookup(subj)
	if !ok {
		id = x.newSubject(subj)
	}
	x.set(i, id, size)
}

// addBytes is add for a subject held in a byte slice.
func (x *blockIndex) addBytes(i uint32, subj []byte, size uint32) {
	x.lookup("")
	id, ok := x.byName[string(subj)]
	if !ok {
		id = x.newSubject(string(subj))
	}
	x.set(i, id, size)
}

func (x *blockIndex) newSubject(subj string) uint32 {
	id := uint32(len(x.subjs))
	x.subjs = append(x.subjs, subj)
	if x.byName != nil {
		x.byName[subj] = id
	}
	x.posts = append(x.posts, nil)
	return id
}

func (x *blockIndex) set(i, id, size uint32) {
	for uint32(len(x.ids)) <= i {
		x.ids = append(x.ids, noID)
		x.sizes = append(x.sizes, 0)
	}
	x.ids[i], x.sizes[i] = id, size
	if p := x.posts[id]; p != nil {
		x.posts[id] = append(p, i)
		return
	}
	// A subject's first offset comes from a shared chunk (capacity 1, so
	// a second append copies it out): one allocation per chunk, not per
	// subject, when most subjects appear once.
	if len(x.arena) == cap(x.arena) {
		x.arena = make([]uint32, 0, 256)
	}
	x.arena = append(x.arena, i)
	n := len(x.arena)
	x.posts[id] = x.arena[n-1 : n : n]
}

// subject returns the subject and size at offset i.
func (x *blockIndex) subject(i uint64) (string, uint64, bool) {
	if x == nil || i >= uint64(len(x.ids)) || x.ids[i] == noID {
		return "", 0, false
	}
	return x.subjs[x.ids[i]], uint64(x.sizes[i]), true
}

// parsedRec is one valid record found in a block's data.
type parsedRec struct {
	kind byte
	seq  uint64
	ts   int64
	off  uint32
	size uint32
}

// parsedBlock is what parsing a block's data found.
type parsedBlock struct {
	recs        []parsedRec
	first, last uint64   // message (and erased) sequence range, first == 0 if none
	lostAfter   []uint64 // corruption was skipped right after this message seq (0: block start)
	badBytes    uint64   // bytes skipped as corrupt
	end         int      // end of the last valid record
	tail        bool     // invalid bytes after end with no valid record behind them
}

// parseBlockData walks data, verifying every record. Corrupt stretches in
// the middle are skipped by resynchronizing on the next valid record; an
// invalid tail is reported through end and tail.
func parseBlockData(data []byte) *parsedBlock {
	pb := &parsedBlock{}
	// A block's sequence range is bounded (its bitmaps and offset tables
	// are sized by it); compaction leaves sparse blocks, hence the floor.
	maxSpan := uint64(max(len(data)/recOverhead+1, 1<<21))
	var lastMsg uint64
	for off := 0; off < len(data); {
		r, ok := checkRecord(data, off)
		if ok && (r.kind == recMsg || r.kind == recErased) {
			ok = r.seq > lastMsg && (pb.first == 0 || r.seq-pb.first < maxSpan) && r.seq != 0
		}
		if !ok {
			next := resync(data, off)
			if next < 0 {
				pb.tail = true
				break
			}
			pb.lostAfter = append(pb.lostAfter, lastMsg)
			pb.badBytes += uint64(next - off)
			off = next
			continue
		}
		if r.kind == recMsg || r.kind == recErased {
			if pb.first == 0 {
				pb.first = r.seq
			}
			pb.last, lastMsg = r.seq, r.seq
		}
		pb.recs = append(pb.recs, parsedRec{r.kind, r.seq, r.ts, uint32(off), uint32(r.size)})
		off += r.size
		pb.end = off
	}
	return pb
}

// buildView makes the cache of data for the message range first..last
// (records outside it are ignored) and, with index, its subject index
// (nil without: a block whose index is loaded needs no second one).
func buildView(data []byte, pb *parsedBlock, first, last uint64, index bool) (*blockCache, *blockIndex) {
	c := &blockCache{data: data}
	var x *blockIndex
	if index {
		x = newBlockIndex()
	}
	if first == 0 || last < first {
		return c, x
	}
	n := last - first + 1
	c.offs = make([]uint32, n)
	for i := range c.offs {
		c.offs[i] = noOff
	}
	if x != nil {
		x.ids = make([]uint32, n)
		x.sizes = make([]uint32, n)
		for i := range x.ids {
			x.ids[i] = noID
		}
		x.recOff = c.offs
	}
	for _, pr := range pb.recs {
		if (pr.kind != recMsg && pr.kind != recErased) || pr.seq < first || pr.seq > last {
			continue
		}
		i := pr.seq - first
		c.offs[i] = pr.off
		if x != nil {
			r, _ := decodeRecord(data, int(pr.off))
			x.addBytes(uint32(i), r.subj, uint32(msgSizeOfRecord(r.size)))
		}
	}
	return c, x
}
