package store

// The file store keeps a stream in a directory of files:
//
//	NNNNNNNNNN.blk  a block: checksummed records (filestore_record.go), append
//	                only; the highest one is the active block, held in memory
//	                and written out in batches
//	NNNNNNNNNN.blz  a sealed block compressed in S2 chunks (filestore_compress.go)
//	NNNNNNNNNN.idx  a sealed block's subject index and record table
//	                (filestore_index.go)
//	checkpoint      the whole in-memory state at one point of the log
//	                (filestore_checkpoint.go)
//
// Every change is a record in the active block: messages, tombstones,
// "everything below N is removed" and "everything up to N is assigned"
// markers. The per-subject state and the per-block counters and deletion
// bitmaps live in memory; a clean Stop writes a checkpoint of them, and
// Sync writes one when blocks were sealed or removed since the last. Open
// loads the checkpoint and replays only the records written after it
// (filestore_recover.go); without a usable checkpoint it replays every
// block. Files of removed blocks are deleted, and blocks with many removed
// messages compacted (filestore_compact.go), only after a checkpoint that
// no longer needs them is durable.

import (
	"errors"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"os"
	"sort"
	"time"

	"github.com/nats-io/nats-server/v2/internal/subjects"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// FileStoreConfig configures a file store.
type FileStoreConfig struct {
	BlockSize   uint64                           // target size of a block file; default 4 MiB
	Compression string                           // "none" (or "") or "s2": compress sealed blocks
	Logf        func(format string, args ...any) // reports corruption and recovery; may be nil
	// New: the caller knows the directory is not there (a replicated
	// stream's store, emptied at each start and rebuilt from its raft
	// log, whose files need not survive a power loss before its first
	// Sync). The store starts empty without making or reading it, and
	// makes it (and missing parents) unsynced with its first block file.
	// A directory found there after all is opened as usual.
	New bool
}

const (
	fsFlushBound       = 256 << 10 // buffered bytes that trigger a write
	fsMaxCachedBlocks  = 4         // sealed blocks whose data stays in memory
	fsMaxLoadedIndexes = 32        // sealed blocks whose subject index stays in memory
	fsSequentialRun    = 16        // forward reads in a row that load a block whole
	fsCheckpointFile   = "checkpoint"
)

// defaultFileStoreBlockSize is the block size of stores that set none; a
// variable for tests.
var defaultFileStoreBlockSize uint64 = 4 << 20

var (
	errFileStoreSubject = errors.New("subject too long for the file store")
	errFileStoreTooBig  = errors.New("message too large for the file store")
)

// fileStore is the block-file StreamStore. Lock order: syncer.mu, then mu.
type fileStore struct {
	mu     lockorder.Mutex[lockorder.FileStore]
	fsys   vfs.FS
	dir    string
	cfg    FileStoreConfig
	limits StoreLimits
	seqs   seqState
	fss    *subjects.Table
	blocks []*msgBlock // ascending; the last one is the active block
	aw     activeFile
	disk   diskWork
	lost   LostStreamData
	// ckptMismatch: the checkpoint found at open did not fit the blocks
	// (CheckpointMismatched).
	ckptMismatch bool
	times        tsCache
	tick         uint64      // LRU clock for block caches
	rd           blockReader // sealed block file of the last random read
	rdx          blockReader // index file of the last random read
	spare        []byte      // data buffer of an evicted block, reused by the next active block
	werr         error       // sticky write or sync error: the store refuses writes
	closed       bool
	syncer       syncLock
	// watcher, when set, sees every message before it is removed (a
	// snapshot being encoded from the store, stream_snapshot_capture.go).
	watcher RemovalWatcher
	// snapSynced is what the last snapshot directory's linked files were
	// when it synced them (filestore_snapshot.go): unchanged, they need
	// no sync again.
	snapSynced map[string]os.FileInfo
}

// seqState is the stream-level counters.
type seqState struct {
	first, last uint64 // first live sequence (last+1 when empty) and last assigned
	msgs, bytes uint64
}

// activeFile is the open file of the active block.
type activeFile struct {
	f       vfs.File
	flushed int64 // bytes of the active block's data written to f
	// unmade: the block's file is not created yet. A new store's first
	// block is created by its first flush (a write, Sync, checkpoint or
	// snapshot), not at the open: a stream created and never written
	// costs no file, and a replicated stream's creation one inode less on
	// every server (its store is rebuilt from the raft log at each start,
	// so nothing of it has to be on disk before its first message).
	unmade bool
	// dirUnmade: nor is the store's directory (FileStoreConfig.New); it
	// is made with the block's file.
	dirUnmade bool
}

// diskWork is what the next Sync or checkpoint has to do.
type diskWork struct {
	unsynced     []vfs.File    // sealed block files to fsync and close
	dirty        bool          // bytes written since the last fsync
	dirDirty     bool          // entries created, renamed or removed since the last SyncDir
	lingering    []lingerBlock // removed blocks whose files wait for a checkpoint
	compress     []uint32      // sealed blocks waiting for compression
	sealed       int           // blocks sealed since the last checkpoint
	pendingFirst bool          // a recFirst record is owed to the log
	ckptActive   uint32        // active block index of the last durable checkpoint
	ckptDue      bool
	fssStale     bool   // per-subject state must be rebuilt from the blocks
	compactions  uint64 // blocks rewritten so far
	compactNext  uint32 // compaction looks at blocks from this index on (round robin)
}

// lingerBlock is a removed block whose file is still on disk.
type lingerBlock struct {
	index       uint32
	first, last uint64
}

// tsCache remembers the timestamps of the first and last messages.
type tsCache struct {
	firstSeq uint64
	firstTS  int64
	lastSeq  uint64
	lastTS   int64
}

// syncLock serializes Sync, checkpoints, EraseMsg and Stop.
type syncLock struct {
	mu lockorder.Mutex[lockorder.FileStoreSync]
}

// newFileStore opens the store in dir, recovering what is there, or
// creates an empty one.
func newFileStore(fsys vfs.FS, dir string, cfg FileStoreConfig, limits StoreLimits) (*fileStore, error) {
	if cfg.BlockSize == 0 {
		cfg.BlockSize = defaultFileStoreBlockSize
	}
	switch cfg.Compression {
	case "", "none", "s2":
	default:
		return nil, fmt.Errorf("file store: unknown compression %q", cfg.Compression)
	}
	fs := &fileStore{fsys: fsys, dir: dir, cfg: cfg, limits: limits, fss: subjects.New()}
	fs.seqs.first = 1
	if cfg.New {
		if _, err := fsys.Stat(dir); errors.Is(err, os.ErrNotExist) {
			if err := fs.startActive(1, true); err != nil {
				return nil, err
			}
			fs.aw.dirUnmade = true
			return fs, nil
		}
	}
	if err := vfs.MkdirAllSynced(fsys, dir, 0o750); err != nil {
		return nil, err
	}
	// Limits are not enforced here: after a crash the store holds a prefix
	// of its history, and trimming it to the limits would discard synced
	// messages the lost removals made room for. The next write or
	// UpdateLimits enforces them.
	if err := fs.recover(); err != nil {
		fs.closeFiles()
		return nil, err
	}
	fs.fixSubjects()
	return fs, nil
}

func (fs *fileStore) logf(format string, args ...any) {
	if fs.cfg.Logf != nil {
		fs.cfg.Logf("file store %s: "+format, append([]any{fs.dir}, args...)...)
	}
}

func (fs *fileStore) active() *msgBlock { return fs.blocks[len(fs.blocks)-1] }

func (fs *fileStore) writable() error {
	if fs.closed {
		return ErrStoreClosed
	}
	return fs.werr
}

func (fs *fileStore) StoreMsg(subj string, hdr, msg []byte, ts int64) (uint64, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if err := fs.writable(); err != nil {
		return 0, err
	}
	if len(subj) > 0xFFFF {
		return 0, errFileStoreSubject
	}
	if recSize(subj, hdr, msg) > recMaxLen {
		return 0, errFileStoreTooBig
	}
	if err := fs.makeRoom(recSize(subj, hdr, msg)); err != nil {
		return 0, err
	}
	seq := fs.seqs.last + 1
	mb := fs.active()
	off := len(mb.cache.data)
	mb.cache.data = appendRecord(mb.cache.data, recMsg, seq, ts, subj, hdr, msg)
	mb.rawLen = int64(len(mb.cache.data))
	if mb.first == 0 {
		mb.first = seq
	}
	i := seq - mb.first
	mb.last = seq
	mb.dels.grow(i + 1)
	mb.cache.offs = append(mb.cache.offs, uint32(off))
	size := StoredMsgSize(subj, hdr, msg)
	prev, had := fs.fss.Add(subj, seq)
	id, ok := fs.activeSubjectID(mb, prev, had, subj)
	if !ok {
		id = mb.idx.newSubject(subj)
	}
	mb.idx.set(uint32(i), id, uint32(size))
	fs.countLive(mb, seq, ts, size)
	fs.enforceLimits(subj)
	return seq, fs.werr
}

// activeSubjectID returns subj's id in the active block mb (false when the
// block has none). prev is subj's state before this message (had false:
// none). While the per-subject state is exact and every message the block
// ever got is still live, each subject of the block has its last live
// message there, so the state answers without the block's name map: subj
// is in the block exactly when its last sequence is, under that message's
// id. Streams of fresh subjects then skip a name-map insert per message.
func (fs *fileStore) activeSubjectID(mb *msgBlock, prev subjects.State, had bool, subj string) (uint32, bool) {
	if fs.disk.fssStale || mb.msgs != uint64(len(mb.idx.ids)) {
		return mb.idx.lookup(subj)
	}
	if !had || prev.Last < mb.first {
		return 0, false
	}
	return mb.idx.ids[prev.Last-mb.first], true
}

// noteLive accounts a new live message in block mb.
func (fs *fileStore) noteLive(mb *msgBlock, seq uint64, ts int64, subj string, size uint64) {
	fs.fss.Add(subj, seq)
	fs.countLive(mb, seq, ts, size)
}

// countLive is noteLive but for the per-subject state.
func (fs *fileStore) countLive(mb *msgBlock, seq uint64, ts int64, size uint64) {
	if mb.written > 0 && ts < mb.maxTS {
		mb.tsOrder = tsUnordered
	}
	mb.msgs++
	mb.bytes += size
	mb.written += size
	mb.maxTS = max(mb.maxTS, ts)
	fs.seqs.last = max(fs.seqs.last, seq)
	fs.seqs.msgs++
	fs.seqs.bytes += size
	if fs.seqs.msgs == 1 {
		fs.seqs.first = seq
	}
	fs.times.lastSeq, fs.times.lastTS = seq, ts
}

func (fs *fileStore) SkipMsgs(n uint64) error {
	fs.mu.Lock()
	defer fs.unlock()
	if err := fs.writable(); err != nil {
		return err
	}
	return fs.skipTo(fs.seqs.last + n)
}

// skipTo makes last the last assigned sequence (last >= current last).
// Messages of one block have consecutive sequences, so a skip after
// messages starts a new block.
func (fs *fileStore) skipTo(last uint64) error {
	if last <= fs.seqs.last {
		return nil
	}
	var err error
	if fs.active().first != 0 {
		err = fs.seal(last)
	} else if err = fs.writeRecord(recBase, last); err == nil {
		fs.active().base = last
	}
	if err != nil {
		return err
	}
	fs.seqs.last = last
	if fs.seqs.msgs == 0 {
		fs.seqs.first = last + 1
	}
	return nil
}

func (fs *fileStore) findBlock(seq uint64) *msgBlock {
	i := sort.Search(len(fs.blocks), func(i int) bool { return fs.blocks[i].maxSeq() >= seq })
	if i < len(fs.blocks) && fs.blocks[i].contains(seq) {
		return fs.blocks[i]
	}
	return nil
}

// blockFrom returns the position of the first block holding sequences >= seq.
func (fs *fileStore) blockFrom(seq uint64) int {
	return sort.Search(len(fs.blocks), func(i int) bool { return fs.blocks[i].maxSeq() >= seq })
}

func (fs *fileStore) LoadMsg(seq uint64, sm *StoreMsg) (*StoreMsg, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if fs.closed {
		return nil, ErrStoreClosed
	}
	defer fs.fixSubjects()
	return fs.loadLocked(seq, sm)
}

func (fs *fileStore) loadLocked(seq uint64, sm *StoreMsg) (*StoreMsg, error) {
	if seq > fs.seqs.last {
		return nil, ErrStoreEOF
	}
	b := fs.findBlock(seq)
	if b == nil || !b.live(seq) {
		return nil, ErrStoreMsgNotFound
	}
	r, ok := fs.readRecord(b, seq)
	if !ok {
		return nil, ErrStoreMsgNotFound
	}
	subj, _, ok := b.idx.subject(seq - b.first)
	if !ok {
		subj = string(r.subj)
	}
	if sm == nil {
		sm = &StoreMsg{}
	}
	sm.copyFrom(subj, r.hdr, r.msg, seq, r.ts)
	return sm, nil
}

// msgTS returns the timestamp of live message seq.
func (fs *fileStore) msgTS(seq uint64) (int64, bool) {
	b := fs.findBlock(seq)
	if b == nil || !b.live(seq) {
		return 0, false
	}
	r, ok := fs.readRecord(b, seq)
	return r.ts, ok
}

func (fs *fileStore) LastSeqForSubject(filter string) uint64 {
	fs.mu.Lock()
	defer fs.unlock()
	return fs.lastSeqLocked(filter)
}

func (fs *fileStore) lastSeqLocked(filter string) uint64 {
	if filter == "" || filter == ">" {
		if fs.seqs.msgs == 0 {
			return 0
		}
		return fs.lastLive()
	}
	return lastInIndex(fs.fss, filter)
}

// lastLive is the highest live sequence (0 when none).
func (fs *fileStore) lastLive() uint64 {
	for i := len(fs.blocks) - 1; i >= 0; i-- {
		b := fs.blocks[i]
		if b.msgs == 0 {
			continue
		}
		if j := b.dels.prevClear(int64(b.last - b.first)); j >= 0 {
			return b.first + uint64(j)
		}
	}
	return 0
}

func (fs *fileStore) LoadLastMsg(filter string, sm *StoreMsg) (*StoreMsg, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if fs.closed {
		return nil, ErrStoreClosed
	}
	defer fs.fixSubjects()
	seq := fs.lastSeqLocked(filter)
	if seq == 0 {
		return nil, ErrStoreMsgNotFound
	}
	return fs.loadLocked(seq, sm)
}

func (fs *fileStore) FastState(st *StreamState) {
	fs.mu.Lock()
	defer fs.unlock()
	fs.fastStateLocked(st)
	fs.fixSubjects()
}

func (fs *fileStore) fastStateLocked(st *StreamState) {
	st.Msgs, st.Bytes, st.LastSeq, st.FirstSeq = fs.seqs.msgs, fs.seqs.bytes, fs.seqs.last, fs.seqs.first
	st.FirstTime, st.LastTime = time.Time{}, time.Time{}
	if ts, ok := fs.firstTime(); ok {
		st.FirstTime = time.Unix(0, ts).UTC()
	}
	if fs.times.lastSeq != fs.seqs.last {
		fs.times.lastSeq = fs.seqs.last
		fs.times.lastTS, _ = fs.msgTS(fs.seqs.last)
	}
	if b := fs.findBlock(fs.seqs.last); b != nil && b.live(fs.seqs.last) {
		st.LastTime = time.Unix(0, fs.times.lastTS).UTC()
	}
	st.NumSubjects = fs.fss.Len()
	st.NumDeleted = 0
	if st.Msgs > 0 {
		st.NumDeleted = int(st.LastSeq - st.FirstSeq + 1 - st.Msgs)
	}
}

func (fs *fileStore) firstTime() (int64, bool) {
	if fs.seqs.msgs == 0 {
		return 0, false
	}
	if fs.times.firstSeq != fs.seqs.first {
		ts, ok := fs.msgTS(fs.seqs.first)
		if !ok {
			return 0, false
		}
		fs.times.firstSeq, fs.times.firstTS = fs.seqs.first, ts
	}
	return fs.times.firstTS, true
}

func (fs *fileStore) State() StreamState {
	fs.mu.Lock()
	defer fs.unlock()
	var st StreamState
	fs.fastStateLocked(&st)
	fs.fixSubjects()
	if st.NumDeleted > 0 {
		st.Deleted = fs.deletedList()
	}
	if len(fs.lost.Msgs) > 0 {
		st.Lost = &LostStreamData{Msgs: append([]uint64(nil), fs.lost.Msgs...), Bytes: fs.lost.Bytes}
	}
	return st
}

// deletedList lists the sequences between first and last that are not live.
func (fs *fileStore) deletedList() []uint64 {
	var out []uint64
	first, last := fs.seqs.first, fs.seqs.last
	next := first
	for _, b := range fs.blocks {
		if b.first == 0 || b.last < first {
			continue
		}
		for ; next < b.first && next <= last; next++ {
			out = append(out, next)
		}
		for s := max(b.first, first); s <= b.last; s++ {
			if b.dels.has(s - b.first) {
				out = append(out, s)
			}
		}
		next = max(next, b.last+1)
	}
	for ; next <= last; next++ {
		out = append(out, next)
	}
	return out
}

func (fs *fileStore) SubjectsState(filter string) map[string]SimpleState {
	fs.mu.Lock()
	defer fs.unlock()
	fs.fixSubjects()
	return subjectsStateOf(fs.fss, filter)
}

func (fs *fileStore) UpdateLimits(l StoreLimits) error {
	fs.mu.Lock()
	defer fs.unlock()
	if err := fs.writable(); err != nil {
		return err
	}
	fs.limits = l
	fs.enforceAllLimits()
	return fs.werr
}

func (fs *fileStore) Delete() error {
	err := fs.Stop()
	if rerr := fs.fsys.RemoveAll(fs.dir); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		return rerr
	}
	// Once its files are gone, a store that had failed (its final sync
	// refused: a write failure, sticky) is deleted all the same.
	if errors.Is(err, ErrStoreClosed) || IsWriteFailure(err) {
		err = nil
	}
	return err
}
