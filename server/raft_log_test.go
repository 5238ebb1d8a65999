package server

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// TestWALLogCompactInBackground: Compact returns before the snapshot is
// written; meanwhile Snapshot serves the pending one; after Close the
// directory holds the snapshot and the compacted log, and a reopened log
// starts from them.
func TestWALLogCompactInBackground(t *testing.T) {
	dir := t.TempDir()
	l := walLogWithEntries(t, dir, 100, 1)
	data := bytes.Repeat([]byte("state"), 1<<20)
	if err := l.Compact(raft.Snapshot{Index: 60, Term: 1, Peers: []raft.ID{1, 2, 3}, Data: data}); err != nil {
		t.Fatal(err)
	}
	snap, err := l.Snapshot()
	if err != nil || snap.Index != 60 || !bytes.Equal(snap.Data, data) {
		t.Fatalf("snapshot during compaction: %d %v", snap.Index, err)
	}
	if err := l.Compact(raft.Snapshot{Index: 80, Term: 1, Peers: []raft.ID{1, 2, 3}, Data: []byte("later")}); err != nil {
		t.Fatal(err) // waits for the first
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = openWALLog(vfs.Default, dir, 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	snap, err = l.Snapshot()
	if err != nil || snap.Index != 80 || string(snap.Data) != "later" || len(snap.Peers) != 3 {
		t.Fatalf("reopened snapshot: %+v %v", snap, err)
	}
	if first, _ := l.FirstIndex(); first != 81 {
		t.Fatalf("first index %d after compaction at 80", first)
	}
	if last, _ := l.LastIndex(); last != 100 {
		t.Fatalf("last index %d", last)
	}
	got, err := l.Entries(81, 101, 1<<20)
	if err != nil || len(got) != 20 || got[0].Data[0] != 81 {
		t.Fatalf("entries after the snapshot: %d %v", len(got), err)
	}
}

// TestWALLogFinishesInterruptedCompaction: a crash after the snapshot file
// was renamed into place but before the log recorded it must not leave
// entries the snapshot covers in the log (they would be applied twice).
func TestWALLogFinishesInterruptedCompaction(t *testing.T) {
	dir := t.TempDir()
	l := walLogWithEntries(t, dir, 50, 2)
	// The first step of a compaction only, then the process dies.
	if err := l.storeSnapshot(raft.Snapshot{Index: 30, Term: 2, Peers: []raft.ID{1}, Data: []byte("s")}); err != nil {
		t.Fatal(err)
	}
	l.w.Close()
	l, err := openWALLog(vfs.Default, dir, 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if first, _ := l.FirstIndex(); first != 31 {
		t.Fatalf("first index %d after reopening with a snapshot at 30", first)
	}
	if term, err := l.Term(30); err != nil || term != 2 {
		t.Fatalf("term at the snapshot index: %d %v", term, err)
	}
}

// TestWALLogKeepsEntriesBelowSnapshot: a running log keeps keep entries
// below a local snapshot (a follower slightly behind gets entries, not the
// snapshot); reopened, it starts right after the snapshot as the raft
// core expects.
func TestWALLogKeepsEntriesBelowSnapshot(t *testing.T) {
	dir := t.TempDir()
	l := walLogWithEntries(t, dir, 100, 3)
	l.keep.Store(25)
	if err := l.Compact(raft.Snapshot{Index: 70, Term: 3, Peers: []raft.ID{1}, Data: []byte("s")}); err != nil {
		t.Fatal(err)
	}
	if err := l.waitCompaction(); err != nil {
		t.Fatal(err)
	}
	if first, _ := l.FirstIndex(); first != 46 {
		t.Fatalf("first index %d with a snapshot at 70 keeping 25", first)
	}
	if got, err := l.Entries(46, 71, 1<<20); err != nil || len(got) != 25 || got[0].Data[0] != 46 {
		t.Fatalf("kept entries: %d %v", len(got), err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := openWALLog(vfs.Default, dir, 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if first, _ := l.FirstIndex(); first != 71 {
		t.Fatalf("first index %d after reopening with a snapshot at 70", first)
	}
	if last, _ := l.LastIndex(); last != 100 {
		t.Fatalf("last index %d", last)
	}
}

// TestStreamIncarnationDiscardsOldLog: a group directory left by an earlier
// stream of the same name is not reused by a new one.
func TestStreamIncarnationDiscardsOldLog(t *testing.T) {
	s := runServer(t, func() *Options { o := testOptions(); o.JetStream = true; o.StoreDir = t.TempDir(); return o }())
	js := s.js.Load()
	old := &streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: "INC"}, Created: time.Unix(1, 0)}
	if _, _, err := js.checkIncarnation(old); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(js.groupDir(old), "wal-leftover")
	if err := os.WriteFile(marker, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, _, err := js.checkIncarnation(old); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the same stream lost its directory: %v", err)
	}
	renewed := *old
	renewed.Created = time.Unix(2, 0)
	if _, _, err := js.checkIncarnation(&renewed); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("a new stream of the same name kept the old directory: %v", err)
	}
}

// walLogWithEntries opens a log in dir holding entries 1..n of term,
// committed and synced.
func walLogWithEntries(t *testing.T, dir string, n, term uint64) *walLog {
	t.Helper()
	l, err := openWALLog(vfs.Default, dir, 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	var ents []raft.Entry
	for i := uint64(1); i <= n; i++ {
		ents = append(ents, raft.Entry{Index: i, Term: term, Data: []byte{byte(i)}})
	}
	if err := l.Save(nil, ents, &raft.HardState{Term: term, Commit: n}); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	return l
}

// A snapshot file of spooledMin bytes or more is read back as a spooled
// reference that yields the same data, whatever its size against the head
// readSnapshot reads; a linked snapshot is always read in.
func TestWALLogReadsLargeSnapshotAsReference(t *testing.T) {
	setForTest(t, &spooledMin, 2000)
	for _, size := range []int{2500, 3 * snapshotHeadMax} {
		dir := t.TempDir()
		l, err := openWALLogKind(vfs.Default, dir, 0, t.Logf, linkedSnapKind{})
		if err != nil {
			t.Fatal(err)
		}
		data := []byte("{" + strings.Repeat("x", size) + "}")
		if err := l.storeSnapshot(raft.Snapshot{Index: 9, Term: 2, Peers: []raft.ID{1, 2, 3}, Data: data}); err != nil {
			t.Fatal(err)
		}
		snap, err := l.Snapshot()
		if err != nil || snap.Index != 9 || len(snap.Peers) != 3 {
			t.Fatalf("size %d: %+v %v", size, snap, err)
		}
		if _, ok := snap.Local.(spooledSnap); !ok || snap.Data != nil {
			t.Fatalf("size %d: read in, not referenced", size)
		}
		got, err := snapshotBytes(vfs.Default, snap)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("size %d: reference yields %d bytes, %v", size, len(got), err)
		}
		linked := newLinkedSnap(streamSnapMeta{LastID: strings.Repeat("x", size), Linked: "10"})
		if err := l.storeSnapshot(raft.Snapshot{Index: 10, Term: 2, Local: linked}); err != nil {
			t.Fatal(err)
		}
		snap, err = l.Snapshot()
		got2, ok := snap.Local.(linkedSnap)
		if err != nil || !ok || !bytes.Equal(got2.raw, linked.raw) || got2.meta.LastID != linked.meta.LastID {
			t.Fatalf("size %d: linked snapshot not read in: %v", size, err)
		}
		// Full data in the linked form (from a peer) is never stored: it
		// would read back as linked.
		if err := l.storeSnapshot(raft.Snapshot{Index: 11, Term: 2, Data: linked.raw}); !errors.Is(err, errBadRaftMsg) {
			t.Fatalf("size %d: full data in the linked form stored: %v", size, err)
		}
		l.Close()
	}
}

// A raft log opened without a local snapshot kind (the meta group's)
// reads every snapshot file back as full data or a spool reference: bytes
// that look like a stream's linked snapshot stay data, never a local kind.
func TestWALLogWithoutLocalKind(t *testing.T) {
	l, err := openWALLog(vfs.Default, t.TempDir(), 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	linked := newLinkedSnap(streamSnapMeta{Linked: "10"})
	if err := l.storeSnapshot(raft.Snapshot{Index: 10, Term: 2, Local: linked}); err == nil {
		t.Fatal("a log without the kind stored a linked snapshot")
	}
	if err := l.storeSnapshot(raft.Snapshot{Index: 11, Term: 2, Data: linked.raw}); err != nil {
		t.Fatal(err)
	}
	snap, err := l.Snapshot()
	if err != nil || snap.Local != nil || !bytes.Equal(snap.Data, linked.raw) {
		t.Fatalf("read back as %T %d bytes, %v", snap.Local, len(snap.Data), err)
	}
}
