package wal

import (
	"errors"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

var (
	// ErrCompacted is returned for indexes below FirstIndex()-1 (Term) or
	// below FirstIndex() (Entries).
	ErrCompacted = errors.New("wal: requested index is compacted")
	// ErrUnavailable is returned for indexes above LastIndex().
	ErrUnavailable = errors.New("wal: requested index is unavailable")
	// ErrCorrupt is returned when the log on disk is damaged somewhere other
	// than a torn tail, or when a record read back fails its checksum.
	ErrCorrupt = errors.New("wal: log is corrupt")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("wal: closed")
)

// Record is one log entry. Type 0xFF is reserved.
type Record struct {
	Index, Term uint64
	Type        uint8
	Data        []byte
}

// HardState is the Raft state that must survive a restart.
type HardState struct {
	Term   uint64
	Vote   uint64
	Commit uint64
}

// Options configure a WAL.
type Options struct {
	// SegmentSize is the size at which the active segment is closed and a
	// new one started. Default 64 MiB. A record larger than it gets a
	// segment of its own.
	SegmentSize int64
	// Logf receives recovery notices (a truncated tail, removed segments).
	Logf func(string, ...any)
	// ParallelSync fsyncs the active segment and the directory (after a
	// segment was created or removed) at the same time instead of one after
	// the other; Sync returns once both are done. Off for the simulator,
	// whose file system must see one order.
	ParallelSync bool
	// NoFill appends at the end of the active segment's file instead of
	// overwriting a zero-filled tail (fill.go). For tests that tear a
	// tail at every byte: vfs.MemFS.CrashKeep models torn appends only.
	NoFill bool
}

const (
	defaultSegmentSize = 64 << 20
	flushBytes         = 1 << 20 // write the buffer out (no fsync) past this
	cacheBytes         = 2 << 20 // recent entries kept in memory
	cacheEntries       = 4096
)

// WAL is a Raft log on disk. It is safe for concurrent use; all methods
// serialize on mu, except the fsync of the active segment in Sync, which
// runs without it (Sync).
type WAL struct {
	mu lockorder.Mutex[lockorder.WAL]
	// syncTurn (one slot, taken before mu) lets one Sync, Compact,
	// Release or Close run at a time: a Sync's fsync without mu is not
	// overtaken by another Sync that would find nothing dirty, nor by the
	// closing of its file.
	syncTurn chan struct{}
	syncing  bool // a Sync's fsync runs without mu
	fs       vfs.FS
	dir      string
	opts     Options
	segs     []*segment // in seq order; the last one is active
	buf      []byte     // encoded bytes of the active segment not yet written
	ents     locIndex   // live entries meta.base+1 .. LastIndex()
	meta     metaState  // current state; meta.hs is the latest SetHardState
	logHS    HardState  // the hard state most recently encoded into the log
	cache    cache
	dirty    dirtyFlags
	err      error // sticky write/fsync error
	shut     bool
}

// dirtyFlags say what the next Sync has to do.
type dirtyFlags struct {
	hs   bool // SetHardState since the last state record
	data bool // bytes written or buffered since the last fsync
	dir  bool // a segment created since the last SyncDir
}

// segment is one file of the log.
type segment struct {
	seq, first uint64
	path       string
	f          vfs.File
	size       int64 // bytes of frames in the file; the active one's buffer is extra
	filled     int64 // the file's length when a zero-filled tail follows size (fill.go)
}

// metaFrame is the size of a state record; every segment starts with one.
const metaFrame = hdrSize + metaSize

func segName(seq, first uint64) string { return fmt.Sprintf("%020d-%020d.wal", seq, first) }

// Open opens the log in dir, creating it if needed, and recovers it.
func Open(fs vfs.FS, dir string, opts Options) (*WAL, error) {
	if opts.SegmentSize <= 0 {
		opts.SegmentSize = defaultSegmentSize
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if err := makeDir(fs, dir); err != nil {
		return nil, err
	}
	w := &WAL{fs: fs, dir: dir, opts: opts, syncTurn: make(chan struct{}, 1)}
	if err := w.recover(); err != nil {
		w.closeFiles()
		return nil, err
	}
	return w, nil
}

// makeDir creates dir if needed and makes its entry in the parent durable,
// so that segments synced in it cannot vanish with it.
func makeDir(fs vfs.FS, dir string) error {
	return vfs.MkdirAllSynced(fs, dir, 0o750)
}

// createSegment creates the next segment file and makes it active, with a
// state record at its start.
func (w *WAL) createSegment(seq, first uint64) error {
	path := filepath.Join(w.dir, segName(seq, first))
	f, err := w.fs.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	w.segs = append(w.segs, &segment{seq: seq, first: first, path: path, f: f})
	w.dirty.dir = true
	w.writeMeta()
	return nil
}

func (w *WAL) active() *segment { return w.segs[len(w.segs)-1] }

func (w *WAL) lastIndex() uint64 { return w.meta.base + uint64(w.ents.len()) }

// loc locates entry index, which must be in the log.
func (w *WAL) loc(index uint64) *entLoc { return w.ents.at(int(index - w.meta.base - 1)) }

func (w *WAL) lastTerm() uint64 {
	if n := w.ents.len(); n > 0 {
		return w.ents.at(n - 1).term
	}
	return w.meta.baseTerm
}

// writeMeta buffers a state record carrying what is already in the log
// plus the current compaction point; the pending hard state waits for Sync.
func (w *WAL) writeMeta() {
	m := w.meta
	m.hs = w.logHS
	w.buf = appendMeta(w.buf, w.lastIndex(), m)
	w.dirty.data = true
}

// usable is checked by every write.
func (w *WAL) usable() error {
	switch {
	case w.shut:
		return ErrClosed
	case w.err != nil:
		return fmt.Errorf("wal: unusable after an I/O error: %w", w.err)
	}
	return nil
}

// fail makes err sticky.
func (w *WAL) fail(err error) error {
	if w.err == nil {
		w.err = err
		w.opts.Logf("wal %s: write failed, log is now read-only: %v", w.dir, err)
	}
	return err
}

// unlock releases mu (deferred by every method that takes it). A panic
// under mu (a bug) may leave the log half changed: the log turns
// read-only, as after an I/O error, mu is released so Close and readers
// do not wait for it forever, and the panic goes on to the caller (the
// raft driver halts the group).
func (w *WAL) unlock() {
	if p := recover(); p != nil {
		w.fail(fmt.Errorf("wal: panic: %v", p))
		w.mu.Unlock()
		panic(p)
	}
	w.mu.Unlock()
}

// FirstIndex is the first index still in the log (compaction point + 1).
func (w *WAL) FirstIndex() uint64 {
	w.mu.Lock()
	defer w.unlock()
	return w.meta.base + 1
}

// LastIndex is the last index in the log, or the compaction point when the
// log holds no entry.
func (w *WAL) LastIndex() uint64 {
	w.mu.Lock()
	defer w.unlock()
	return w.lastIndex()
}

// HardState returns the latest hard state set (durable after Sync).
func (w *WAL) HardState() HardState {
	w.mu.Lock()
	defer w.unlock()
	return w.meta.hs
}

// SnapshotMeta returns the last (index, term) given to SaveSnapshotMeta.
func (w *WAL) SnapshotMeta() (index, term uint64) {
	w.mu.Lock()
	defer w.unlock()
	return w.meta.snapIndex, w.meta.snapTerm
}

// Close syncs what is buffered (unless a write already failed) and closes
// the files. Later calls return ErrClosed.
func (w *WAL) Close() error {
	defer w.takeSyncTurn()()
	w.mu.Lock()
	defer w.unlock()
	if w.shut {
		return ErrClosed
	}
	var err error
	if w.err == nil {
		err = w.syncExact()
	}
	w.shut = true
	if cerr := w.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

// file returns s's open file, opening it again when Release closed it.
func (w *WAL) file(s *segment) (vfs.File, error) {
	if s.f != nil {
		return s.f, nil
	}
	f, err := w.fs.OpenFile(s.path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	s.f = f
	return f, nil
}

// Release closes the log's files while every byte written to them is
// durable (nothing buffered, nothing to fsync; a hard state set since the
// last Sync is only recorded in memory until the next one, which opens the
// file again); the next read, write or sync opens again the file it
// needs. An idle group's log so holds no descriptor: a server with
// thousands of idle streams would otherwise keep one open per stream. It
// reports whether it closed them.
func (w *WAL) Release() bool {
	defer w.takeSyncTurn()()
	w.mu.Lock()
	defer w.unlock()
	if w.shut || w.err != nil || len(w.buf) > 0 || w.dirty.data || w.dirty.dir {
		return false
	}
	if err := w.closeFiles(); err != nil {
		w.err = err
		return false
	}
	return true
}

func (w *WAL) closeFiles() error {
	var err error
	for _, s := range w.segs {
		if s.f == nil {
			continue
		}
		if cerr := s.f.Close(); err == nil {
			err = cerr
		}
		s.f = nil
	}
	return err
}
