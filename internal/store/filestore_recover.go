package store

import (
	"path/filepath"
	"sort"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/subjects"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Recovery. With a valid checkpoint whose blocks all exist, the state is
// the checkpoint's and only the records written after it are replayed:
// the rest of its active block, then every newer block. Otherwise every
// block is replayed from the start. Replaying verifies every record; a
// damaged stretch is skipped (the messages in it are reported and listed as
// lost) and an invalid tail is truncated. The store then always starts a
// new active block.

// diskBlock is a block file found in the directory.
type diskBlock struct {
	index      uint32
	compressed bool
}

// listBlocks lists the block files, removing temporary files and raw
// copies of blocks whose compressed form is complete.
func (fs *fileStore) listBlocks() ([]diskBlock, uint32, error) {
	ents, err := fs.fsys.ReadDir(fs.dir)
	if err != nil {
		return nil, 0, err
	}
	found := map[uint32]int{} // 1: raw, 2: compressed, 3: both
	var maxIndex uint32
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			fs.fsys.Remove(filepath.Join(fs.dir, name))
			continue
		}
		index, ext, ok := parseStoreFileName(name)
		if !ok {
			continue
		}
		maxIndex = max(maxIndex, index)
		switch ext {
		case "blk":
			found[index] |= 1
		case "blz":
			found[index] |= 2
		}
	}
	var out []diskBlock
	for index, kind := range found {
		if kind == 3 {
			fs.fsys.Remove(blockName(fs.dir, index, false))
		}
		out = append(out, diskBlock{index: index, compressed: kind&2 != 0})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].index < out[j].index })
	return out, maxIndex, nil
}

func (fs *fileStore) recover() error {
	files, maxIndex, err := fs.listBlocks()
	if err != nil {
		return err
	}
	recovered := false
	ck := fs.readCheckpoint()
	if ck != nil {
		if recovered = fs.recoverFromCheckpoint(ck, files); !recovered {
			fs.logf("checkpoint does not match the block files; rebuilding from the blocks")
			fs.resetState()
			fs.ckptMismatch = true
		}
	}
	if !recovered {
		for _, f := range files {
			fs.replayBlock(&msgBlock{index: f.index, compressed: f.compressed}, 0, true)
		}
		// A new store (no block, no checkpoint) has nothing a checkpoint
		// would spare the next open: its first sync writes none (with
		// thousands of new streams, those were most of their first syncs'
		// work). A sealed block or a stop writes one.
		fs.disk.ckptDue = len(files) > 0 || ck != nil
	}
	// A new store's first block file waits for its first flush.
	return fs.startActive(maxIndex+1, len(files) == 0 && ck == nil)
}

func (fs *fileStore) resetState() {
	fs.seqs = seqState{first: 1}
	fs.fss = subjects.New()
	fs.blocks = nil
	fs.lost = LostStreamData{}
	fs.disk = diskWork{}
}

// recoverFromCheckpoint loads ck and replays what follows it; false when
// ck does not fit the block files.
func (fs *fileStore) recoverFromCheckpoint(ck *checkpoint, files []diskBlock) bool {
	onDisk := map[uint32]bool{}
	for _, f := range files {
		onDisk[f.index] = f.compressed
	}
	listed := map[uint32]bool{}
	for _, b := range ck.blocks {
		compressed, ok := onDisk[b.index]
		if !ok {
			return false
		}
		b.compressed = compressed
		listed[b.index] = true
	}
	fs.seqs, fs.fss, fs.lost, fs.blocks = ck.seqs, ck.fss, ck.lost, ck.blocks
	if ck.noFss { // rebuilt from the block indexes once open
		fs.disk.fssStale, fs.disk.ckptDue = true, true
	}
	if !fs.replayBlock(fs.active(), ck.offset, false) {
		return false
	}
	for _, f := range files {
		if f.index > ck.active {
			fs.replayBlock(&msgBlock{index: f.index, compressed: f.compressed}, 0, true)
			fs.disk.ckptDue = true
		}
	}
	for _, f := range files {
		if f.index < ck.active && !listed[f.index] {
			fs.removeBlockFiles(f.index)
			fs.disk.dirDirty = true
		}
	}
	fs.disk.ckptActive = ck.active
	return true
}

// replayCtx is one block being replayed.
type replayCtx struct {
	b         *msgBlock
	data      []byte
	pb        *parsedBlock
	lostAfter map[uint64]bool
	viewLo    uint64
}

// replayBlock applies the records of b at or after offset from; a new
// block is appended to fs.blocks first (the checkpoint's active block is
// there already). Damage before from is not a torn tail: the messages the
// checkpoint holds live there are reported lost. False when the
// checkpoint's active block cannot be read.
func (fs *fileStore) replayBlock(b *msgBlock, from int64, isNew bool) bool {
	data, err := fs.readBlock(b)
	if err != nil {
		fs.logf("block %d unreadable: %v", b.index, err)
		if from > 0 {
			return false
		}
		data = nil
	}
	pb := parseBlockData(data)
	if from > int64(len(data)) {
		// Data the checkpoint vouches for is gone: what it held live
		// there is reported lost below.
		fs.logf("block %d: %d bytes, the checkpoint covers %d", b.index, len(data), from)
	}
	if isNew {
		b.base = fs.seqs.last // keeps maxSeq ascending whatever the block holds
		fs.blocks = append(fs.blocks, b)
	}
	rc := &replayCtx{b: b, data: data, pb: pb, lostAfter: map[uint64]bool{}}
	for _, s := range pb.lostAfter {
		rc.lostAfter[s] = true
	}
	rc.view(b.first)
	b.rawLen = int64(len(data))
	for _, pr := range pb.recs {
		if int64(pr.off) >= from {
			fs.applyRecord(rc, pr)
		}
	}
	if b.first != 0 && b.last < b.first {
		b.first, b.last, b.dels = 0, 0, seqBits{}
	}
	if pb.badBytes > 0 {
		fs.logf("block %d: %d corrupt bytes skipped", b.index, pb.badBytes)
	}
	if pb.tail && !b.compressed && int64(pb.end) >= from {
		fs.truncateTail(b, pb.end, len(data))
	}
	fs.reconcile(b, b.cache)
	if err := fs.writeIndexFile(b, false); err != nil {
		fs.logf("writing index of block %d: %v", b.index, err)
	}
	if fs.cfg.Compression == "s2" && !b.compressed {
		fs.disk.compress = append(fs.disk.compress, b.index)
	}
	fs.trimCaches()
	return true
}

// view (re)builds the block's cache and index for messages from lo on.
func (rc *replayCtx) view(lo uint64) {
	if lo == 0 {
		for _, pr := range rc.pb.recs {
			if pr.kind == recMsg || pr.kind == recErased {
				lo = pr.seq
				break
			}
		}
	}
	rc.viewLo = lo
	rc.b.cache, rc.b.idx = buildView(rc.data, rc.pb, lo, max(rc.pb.last, lo), true)
}

func (fs *fileStore) truncateTail(b *msgBlock, end, size int) {
	fs.logf("block %d: invalid tail of %d bytes truncated", b.index, size-end)
	// Replaced, not truncated in place: the file may be linked by a
	// snapshot directory (filestore_snapshot.go), which must not change.
	name := blockName(fs.dir, b.index, false)
	data, err := vfs.ReadFile(fs.fsys, name)
	if err == nil && len(data) >= end {
		err = fs.replaceFile(name, data[:end])
	}
	if err != nil {
		fs.logf("truncating block %d: %v", b.index, err)
	}
	b.rawLen = int64(end)
	if b.cache != nil {
		b.cache.data = b.cache.data[:end]
	}
}

// applyRecord replays one record.
func (fs *fileStore) applyRecord(rc *replayCtx, pr parsedRec) {
	switch pr.kind {
	case recMsg, recErased:
		fs.applyMsg(rc, pr)
	case recDel:
		noteTomb(rc.b, recDel, pr.seq)
		fs.removeSeq(pr.seq, false)
	case recFirst:
		noteTomb(rc.b, recFirst, pr.seq)
		for fs.seqs.msgs > 0 && fs.seqs.first < pr.seq {
			first := fs.seqs.first
			if ok, _ := fs.removeSeq(first, false); !ok && fs.seqs.first == first {
				break
			}
		}
		if pr.seq > 0 {
			fs.raiseLast(pr.seq - 1)
		}
	case recBase:
		if rc.b.first == 0 {
			rc.b.base = max(rc.b.base, pr.seq)
		}
		if pr.ts > 0 {
			fs.noteTornPrev(rc.b, uint64(pr.ts))
		}
		fs.raiseLast(pr.seq)
	}
}

// applyMsg replays a message (or erased message) record.
func (fs *fileStore) applyMsg(rc *replayCtx, pr parsedRec) {
	b, s := rc.b, pr.seq
	if s <= fs.seqs.last {
		return // already assigned: a stale or conflicting record
	}
	if b.first == 0 {
		if s != rc.viewLo {
			rc.view(s)
		}
		if rc.lostAfter[0] && s > fs.seqs.last+1 {
			fs.noteLost(fs.seqs.last+1, s-1)
		}
		b.first, b.last = s, s-1
	}
	if s > b.last+1 {
		if rc.lostAfter[b.last] {
			fs.noteLost(b.last+1, s-1)
		}
		b.dels.grow(s - b.first)
		for g := b.last + 1; g < s; g++ {
			b.dels.set(g - b.first)
			b.markGone(g - b.first)
		}
	}
	i := s - b.first
	b.dels.grow(i + 1)
	b.last = s
	subj, size, ok := b.idx.subject(i)
	if pr.kind == recErased || !ok {
		b.written += size
		b.dels.set(i)
		b.markGone(i)
		fs.raiseLast(s)
		return
	}
	fs.noteLive(b, s, pr.ts, subj, size)
}

// raiseLast makes last at least seq.
func (fs *fileStore) raiseLast(seq uint64) {
	if seq > fs.seqs.last {
		fs.seqs.last = seq
		if fs.seqs.msgs == 0 {
			fs.seqs.first = seq + 1
		}
	}
}

// noteLost lists lo..hi (at most 65536 of them) as lost.
func (fs *fileStore) noteLost(lo, hi uint64) {
	fs.logf("messages %d..%d lost", lo, hi)
	for s := lo; s <= hi && s-lo < 1<<16; s++ {
		fs.lost.Msgs = append(fs.lost.Msgs, s)
	}
}

// noteTornPrev handles a block whose first record says the previous block
// ended at prevLast: messages of that block missing at its end are lost.
func (fs *fileStore) noteTornPrev(b *msgBlock, prevLast uint64) {
	n := len(fs.blocks)
	if n < 2 || fs.blocks[n-1] != b {
		return
	}
	prev := fs.blocks[n-2]
	if prev.index != b.index-1 || (prev.first != 0 && prev.last >= prevLast) {
		return
	}
	start := prev.last + 1
	if prev.first == 0 { // nothing of the block survived
		start = max(prev.base, fs.lastAssignedBefore(prev)) + 1
	}
	if prevLast < start || prevLast-start >= 1<<16 || start <= fs.lastAssignedBefore(prev) {
		return
	}
	if prev.first == 0 {
		prev.first, prev.last = start, start-1
	}
	prev.dels.grow(prevLast - prev.first + 1)
	for s := start; s <= prevLast; s++ {
		prev.dels.set(s - prev.first)
		prev.markGone(s - prev.first)
	}
	prev.last = prevLast
	fs.noteLost(start, prevLast)
	fs.raiseLast(prevLast)
}

// lastAssignedBefore is the highest message sequence held by the blocks
// before b.
func (fs *fileStore) lastAssignedBefore(b *msgBlock) uint64 {
	var last uint64
	for _, x := range fs.blocks {
		if x == b {
			break
		}
		if x.first != 0 {
			last = x.last
		}
	}
	return last
}

// startActive opens a new active block after recovery (its file made
// by its first flush when lazy) and drops the blocks recovery left
// without messages.
func (fs *fileStore) startActive(index uint32, lazy bool) error {
	var prevLast uint64
	if n := len(fs.blocks); n > 0 && fs.blocks[n-1].first != 0 {
		prevLast = fs.blocks[n-1].last
	}
	if err := fs.newActive(max(index, 1), fs.seqs.last, prevLast, lazy); err != nil {
		return err
	}
	for _, b := range append([]*msgBlock(nil), fs.blocks...) {
		if b.msgs == 0 && b != fs.active() {
			fs.dropEmpty(b)
		}
	}
	fs.trimCaches()
	return nil
}
