package store

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// makeRoom prepares the active block for a record of n bytes: it seals the
// block when the record would overflow it, and writes the buffer out when
// it holds more than fsFlushBound bytes.
func (fs *fileStore) makeRoom(n int) error {
	mb := fs.active()
	if mb.rawLen+int64(n) > int64(fs.cfg.BlockSize) && mb.rawLen > recOverhead {
		if err := fs.seal(fs.seqs.last); err != nil {
			return err
		}
		mb = fs.active()
	}
	if int64(len(mb.cache.data))-fs.aw.flushed+int64(n) > fsFlushBound {
		return fs.flush()
	}
	return nil
}

// writeRecord logs a record that is not a message in the active block.
func (fs *fileStore) writeRecord(kind byte, seq uint64) error {
	if err := fs.makeRoom(recOverhead); err != nil {
		return err
	}
	fs.appendMeta(kind, seq)
	return nil
}

func (fs *fileStore) appendMeta(kind byte, seq uint64) {
	mb := fs.active()
	mb.cache.data = appendRecord(mb.cache.data, kind, seq, 0, "", nil, nil)
	mb.rawLen = int64(len(mb.cache.data))
	noteTomb(mb, kind, seq)
}

// noteTomb tracks the highest tombstone target of mb below its first
// message: such tombstones keep mb alive while earlier blocks exist.
func noteTomb(mb *msgBlock, kind byte, seq uint64) {
	if kind != recDel && kind != recFirst {
		return
	}
	if kind == recDel {
		mb.tombs++
	}
	t := seq
	if kind == recFirst {
		t = seq - 1
	}
	if mb.first != 0 && t >= mb.first {
		t = 0
		if kind == recFirst {
			t = mb.first - 1
		}
	}
	mb.tombMax = max(mb.tombMax, t)
}

// flush writes the active block's buffered records to its file.
func (fs *fileStore) flush() error {
	if fs.werr != nil {
		return fs.werr
	}
	if fs.disk.pendingFirst {
		fs.disk.pendingFirst = false
		fs.appendMeta(recFirst, fs.seqs.first)
	}
	data := fs.active().cache.data
	if int64(len(data)) == fs.aw.flushed {
		return nil
	}
	f, err := fs.activeW()
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(data[fs.aw.flushed:], fs.aw.flushed); err != nil {
		return fs.fail(fmt.Errorf("file store write: %w", err))
	}
	fs.aw.flushed = int64(len(data))
	fs.disk.dirty = true
	return nil
}

// activeW is the active block's open file, reopened when an idle Sync
// closed it, or created when it is not made yet.
func (fs *fileStore) activeW() (vfs.File, error) {
	if fs.aw.unmade {
		if fs.aw.dirUnmade {
			if err := fs.fsys.MkdirAll(fs.dir, 0o750); err != nil {
				return nil, fs.fail(fmt.Errorf("file store create directory: %w", err))
			}
			fs.aw.dirUnmade = false
		}
		f, err := fs.createBlock(fs.active().index)
		if err != nil {
			return nil, err
		}
		fs.aw.f, fs.aw.unmade = f, false
	}
	if fs.aw.f == nil {
		f, err := fs.fsys.OpenFile(blockName(fs.dir, fs.active().index, false), os.O_RDWR, 0o640)
		if err != nil {
			return nil, fs.fail(fmt.Errorf("file store reopen block: %w", err))
		}
		fs.aw.f = f
	}
	return fs.aw.f, nil
}

// fail makes err sticky: the store refuses writes from now on
// (store_failure.go).
func (fs *fileStore) fail(err error) error {
	if fs.werr == nil {
		fs.werr = &WriteFailure{Err: err}
		fs.logf("%v", err)
	}
	return fs.werr
}

// seal closes the active block for writing (its file is synced at the next
// Sync) and starts a new one whose base is base.
func (fs *fileStore) seal(base uint64) error {
	if err := fs.flush(); err != nil {
		return err
	}
	mb := fs.active()
	mb.idx.recOff = mb.cache.offs
	if err := fs.writeIndexFile(mb, true); err != nil {
		fs.logf("writing index of block %d: %v", mb.index, err)
	}
	if fs.aw.f != nil { // closed while idle: synced then
		fs.disk.unsynced = append(fs.disk.unsynced, fs.aw.f)
	}
	fs.aw = activeFile{}
	fs.disk.sealed++
	if fs.cfg.Compression == "s2" {
		fs.disk.compress = append(fs.disk.compress, mb.index)
	}
	fs.touch(mb)
	err := fs.newActive(mb.index+1, base, mb.last, false)
	fs.trimCaches()
	return err
}

// createBlock creates the (empty) file of block index and removes any
// index file of that number left over; the directory is then dirty.
func (fs *fileStore) createBlock(index uint32) (vfs.File, error) {
	f, err := fs.fsys.OpenFile(blockName(fs.dir, index, false), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, fs.fail(fmt.Errorf("file store create block: %w", err))
	}
	fs.fsys.Remove(indexName(fs.dir, index))
	fs.disk.dirDirty = true
	return f, nil
}

// newActive makes block index the active block, creating its file unless
// lazy (then the first flush creates it: activeW). Its first record says
// every sequence up to base is assigned and, when prevLast > 0, that the
// previous block's messages end at prevLast (so a recovery can tell a
// lost tail of that block from a skip). That record is buffered, so a
// flush always has something to write and makes the file: every Sync,
// checkpoint and snapshot flushes first, so none lists a block without
// a file.
func (fs *fileStore) newActive(index uint32, base, prevLast uint64, lazy bool) error {
	var f vfs.File
	if !lazy {
		var err error
		if f, err = fs.createBlock(index); err != nil {
			return err
		}
	}
	// A stream that filled its last block gets a full-size buffer at once
	// (no regrowth copies); a slow one starts empty and grows with its
	// records (appendRecord doubles it), so an idle stream holds a few
	// hundred bytes rather than a preallocated buffer.
	// Its index gets room for as many messages and subjects as the last
	// block had: slices that large grow by a quarter at a time, so growing
	// them from empty would allocate and copy each about five times over.
	size, count, subjs := 0, 0, 0
	if n := len(fs.blocks); n > 0 && fs.blocks[n-1].rawLen >= int64(fs.cfg.BlockSize)/2 {
		size = int(fs.cfg.BlockSize) + 64<<10
		if prev := fs.blocks[n-1]; prev.first != 0 {
			count = int(prev.last-prev.first) + 64
			if prev.idx != nil {
				subjs = min(len(prev.idx.subjs)+64, count)
			}
		}
	}
	buf := fs.spare
	if fs.spare = nil; cap(buf) < size {
		buf = make([]byte, 0, size)
	}
	mb := &msgBlock{index: index, base: base, idx: newBlockIndex(),
		cache: &blockCache{data: buf, offs: make([]uint32, 0, count)}}
	mb.idx.ids, mb.idx.sizes = make([]uint32, 0, count), make([]uint32, 0, count)
	mb.idx.subjs, mb.idx.posts = make([]string, 0, subjs), make([][]uint32, 0, subjs)
	fs.blocks = append(fs.blocks, mb)
	fs.aw = activeFile{f: f, unmade: lazy}
	mb.cache.data = appendRecord(mb.cache.data, recBase, base, int64(prevLast), "", nil, nil)
	mb.rawLen = int64(len(mb.cache.data))
	return nil
}

// Sync writes out buffered records and makes everything stored so far
// durable; when enough changed it also writes a checkpoint and deletes the
// files of removed blocks.
func (fs *fileStore) Sync() error {
	fs.syncer.mu.Lock()
	defer fs.syncUnlock()
	return fs.syncLocked(false)
}

// syncLocked runs with syncer.mu held; force writes a checkpoint.
func (fs *fileStore) syncLocked(force bool) error {
	w, err := fs.takeSyncWork(force)
	if err != nil || w == nil {
		return err
	}
	if err := fs.syncFiles(w.files, w.closeN, w.dirDirty); err != nil {
		return err
	}
	if w.ck == nil {
		return nil
	}
	return fs.finishCheckpoint(w.ck)
}

// syncWork is what one Sync does outside mu.
type syncWork struct {
	files    []vfs.File // to fsync; the first closeN (sealed blocks) then closed
	closeN   int
	dirDirty bool
	ck       *checkpointJob // nil: no checkpoint due
}

// takeSyncWork flushes the active block and takes what is to be synced;
// nil when the store is closed.
func (fs *fileStore) takeSyncWork(force bool) (*syncWork, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if fs.closed {
		return nil, nil
	}
	if err := fs.flush(); err != nil {
		return nil, err
	}
	files := fs.disk.unsynced
	if fs.disk.dirty && fs.aw.f != nil {
		files = append(files, fs.aw.f)
	}
	closeN := len(fs.disk.unsynced)
	dirDirty := fs.disk.dirDirty
	if !fs.disk.dirty && closeN == 0 && !dirDirty && fs.aw.f != nil {
		// Nothing written since the last Sync, which made everything
		// durable: an idle stream keeps no file open (nats-server closes
		// an idle block's file too); the next write reopens it.
		fs.aw.f.Close()
		fs.aw.f = nil
	}
	fs.disk.unsynced, fs.disk.dirty, fs.disk.dirDirty = nil, false, false
	w := &syncWork{files: files, closeN: closeN, dirDirty: dirDirty}
	if force || fs.disk.ckptDue || fs.disk.sealed > 0 || len(fs.disk.lingering) > 0 || len(fs.disk.compress) > 0 {
		w.ck = fs.snapshotCheckpoint()
	}
	return w, nil
}

// syncFiles fsyncs files, closes the first closeN (sealed blocks) and syncs
// the directory; a failure is sticky.
func (fs *fileStore) syncFiles(files []vfs.File, closeN int, dirDirty bool) error {
	var err error
	for i, f := range files {
		if serr := f.Sync(); serr != nil && err == nil {
			err = serr
		}
		if i < closeN {
			f.Close()
		}
	}
	if dirDirty && err == nil {
		err = fs.fsys.SyncDir(fs.dir)
	}
	if err != nil {
		err = fs.failLocking(fmt.Errorf("file store sync: %w", err))
	}
	return err
}

// failLocking is fail under mu.
func (fs *fileStore) failLocking(err error) error {
	fs.mu.Lock()
	defer fs.unlock()
	return fs.fail(err)
}

// Stop flushes, syncs, writes a checkpoint (so the next open reads no
// message) and closes the store.
func (fs *fileStore) Stop() error {
	fs.syncer.mu.Lock()
	defer fs.syncUnlock()
	closed, werr := fs.closedAndErr()
	if closed {
		return nil
	}
	var err error
	if werr == nil {
		err = fs.syncLocked(true)
	}
	fs.mu.Lock()
	defer fs.unlock()
	fs.closed = true
	fs.closeFiles()
	if err == nil {
		err = werr
	}
	return err
}

// closedAndErr is whether the store is closed and its sticky error.
func (fs *fileStore) closedAndErr() (bool, error) {
	fs.mu.Lock()
	defer fs.unlock()
	return fs.closed, fs.werr
}

// closeFiles closes every open file and drops the caches.
func (fs *fileStore) closeFiles() {
	for _, f := range fs.disk.unsynced {
		f.Close()
	}
	fs.disk.unsynced = nil
	if fs.aw.f != nil {
		fs.aw.f.Close()
		fs.aw = activeFile{}
	}
	fs.rd.drop()
	fs.rdx.drop()
	for _, b := range fs.blocks {
		b.cache, b.idx = nil, nil
	}
}

// removeBlockFiles deletes every file of block index.
func (fs *fileStore) removeBlockFiles(index uint32) {
	for _, name := range []string{blockName(fs.dir, index, false), blockName(fs.dir, index, true), indexName(fs.dir, index)} {
		if err := fs.fsys.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			fs.logf("removing %s: %v", name, err)
		}
	}
}
