package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats-server/v2/internal/wal"
)

// walLog is a raft.LogStore on Tern's write-ahead log. Snapshots (state
// data and membership) live in a file beside the log, written atomically.
//
// Durability follows the server's sync_interval, as nats-server's raft
// logs do: with sync_interval "always" (syncEvery 0) every batch is fsynced
// before it is acknowledged to anyone (group commit); otherwise a batch is
// written to the OS before the node sends or applies anything (it survives
// the process being killed) and fsynced at most syncEvery later.
type walLog struct {
	fs        vfs.FS
	dir       string
	w         *wal.WAL
	snap      raft.Snapshot
	syncEvery time.Duration
	lastSync  time.Time

	votedTerm uint64 // term and vote last made durable: a change is fsynced
	votedFor  raft.ID
	mustFsync bool
	// keep is the number of entries a local snapshot leaves in the log
	// below its index while the process runs, so that a follower behind
	// the leader's snapshot gets entries, not the snapshot; a restart
	// compacts them away.
	keep       atomic.Uint64
	compacting chan struct{}                     // closed when the compaction in progress ends
	mu         lockorder.Mutex[lockorder.WalLog] // guards snap (metadata), pending and bgErr
	pending    *raft.Snapshot
	kind       localSnapKind // nil: no local snapshot kind
	// inline compacts on the caller's goroutine (a group driven by a
	// raftHost; set before the group starts).
	inline bool
	bgErr  error
	// owed are fsyncs of the group's directory made unsynced, run with the
	// log's first fsync (raft_log_pending.go; group goroutine only, set
	// before the group starts).
	owed pendingSyncs
	// mark is the log mark's bookkeeping (raft_logmark.go).
	mark markState
}

const snapshotFile = "snapshot"

func openWALLog(fs vfs.FS, dir string, syncEvery time.Duration, logf func(string, ...any)) (*walLog, error) {
	return openWALLogKind(fs, dir, syncEvery, logf, nil)
}

// localSnapKind lets a raft log keep its state machine's local snapshot
// kind (raft.Snapshot.Local other than a spool file: a stream's linked
// snapshot, stream_snapshot_kind.go) in its snapshot file and read it
// back. A log without one stores full data and spooled snapshots only.
type localSnapKind interface {
	// storedForm is what the snapshot file holds for local; false when
	// local is not of this kind.
	storedForm(local any) ([]byte, bool)
	// isStoredForm reports whether data read from the snapshot file is
	// in the stored form. The log never stores full data that is (it
	// would read back as a local kind: a file reference from a peer).
	isStoredForm(data []byte) bool
	// decodeStored reads the local kind back from its stored form.
	decodeStored(data []byte) (any, error)
}

// openWALLogKind is openWALLog for a state machine with a local snapshot
// kind.
func openWALLogKind(fs vfs.FS, dir string, syncEvery time.Duration, logf func(string, ...any), kind localSnapKind) (*walLog, error) {
	return openWALLogAt(fs, dir, walDir(dir), syncEvery, logf, kind)
}

// openWALLogAt opens the log of the group directory dir with its segments
// in logDir (raft_log_layout.go).
func openWALLogAt(fs vfs.FS, dir, logDir string, syncEvery time.Duration, logf func(string, ...any), kind localSnapKind) (*walLog, error) {
	w, err := wal.Open(fs, logDir, wal.Options{Logf: logf, ParallelSync: vfs.SyncsInParallel(fs)})
	if err != nil {
		return nil, err
	}
	l := &walLog{fs: fs, dir: dir, w: w, syncEvery: syncEvery, kind: kind}
	hs := w.HardState()
	l.votedTerm, l.votedFor = hs.Term, raft.ID(hs.Vote)
	if err := l.loadSnapshot(); err != nil {
		w.Close()
		return nil, err
	}
	if err := l.finishCompaction(); err != nil {
		w.Close()
		return nil, err
	}
	return l, nil
}

func mapWALErr(err error) error {
	switch {
	case errors.Is(err, wal.ErrCompacted):
		return raft.ErrCompacted
	case errors.Is(err, wal.ErrUnavailable):
		return raft.ErrUnavailable
	}
	return err
}

func (l *walLog) InitialState() (raft.HardState, []raft.ID, error) {
	hs := l.w.HardState()
	l.mu.Lock()
	defer l.mu.Unlock()
	return raft.HardState{Term: hs.Term, Vote: raft.ID(hs.Vote), Commit: hs.Commit}, l.snap.Peers, nil
}

func (l *walLog) Entries(lo, hi, maxBytes uint64) ([]raft.Entry, error) {
	recs, err := l.w.Entries(lo, hi, maxBytes)
	if err != nil {
		return nil, mapWALErr(err)
	}
	out := make([]raft.Entry, len(recs))
	for i, r := range recs {
		out[i] = raft.Entry{Index: r.Index, Term: r.Term, Type: raft.EntryType(r.Type), Data: r.Data}
	}
	return out, nil
}

func (l *walLog) Term(i uint64) (uint64, error) {
	t, err := l.w.Term(i)
	return t, mapWALErr(err)
}

func (l *walLog) FirstIndex() (uint64, error) { return l.w.FirstIndex(), nil }
func (l *walLog) LastIndex() (uint64, error)  { return l.w.LastIndex(), nil }

// Snapshot reads the stored snapshot; only its metadata stays in memory
// (a stream snapshot holds every message, and is needed only at start and
// for a lagging follower).
func (l *walLog) Snapshot() (raft.Snapshot, error) {
	l.mu.Lock()
	pending, meta := l.pending, l.snap
	l.mu.Unlock()
	switch {
	case pending != nil:
		return *pending, nil
	case meta.Index == 0:
		return meta, nil
	}
	return l.readSnapshot()
}

// snapshotIndexes returns the index of the durable snapshot and of the one
// being written (0 when none).
func (l *walLog) snapshotIndexes() (durable, pending uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending != nil {
		pending = l.pending.Index
	}
	return l.snap.Index, pending
}

// Save persists a snapshot from the leader, entries (truncating a
// conflicting tail) and the hard state; Sync makes them durable.
func (l *walLog) Save(snap *raft.Snapshot, ents []raft.Entry, hs *raft.HardState) error {
	if snap != nil {
		if err := l.waitCompaction(); err != nil {
			return err
		}
		if err := l.storeSnapshot(*snap); err != nil {
			return err
		}
		if err := l.w.SaveSnapshotMeta(snap.Index, snap.Term); err != nil {
			return err
		}
	}
	if len(ents) > 0 {
		if first := ents[0].Index; first <= l.w.LastIndex() {
			if err := l.w.TruncateFrom(first); err != nil {
				return err
			}
		}
		recs := make([]wal.Record, len(ents))
		for i, e := range ents {
			recs[i] = wal.Record{Index: e.Index, Term: e.Term, Type: uint8(e.Type), Data: e.Data}
		}
		if err := l.w.Append(recs); err != nil {
			return err
		}
		lattrace.Mark("wal.saved", len(ents))
	}
	if hs != nil {
		// A vote must never be forgotten, whatever sync_interval says: a
		// node that voted twice in a term could help elect two leaders.
		if hs.Term != l.votedTerm || hs.Vote != l.votedFor {
			l.mustFsync = true
			l.votedTerm, l.votedFor = hs.Term, hs.Vote
		}
		return l.w.SetHardState(wal.HardState{Term: hs.Term, Vote: uint64(hs.Vote), Commit: hs.Commit})
	}
	return nil
}

func (l *walLog) Sync() error {
	l.mu.Lock()
	err := l.bgErr
	l.mu.Unlock()
	if err != nil {
		return err
	}
	if l.syncEvery <= 0 || l.mustFsync {
		l.mustFsync = false
		return l.fsync()
	}
	return l.w.Flush()
}

// periodicSync fsyncs what Sync only flushed, once syncEvery has passed.
// The group loop tells the time (its clock's); the log reads none, and
// its first call starts the period.
func (l *walLog) periodicSync(now time.Time) error {
	if l.lastSync.IsZero() {
		l.lastSync = now
	}
	if l.syncEvery <= 0 || now.Sub(l.lastSync) < l.syncEvery {
		return l.markIfDue(now)
	}
	l.lastSync = now
	if !l.w.Dirty() && len(l.owed) == 0 {
		return l.markIfDue(now)
	}
	if err := l.fsync(); err != nil {
		return err
	}
	return l.markIfDue(now)
}

// syncIdle makes what the log holds unsynced durable before its group
// sleeps (raft_live.go): asleep, it gets no ticks, so no periodicSync.
func (l *walLog) syncIdle() error {
	if l.syncEvery > 0 && (l.w.Dirty() || len(l.owed) > 0) {
		l.lastSync = time.Time{}
		if err := l.fsync(); err != nil {
			return err
		}
	}
	return l.markIdle()
}

// Compact records a locally taken snapshot and drops the entries it
// covers. The writing (a stream snapshot holds every message) happens on a
// goroutine of its own so the group keeps replicating meanwhile: until it
// is done the log still has the entries and Snapshot returns the pending
// snapshot; a failure is reported by the next Sync (the group halts).
func (l *walLog) Compact(snap raft.Snapshot) error {
	if err := l.waitCompaction(); err != nil {
		return err
	}
	if l.inline { // a hosted group: the simulator's order decides
		err := l.compactNow(snap)
		l.mu.Lock()
		if err != nil && l.bgErr == nil {
			l.bgErr = err
		}
		l.mu.Unlock()
		return nil
	}
	l.mu.Lock()
	l.pending = &snap
	l.mu.Unlock()
	done := make(chan struct{})
	l.compacting = done
	go func() {
		defer close(done)
		err := l.compactNow(snap)
		l.mu.Lock()
		l.pending = nil
		if err != nil && l.bgErr == nil {
			l.bgErr = err
		}
		l.mu.Unlock()
	}()
	return nil
}

func (l *walLog) compactNow(snap raft.Snapshot) error {
	if err := l.storeSnapshot(snap); err != nil {
		return err
	}
	if err := l.w.SaveSnapshotMeta(snap.Index, snap.Term); err != nil {
		return err
	}
	return l.w.Compact(snap.Index - min(l.keep.Load(), snap.Index))
}

// waitCompaction waits for a compaction in progress (the group goroutine
// and Close are its only callers) and reports a failed one.
func (l *walLog) waitCompaction() error {
	if l.compacting != nil {
		<-l.compacting
		l.compacting = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bgErr
}

// Close syncs and closes the log, and then writes its mark
// (raft_logmark.go): everything it holds is durable.
func (l *walLog) Close() error {
	_ = l.waitCompaction()
	m := l.currentMark()
	if err := l.w.Close(); err != nil {
		return err
	}
	return l.writeMark(m, false)
}

// storeSnapshot writes [marker][index][term][npeers][peers...][data][trailer]
// atomically (raft_snapfile.go).
func (l *walLog) storeSnapshot(s raft.Snapshot) error {
	b := binary.AppendUvarint(append([]byte(nil), snapMarker...), s.Index)
	b = binary.AppendUvarint(b, s.Term)
	b = binary.AppendUvarint(b, uint64(len(s.Peers)))
	for _, p := range s.Peers {
		b = binary.AppendUvarint(b, uint64(p))
	}
	if err := l.writeSnapshotFile(b, s); err != nil {
		return err
	}
	l.mu.Lock()
	l.snap = raft.Snapshot{Index: s.Index, Term: s.Term, Peers: s.Peers}
	l.mu.Unlock()
	return nil
}

// writeSnapshotFile replaces the snapshot file with head and the data of
// s by its kind (stream_snapshot_kind.go): a linked snapshot's metadata,
// a spooled one's section copied from its file, or the full data.
func (l *walLog) writeSnapshotFile(head []byte, s raft.Snapshot) error {
	name := filepath.Join(l.dir, snapshotFile)
	var sp spooledSnap
	switch local := s.Local.(type) {
	case nil:
		// Full data, perhaps from a peer: it must not read back as the
		// only kind the file holds besides full data.
		if l.storedLocal(s.Data) {
			return fmt.Errorf("%w: full snapshot data in a local kind's form", errBadRaftMsg)
		}
		return vfs.WriteFileAtomic(l.fs, name, head, s.Data, snapTrailer(head, s.Data))
	case spooledSnap:
		sp = local
	default:
		if l.kind != nil {
			if raw, ok := l.kind.storedForm(local); ok {
				return vfs.WriteFileAtomic(l.fs, name, head, raw, snapTrailer(head, raw))
			}
		}
		return fmt.Errorf("raft snapshot of unknown kind %T", s.Local)
	}
	f, sr, err := sp.open(l.fs)
	if err != nil {
		return err
	}
	defer f.Close()
	return vfs.WriteFileAtomicFrom(l.fs, name, head, newSummingReader(head, sr))
}

// finishCompaction completes a snapshot whose file was written but whose
// record in the log was not (a crash in between): without it the log
// would still hold entries the snapshot covers, and they would be applied
// again on top of it.
//
// It also drops the entries a running log kept below its snapshot (keep):
// the raft core starts from a log that begins right after the snapshot.
func (l *walLog) finishCompaction() error {
	walIndex, _ := l.w.SnapshotMeta()
	kept := l.snap.Index <= l.w.LastIndex() && l.snap.Index >= l.w.FirstIndex()
	if l.snap.Index <= walIndex && !kept {
		return nil
	}
	if l.snap.Index > walIndex {
		if err := l.w.SaveSnapshotMeta(l.snap.Index, l.snap.Term); err != nil {
			return err
		}
	}
	if kept {
		if err := l.w.Compact(l.snap.Index); err != nil {
			return err
		}
	}
	return l.w.Sync()
}

func (l *walLog) loadSnapshot() error {
	s, err := l.readSnapshot()
	if err != nil {
		return err
	}
	l.snap = raft.Snapshot{Index: s.Index, Term: s.Term, Peers: s.Peers}
	return nil
}

// readSnapshot reads the snapshot file (an empty snapshot if there is
// none). A file of spooledMin bytes or more on the OS's file system is
// not read in: the data is a spooled reference to it.
func (l *walLog) readSnapshot() (raft.Snapshot, error) {
	name := filepath.Join(l.dir, snapshotFile)
	f, err := l.fs.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return raft.Snapshot{}, nil // no snapshot yet
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return raft.Snapshot{}, err
	}
	skip, size, err := verifySnapshotFile(f, st.Size()) // raft_snapfile.go
	if err != nil {
		return raft.Snapshot{}, fmt.Errorf("%s: %w", name, err)
	}
	if size >= spooledMin {
		headLen := min(snapshotHeadMax, size)
		s, data, err := readSnapshotHead(f, headLen, skip)
		switch {
		case err != nil:
			return s, err
		case !l.storedLocal(data):
			off := headLen - int64(len(data))
			s.Local = spooledSnap{Path: name, Off: off, Size: size - off, Index: s.Index}
			return s, nil
		}
		// A local kind (a stream's linked snapshot is its metadata only,
		// large with a large duplicate window) is expanded when sent, not
		// sent as it is, so it is read in.
	}
	s, data, err := readSnapshotHead(f, size, skip)
	if err != nil || !l.storedLocal(data) {
		s.Data = data
		return s, err
	}
	local, err := l.kind.decodeStored(data)
	if err != nil {
		return raft.Snapshot{}, fmt.Errorf("raft snapshot %s: %w", name, err)
	}
	s.Local = local
	return s, nil
}

// storedLocal reports whether snapshot file data is a local kind's.
func (l *walLog) storedLocal(data []byte) bool {
	return l.kind != nil && l.kind.isStoredForm(data)
}

// snapshotHeadMax is what readSnapshot reads of a file it leaves on disk:
// enough for the index, term and peers (and the tag of a linked snapshot).
const snapshotHeadMax = 4096

// readSnapshotHead reads the first n bytes of a snapshot file and returns
// the snapshot they describe (after skip bytes of marker) and what of them
// follows the head.
func readSnapshotHead(f vfs.File, n int64, skip int) (raft.Snapshot, []byte, error) {
	b := make([]byte, n)
	if k, err := f.ReadAt(b, 0); k != len(b) || len(b) < skip {
		return raft.Snapshot{}, nil, fmt.Errorf("reading raft snapshot: %w", err)
	}
	r := &raftReader{b: b[skip:]}
	s := raft.Snapshot{Index: r.uvarint(), Term: r.uvarint()}
	np := r.uvarint()
	for i := uint64(0); i < np && r.err == nil; i++ {
		s.Peers = append(s.Peers, raft.ID(r.uvarint()))
	}
	if r.err != nil {
		return raft.Snapshot{}, nil, errors.New("corrupt raft snapshot file")
	}
	return s, r.b, nil
}
