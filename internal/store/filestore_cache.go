package store

import (
	"fmt"
	"os"
	"slices"
	"sort"

	"github.com/nats-io/nats-server/v2/internal/subjects"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// blockCache returns b's data, reading and verifying the block file when it
// is not in memory. Live messages whose record turns out damaged are
// reported, dropped and listed as lost. nil when the file is unreadable.
func (fs *fileStore) blockCache(b *msgBlock) *blockCache {
	if b.cache != nil {
		fs.touch(b)
		return b.cache
	}
	if fs.closed {
		return nil
	}
	data, err := fs.readBlock(b)
	if err != nil {
		fs.logf("block %d unreadable: %v", b.index, err)
		fs.loseBlock(b)
		return nil
	}
	pb := parseBlockData(data)
	if b.idx == nil {
		b.idx = fs.readIndexFile(b)
	}
	c, x := buildView(data, pb, b.first, b.last, b.idx == nil)
	hadIdx := b.idx != nil && slices.Equal(b.idx.recOff, c.offs)
	if b.idx == nil {
		b.idx = x
	}
	b.idx.recOff = c.offs // the data is the authority on where records are
	b.cache = c
	fs.touch(b)
	if pb.badBytes > 0 || pb.tail {
		fs.logf("block %d: %d corrupt bytes skipped (torn tail: %v)", b.index, pb.badBytes, pb.tail)
	}
	fs.reconcile(b, c)
	if !hadIdx && b != fs.active() {
		if err := fs.writeIndexFile(b, false); err != nil {
			fs.logf("writing index of block %d: %v", b.index, err)
		}
	}
	fs.trimCaches()
	return c
}

// readBlock reads a sealed block's raw data.
func (fs *fileStore) readBlock(b *msgBlock) ([]byte, error) {
	data, err := vfs.ReadFile(fs.fsys, blockName(fs.dir, b.index, b.compressed))
	if err != nil || !b.compressed {
		return data, err
	}
	raw, bad := decompressBlock(data)
	if bad > 0 {
		fs.logf("block %d: %d damaged compressed bytes skipped", b.index, bad)
	}
	return raw, nil
}

// reconcile drops the live messages of b that have no valid record in its
// data (lost) or whose record was erased.
func (fs *fileStore) reconcile(b *msgBlock, c *blockCache) {
	if b.first == 0 || b.msgs == 0 {
		return
	}
	var lost []uint64
	for i := b.dels.nextClear(0); i < b.dels.n; i = b.dels.nextClear(i + 1) {
		ok := i < uint64(len(c.offs)) && c.offs[i] != noOff
		if ok {
			r, _ := decodeRecord(c.data, int(c.offs[i]))
			if r.kind == recErased {
				fs.unreadable(b.first + i)
				fs.dropLive(b, b.first+i)
				continue
			}
		}
		if !ok {
			lost = append(lost, b.first+i)
		}
	}
	for _, seq := range lost {
		if b.live(seq) {
			fs.loseSeq(b, seq)
		}
	}
	if len(lost) > 0 {
		fs.logf("block %d: %d damaged messages skipped: %v", b.index, len(lost), lost)
	}
}

// unreadable tells the watcher that live seq cannot be read: a snapshot
// that needs it cannot be taken.
func (fs *fileStore) unreadable(seq uint64) {
	if fs.watcher != nil && fs.watcher.Wants(seq) {
		fs.watcher.Abandon()
	}
}

func (fs *fileStore) SetRemovalWatcher(w RemovalWatcher) {
	fs.mu.Lock()
	defer fs.unlock()
	fs.watcher = w
}

// loseSeq drops live seq of b as lost.
func (fs *fileStore) loseSeq(b *msgBlock, seq uint64) {
	_, size, _ := b.idx.subject(seq - b.first)
	fs.unreadable(seq)
	fs.lost.Msgs = append(fs.lost.Msgs, seq)
	fs.lost.Bytes += size
	b.markGone(seq - b.first)
	fs.dropLive(b, seq)
}

// loseBlock drops every live message of an unreadable block as lost.
func (fs *fileStore) loseBlock(b *msgBlock) {
	if b.msgs == 0 {
		return
	}
	for i := b.dels.nextClear(0); i < b.dels.n; i = b.dels.nextClear(i + 1) {
		fs.unreadable(b.first + i)
		fs.lost.Msgs = append(fs.lost.Msgs, b.first+i)
		b.dels.set(i)
		b.markGone(i)
	}
	fs.lost.Bytes += b.bytes
	fs.seqs.msgs -= min(b.msgs, fs.seqs.msgs)
	fs.seqs.bytes -= min(b.bytes, fs.seqs.bytes)
	b.msgs, b.bytes = 0, 0
	fs.disk.fssStale = true
	if fs.seqs.first >= b.first && fs.seqs.first <= b.last {
		fs.seqs.first = fs.nextLive(b.last + 1)
	}
	fs.dropEmpty(b)
}

// blockIdx returns b's subject index, from memory, its index file or its
// data; nil when none can be had.
func (fs *fileStore) blockIdx(b *msgBlock) *blockIndex {
	if b.idx != nil {
		fs.touch(b)
		return b.idx
	}
	if fs.closed {
		return nil
	}
	if x := fs.readIndexFile(b); x != nil {
		b.idx = x
		fs.touch(b)
		fs.trimCaches()
		return x
	}
	fs.blockCache(b)
	return b.idx
}

func (fs *fileStore) touch(b *msgBlock) {
	fs.tick++
	b.used = fs.tick
}

// trimCaches drops the least recently used block data and indexes beyond
// the limits; the active block keeps both.
func (fs *fileStore) trimCaches() {
	if len(fs.blocks) == 0 {
		return
	}
	var withData, idxOnly []*msgBlock
	for _, b := range fs.blocks[:len(fs.blocks)-1] {
		switch {
		case b.cache != nil:
			withData = append(withData, b)
		case b.idx != nil:
			idxOnly = append(idxOnly, b)
		}
	}
	evict := func(list []*msgBlock, keep int, drop func(*msgBlock)) {
		if len(list) <= keep {
			return
		}
		sort.Slice(list, func(i, j int) bool { return list[i].used < list[j].used })
		for _, b := range list[:len(list)-keep] {
			drop(b)
		}
	}
	evict(withData, fsMaxCachedBlocks, func(b *msgBlock) {
		// The data of an evicted block becomes the next active block's
		// buffer: no fresh memory to fault in for every block.
		if cap(b.cache.data) > cap(fs.spare) {
			fs.spare = b.cache.data[:0]
		}
		b.cache, b.run = nil, 0
	})
	evict(idxOnly, fsMaxLoadedIndexes, func(b *msgBlock) { b.idx = nil })
}

// fixSubjects rebuilds the per-subject state, and the byte counts, from
// the block indexes when damage made them unknown.
func (fs *fileStore) fixSubjects() {
	for fs.disk.fssStale && !fs.closed {
		fs.disk.fssStale = false
		fss := subjects.New()
		blocks := append([]*msgBlock(nil), fs.blocks...)
		sizes := make([]uint64, len(blocks))
		for k, b := range blocks {
			x := fs.blockIdx(b)
			for i := b.dels.nextClear(0); x != nil && b.msgs > 0 && i < b.dels.n; i = b.dels.nextClear(i + 1) {
				subj, size, ok := x.subject(i)
				if !ok {
					fs.loseSeq(b, b.first+i)
					continue
				}
				fss.Add(subj, b.first+i)
				sizes[k] += size
			}
		}
		if fs.disk.fssStale {
			continue
		}
		fs.fss, fs.seqs.bytes = fss, 0
		for k, b := range blocks {
			if b.bytes > sizes[k] {
				fs.lost.Bytes += b.bytes - sizes[k] // lost messages of unknown size
			}
			b.bytes = sizes[k]
			fs.seqs.bytes += b.bytes
		}
	}
}

// readRecord returns the verified message record of live seq of b: from
// the block's data in memory, or else read alone from an uncompressed
// block file at the offset its index gives (a random read costs one small
// read, not a block load). Its slices are valid until the next call.
func (fs *fileStore) readRecord(b *msgBlock, seq uint64) (record, bool) {
	if fs.closed {
		return record{}, false
	}
	i := seq - b.first
	// Random reads get one record at a time; a run of reads going forward
	// through the block (a consumer) loads it whole. Reading the same
	// record again (a consumer finds the next message, then loads it)
	// neither extends nor breaks the run.
	if b.cache == nil && !b.compressed {
		switch {
		case seq > b.lastRead && seq-b.lastRead <= 8:
			b.run++
		case seq != b.lastRead:
			b.run = 0
		}
		b.lastRead = seq
		if b.run < fsSequentialRun {
			if r, ok := fs.readOneRecord(b, i); ok {
				return r, true
			}
		}
	}
	c := fs.blockCache(b)
	if c == nil || !b.live(seq) || i >= uint64(len(c.offs)) || c.offs[i] == noOff {
		return record{}, false
	}
	r, ok := decodeRecord(c.data, int(c.offs[i]))
	return r, ok && r.seq == seq && r.kind == recMsg
}

func (fs *fileStore) readOneRecord(b *msgBlock, i uint64) (record, bool) {
	var off, size uint32
	var ok bool
	if x := b.idx; x != nil && i < uint64(len(x.recOff)) && i < uint64(len(x.sizes)) {
		off, size, ok = x.recOff[i], x.sizes[i], true
	} else if x == nil {
		off, size, ok = fs.indexEntry(b, i)
	}
	if !ok || off == noOff || size == 0 || size > recMaxLen {
		return record{}, false
	}
	f, err := fs.rd.open(fs, b.index, func() string { return blockName(fs.dir, b.index, false) })
	if err != nil {
		return record{}, false
	}
	n := int(size) + recOverhead - 30 // record length from the accounted size
	fs.rd.buf = growBytes(fs.rd.buf[:0], n)
	if _, err := f.ReadAt(fs.rd.buf, int64(off)); err != nil {
		return record{}, false
	}
	r, ok := checkRecord(fs.rd.buf, 0)
	return r, ok && r.size == n && r.seq == b.first+i && r.kind == recMsg
}

// blockReader keeps the last block (or index) file read from open.
type blockReader struct {
	index uint32
	f     vfs.File
	buf   []byte
}

// open returns the file of block index, opening name() when it is not the
// one kept (the name is only formatted then).
func (r *blockReader) open(fs *fileStore, index uint32, name func() string) (vfs.File, error) {
	if r.f != nil && r.index == index {
		return r.f, nil
	}
	r.drop()
	f, err := fs.fsys.OpenFile(name(), os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	r.f, r.index = f, index
	return f, nil
}

// drop closes the file (it is about to be replaced or the store closes).
func (r *blockReader) drop() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

func (fs *fileStore) ReadLive(from, to uint64, sm *StoreMsg, fn func(*StoreMsg), after func()) error {
	fs.mu.Lock()
	defer fs.unlock()
	if fs.closed {
		return ErrStoreClosed
	}
	defer fs.fixSubjects()
	for seq := max(from, fs.seqs.first); seq <= to && seq <= fs.seqs.last; seq++ {
		if b := fs.findBlock(seq); b == nil || !b.live(seq) {
			continue
		}
		m, err := fs.loadLocked(seq, sm)
		if err != nil { // live but unreadable: the snapshot cannot be exact
			return fmt.Errorf("reading message %d: %w", seq, err)
		}
		fn(m)
	}
	after()
	return nil
}
