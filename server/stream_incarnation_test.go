package server

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

func TestJudgeIncarnation(t *testing.T) {
	for _, c := range []struct {
		names []string
		want  incarnationVerdict
	}{
		{nil, incarnationNone},
		{[]string{"wal"}, incarnationNone},
		{[]string{"wal", "incarnation-5"}, incarnationSame},
		{[]string{"incarnation-4", "wal"}, incarnationOther},
		{[]string{"incarnation", "wal"}, incarnationLegacy},
		{[]string{"incarnation", "incarnation-5"}, incarnationSame},
		{[]string{"incarnation-4", "incarnation"}, incarnationOther},
		{[]string{"incarnation-50"}, incarnationOther},
	} {
		if got := judgeIncarnation(c.names, "5"); got != c.want {
			t.Errorf("%v: got %d, want %d", c.names, got, c.want)
		}
	}
}

// memJetStream is a jetStream on an in-memory file system, enough for the
// group directory's bookkeeping.
func memJetStream(t *testing.T) (*jetStream, *vfs.MemFS) {
	mem := vfs.NewMem()
	s := runServer(t, testOptions())
	js := &jetStream{srv: s, storeDir: "/js", fs: mem}
	if err := vfs.MkdirAllSynced(mem, filepath.Join(js.storeDir, "_raft_"), 0o750); err != nil {
		t.Fatal(err)
	}
	return js, mem
}

// writeMemFile creates the file name on mem holding data.
func writeMemFile(t *testing.T, mem *vfs.MemFS, name, data string) {
	t.Helper()
	if err := vfs.WriteFileSynced(mem, name, []byte(data)); err != nil {
		t.Fatal(err)
	}
}

// TestStreamIncarnationSurvivesPowerLoss: once a new group directory's
// owed fsyncs ran with the log's first fsync (before the group says or
// applies anything), a power loss keeps its incarnation record and its
// log, so the replica keeps them when it starts again; before them the
// directory may vanish, and is made again.
func TestStreamIncarnationSurvivesPowerLoss(t *testing.T) {
	js, mem := memJetStream(t)
	sa := &streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: "INC"}, Created: time.Unix(7, 0)}
	owed, fresh, err := js.checkIncarnation(sa)
	if err != nil || !fresh || len(owed) == 0 {
		t.Fatalf("new directory: owed %d fresh %v err %v", len(owed), fresh, err)
	}
	mem.Crash()
	if _, err := mem.Stat(js.groupDir(sa)); err == nil {
		t.Fatalf("a directory whose fsyncs never ran survived the power loss")
	}
	if owed, fresh, err = js.checkIncarnation(sa); err != nil || !fresh {
		t.Fatalf("made again: fresh %v err %v", fresh, err)
	}
	l, err := openGroupLog(mem, js.groupDir(sa), 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	l.owed = owed
	if err := errors.Join(l.Save(nil, nil, &raft.HardState{Term: 3, Vote: 1}), l.Sync()); err != nil {
		t.Fatal(err)
	}
	l.Close()
	mem.Crash()
	if owed, fresh, err = js.checkIncarnation(sa); err != nil || fresh || owed != nil {
		t.Fatalf("after the log's first fsync and a power loss: owed %d fresh %v err %v (want the directory kept)", len(owed), fresh, err)
	}
	if l, err = openGroupLog(mem, js.groupDir(sa), 0, t.Logf); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if hs, _, _ := l.InitialState(); hs.Term != 3 || hs.Vote != 1 {
		t.Fatalf("the log lost its vote: %+v", hs)
	}
	renewed := *sa
	renewed.Created = time.Unix(8, 0)
	if _, fresh, err := js.checkIncarnation(&renewed); err != nil || !fresh {
		t.Fatalf("a new stream of the same name: fresh %v err %v (want the old directory discarded)", fresh, err)
	}
}

// TestStreamIncarnationLegacyFile: a group directory made before the
// record was a file name holds a file "incarnation" with the creation
// time; it is kept for its stream and discarded for another.
func TestStreamIncarnationLegacyFile(t *testing.T) {
	js, mem := memJetStream(t)
	sa := &streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: "OLD"}, Created: time.Unix(9, 0)}
	dir := js.groupDir(sa)
	if err := vfs.MkdirAllSynced(mem, walDir(dir), 0o750); err != nil {
		t.Fatal(err)
	}
	writeMemFile(t, mem, filepath.Join(dir, "incarnation"), "9000000000")
	leftover := filepath.Join(walDir(dir), "leftover")
	writeMemFile(t, mem, leftover, "")
	if owed, fresh, err := js.checkIncarnation(sa); err != nil || fresh || owed != nil {
		t.Fatalf("its own stream: owed %d fresh %v err %v", len(owed), fresh, err)
	}
	if _, err := mem.Stat(leftover); err != nil {
		t.Fatalf("the stream lost its log: %v", err)
	}
	if !js.hasIncarnation(dir) {
		t.Fatal("hasIncarnation misses the legacy file")
	}
	renewed := *sa
	renewed.Created = time.Unix(10, 0)
	if _, fresh, err := js.checkIncarnation(&renewed); err != nil || !fresh {
		t.Fatalf("another stream: fresh %v err %v", fresh, err)
	}
	if _, err := mem.Stat(leftover); err == nil {
		t.Fatal("a new stream of the same name kept the old log")
	}
}

// failingOpen fails every open of a file named name (a read error: EIO, or
// no descriptor left).
type failingOpen struct {
	vfs.FS
	name string
}

func (f failingOpen) OpenFile(path string, flag int, perm os.FileMode) (vfs.File, error) {
	if filepath.Base(path) == f.name {
		return nil, errors.New("injected read failure")
	}
	return f.FS.OpenFile(path, flag, perm)
}

// A legacy incarnation record that cannot be read is an error, not another
// stream's record: the log stays (the review found a read failure
// discarded it, so the replica forgot its votes and entries).
func TestStreamIncarnationUnreadableKeepsLog(t *testing.T) {
	js, mem := memJetStream(t)
	sa := &streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: "OLD"}, Created: time.Unix(9, 0)}
	dir := js.groupDir(sa)
	if err := vfs.MkdirAllSynced(mem, walDir(dir), 0o750); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{filepath.Join(dir, "incarnation"), filepath.Join(walDir(dir), "leftover")} {
		writeMemFile(t, mem, name, "9000000000")
	}
	js.fs = failingOpen{FS: mem, name: "incarnation"}
	if _, _, err := js.checkIncarnation(sa); err == nil {
		t.Fatal("an unreadable incarnation record was not an error")
	}
	if _, err := mem.Stat(filepath.Join(walDir(dir), "leftover")); err != nil {
		t.Fatalf("the log went with an unreadable record: %v", err)
	}
}
