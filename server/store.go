package server

import (
	"github.com/nats-io/nats-server/v2/internal/store"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// The stores live in internal/store; these names keep the embedding API
// (package server's exported store types, as nats-server's) unchanged.
type (
	StorageType     = store.StorageType
	StoreMsg        = store.StoreMsg
	StreamState     = store.StreamState
	LostStreamData  = store.LostStreamData
	SimpleState     = store.SimpleState
	StoreLimits     = store.StoreLimits
	StreamStore     = store.StreamStore
	FileStoreConfig = store.FileStoreConfig
)

const (
	FileStorage   = store.FileStorage
	MemoryStorage = store.MemoryStorage
)

// Store errors.
var (
	ErrStoreClosed       = store.ErrStoreClosed
	ErrStoreMsgNotFound  = store.ErrStoreMsgNotFound
	ErrStoreEOF          = store.ErrStoreEOF
	ErrMaxMsgs           = store.ErrMaxMsgs
	ErrMaxBytes          = store.ErrMaxBytes
	ErrMaxMsgsPerSubject = store.ErrMaxMsgsPerSubject
	ErrStoreCorrupt      = store.ErrStoreCorrupt
	ErrSequenceMismatch  = store.ErrSequenceMismatch
)

// linkableStore is a store whose snapshots link its files (the file store).
type linkableStore = store.Linker

// storedMsgSize is the accounted size of a message, the same in every store.
func storedMsgSize(subj string, hdr, msg []byte) uint64 { return store.StoredMsgSize(subj, hdr, msg) }

// watchedStore is implemented by every StreamStore: snapshots need it.
type watchedStore = store.Watchable

// restoreFileSnapshot fills the new store directory storeDir from the
// linked snapshot directory snapDir.
func restoreFileSnapshot(fsys vfs.FS, snapDir, storeDir string) error {
	return store.RestoreLinked(fsys, snapDir, storeDir)
}
