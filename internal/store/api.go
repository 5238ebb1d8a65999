package store

import (
	"path/filepath"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// The package's face is StreamStore (store.go). Besides it a stream needs
// two things of a store: a snapshot being encoded from it sees every
// message before it is removed (Watchable, both stores), and a file store
// can fix its state in a directory by hard links (Linker, the file store
// only). The stream code asks for them by these interfaces, never by the
// concrete types.

// RemovalWatcher is told by a store, under the store's lock, about every
// message it is about to remove.
type RemovalWatcher interface {
	// Wants reports whether the message seq is still needed.
	Wants(seq uint64) bool
	// Save keeps sm, which the caller gives away.
	Save(sm *StoreMsg)
	// Abandon is called when the store removes everything at once.
	Abandon()
}

// Watchable is implemented by every store of this package: snapshots
// need it.
type Watchable interface {
	SetRemovalWatcher(w RemovalWatcher)
	// ReadLive calls fn with each live message of [from, to] in order and
	// then calls after, all under the store's lock; sm is reused.
	ReadLive(from, to uint64, sm *StoreMsg, fn func(*StoreMsg), after func()) error
}

// Linker is a store that fixes its state in a directory by hard-linking
// its files (filestore_snapshot.go): the file store.
type Linker interface {
	// SnapshotTo fixes the store's state into dir, which must not exist;
	// the caller makes sure nothing is written or removed meanwhile. The
	// returned snapshot's Write makes the directory complete and durable.
	SnapshotTo(dir string) (*LinkedSnapshot, error)
	// MarkShared records that every sealed block file may have other
	// names (the store was restored from a snapshot directory).
	MarkShared()
	// NumBlocks is the number of block files.
	NumBlocks() int
}

var (
	_ Watchable = (*fileStore)(nil)
	_ Watchable = (*memStore)(nil)
	_ Linker    = (*fileStore)(nil)
)

// NewMemStore returns an empty memory store.
func NewMemStore(limits StoreLimits) StreamStore { return newMemStore(limits) }

// OpenFileStore opens the file store in dir on fsys, recovering what is
// there, or creates an empty one.
func OpenFileStore(fsys vfs.FS, dir string, cfg FileStoreConfig, limits StoreLimits) (StreamStore, error) {
	fs, err := newFileStore(fsys, dir, cfg, limits)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return fs, nil
}

// OpenLinkedCopy restores the snapshot directory snapDir into the new
// directory dir and opens a scratch file store on it for reading. close
// closes it without syncing, checkpointing or compacting (the copy is
// about to be removed).
func OpenLinkedCopy(fsys vfs.FS, snapDir, dir string) (st StreamStore, close func(), err error) {
	if err := RestoreLinked(fsys, snapDir, dir); err != nil {
		return nil, nil, err
	}
	fs, err := newFileStore(fsys, filepath.Clean(dir), FileStoreConfig{}, StoreLimits{})
	if err != nil {
		return nil, nil, err
	}
	fs.MarkShared()
	return fs, fs.closeUnsynced, nil
}

// tellRemoval hands w a copy of the message about to be removed, if w
// still needs it; load reads it (under the store's lock).
func tellRemoval(w RemovalWatcher, seq uint64, load func(*StoreMsg) (*StoreMsg, error)) {
	if w == nil || !w.Wants(seq) {
		return
	}
	if sm, err := load(&StoreMsg{}); err == nil {
		w.Save(sm)
	} else {
		w.Abandon() // it cannot be kept, so the snapshot cannot be taken
	}
}
