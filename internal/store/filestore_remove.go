package store

import (
	"fmt"
	"os"

	"github.com/nats-io/nats-server/v2/internal/subjects"
	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// removeSeq removes live message seq. With log the removal goes to the log
// first: a tombstone, or for the first live message a pending recFirst.
func (fs *fileStore) removeSeq(seq uint64, log bool) (bool, error) {
	b := fs.findBlock(seq)
	if b == nil || !b.live(seq) || fs.blockIdx(b) == nil || !b.live(seq) {
		return false, nil
	}
	front := seq == fs.seqs.first
	if log && !front {
		if err := fs.writeRecord(recDel, seq); err != nil {
			return false, err
		}
	}
	if fs.watcher != nil {
		// Only once the removal is logged: a failed one leaves the message
		// live, and the capture would then have it twice. Reading it may
		// find it damaged and drop it as lost.
		tellRemoval(fs.watcher, seq, func(sm *StoreMsg) (*StoreMsg, error) { return fs.loadLocked(seq, sm) })
		if fs.findBlock(seq) != b || !b.live(seq) {
			return true, nil
		}
	}
	fs.dropLive(b, seq)
	if log && front {
		fs.disk.pendingFirst = true
	}
	return true, nil
}

// dropLive updates the in-memory state for the removal of live seq of b.
func (fs *fileStore) dropLive(b *msgBlock, seq uint64) {
	i := seq - b.first
	subj, size, ok := b.idx.subject(i)
	b.dels.set(i)
	b.msgs--
	b.bytes -= min(size, b.bytes)
	fs.seqs.msgs--
	fs.seqs.bytes -= min(size, fs.seqs.bytes)
	if ok {
		fs.removeSubject(subj, seq)
	} else {
		fs.disk.fssStale = true
	}
	if seq == fs.seqs.first {
		fs.seqs.first = fs.nextLive(seq + 1)
	}
	if b.msgs == 0 {
		fs.dropEmpty(b)
	}
}

// removeSubject updates the per-subject state for the removal of seq.
func (fs *fileStore) removeSubject(subj string, seq uint64) {
	ss, ok := fs.fss.Get(subj)
	if !ok {
		fs.disk.fssStale = true
		return
	}
	before, searched := ss, false
	ss.Msgs--
	switch {
	case ss.Msgs == 0:
		fs.fss.Delete(subj)
		return
	case ss.Msgs == 1 && seq == ss.First:
		ss.First = ss.Last
	case ss.Msgs == 1 && seq == ss.Last:
		ss.Last = ss.First
	case seq == ss.First:
		ss.First, searched = fs.nextForSubject(subj, seq+1), true
	case seq == ss.Last:
		ss.Last, searched = fs.prevForSubject(subj, seq-1), true
	}
	// A search may load a block whose damage drops messages of subj
	// meanwhile: then the state is rebuilt rather than overwritten.
	if searched {
		if cur, ok := fs.fss.Get(subj); !ok || cur != before {
			fs.disk.fssStale = true
			return
		}
	}
	if ss.First == 0 || ss.Last == 0 {
		fs.disk.fssStale = true
	}
	fs.fss.Put(subj, ss)
}

// nextLive returns the first live sequence >= from, or last+1.
func (fs *fileStore) nextLive(from uint64) uint64 {
	for i := fs.blockFrom(from); i < len(fs.blocks); i++ {
		b := fs.blocks[i]
		if b.msgs == 0 {
			continue
		}
		start := max(from, b.first) - b.first
		if j := b.dels.nextClear(start); j < b.dels.n {
			return b.first + j
		}
	}
	return fs.seqs.last + 1
}

// lowSeq is the lowest sequence any block still holds a record of.
func (fs *fileStore) lowSeq() uint64 {
	for _, b := range fs.blocks {
		if b.first != 0 {
			return b.first
		}
	}
	return fs.seqs.last + 1
}

// dropEmpty removes b, which has no live message left, when its
// tombstones are no longer needed, and then every such block at the front.
func (fs *fileStore) dropEmpty(b *msgBlock) {
	if b == fs.active() {
		return
	}
	if fs.blocks[0] != b && b.tombMax >= fs.lowSeq() {
		return
	}
	for i, x := range fs.blocks {
		if x == b {
			fs.removeBlock(i)
			break
		}
	}
	dropped := false
	for len(fs.blocks) > 1 && fs.blocks[0].msgs == 0 {
		fs.removeBlock(0)
		dropped = true
	}
	if !dropped {
		return
	}
	low := fs.lowSeq()
	for i := len(fs.blocks) - 2; i >= 1; i-- {
		if x := fs.blocks[i]; x.msgs == 0 && x.tombMax < low {
			fs.removeBlock(i)
		}
	}
}

// removeBlock takes block i out of the store; its files are deleted after
// the next checkpoint no longer lists it.
func (fs *fileStore) removeBlock(i int) {
	b := fs.blocks[i]
	fs.blocks = append(fs.blocks[:i], fs.blocks[i+1:]...)
	fs.disk.lingering = append(fs.disk.lingering, lingerBlock{b.index, b.first, b.last})
	for j, c := range fs.disk.compress {
		if c == b.index {
			fs.disk.compress = append(fs.disk.compress[:j], fs.disk.compress[j+1:]...)
			break
		}
	}
	b.cache, b.idx = nil, nil
}

func (fs *fileStore) RemoveMsg(seq uint64) (bool, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if err := fs.writable(); err != nil {
		return false, err
	}
	defer fs.fixSubjects()
	return fs.removeSeq(seq, true)
}

// EraseMsg removes seq, makes the removal durable, then overwrites the
// message's header and payload in its block file.
func (fs *fileStore) EraseMsg(seq uint64) (bool, error) {
	fs.syncer.mu.Lock()
	defer fs.syncUnlock()
	fs.mu.Lock()
	defer fs.unlock()
	if err := fs.writable(); err != nil {
		return false, err
	}
	defer fs.fixSubjects()
	b := fs.findBlock(seq)
	ok, err := fs.removeSeq(seq, true)
	if !ok || err != nil {
		return ok, err
	}
	if err := fs.flush(); err != nil {
		return true, err
	}
	if fs.aw.f != nil { // nil: closed while idle, after a Sync
		if err := fs.aw.f.Sync(); err != nil {
			return true, fs.fail(fmt.Errorf("file store sync: %w", err))
		}
	}
	return true, fs.eraseOnDisk(b, seq)
}

// eraseOnDisk overwrites the record of seq in b with an erased record.
func (fs *fileStore) eraseOnDisk(b *msgBlock, seq uint64) error {
	c := fs.blockCache(b)
	if c == nil || seq-b.first >= uint64(len(c.offs)) || c.offs[seq-b.first] == noOff {
		return nil
	}
	off := int64(c.offs[seq-b.first])
	if !eraseRecord(c.data, int(off)) {
		return nil
	}
	r, _ := decodeRecord(c.data, int(off))
	rec := c.data[off : off+int64(r.size)]
	switch {
	case len(fs.blocks) > 0 && b == fs.active():
		if off < fs.aw.flushed {
			n := min(int64(len(rec)), fs.aw.flushed-off)
			f, err := fs.activeW()
			if err != nil {
				return err
			}
			if _, err := f.WriteAt(rec[:n], off); err != nil {
				return fs.fail(fmt.Errorf("file store erase: %w", err))
			}
			fs.disk.dirty = true
		}
		return nil
	case b.shared: // a snapshot links the file: write a new one
		if fs.rd.index == b.index {
			fs.rd.drop() // it would read the replaced file
		}
		if err := fs.replaceFile(blockName(fs.dir, b.index, b.compressed), blockFileData(b, c.data)); err != nil {
			return err // still shared: the next erase tries again
		}
		b.shared = false
		return nil
	case !b.compressed:
		return fs.overwrite(blockName(fs.dir, b.index, false), rec, off)
	default:
		return fs.replaceFile(blockName(fs.dir, b.index, true), compressBlock(c.data))
	}
}

// blockFileData is what b's file holds for its raw data.
func blockFileData(b *msgBlock, data []byte) []byte {
	if b.compressed {
		return compressBlock(data)
	}
	return data
}

// overwrite writes p at off in an existing file and syncs it.
func (fs *fileStore) overwrite(name string, p []byte, off int64) error {
	f, err := fs.fsys.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("file store erase: %w", err)
	}
	_, err = f.WriteAt(p, off)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("file store erase: %w", err)
	}
	return nil
}

// replaceFile durably replaces name with data (write, sync, rename, sync dir).
func (fs *fileStore) replaceFile(name string, data []byte) error {
	return fs.writeFileAtomic(name, data)
}

func (fs *fileStore) Purge() (uint64, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if err := fs.writable(); err != nil {
		return 0, err
	}
	return fs.purgeLocked()
}

// purgeLocked removes every message: the blocks are dropped and a new
// block starts with a record saying everything up to last is removed.
func (fs *fileStore) purgeLocked() (uint64, error) {
	if fs.watcher != nil {
		fs.watcher.Abandon()
	}
	n := fs.seqs.msgs
	if err := fs.flush(); err != nil {
		return 0, err
	}
	old, oldFile := fs.blocks, fs.aw.f
	fs.blocks = nil
	if err := fs.newActive(old[len(old)-1].index+1, fs.seqs.last, 0, false); err != nil {
		fs.blocks, fs.aw.f = old, oldFile
		return 0, err
	}
	if oldFile != nil { // nil: closed while idle, after a Sync
		fs.disk.unsynced = append(fs.disk.unsynced, oldFile)
	}
	fs.appendMeta(recFirst, fs.seqs.last+1)
	for _, b := range old {
		fs.disk.lingering = append(fs.disk.lingering, lingerBlock{b.index, b.first, b.last})
		b.cache, b.idx = nil, nil
	}
	fs.disk.compress = nil
	fs.disk.pendingFirst = false
	fs.fss = subjects.New()
	fs.seqs.msgs, fs.seqs.bytes, fs.seqs.first = 0, 0, fs.seqs.last+1
	return n, nil
}

func (fs *fileStore) PurgeEx(subject string, seq, keep uint64) (uint64, error) {
	if (subject == "" || subject == ">") && seq == 0 && keep == 0 {
		return fs.Purge()
	}
	fs.mu.Lock()
	defer fs.unlock()
	if err := fs.writable(); err != nil {
		return 0, err
	}
	defer fs.fixSubjects()
	victims := fs.matching(subject, seq)
	if keep > 0 {
		if uint64(len(victims)) <= keep {
			return 0, nil
		}
		victims = victims[:uint64(len(victims))-keep]
	}
	var n uint64
	for _, s := range victims {
		ok, err := fs.removeSeq(s, true)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

func (fs *fileStore) Compact(seq uint64) (uint64, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if err := fs.writable(); err != nil {
		return 0, err
	}
	defer fs.fixSubjects()
	var n uint64
	for fs.seqs.msgs > 0 && fs.seqs.first < seq {
		ok, err := fs.removeSeq(fs.seqs.first, true)
		if err != nil || !ok {
			return n, err
		}
		n++
	}
	if seq > fs.seqs.last+1 {
		return n, fs.skipTo(seq - 1)
	}
	return n, nil
}

func (fs *fileStore) ExpireBefore(cutoff int64) (uint64, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if err := fs.writable(); err != nil {
		return 0, err
	}
	defer fs.fixSubjects()
	var n uint64
	for fs.seqs.msgs > 0 {
		s := fs.seqs.first
		if b := fs.findBlock(s); b == nil || b.maxTS >= cutoff {
			if ts, ok := fs.msgTS(s); !ok || ts >= cutoff {
				if !ok && fs.seqs.first != s {
					continue // s was found damaged and dropped
				}
				break
			}
		}
		ok, err := fs.removeSeq(s, true)
		if err != nil || !ok {
			return n, err
		}
		n++
	}
	return n, nil
}

// enforceLimits discards from the front until the limits hold.
func (fs *fileStore) enforceLimits(subj string) {
	if max := fs.limits.MaxMsgsPerSubject; max > 0 {
		for {
			if fs.disk.fssStale { // damage found: count again before going on
				fs.fixSubjects()
			}
			ss, ok := fs.fss.Get(subj)
			if !ok || ss.Msgs <= uint64(max) {
				break
			}
			if ok, err := fs.removeSeq(ss.First, true); !ok || err != nil {
				break
			}
		}
	}
	if max := fs.limits.MaxMsgs; max > 0 {
		for fs.seqs.msgs > uint64(max) {
			if ok, err := fs.removeSeq(fs.seqs.first, true); !ok || err != nil {
				break
			}
		}
	}
	if max := fs.limits.MaxBytes; max > 0 {
		for fs.seqs.bytes > uint64(max) && fs.seqs.msgs > 0 {
			if ok, err := fs.removeSeq(fs.seqs.first, true); !ok || err != nil {
				break
			}
		}
	}
}

func (fs *fileStore) enforceAllLimits() {
	if fs.limits.MaxMsgsPerSubject > 0 {
		subjs := make([]string, 0, fs.fss.Len())
		for subj := range fs.fss.All() {
			subjs = append(subjs, subj)
		}
		for _, subj := range subjs {
			fs.enforceLimits(subj)
		}
	}
	fs.enforceLimits("")
	fs.fixSubjects()
}

// matchAll reports whether filter matches every subject.
func matchAll(filter string) bool { return filter == "" || filter == ">" }

// subjectMatcher caches whether subjects match filter. With set, it
// matches the subjects of set instead (and wild must be true).
type subjectMatcher struct {
	filter string
	all    bool
	wild   bool
	seen   map[string]bool
	set    map[string]subjects.State
}

func newSubjectMatcher(filter string) *subjectMatcher {
	return &subjectMatcher{filter: filter, all: matchAll(filter), wild: sublist.SubjectHasWildcard(filter)}
}

func (m *subjectMatcher) match(subj string) bool {
	if m.all {
		return true
	}
	if !m.wild {
		return subj == m.filter
	}
	if m.set != nil {
		_, ok := m.set[subj]
		return ok
	}
	ok, found := m.seen[subj]
	if !found {
		ok = sublist.MatchLiteral(subj, m.filter)
		if m.seen == nil {
			m.seen = map[string]bool{}
		}
		m.seen[subj] = ok
	}
	return ok
}
