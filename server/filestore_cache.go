package server

import (
	"sort"

	"github.com/tern-mq/nats-server/internal/vfs"
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
	c, x := buildView(data, pb, b.first, b.last)
	hadIdx := b.idx != nil
	if !hadIdx {
		b.idx = x
	}
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

// loseSeq drops live seq of b as lost.
func (fs *fileStore) loseSeq(b *msgBlock, seq uint64) {
	_, size, _ := b.idx.subject(seq - b.first)
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
	evict(withData, fsMaxCachedBlocks, func(b *msgBlock) { b.cache = nil })
	evict(idxOnly, fsMaxLoadedIndexes, func(b *msgBlock) { b.idx = nil })
}

// fixSubjects rebuilds the per-subject state, and the byte counts, from
// the block indexes when damage made them unknown.
func (fs *fileStore) fixSubjects() {
	for fs.disk.fssStale && !fs.closed {
		fs.disk.fssStale = false
		fss := map[string]*SimpleState{}
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
				addSubject(fss, subj, b.first+i)
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

// addSubject counts a live message in a per-subject map (ascending seqs).
func addSubject(fss map[string]*SimpleState, subj string, seq uint64) {
	ss := fss[subj]
	if ss == nil {
		ss = &SimpleState{First: seq}
		fss[subj] = ss
	}
	ss.Msgs++
	ss.Last = seq
}
