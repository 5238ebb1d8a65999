package server

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterOldGroupLayout: a stream group directory made by an
// earlier server keeps its log in a "wal" subdirectory. Servers restarted
// on such directories (made here as the earlier servers made them: each
// log's segments moved into wal/) open and recover those logs: every
// message is back on every replica, the stream takes new writes, and each
// log stays where it was. A group directory made now holds its segments
// itself.
func TestJetStreamClusterOldGroupLayout(t *testing.T) {
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "OLDL", Subjects: []string{"ol.>"}, Replicas: 3, Storage: jetstream.FileStorage})
	publish := func(js jetstream.JetStream, from, to int) {
		for i := from; i <= to; i++ {
			waitFor(t, 10*time.Second, "a publish acknowledged", func() bool { // a retry while a leader is elected is deduplicated
				_, err := js.Publish(ctx(t), fmt.Sprintf("ol.%d", i%3), []byte(fmt.Sprint(i)), jetstream.WithMsgID(fmt.Sprint(i)))
				return err == nil
			})
		}
	}
	publish(js, 1, 20)
	c.waitAllApplied(t, "OLDL", 3, 20, 10*time.Second)
	nc.Close()
	var gdirs []string
	for _, s := range c.servers {
		gdir := s.js.Load().groupDir(&streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: "OLDL"}})
		if segs := segmentsIn(t, gdir); len(segs) == 0 || groupDirHasSub(gdir, "wal") {
			t.Fatalf("%s: a new group directory holds %d segments and a wal subdirectory %v", gdir, len(segs), groupDirHasSub(gdir, "wal"))
		}
		gdirs = append(gdirs, gdir)
	}
	for _, s := range c.servers {
		s.Shutdown()
	}
	for _, gdir := range gdirs { // the layout of earlier servers
		if err := os.Mkdir(filepath.Join(gdir, "wal"), 0o750); err != nil {
			t.Fatal(err)
		}
		for _, seg := range segmentsIn(t, gdir) {
			if err := os.Rename(filepath.Join(gdir, seg), filepath.Join(gdir, "wal", seg)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range c.servers {
		c.servers[i] = runServer(t, c.opts[i])
	}
	c.waitMetaLeader()
	c.waitAllApplied(t, "OLDL", 3, 20, 30*time.Second)
	nc, js = jsClient(t, c.servers[1])
	defer nc.Close()
	publish(js, 21, 30)
	c.waitAllApplied(t, "OLDL", 3, 30, 10*time.Second)
	for _, m := range c.replicas("OLDL") {
		var ss StreamState
		m.st().FastState(&ss)
		if ss.Msgs != 30 || ss.FirstSeq != 1 {
			t.Fatalf("a replica holds %d messages from %d, want 30 from 1", ss.Msgs, ss.FirstSeq)
		}
	}
	for _, gdir := range gdirs {
		if segs := segmentsIn(t, gdir); len(segs) != 0 || len(segmentsIn(t, filepath.Join(gdir, "wal"))) == 0 {
			t.Fatalf("%s: the log left its wal subdirectory (%d segments beside it)", gdir, len(segs))
		}
	}
}

// segmentsIn lists the names of the raft log segments in dir.
func segmentsIn(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "*.wal"))
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range segs {
		segs[i] = filepath.Base(p)
	}
	return segs
}

// groupDirHasSub reports whether dir has the subdirectory name.
func groupDirHasSub(dir, name string) bool {
	fi, err := os.Stat(filepath.Join(dir, name))
	return err == nil && fi.IsDir()
}
