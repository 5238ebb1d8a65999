package store

import (
	"errors"
	"io"
	"os"
	"sort"
)

// A scrub re-reads a store's sealed block files while the store runs and
// checks that every live message still has a valid record in its block
// (issue 19): a flipped bit, a truncated, deleted or stale block file is
// found without a read having to touch the message. The active block (the
// one being written) is never read. A block is read without the store's
// locks, in pieces paced by the caller; what looks damaged is read again
// under the sync lock (no compaction, erase or compression changes a file
// meanwhile) and counted only if still missing then, so a block rewritten
// or a message removed during the first read is not taken for damage. The
// scrub only reports: it changes nothing in the store.

// ScrubResult is what checking one sealed block found.
type ScrubResult struct {
	Block   uint32   // the block checked
	Bytes   int64    // bytes read from its file
	Missing []uint64 // live messages without a valid record in the file
	Done    bool     // no sealed block at or above the one asked for: the pass is over
	// Lost is how many messages the store has dropped so far because a
	// read found their records damaged (State().Lost): damage found
	// before the scrub came to it.
	Lost int
}

// ErrScrubStopped: the caller's pace function asked the scrub to stop.
var ErrScrubStopped = errors.New("scrub stopped")

// scrubChunk is how much of a block file is read between two calls of pace.
const scrubChunk = 256 << 10

// Scrubber is a store whose sealed blocks can be checked while it runs
// (the file store).
type Scrubber interface {
	// ScrubNext checks the first sealed block whose index is from or
	// above; pace is called after each piece read with its size and
	// returns false to stop (ErrScrubStopped).
	ScrubNext(from uint32, pace func(n int) bool) (ScrubResult, error)
}

var _ Scrubber = (*fileStore)(nil)

// scrubTarget is what the store held of a sealed block when the scrub
// chose it.
type scrubTarget struct {
	index      uint32
	compressed bool
	first      uint64
	live       []uint64 // its live messages
	lost       int      // messages the store lost so far
}

func (fs *fileStore) ScrubNext(from uint32, pace func(n int) bool) (ScrubResult, error) {
	tg, ok := fs.scrubTarget(from)
	if !ok {
		return ScrubResult{Done: true, Lost: tg.lost}, nil
	}
	res := ScrubResult{Block: tg.index, Lost: tg.lost}
	data, n, err := fs.readScrub(tg, pace)
	res.Bytes = n
	if errors.Is(err, ErrScrubStopped) {
		return res, err
	}
	if err == nil && len(scrubMissing(data, tg.live)) == 0 {
		return res, nil
	}
	res.Missing = fs.confirmScrub(tg.index)
	return res, nil
}

// scrubTarget picks the first sealed block at or above from.
func (fs *fileStore) scrubTarget(from uint32) (scrubTarget, bool) {
	fs.mu.Lock()
	defer fs.unlock()
	lost := len(fs.lost.Msgs)
	if fs.closed || len(fs.blocks) < 2 {
		return scrubTarget{lost: lost}, false
	}
	sealed := fs.blocks[:len(fs.blocks)-1] // ascending by index
	i := sort.Search(len(sealed), func(i int) bool { return sealed[i].index >= from })
	if i == len(sealed) {
		return scrubTarget{lost: lost}, false
	}
	b := sealed[i]
	return scrubTarget{index: b.index, compressed: b.compressed, first: b.first, live: fs.liveOf(b), lost: lost}, true
}

// liveOf lists b's live messages.
func (fs *fileStore) liveOf(b *msgBlock) []uint64 {
	if b.first == 0 || b.msgs == 0 {
		return nil
	}
	live := make([]uint64, 0, b.msgs)
	for i := b.dels.nextClear(0); i < b.dels.n; i = b.dels.nextClear(i + 1) {
		live = append(live, b.first+i)
	}
	return live
}

// readScrub reads a block file in pieces, calling pace after each, and
// returns its raw (decompressed) data.
func (fs *fileStore) readScrub(tg scrubTarget, pace func(n int) bool) ([]byte, int64, error) {
	f, err := fs.fsys.OpenFile(blockName(fs.dir, tg.index, tg.compressed), os.O_RDONLY, 0)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	var data []byte
	var off int64
	for {
		data = growBytes(data, scrubChunk)
		k, err := f.ReadAt(data[off:], off)
		off += int64(k)
		data = data[:off]
		if k > 0 && pace != nil && !pace(k) {
			return nil, off, ErrScrubStopped
		}
		if err == io.EOF || k == 0 {
			break
		}
		if err != nil {
			return nil, off, err
		}
	}
	if tg.compressed {
		data, _ = decompressBlock(data)
	}
	return data, off, nil
}

// scrubMissing lists the sequences of live without a valid message record
// in data.
func scrubMissing(data []byte, live []uint64) []uint64 {
	if len(live) == 0 {
		return nil
	}
	first, last := live[0], live[len(live)-1] // ascending
	have := make([]bool, last-first+1)
	for _, r := range parseBlockData(data).recs {
		if r.kind == recMsg && r.seq >= first && r.seq <= last {
			have[r.seq-first] = true
		}
	}
	var missing []uint64
	for _, seq := range live {
		if !have[seq-first] {
			missing = append(missing, seq)
		}
	}
	return missing
}

// confirmScrub reads block index again under the sync lock and returns
// the live messages still without a valid record: a block removed
// meanwhile, or a message removed, is not damage.
func (fs *fileStore) confirmScrub(index uint32) []uint64 {
	fs.syncer.mu.Lock()
	defer fs.syncUnlock()
	tg, ok := fs.scrubTarget(index)
	if !ok || tg.index != index {
		return nil
	}
	data, _, err := fs.readScrub(tg, nil)
	if err != nil {
		data = nil // unreadable: every live message of it is missing
	}
	missing := scrubMissing(data, tg.live)
	fs.mu.Lock()
	defer fs.unlock()
	b := fs.blockByIndex(index)
	out := missing[:0]
	for _, seq := range missing {
		if b != nil && b.live(seq) {
			out = append(out, seq)
		}
	}
	if len(out) > 0 {
		fs.logf("scrub: block %d: %d live messages without a valid record, first %d", index, len(out), out[0])
	}
	return out
}
