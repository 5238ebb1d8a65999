package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// TestIncarnationRecordsShareOneFile: the incarnation records of new group
// directories are hard links to one empty file (no inode made per
// replica), and survive a power loss once their directories' owed fsyncs
// ran with their logs' first, like the files they replace.
func TestIncarnationRecordsShareOneFile(t *testing.T) {
	js, mem := memJetStream(t)
	var made int
	mem.InjectError(func(op, name string) error {
		if op == "open" && filepath.Base(filepath.Dir(name)) != "_raft_" {
			made++ // a file made in a group directory (the source is in _raft_)
		}
		return nil
	})
	var sas []*streamAssignment
	var owes []pendingSyncs
	for i, name := range []string{"L1", "L2", "L3"} {
		sa := &streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: name}, Created: time.Unix(int64(20+i), 0)}
		owed, fresh, err := js.checkIncarnation(sa)
		if err != nil || !fresh {
			t.Fatalf("%s: fresh %v err %v", name, fresh, err)
		}
		sas, owes = append(sas, sa), append(owes, owed)
	}
	if made != 0 {
		t.Fatalf("%d record files made, want links only", made)
	}
	for i, sa := range sas {
		firstLogFsync(t, mem, js.groupDir(sa), owes[i])
	}
	mem.Crash()
	for _, sa := range sas {
		if owed, fresh, err := js.checkIncarnation(sa); err != nil || fresh || owed != nil {
			t.Fatalf("%s after a power loss: owed %d fresh %v err %v (want its record kept)", sa.Config.Name, len(owed), fresh, err)
		}
	}
}

// TestIncarnationRecordsAreLinksOnDisk: on the OS file system the records
// of two group directories are one file.
func TestIncarnationRecordsAreLinksOnDisk(t *testing.T) {
	s := runServer(t, testOptions())
	js := &jetStream{srv: s, storeDir: t.TempDir(), fs: vfs.Default}
	if err := os.MkdirAll(filepath.Join(js.storeDir, "_raft_"), 0o750); err != nil {
		t.Fatal(err)
	}
	var recs []os.FileInfo
	for i, name := range []string{"A", "B"} {
		sa := &streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: name}, Created: time.Unix(int64(30+i), 0)}
		if _, _, err := js.checkIncarnation(sa); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(js.groupDir(sa), incarnationPrefix+fmt.Sprint(sa.Created.UnixNano())))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, fi)
	}
	if !os.SameFile(recs[0], recs[1]) {
		t.Fatal("the two records are two files, want links to one")
	}
}

// TestIncarnationRecordWithoutLinks: where no hard link can be made the
// record is a file of its own, and is found as before.
func TestIncarnationRecordWithoutLinks(t *testing.T) {
	js, mem := memJetStream(t)
	mem.InjectError(func(op, name string) error {
		if op == "link" {
			return errors.New("no hard links here")
		}
		return nil
	})
	sa := &streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: "NL"}, Created: time.Unix(40, 0)}
	owed, fresh, err := js.checkIncarnation(sa)
	if err != nil || !fresh {
		t.Fatalf("fresh %v err %v", fresh, err)
	}
	firstLogFsync(t, mem, js.groupDir(sa), owed)
	mem.Crash()
	if owed, fresh, err := js.checkIncarnation(sa); err != nil || fresh || owed != nil {
		t.Fatalf("after a power loss: owed %d fresh %v err %v (want the record kept)", len(owed), fresh, err)
	}
}
