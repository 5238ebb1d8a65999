package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Corruption on one replica of three (issue 19). A 3-server cluster holds
// an R3 file stream of acknowledged messages; one follower stops, its
// JetStream directory is damaged, and it starts again. Then the stream is
// led by every server in turn and each leader must report the same state
// and hand back every acknowledged message by sequence, and the damaged
// server must serve again without operator action.

const repairMsgs, repairPayload = 300, 4 << 10 // ~1.2 MiB: about 19 blocks of 64 KiB

// repairDamage damages the stopped server's JetStream directory dir; stale
// is a copy of a block made while the stream was growing.
type repairDamage func(t *testing.T, dir string, stale repairFile)

// repairStorage is the storage of testRepair's stream.
var repairStorage = jetstream.FileStorage

type repairFile struct {
	name string
	data []byte
}

func TestJetStreamClusterRepairBitFlip(t *testing.T) {
	testRepair(t, func(t *testing.T, dir string, _ repairFile) {
		p := repairBlock(t, dir)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(b) / 3; i < len(b); i += len(b) / 5 {
			b[i] ^= 0x5a
		}
		writeInPlace(t, p, b)
	})
}

func TestJetStreamClusterRepairTruncate(t *testing.T) {
	testRepair(t, func(t *testing.T, dir string, _ repairFile) {
		p := repairBlock(t, dir)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
	})
}

func TestJetStreamClusterRepairDeleteBlock(t *testing.T) {
	testRepair(t, func(t *testing.T, dir string, _ repairFile) {
		if err := os.Remove(repairBlock(t, dir)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestJetStreamClusterRepairStaleBlock(t *testing.T) {
	testRepair(t, func(t *testing.T, dir string, stale repairFile) {
		for _, p := range repairBlocks(t, dir) {
			if filepath.Base(p) == stale.name {
				if err := os.Remove(p); err != nil { // a new inode: links elsewhere keep the real one
					t.Fatal(err)
				}
				if err := os.WriteFile(p, stale.data, 0o640); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

func TestJetStreamClusterRepairWipe(t *testing.T) {
	testRepair(t, func(t *testing.T, dir string, _ repairFile) {
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	})
}

// writeInPlace overwrites p's contents keeping its inode (hard links see
// the damage too, as a disk's would).
func writeInPlace(t *testing.T, p string, b []byte) {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
}

// repairBlocks lists the block files under dir that a restart reads: those
// of the group's linked snapshots (the store's sealed blocks are the same
// files, hard-linked).
func repairBlocks(t *testing.T, dir string) []string {
	var out []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".blk") && strings.Contains(p, string(filepath.Separator)+snapsDir+string(filepath.Separator)) {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// repairBlock is the first block of the latest linked snapshot (a sealed
// block, hard-linked with the store's).
func repairBlock(t *testing.T, dir string) string {
	var latest string
	var latestIdx uint64
	for _, p := range repairBlocks(t, dir) {
		idx, err := strconv.ParseUint(filepath.Base(filepath.Dir(p)), 10, 64)
		if err == nil && (latest == "" || idx > latestIdx) {
			latest, latestIdx = p, idx
		} else if err == nil && idx == latestIdx && p < latest {
			latest = p
		}
	}
	if latest == "" {
		t.Fatalf("no linked snapshot block under %s", dir)
	}
	return latest
}

func testRepair(t *testing.T, damage repairDamage) {
	setForTest(t, &snapshotEvery, 100)
	setForTest(t, &fileStoreBlockSize, 64<<10)
	c := runJSCluster(t, 3)
	nc := connectNATS(t, c.servers[0].ClientURL())
	js, _ := jetstream.New(nc)
	st := createStream(t, js, jetstream.StreamConfig{Name: "REP", Subjects: []string{"rep.>"}, Replicas: 3, Storage: repairStorage})
	leader := st.CachedInfo().Cluster.Leader
	down := -1
	for i, s := range c.servers {
		if s.Name() != leader {
			down = i
		}
	}
	dir := filepath.Join(c.opts[down].StoreDir, "jetstream")
	var stale repairFile
	want := map[uint64][32]byte{}
	for i := 1; i <= repairMsgs; i++ {
		data := repairData(i)
		ack, err := js.Publish(ctx(t), fmt.Sprintf("rep.%d", i%7), data)
		if err != nil {
			t.Fatal(err)
		}
		want[ack.Sequence] = sha256.Sum256(data)
		if i == 20 && repairStorage == jetstream.FileStorage { // the active block, partly written
			stale = copyActiveBlock(t, dir)
		}
	}
	nc.Close()
	c.waitAllApplied(t, "REP", 3, repairMsgs, 10*time.Second)
	c.servers[down].Shutdown()
	damage(t, dir, stale)
	c.servers[down] = runServer(t, c.opts[down])
	c.waitMetaLeader()

	c.logViewsOnFailure(t, "REP")
	rc := connectNATS(t, c.servers[down].ClientURL())
	seen := viewUnderEachLeader(t, rc, "REP", 3, 60*time.Second, func(ctx context.Context, js jetstream.JetStream) (string, string, bool) {
		s, err := js.Stream(ctx, "REP")
		if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Cluster.Leader == "" {
			return "", "", false
		}
		info := s.CachedInfo()
		rctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // 300 gets, under -race
		defer cancel()
		digest, err := readAllMsgs(rctx, s, want)
		if err != nil {
			return "", "", false
		}
		return info.Cluster.Leader, fmt.Sprintf("msgs=%d first=%d last=%d bytes=%d digest=%s", info.State.Msgs,
			info.State.FirstSeq, info.State.LastSeq, info.State.Bytes, digest), true
	})
	names := sameUnderEachLeader(t, "stream REP", seen)
	t.Logf("every server led REP with %s: %v", seen[names[0]], names)
	if !strings.HasPrefix(seen[names[0]], fmt.Sprintf("msgs=%d first=1 last=%d ", repairMsgs, repairMsgs)) {
		t.Fatalf("stream state %s, want %d messages", seen[names[0]], repairMsgs)
	}
	// The damaged server's own replica serves too (direct gets on it).
	waitFor(t, 20*time.Second, "the repaired replica current", func() bool {
		for _, m := range c.accountReplicas(globalAccountName, "REP") {
			if m.jsa.js.srv != c.servers[down] {
				continue
			}
			var ss StreamState
			m.st().FastState(&ss)
			m.mu.Lock()
			gdir := m.groupDir
			m.mu.Unlock()
			_, err := os.Stat(filepath.Join(gdir, repairMarker))
			return ss.Msgs == repairMsgs && ss.LastSeq == repairMsgs && os.IsNotExist(err)
		}
		return false
	})
	rc.Close()
}

func repairData(i int) []byte {
	b := make([]byte, repairPayload)
	for j := range b {
		b[j] = byte(i*31 + j)
	}
	copy(b, fmt.Sprintf("message %d", i))
	return b
}

// readAllMsgs reads every sequence back from the current leader
// (STREAM.MSG.GET) and checks each against want; it returns a digest.
func readAllMsgs(ctx context.Context, s jetstream.Stream, want map[uint64][32]byte) (string, error) {
	h := sha256.New()
	for seq := uint64(1); seq <= uint64(len(want)); seq++ { // want: every sequence from 1
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) && apiErr.ErrorCode == 10037 {
				return "missing " + fmt.Sprint(seq), nil // reported as a divergence
			}
			return "", err
		}
		if sha256.Sum256(m.Data) != want[seq] {
			return fmt.Sprintf("wrong payload at %d", seq), nil
		}
		h.Write(m.Data)
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:8]), nil
}

// copyActiveBlock copies the newest block of the stream's store.
func copyActiveBlock(t *testing.T, dir string) repairFile {
	var newest string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && strings.HasSuffix(p, ".blk") && !strings.Contains(p, "_raft_") && filepath.Base(p) > filepath.Base(newest) {
			newest = p
		}
		return nil
	})
	if newest == "" {
		t.Fatalf("no block under %s", dir)
	}
	b, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	return repairFile{name: filepath.Base(newest), data: b}
}
