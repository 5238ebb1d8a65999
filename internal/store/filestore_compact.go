package store

import (
	"sort"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Compaction rewrites a sealed block without the records it no longer
// needs: removed and erased messages, and tombstones whose target no block
// holds any more. It runs after a checkpoint is durable and uses the state
// that checkpoint holds, for blocks older than its active block only, so a
// replay from that checkpoint never needs a dropped record: every record
// it replays comes after the checkpoint, and every message it may remove
// was live in it (hence kept).

// Compaction work per checkpoint: at most fsMaxCompactions blocks, and
// data read up to the block size times 2 × (blocks sealed since the last
// checkpoint) + fsCompactionSlack, so compaction keeps up with writes.
const (
	fsMaxCompactions  = 64
	fsCompactionSlack = 4
)

// compactJob is a block to rewrite with the state of one checkpoint.
type compactJob struct {
	index       uint32
	first, last uint64
	dels        seqBits // removed messages, as of the checkpoint
	low         uint64  // lowest sequence any block held, as of the checkpoint
}

// compactionJobs picks the sealed blocks worth rewriting: at least half
// of their data may go (removed messages and tombstones), and something
// changed since the last attempt. Blocks are visited round robin so that
// blocks that cannot shrink yet do not starve the others. The caller
// holds mu.
func (fs *fileStore) compactionJobs(sealedSince int) []compactJob {
	sealed := fs.blocks[:len(fs.blocks)-1]
	start := sort.Search(len(sealed), func(i int) bool { return sealed[i].index >= fs.disk.compactNext })
	var jobs []compactJob
	low := fs.lowSeq()
	budget := int64(2*sealedSince+fsCompactionSlack) * int64(fs.cfg.BlockSize)
	for k := range sealed {
		b := sealed[(start+k)%len(sealed)]
		dead := b.written - min(b.bytes, b.written)
		reclaim := dead + recOverhead*b.tombs
		try := [2]uint64{dead, fs.disk.compactions}
		// A block without messages stays only for its tombstones: worth a
		// look whatever its size, it goes once none is needed.
		worth := b.msgs == 0 && b.tombMax > 0 ||
			reclaim*2 >= uint64(b.rawLen) && b.rawLen >= int64(fs.cfg.BlockSize)/4
		if !worth || b.tried == try {
			continue
		}
		b.tried = try
		jobs = append(jobs, compactJob{index: b.index, first: b.first, last: b.last, dels: b.dels.clone(), low: low})
		fs.disk.compactNext = b.index + 1
		if budget -= b.rawLen; len(jobs) == fsMaxCompactions || budget <= 0 {
			break
		}
	}
	return jobs
}

// plan decides which records of the block compaction keeps. Messages
// follow the checkpoint's state; a tombstone stays while a block file may
// still hold a record it removes. The caller holds mu.
func (fs *fileStore) plan(j *compactJob, pb *parsedBlock) []bool {
	keep := make([]bool, len(pb.recs))
	for k, r := range pb.recs {
		switch r.kind {
		case recMsg:
			keep[k] = j.first != 0 && r.seq >= j.first && r.seq <= j.last && !j.dels.has(r.seq-j.first)
		case recErased:
		case recDel:
			own := j.first != 0 && r.seq >= j.first
			keep[k] = !own && fs.recordMayExist(r.seq)
		case recFirst:
			keep[k] = r.seq > 0 && fs.recordBelowMayExist(r.seq, j.index)
		default:
			keep[k] = true
		}
	}
	return keep
}

// recordMayExist reports whether a block file may still hold the message
// record of seq.
func (fs *fileStore) recordMayExist(seq uint64) bool {
	if b := fs.findBlock(seq); b != nil {
		return b.present(seq)
	}
	for _, lb := range fs.disk.lingering {
		if lb.first != 0 && seq >= lb.first && seq <= lb.last {
			return true
		}
	}
	return false
}

// recordBelowMayExist reports whether a block file other than block index
// may still hold a message record below seq.
func (fs *fileStore) recordBelowMayExist(seq uint64, index uint32) bool {
	for _, lb := range fs.disk.lingering {
		if lb.first != 0 && lb.first < seq {
			return true
		}
	}
	for _, b := range fs.blocks {
		if b.first == 0 || b.index == index {
			continue
		}
		if b.first >= seq {
			return false
		}
		top := min(seq-1, b.last) - b.first
		if i := b.gone.nextClear(0); i <= top {
			return true
		}
	}
	return false
}

// compactTarget is block index (nil when gone), whether its file is
// compressed and whether it holds no message.
func (fs *fileStore) compactTarget(index uint32) (b *msgBlock, compressed, empty bool) {
	fs.mu.Lock()
	defer fs.unlock()
	b = fs.blockByIndex(index)
	return b, b != nil && b.compressed, b != nil && b.msgs == 0
}

// planLocking is plan under mu.
func (fs *fileStore) planLocking(j *compactJob, pb *parsedBlock) []bool {
	fs.mu.Lock()
	defer fs.unlock()
	return fs.plan(j, pb)
}

// compactBlock rewrites one block; it runs with syncer.mu held (the block
// file does not change meanwhile).
func (fs *fileStore) compactBlock(j compactJob) error {
	b, compressed, empty := fs.compactTarget(j.index)
	if b == nil {
		return nil
	}
	data, err := vfs.ReadFile(fs.fsys, blockName(fs.dir, j.index, compressed))
	if err != nil {
		return err
	}
	raw := data
	if compressed {
		raw, _ = decompressBlock(data)
	}
	pb := parseBlockData(raw)
	keep := fs.planLocking(&j, pb)
	out, res := rewriteRecords(&j, raw, pb, keep)
	if len(out) > len(raw)*3/4 && !(res.tombMax == 0 && empty) {
		return nil
	}
	file := out
	if compressed {
		file = compressBlock(out)
	}
	if err := fs.writeFileAtomic(blockName(fs.dir, j.index, compressed), file); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.unlock()
	fs.disk.compactions++
	if fs.rd.index == j.index {
		fs.rd.drop()
	}
	if b := fs.blockByIndex(j.index); b != nil {
		b.rawLen, b.written, b.tombMax, b.tombs = int64(len(out)), res.written, res.tombMax, res.tombs
		for _, seq := range res.dropped {
			b.markGone(seq - b.first)
		}
		fs.newOffsets(b, out)
		if b.msgs == 0 {
			fs.dropEmpty(b)
		}
	}
	return nil
}

// rewriteResult is what a rewritten block holds.
type rewriteResult struct {
	written uint64
	tombMax uint64
	tombs   uint64
	dropped []uint64 // message records left out
}

// rewriteRecords copies the kept records. An empty erased record stands
// for a dropped last message: it keeps the end of the block's range, which
// a recovery checks against the next block's base record.
func rewriteRecords(j *compactJob, raw []byte, pb *parsedBlock, keep []bool) ([]byte, rewriteResult) {
	var out []byte
	var res rewriteResult
	tomb := &msgBlock{first: j.first}
	for k, r := range pb.recs {
		isMsg := r.kind == recMsg || r.kind == recErased
		switch {
		case keep[k]:
			out = append(out, raw[r.off:r.off+r.size]...)
			if r.kind == recMsg {
				res.written += msgSizeOfRecord(int(r.size))
			}
			noteTomb(tomb, r.kind, r.seq)
		case isMsg && r.seq == j.last:
			out = appendRecord(out, recErased, r.seq, 0, "", nil, nil)
		}
		if isMsg && !keep[k] && j.first != 0 && r.seq >= j.first && r.seq <= j.last {
			res.dropped = append(res.dropped, r.seq)
		}
	}
	res.tombMax, res.tombs = tomb.tombMax, tomb.tombs
	return out, res
}

func (fs *fileStore) blockByIndex(index uint32) *msgBlock {
	for _, b := range fs.blocks {
		if b.index == index {
			return b
		}
	}
	return nil
}

// newOffsets installs the data of a rewritten block and rewrites its
// index file, whose record offsets changed.
func (fs *fileStore) newOffsets(b *msgBlock, data []byte) {
	c, x := buildView(data, parseBlockData(data), b.first, b.last, b.idx == nil)
	if b.idx == nil {
		b.idx = x
	}
	b.idx.recOff, b.cache = c.offs, c
	if err := fs.writeIndexFile(b, true); err != nil {
		fs.logf("writing index of block %d: %v", b.index, err)
	}
	fs.touch(b)
	fs.trimCaches()
}
