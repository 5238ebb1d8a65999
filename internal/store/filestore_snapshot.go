package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A file store can fix its state in a directory without copying its
// messages: the checkpoint (the whole in-memory state, filestore_checkpoint.go)
// and a copy of the active block are written there, and every sealed block
// file is hard-linked there. A sealed block file is never changed in place
// while it is shared: compaction, compression and the erasure of a
// compressed block write new files, and erasing from a shared uncompressed
// block rewrites it under a new inode first. The directory so keeps the
// state of its point while the store goes on, and restoring links the files
// back into an empty store directory. Replicated file streams use this for
// their raft snapshots (stream_snapshot.go).

// LinkedSnapshot is a store's state fixed at one point, still to be written out.
type LinkedSnapshot struct {
	fsys   vfs.FS
	dir    string
	ckpt   []byte   // the checkpoint at the point
	active uint32   // the active block's index
	data   []byte   // the active block's data at the point
	linked []string // the sealed block files linked into dir
	store  *fileStore
	synced map[string]os.FileInfo // the files the previous snapshot synced
}

var errSnapshotDirExists = errors.New("snapshot directory exists")

// SnapshotTo fixes the store's state into dir, which must not exist. The
// caller makes sure nothing is written or removed meanwhile (a replicated
// stream calls it between two applies): the point is fixed under the lock,
// and the sealed blocks are linked after it with syncer.mu still held, so
// no compaction, compression or block removal replaces a file before its
// link. The rest is written by write.
func (fs *fileStore) SnapshotTo(dir string) (*LinkedSnapshot, error) {
	fs.syncer.mu.Lock()
	defer fs.syncUnlock()
	s, sealed, err := fs.fixSnapshot(dir)
	if err != nil {
		return nil, err
	}
	for _, name := range sealed {
		if err := fs.fsys.Link(filepath.Join(fs.dir, name), filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		s.linked = append(s.linked, name)
		// The index too when there is one (it is always replaced, never
		// rewritten in place): a restore then rebuilds the per-subject
		// state from the indexes without reading the blocks.
		index, _, _ := parseStoreFileName(name)
		idx := filepath.Base(indexName(fs.dir, index))
		if fs.fsys.Link(filepath.Join(fs.dir, idx), filepath.Join(dir, idx)) == nil {
			s.linked = append(s.linked, idx)
		}
	}
	return s, nil
}

// fixSnapshot takes the checkpoint and the active block's data and names
// the sealed block files, which it marks shared.
func (fs *fileStore) fixSnapshot(dir string) (*LinkedSnapshot, []string, error) {
	fs.mu.Lock()
	defer fs.unlock()
	if fs.closed {
		return nil, nil, ErrStoreClosed
	}
	if err := fs.flush(); err != nil {
		return nil, nil, err
	}
	if _, err := fs.fsys.Stat(dir); err == nil {
		return nil, nil, errSnapshotDirExists
	}
	if err := fs.fsys.MkdirAll(dir, 0o750); err != nil {
		return nil, nil, err
	}
	act := fs.active()
	s := &LinkedSnapshot{fsys: fs.fsys, dir: dir, active: act.index, data: slices.Clone(act.cache.data),
		ckpt: fs.encodeCheckpoint(false), store: fs, synced: fs.snapSynced}
	sealed := make([]string, 0, len(fs.blocks)-1)
	for _, b := range fs.blocks[:len(fs.blocks)-1] {
		b.shared = true
		sealed = append(sealed, filepath.Base(blockName(fs.dir, b.index, b.compressed)))
	}
	return s, sealed, nil
}

// write makes the snapshot directory complete and durable: the active
// block's copy and the checkpoint are written and synced, and so are the
// linked files (a block sealed lately may not be synced yet) unless an
// earlier snapshot synced the very same file.
func (s *LinkedSnapshot) Write() error {
	if err := vfs.WriteFileSynced(s.fsys, blockName(s.dir, s.active, false), s.data); err != nil {
		return err
	}
	if err := vfs.WriteFileSynced(s.fsys, filepath.Join(s.dir, fsCheckpointFile), s.ckpt); err != nil {
		return err
	}
	synced := make(map[string]os.FileInfo, len(s.linked))
	for _, name := range s.linked {
		path := filepath.Join(s.dir, name)
		fi, err := s.fsys.Stat(path)
		if err != nil {
			return err
		}
		if prev := s.synced[name]; prev != nil && os.SameFile(prev, fi) && prev.Size() == fi.Size() &&
			prev.ModTime().Equal(fi.ModTime()) {
			synced[name] = fi
			continue
		}
		f, err := s.fsys.OpenFile(path, os.O_RDONLY, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		synced[name] = fi
	}
	if err := s.fsys.SyncDir(s.dir); err != nil {
		return err
	}
	if err := s.fsys.SyncDir(filepath.Dir(s.dir)); err != nil {
		return err
	}
	s.store.setSnapSynced(synced)
	return nil
}

// setSnapSynced records the linked files the last snapshot synced.
func (fs *fileStore) setSnapSynced(synced map[string]os.FileInfo) {
	fs.mu.Lock()
	defer fs.unlock()
	fs.snapSynced = synced
}

// RestoreLinked fills the new store directory storeDir from the
// snapshot directory snapDir: sealed blocks are linked, the active block
// (the highest) is copied, as the store appends to it, and so is the
// checkpoint. The store opened on storeDir must then be told, with
// MarkShared, that its sealed blocks are shared.
func RestoreLinked(fsys vfs.FS, snapDir, storeDir string) error {
	ents, err := fsys.ReadDir(snapDir)
	if err != nil {
		return err
	}
	if _, err := fsys.Stat(filepath.Join(snapDir, fsCheckpointFile)); err != nil {
		return fmt.Errorf("snapshot %s has no checkpoint: %w", snapDir, err)
	}
	if err := vfs.MkdirAllSynced(fsys, storeDir, 0o750); err != nil {
		return err
	}
	var active uint32
	for _, e := range ents {
		if index, ext, ok := parseStoreFileName(e.Name()); ok && ext != "idx" {
			active = max(active, index)
		}
	}
	for _, e := range ents {
		index, ext, ok := parseStoreFileName(e.Name())
		if !ok {
			continue
		}
		from, to := filepath.Join(snapDir, e.Name()), filepath.Join(storeDir, e.Name())
		if ext == "blk" && index == active {
			err = copyFile(fsys, from, to)
		} else {
			err = fsys.Link(from, to)
		}
		if err != nil {
			return err
		}
	}
	if err := copyFile(fsys, filepath.Join(snapDir, fsCheckpointFile), filepath.Join(storeDir, fsCheckpointFile)); err != nil {
		return err
	}
	return fsys.SyncDir(storeDir)
}

func copyFile(fsys vfs.FS, from, to string) error {
	data, err := vfs.ReadFile(fsys, from)
	if err != nil {
		return err
	}
	return vfs.WriteFileSynced(fsys, to, data)
}

// MarkShared records that every sealed block file may have other names
// (the store was restored from a snapshot directory).
func (fs *fileStore) MarkShared() {
	fs.mu.Lock()
	defer fs.unlock()
	for _, b := range fs.blocks[:max(len(fs.blocks)-1, 0)] {
		b.shared = true
	}
}

// NumBlocks is the number of blocks.
func (fs *fileStore) NumBlocks() int {
	fs.mu.Lock()
	defer fs.unlock()
	return len(fs.blocks)
}

// closeUnsynced closes a store without syncing, checkpointing or
// compacting it (a scratch copy about to be removed).
func (fs *fileStore) closeUnsynced() {
	fs.syncer.mu.Lock()
	defer fs.syncUnlock()
	fs.mu.Lock()
	defer fs.unlock()
	if !fs.closed {
		fs.closed = true
		fs.closeFiles()
	}
}

// Files is the number of files the snapshot linked.
func (s *LinkedSnapshot) Files() int { return len(s.linked) }
