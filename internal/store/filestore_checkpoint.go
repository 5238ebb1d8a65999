package store

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/internal/subjects"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// The checkpoint file holds the whole in-memory state at one point of the
// log, so that a restart reads it and replays only the records written
// after that point (from offset in the active block, then newer blocks):
//
//	"TCK1" | uvarint version
//	uvarint first, last, msgs, bytes
//	uvarint active block index, offset in its raw data
//	uvarint blocks, each: index, base, first, last, msgs, bytes, written, zigzag maxTS,
//	    tombMax, tombs, rawLen, compressed, then the removed (dels) and the dropped
//	    (gone) sequences, each as a count of runs and runs × (gap, length)
//	uvarint subjects, each: length, bytes, msgs, first, last
//	uvarint lost, lost × seq, lost bytes
//	u64 hash of everything before
//
// It is written to a temporary file, synced and renamed (then the directory
// synced) after the block data it covers was synced.
//
// Version 2 is the same without the subjects (their count is 0): a
// snapshot's checkpoint (filestore_snapshot.go), which must be taken
// without iterating them under the lock; opening one rebuilds the
// per-subject state from the blocks' indexes.
const (
	ckMagic             = "TCK1"
	ckVersion           = 1
	ckVersionNoSubjects = 2
)

var errBadCheckpoint = errors.New("bad checkpoint")

// checkpoint is a decoded checkpoint file.
type checkpoint struct {
	seqs   seqState
	noFss  bool // the per-subject state is not in the checkpoint
	active uint32
	offset int64
	blocks []*msgBlock
	fss    *subjects.Table
	lost   LostStreamData
}

// checkpointJob is a checkpoint taken under the lock, to be written out.
type checkpointJob struct {
	data      []byte
	active    uint32
	lingering []lingerBlock // removed blocks whose files can go once it is durable
	compress  []uint32      // sealed blocks to compress
	compact   []compactJob
}

// snapshotCheckpoint encodes the state and takes the disk work that waits
// for it; the caller holds mu and has flushed.
func (fs *fileStore) snapshotCheckpoint() *checkpointJob {
	job := &checkpointJob{data: fs.encodeCheckpoint(true), active: fs.active().index, lingering: fs.disk.lingering,
		compress: fs.disk.compress, compact: fs.compactionJobs(fs.disk.sealed)}
	fs.disk.lingering, fs.disk.compress = nil, nil
	fs.disk.sealed, fs.disk.ckptDue = 0, false
	return job
}

// encodeCheckpoint encodes the state, with or without the per-subject
// state (never a stale one: recovery rebuilds it then); the caller holds
// mu and has flushed.
func (fs *fileStore) encodeCheckpoint(withSubjects bool) []byte {
	withSubjects = withSubjects && !fs.disk.fssStale
	version := byte(ckVersion)
	if !withSubjects {
		version = ckVersionNoSubjects
	}
	out := append([]byte(ckMagic), version)
	for _, v := range []uint64{fs.seqs.first, fs.seqs.last, fs.seqs.msgs, fs.seqs.bytes,
		uint64(fs.active().index), uint64(fs.aw.flushed), uint64(len(fs.blocks))} {
		out = binary.AppendUvarint(out, v)
	}
	for _, b := range fs.blocks {
		out = encodeBlockMeta(out, b)
	}
	if !withSubjects {
		out = binary.AppendUvarint(out, 0)
	} else {
		out = appendSubjects(out, fs.fss)
	}
	out = binary.AppendUvarint(out, uint64(len(fs.lost.Msgs)))
	for _, s := range fs.lost.Msgs {
		out = binary.AppendUvarint(out, s)
	}
	out = binary.AppendUvarint(out, fs.lost.Bytes)
	return binary.LittleEndian.AppendUint64(out, fsHash(out))
}

func appendSubjects(out []byte, fss *subjects.Table) []byte {
	out = binary.AppendUvarint(out, uint64(fss.Len()))
	for subj, ss := range fss.All() {
		out = binary.AppendUvarint(out, uint64(len(subj)))
		out = append(out, subj...)
		out = binary.AppendUvarint(out, ss.Msgs)
		out = binary.AppendUvarint(out, ss.First)
		out = binary.AppendUvarint(out, ss.Last)
	}
	return out
}

func encodeBlockMeta(out []byte, b *msgBlock) []byte {
	compressed := uint64(0)
	if b.compressed {
		compressed = 1
	}
	for _, v := range []uint64{uint64(b.index), b.base, b.first, b.last, b.msgs, b.bytes, b.written} {
		out = binary.AppendUvarint(out, v)
	}
	out = binary.AppendVarint(out, b.maxTS)
	out = binary.AppendUvarint(out, b.tombMax)
	out = binary.AppendUvarint(out, b.tombs)
	out = binary.AppendUvarint(out, uint64(b.rawLen))
	out = binary.AppendUvarint(out, compressed)
	out = appendRuns(out, &b.dels)
	return appendRuns(out, &b.gone)
}

// appendRuns encodes the set bits of s as (gap, length) runs.
func appendRuns(out []byte, s *seqBits) []byte {
	runs := s.runs()
	out = binary.AppendUvarint(out, uint64(len(runs)))
	prev := uint64(0)
	for _, r := range runs {
		out = binary.AppendUvarint(out, r[0]-prev)
		out = binary.AppendUvarint(out, r[1])
		prev = r[0] + r[1]
	}
	return out
}

// readRuns decodes runs into s, which covers span bits.
func readRuns(r *byteReader, s *seqBits, span uint64) bool {
	s.grow(span)
	nruns, pos := r.uvarint(), uint64(0)
	for k := uint64(0); k < nruns && !r.bad; k++ {
		pos += r.uvarint()
		n := r.uvarint()
		if pos+n > span || pos+n < pos {
			return false
		}
		for i := pos; i < pos+n; i++ {
			s.set(i)
		}
		pos += n
	}
	return !r.bad
}

// finishCheckpoint writes the checkpoint durably, then deletes the files of
// the blocks it no longer lists and compresses sealed blocks.
func (fs *fileStore) finishCheckpoint(job *checkpointJob) error {
	if err := fs.writeFileAtomic(filepath.Join(fs.dir, fsCheckpointFile), job.data); err != nil {
		fs.requeueCheckpoint(job)
		fs.logf("writing checkpoint: %v", err) // the data is synced; only restart speed suffers
		return nil
	}
	fs.setCkptActive(job.active)
	for _, lb := range job.lingering {
		fs.removeBlockFiles(lb.index)
	}
	if len(job.lingering) > 0 {
		if err := fs.fsys.SyncDir(fs.dir); err != nil {
			fs.logf("sync dir: %v", err)
		}
	}
	for _, index := range job.compress {
		if err := fs.compressBlockFile(index); err != nil {
			fs.logf("compressing block %d: %v", index, err)
		}
	}
	for _, cj := range job.compact {
		if err := fs.compactBlock(cj); err != nil {
			fs.logf("compacting block %d: %v", cj.index, err)
		}
	}
	return nil
}

// requeueCheckpoint puts back the work of a checkpoint that could not be
// written, for the next one.
func (fs *fileStore) requeueCheckpoint(job *checkpointJob) {
	fs.mu.Lock()
	defer fs.unlock()
	fs.disk.lingering = append(job.lingering, fs.disk.lingering...)
	fs.disk.compress = append(job.compress, fs.disk.compress...)
	fs.disk.ckptDue = true
}

// setCkptActive records the active block of the checkpoint just written.
func (fs *fileStore) setCkptActive(active uint32) {
	fs.mu.Lock()
	defer fs.unlock()
	fs.disk.ckptActive = active
}

// compressBlockFile replaces sealed block index by its .blz form. It runs
// with syncer.mu held, so the block file does not change meanwhile.
func (fs *fileStore) compressBlockFile(index uint32) error {
	raw, err := vfs.ReadFile(fs.fsys, blockName(fs.dir, index, false))
	if err != nil {
		return err
	}
	if err := fs.writeFileAtomic(blockName(fs.dir, index, true), compressBlock(raw)); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.unlock()
	for _, b := range fs.blocks {
		if b.index == index && b != fs.active() {
			b.compressed = true
		}
	}
	if fs.rd.index == index {
		fs.rd.drop()
	}
	fs.disk.dirDirty = true
	return fs.fsys.Remove(blockName(fs.dir, index, false))
}

// writeFileAtomic durably replaces name with data.
func (fs *fileStore) writeFileAtomic(name string, data []byte) error {
	return vfs.WriteFileAtomic(fs.fsys, name, data)
}

// readCheckpoint loads and verifies the checkpoint file; nil when there is
// none or it is damaged.
func (fs *fileStore) readCheckpoint() *checkpoint {
	data, err := vfs.ReadFile(fs.fsys, filepath.Join(fs.dir, fsCheckpointFile))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			fs.logf("reading checkpoint: %v", err)
		}
		return nil
	}
	ck, err := decodeCheckpoint(data)
	if err != nil {
		fs.logf("checkpoint ignored: %v", err)
		return nil
	}
	return ck
}

func decodeCheckpoint(data []byte) (*checkpoint, error) {
	if len(data) < 13 || string(data[:4]) != ckMagic || (data[4] != ckVersion && data[4] != ckVersionNoSubjects) ||
		binary.LittleEndian.Uint64(data[len(data)-8:]) != fsHash(data[:len(data)-8]) {
		return nil, errBadCheckpoint
	}
	r := &byteReader{b: data[5 : len(data)-8]}
	ck := &checkpoint{fss: subjects.New(), noFss: data[4] == ckVersionNoSubjects}
	ck.seqs = seqState{first: r.uvarint(), last: r.uvarint(), msgs: r.uvarint(), bytes: r.uvarint()}
	active, offset, nb := r.uvarint(), r.uvarint(), r.uvarint()
	ck.active, ck.offset = uint32(active), int64(offset)
	if active > 1<<32-1 || offset > recMaxLen<<2 || nb > uint64(len(r.b)) {
		return nil, errBadCheckpoint
	}
	for i := uint64(0); i < nb && !r.bad; i++ {
		b, err := decodeBlockMeta(r)
		if err != nil || (len(ck.blocks) > 0 && b.index <= ck.blocks[len(ck.blocks)-1].index) {
			return nil, errBadCheckpoint
		}
		ck.blocks = append(ck.blocks, b)
	}
	if err := decodeSubjects(r, ck); err != nil || ck.noFss && ck.fss.Len() > 0 {
		return nil, errBadCheckpoint
	}
	if r.bad || len(r.b) != 0 || !ck.consistent() {
		return nil, errBadCheckpoint
	}
	return ck, nil
}

func decodeBlockMeta(r *byteReader) (*msgBlock, error) {
	b := &msgBlock{tsOrder: tsUnknown} // the checkpoint does not say
	index := r.uvarint()
	b.base, b.first, b.last, b.msgs, b.bytes = r.uvarint(), r.uvarint(), r.uvarint(), r.uvarint(), r.uvarint()
	b.written = r.uvarint()
	ts, n := binary.Varint(r.b)
	if n <= 0 || index > 1<<32-1 {
		return nil, errBadCheckpoint
	}
	r.b = r.b[n:]
	b.index, b.maxTS = uint32(index), ts
	b.tombMax, b.tombs, b.rawLen = r.uvarint(), r.uvarint(), int64(r.uvarint())
	b.compressed = r.uvarint() == 1
	var span uint64
	if b.first != 0 {
		if b.last < b.first || b.last-b.first >= 1<<28 {
			return nil, errBadCheckpoint
		}
		span = b.last - b.first + 1
	}
	if !readRuns(r, &b.dels, span) || !readRuns(r, &b.gone, span) || span-uint64(countSet(&b.dels)) != b.msgs {
		return nil, errBadCheckpoint
	}
	return b, nil
}

func countSet(s *seqBits) int {
	n := 0
	for _, r := range s.runs() {
		n += int(r[1])
	}
	return n
}

func decodeSubjects(r *byteReader, ck *checkpoint) error {
	ns := r.uvarint()
	if ns > uint64(len(r.b)) {
		return errBadCheckpoint
	}
	for i := uint64(0); i < ns && !r.bad; i++ {
		subj := string(r.bytes(r.uvarint()))
		ss := subjects.State{Msgs: r.uvarint(), First: r.uvarint(), Last: r.uvarint()}
		if _, dup := ck.fss.Get(subj); dup || ss.Msgs == 0 || ss.First > ss.Last {
			return errBadCheckpoint
		}
		ck.fss.Put(subj, ss)
	}
	nl := r.uvarint()
	if nl > uint64(len(r.b)) {
		return errBadCheckpoint
	}
	for i := uint64(0); i < nl && !r.bad; i++ {
		ck.lost.Msgs = append(ck.lost.Msgs, r.uvarint())
	}
	ck.lost.Bytes = r.uvarint()
	return nil
}

// consistent checks that the counters add up.
func (ck *checkpoint) consistent() bool {
	var msgs, bytes, subjMsgs uint64
	var top uint64 // blocks must hold ascending, disjoint ranges
	for _, b := range ck.blocks {
		msgs += b.msgs
		bytes += b.bytes
		if b.maxSeq() < top || (b.first != 0 && b.first <= top) {
			return false
		}
		top = b.maxSeq()
	}
	for _, ss := range ck.fss.All() {
		subjMsgs += ss.Msgs
	}
	n := len(ck.blocks)
	return msgs == ck.seqs.msgs && bytes == ck.seqs.bytes && (subjMsgs == msgs || ck.noFss) &&
		n > 0 && ck.blocks[n-1].index == ck.active && ck.seqs.first <= ck.seqs.last+1
}
