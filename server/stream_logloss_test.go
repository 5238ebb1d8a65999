package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats-server/v2/internal/wal"
	"github.com/nats-io/nats.go/jetstream"
)

// A lost or cut raft log on one replica (issue 19; raft_logmark.go). S3
// stops; messages are acknowledged by S1 and S2 alone; S1 and S2 stop,
// S2's raft log loses them (its directory, its group directory, or the
// tail cut back to before them), and S2 and S3 start without S1. Neither
// holds the acknowledged messages, so S2 must not vote: had they elected
// a leader, its log would overwrite S1's when S1 came back, and the
// messages would be lost. Once S1 is back it leads, and every server then
// leads the stream in turn with every acknowledged message.

const logLossMsgs = 60 // half before S3 stops, half after

// logLossDamage damages S2's group directory gdir; sizes are the sizes of
// its raft log's segments before the second half was published.
type logLossDamage func(t *testing.T, gdir string, sizes map[string]int64)

func TestJetStreamClusterLostRaftLogDir(t *testing.T) {
	testLogLoss(t, func(t *testing.T, gdir string, _ map[string]int64) {
		if err := removeGroupLog(vfs.Default, gdir); err != nil { // either layout
			t.Fatal(err)
		}
	})
}

func TestJetStreamClusterLostRaftGroupDir(t *testing.T) {
	testLogLoss(t, func(t *testing.T, gdir string, _ map[string]int64) {
		if err := os.RemoveAll(gdir); err != nil {
			t.Fatal(err)
		}
	})
}

func TestJetStreamClusterCutRaftLogTail(t *testing.T) {
	testLogLoss(t, func(t *testing.T, gdir string, sizes map[string]int64) {
		cutLogTail(t, testLogDir(t, gdir), sizes)
	})
}

// TestJetStreamClusterCutRaftLogTailAfterCrash: as
// TestJetStreamClusterCutRaftLogTail, but S2 crashes (from then on nothing
// it writes reaches its disk, as after kill -9) instead of stopping, so
// its log writes no mark as it closes, and the cut is within the minute
// of its last synced mark. The mark it advanced unsynced while it ran
// (after the group slept or a second passed) detects the cut: before, S2
// and S3 elected a leader without the acknowledged messages.
func TestJetStreamClusterCutRaftLogTailAfterCrash(t *testing.T) {
	testLogLossCrash(t, func(t *testing.T, gdir string, sizes map[string]int64) {
		cutLogTail(t, testLogDir(t, gdir), sizes)
	}, true)
}

// walSizes lists, for each segment of the raft log in dir, where its
// frames end: the active segment's file runs on past them with zeros the
// log writes ahead of its records (internal/wal fill.go), so its size
// does not grow with each record.
func walSizes(t *testing.T, dir string) map[string]int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".wal") {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
			out[e.Name()] = framesEnd(b)
		}
	}
	return out
}

// framesEnd walks the frames of a segment (a 29-byte header starting
// with the payload's length, then the payload) up to the zeros past the
// last one (no frame's header is all zeros).
func framesEnd(b []byte) int64 {
	const hdr = 29
	off := 0
	for off+hdr <= len(b) {
		if bytes.Count(b[off:off+hdr], []byte{0}) == hdr {
			break
		}
		next := off + hdr + int(binary.LittleEndian.Uint32(b[off:]))
		if next > len(b) {
			break
		}
		off = next
	}
	return int64(off)
}

// cutLogTail cuts the raft log in dir back to sizes: segments made since
// are removed, the others truncated.
func cutLogTail(t *testing.T, dir string, sizes map[string]int64) {
	cut := false
	for name, size := range walSizes(t, dir) {
		was, ok := sizes[name]
		switch {
		case !ok:
			cut = os.Remove(filepath.Join(dir, name)) == nil || cut
		case size > was:
			if err := os.Truncate(filepath.Join(dir, name), was); err != nil {
				t.Fatal(err)
			}
			cut = true
		}
	}
	if !cut {
		t.Fatalf("the raft log in %s did not grow", dir)
	}
}

// flipLogTail flips a bit a quarter into what the raft log in dir wrote
// since sizes, in a segment that grew: valid frames follow it.
func flipLogTail(t *testing.T, dir string, sizes map[string]int64) {
	for name, size := range walSizes(t, dir) {
		if was, ok := sizes[name]; ok && size > was {
			p := filepath.Join(dir, name)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[was+(size-was)/4] ^= 0x10
			writeInPlace(t, p, b)
			return
		}
	}
	t.Fatalf("no segment of the raft log in %s grew", dir)
}

// logLossSteps are what a log-loss test does in runLogLoss's scenario.
type logLossSteps struct {
	stopped func()               // after S3 stopped (nil: nothing)
	write   func()               // the writes S1 and S2 acknowledge alone
	leads   func(s *Server) bool // s leads the group whose log S2 loses
	crash   func()               // before S1 and S2 stop (nil: nothing)
}

// runLogLoss runs the scenario of the log-loss tests on c: S3 stops, S1
// and S2 acknowledge the writes, both stop, S2's group directory dir is
// damaged, and S2 and S3 start without S1. For noLeaderWindow neither may
// lead; then S1 starts again and the meta leader is known.
func runLogLoss(t *testing.T, c *jsTestCluster, dir string, steps logLossSteps, damage logLossDamage) {
	t.Helper()
	c.servers[2].Shutdown()
	if steps.stopped != nil {
		steps.stopped()
	}
	sizes := walSizes(t, testLogDir(t, dir))
	steps.write()
	if steps.crash != nil {
		steps.crash()
	}
	c.servers[0].Shutdown()
	c.servers[1].Shutdown()
	damage(t, dir, sizes)

	c.servers[1] = runServer(t, c.opts[1])
	c.servers[2] = runServer(t, c.opts[2])
	// S2 and S3 lack the acknowledged writes: while every member's
	// election timeout runs out several times no leader may be elected.
	deadline := time.Now().Add(noLeaderWindow())
	for time.Now().Before(deadline) {
		for _, s := range c.servers[1:] {
			if steps.leads(s) {
				t.Fatalf("%s was elected without the acknowledged writes S2 lost", s.Name())
			}
		}
		time.Sleep(20 * time.Millisecond) // polling the members' roles
	}
	c.servers[0] = runServer(t, c.opts[0])
	c.waitMetaLeader()
}

// noLeaderWindow is four of the longest election timeouts (a follower
// campaigns within [ElectionTicks, 2*ElectionTicks) ticks of its last
// leader contact).
func noLeaderWindow() time.Duration {
	return 4 * 2 * time.Duration(raft.DefaultElectionTicks) * raftTick
}

func testLogLoss(t *testing.T, damage logLossDamage) { testLogLossCrash(t, damage, false) }

// testLogLossCrash runs the log-loss scenario; for crash, S2 crashes
// before it stops, once its log's mark covers every acknowledged message.
func testLogLossCrash(t *testing.T, damage logLossDamage, crash bool) {
	cfs := &moveCrashFS{FS: vfs.Default, crashAt: -1}
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 1 && crash {
			o.fsys = cfs
		}
	})
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "LL", Subjects: []string{"ll.>"}, Replicas: 3, Storage: jetstream.FileStorage})
	want := map[uint64][32]byte{}
	publish := func(from, to int) {
		for i := from; i <= to; i++ {
			data := repairData(i)
			var ack *jetstream.PubAck
			waitFor(t, 10*time.Second, "a publish acknowledged", func() bool { // a retry while the leader moves is deduplicated
				var err error
				ack, err = js.Publish(ctx(t), fmt.Sprintf("ll.%d", i%5), data, jetstream.WithMsgID(fmt.Sprint(i)))
				return err == nil
			})
			want[ack.Sequence] = sha256.Sum256(data)
		}
	}
	publish(1, logLossMsgs/2)
	c.waitAllApplied(t, "LL", 3, logLossMsgs/2, 10*time.Second)
	gdir := c.servers[1].js.Load().groupDir(&streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: "LL"}})
	var crashS2 func()
	if crash {
		crashS2 = func() {
			// Up to 10 s for S2's mark to cover what it acknowledged (its
			// group sleeps or a second passes); crashed without, S2 must
			// fail the no-leader check below, as it did before the
			// unsynced marks.
			for deadline := time.Now().Add(10 * time.Second); !logMarkCovers(c.servers[1], gdir, "LL"); {
				if time.Now().After(deadline) {
					t.Logf("S2's log mark does not cover what it acknowledged")
					break
				}
				time.Sleep(20 * time.Millisecond) // polling the mark file
			}
			cfs.kill()
			c.opts[1].fsys = nil // its restart finds the disk as the crash left it
		}
	}
	runLogLoss(t, c, gdir, logLossSteps{
		crash: crashS2,
		write: func() { publish(logLossMsgs/2+1, logLossMsgs); nc.Close() },
		leads: func(s *Server) bool {
			m := s.js.Load().account(globalAccountName).lookup("LL")
			if m == nil {
				return false
			}
			g := m.groupNow()
			return g != nil && g.softState().Role == raft.Leader
		},
	}, damage)
	c.logViewsOnFailure(t, "LL")

	rc := connectNATS(t, c.servers[1].ClientURL())
	defer rc.Close()
	seen := viewUnderEachLeader(t, rc, "LL", 3, 60*time.Second, func(ctx context.Context, js jetstream.JetStream) (string, string, bool) {
		s, err := js.Stream(ctx, "LL")
		if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Cluster.Leader == "" {
			return "", "", false
		}
		info := s.CachedInfo()
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		digest, err := readAllMsgs(rctx, s, want)
		if err != nil {
			t.Logf("reading under %s: %v", info.Cluster.Leader, err) // read again
			return "", "", false
		}
		return info.Cluster.Leader, fmt.Sprintf("msgs=%d first=%d last=%d digest=%s", info.State.Msgs,
			info.State.FirstSeq, info.State.LastSeq, digest), true
	})
	names := sameUnderEachLeader(t, "stream LL", seen)
	if !strings.HasPrefix(seen[names[0]], fmt.Sprintf("msgs=%d first=1 last=%d ", logLossMsgs, logLossMsgs)) {
		t.Fatalf("stream state %s, want %d messages", seen[names[0]], logLossMsgs)
	}
	waitFor(t, 20*time.Second, "S2 repaired", func() bool {
		_, err := os.Stat(filepath.Join(gdir, repairMarker))
		return os.IsNotExist(err)
	})
}

// logMarkCovers says whether the log mark of s's replica of stream name,
// in group directory gdir, is at or past everything the replica stored.
func logMarkCovers(s *Server, gdir, name string) bool {
	m := s.js.Load().account(globalAccountName).lookup(name)
	if m == nil {
		return false
	}
	g := m.groupNow()
	if g == nil {
		return false
	}
	st := g.statusSnapshot()
	b, err := os.ReadFile(logMarkPath(gdir))
	if err != nil {
		return false
	}
	mark, err := decodeLogMark(b)
	return err == nil && st.LastIndex > 0 && mark.last.Index >= st.LastIndex
}

// The mark round-trips; a damaged or foreign one is not a mark.
func TestLogMarkEncoding(t *testing.T) {
	m := logMark{id: "1234", last: raft.LogPosition{Term: 3, Index: 99}, term: 4, vote: 77}
	b := m.encode()
	if len(b) != logMarkSize {
		t.Fatalf("size %d", len(b))
	}
	if got, err := decodeLogMark(b); err != nil || got != m {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for i := range len(b) - logMarkSize + 40 {
		c := append([]byte(nil), b...)
		c[i] ^= 1
		if got, err := decodeLogMark(c); err == nil && got != m {
			t.Fatalf("flip at %d read as %+v", i, got)
		}
	}
	for _, s := range []string{"", "tern-logmark-1 x 1 2 3 4\n", string(b[:40])} {
		if _, err := decodeLogMark([]byte(s)); err == nil {
			t.Errorf("%q read as a mark", s)
		}
	}
}

// What a log lost of its mark, and the term and vote a repair keeps.
func TestLogMarkLost(t *testing.T) {
	m := logMark{last: raft.LogPosition{Term: 3, Index: 50}, term: 4, vote: 2}
	pos := func(t, i uint64) raft.LogPosition { return raft.LogPosition{Term: t, Index: i} }
	for _, c := range []struct {
		name string
		last raft.LogPosition
		term uint64
		vote uint64
		lost bool
	}{
		{"same", pos(3, 50), 4, 2, false},
		{"grown", pos(3, 70), 4, 2, false},
		{"newer term, shorter", pos(5, 40), 5, 0, false},
		{"cut", pos(3, 49), 4, 2, true},
		{"empty", pos(0, 0), 0, 0, true},
		{"older term", pos(3, 50), 3, 2, true},
		{"vote lost", pos(3, 50), 4, 0, true},
		{"later term, no vote", pos(3, 50), 5, 0, false},
	} {
		what := m.lostBy(c.last, wal.HardState{Term: c.term, Vote: c.vote})
		if (what != "") != c.lost {
			t.Errorf("%s: lost %q", c.name, what)
		}
	}
	if hs := m.keptHardState(raft.HardState{Term: 4, Vote: 2}); hs != (raft.HardState{Term: 4, Vote: 2}) {
		t.Errorf("kept %+v", hs)
	}
	if hs := m.keptHardState(raft.HardState{Term: 4}); hs != (raft.HardState{Term: 5}) {
		t.Errorf("vote lost: kept %+v", hs)
	}
	if hs := m.keptHardState(raft.HardState{Term: 6, Vote: 1}); hs != (raft.HardState{Term: 6, Vote: 1}) {
		t.Errorf("later term: kept %+v", hs)
	}
}

// A log writes its mark when it closes; opened again whole it is
// intact, opened cut back it lost state and writes no mark over it.
func TestLogMarkOnClose(t *testing.T) {
	fs := vfs.NewMem()
	open := func() (*walLog, error) {
		l, err := openWALLog(fs, "/g/S-x", 0, t.Logf)
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.useMark(logMarkPath("/g/S-x"), "7")
		return l, err
	}
	l, err := open()
	if err != nil {
		t.Fatal(err)
	}
	ents := []raft.Entry{{Index: 1, Term: 1, Data: []byte("a")}, {Index: 2, Term: 1, Data: []byte("b")}}
	if err := l.Save(nil, ents, &raft.HardState{Term: 1, Vote: 5, Commit: 2}); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(l.Sync(), l.Close()); err != nil {
		t.Fatal(err)
	}
	if l, err = open(); err != nil {
		t.Fatalf("intact log: %v", err)
	}
	l.Close()
	if err := vfs.RemoveAllSynced(fs, "/g/S-x/wal"); err != nil {
		t.Fatal(err)
	}
	if l, err = open(); !errors.Is(err, errLogLost) {
		t.Fatalf("empty log: %v", err)
	}
	l.Close()
	if l, err = open(); !errors.Is(err, errLogLost) {
		t.Fatalf("reopened: the mark was overwritten: %v", err)
	}
	l.Close()
}

// A running log writes its mark synced at most every logMarkEvery of its
// group's ticks, with everything synced, and as it goes to sleep under
// the same limit.
func TestLogMarkWhileRunning(t *testing.T) {
	fs := vfs.NewMem()
	l, err := openWALLog(fs, "/g/S-y", 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.useMark(logMarkPath("/g/S-y"), "9"); err != nil {
		t.Fatal(err)
	}
	read := func() logMark { return l.mark.synced } // the unsynced ones: TestLogMarkSoftWhileRunning
	save := func(i uint64) {
		if err := errors.Join(l.Save(nil, []raft.Entry{{Index: i, Term: 2}}, &raft.HardState{Term: 2, Vote: 1, Commit: i}), l.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Unix(1000, 0)
	save(1)
	if err := l.periodicSync(t0); err != nil || read() != (logMark{}) {
		t.Fatalf("first tick wrote %+v (%v)", read(), err)
	}
	save(2)
	if err := l.periodicSync(t0.Add(logMarkEvery - time.Second)); err != nil || read() != (logMark{}) {
		t.Fatalf("within the period: %+v (%v)", read(), err)
	}
	if err := l.syncIdle(); err != nil || read() != (logMark{}) {
		t.Fatalf("asleep within the period: %+v (%v)", read(), err)
	}
	if err := l.periodicSync(t0.Add(logMarkEvery)); err != nil {
		t.Fatal(err)
	}
	want := logMark{id: "9", last: raft.LogPosition{Term: 2, Index: 2}, term: 2, vote: 1}
	if got := read(); got != want {
		t.Fatalf("after the period: %+v, want %+v", got, want)
	}
	save(3)
	if err := l.periodicSync(t0.Add(2*logMarkEvery + time.Second)); err != nil {
		t.Fatal(err)
	}
	save(4)
	if err := l.syncIdle(); err != nil {
		t.Fatal(err)
	}
	if got := read(); got.last.Index != 3 {
		t.Fatalf("a period later: %+v, want index 3", got)
	}
}

// Between its synced marks a running log advances its mark in place
// without syncing it: once logMarkSoftEvery has passed and as its group
// goes to sleep, to its committed prefix, never backwards. A power loss
// may take that write away: the last synced mark is back.
func TestLogMarkSoftWhileRunning(t *testing.T) {
	fs := vfs.NewMem()
	l, err := openWALLog(fs, "/g/S-z", 0, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.useMark(logMarkPath("/g/S-z"), "9"); err != nil {
		t.Fatal(err)
	}
	read := func() logMark {
		b, err := vfs.ReadFile(fs, logMarkPath("/g/S-z"))
		if err != nil {
			return logMark{}
		}
		m, _ := decodeLogMark(b)
		return m
	}
	save := func(i, commit uint64) {
		if err := errors.Join(l.Save(nil, []raft.Entry{{Index: i, Term: 2}}, &raft.HardState{Term: 2, Vote: 1, Commit: commit}), l.Sync()); err != nil {
			t.Fatal(err)
		}
	}
	mark := func(i uint64) logMark {
		return logMark{id: "9", last: raft.LogPosition{Term: 2, Index: i}, term: 2, vote: 1}
	}
	t0 := time.Unix(1000, 0)
	save(1, 1)
	if err := l.periodicSync(t0); err != nil || read() != (logMark{}) {
		t.Fatalf("first tick wrote %+v (%v)", read(), err)
	}
	save(2, 1)
	if err := l.periodicSync(t0.Add(logMarkSoftEvery / 2)); err != nil || read() != (logMark{}) {
		t.Fatalf("within the soft period: %+v (%v)", read(), err)
	}
	if err := l.periodicSync(t0.Add(logMarkSoftEvery)); err != nil || read() != mark(1) {
		t.Fatalf("a soft period later: %+v (%v), want the committed prefix %+v", read(), err, mark(1))
	}
	if err := l.periodicSync(t0.Add(logMarkEvery)); err != nil || read() != mark(2) {
		t.Fatalf("the synced period: %+v (%v), want %+v", read(), err, mark(2))
	}
	save(3, 3)
	if err := l.syncIdle(); err != nil || read() != mark(3) {
		t.Fatalf("asleep: %+v (%v), want %+v", read(), err, mark(3))
	}
	fs.Crash()
	if got := read(); got != mark(2) {
		t.Fatalf("after a power loss: %+v, want the synced %+v", got, mark(2))
	}
}
