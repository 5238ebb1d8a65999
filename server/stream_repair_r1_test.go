package server

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// An R1 stream of a cluster whose linked snapshot is damaged (a bit flipped
// in a block the snapshot links) has no peer to repair from. The restart
// must not discard it (the repair path did: it deleted the group's log and
// snapshots and waited, as a recovering member of a group of one, for a
// leader that never came — every message gone and the stream unavailable):
// it keeps every readable message, never reuses a sequence, serves, and
// reports the damage in the log, in stream info (state.lost) and /healthz.
func TestJetStreamClusterR1DamagedSnapshotKept(t *testing.T) {
	testR1Damage(t, func(t *testing.T, dir string) {
		p := repairBlock(t, dir)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/2] ^= 0x5a
		writeInPlace(t, p, b)
	})
}

// The snapshot's last block cut in half: the snapshot's last messages are
// lost, and those the log applies after it keep their sequences.
func TestJetStreamClusterR1CutSnapshotKept(t *testing.T) {
	testR1Damage(t, func(t *testing.T, dir string) {
		blocks := repairBlocks(t, filepath.Dir(repairBlock(t, dir)))
		p := blocks[len(blocks)-1]
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, fi.Size()/2); err != nil {
			t.Fatal(err)
		}
	})
}

func testR1Damage(t *testing.T, damage func(t *testing.T, dir string)) {
	setForTest(t, &snapshotEvery, 100)
	setForTest(t, &fileStoreBlockSize, 64<<10)
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "ONE", Subjects: []string{"one.>"}, Storage: jetstream.FileStorage})
	want := map[uint64][]byte{}
	for i := 1; i <= repairMsgs; i++ {
		ack, err := js.Publish(ctx(t), fmt.Sprintf("one.%d", i%7), repairData(i))
		if err != nil {
			t.Fatal(err)
		}
		want[ack.Sequence] = repairData(i)
	}
	host := c.serverNamed(st.CachedInfo().Cluster.Leader)
	k := -1
	for i := range c.servers {
		if c.servers[i] == host {
			k = i
		}
	}
	dir := filepath.Join(c.opts[k].StoreDir, "jetstream")
	c.servers[k].Shutdown()
	damage(t, dir)
	c.servers[k] = runServer(t, c.opts[k])
	c.waitMetaLeader()

	var info *jetstream.StreamInfo
	waitFor(t, 30*time.Second, "stream ONE served again", func() bool {
		s, err := js.Stream(ctx(t), "ONE")
		if err != nil || s.CachedInfo().Cluster == nil || s.CachedInfo().Cluster.Leader == "" {
			return false
		}
		info, err = s.Info(ctx(t), jetstream.WithDeletedDetails(true)) // state.lost comes with the details, as in nats-server
		return err == nil
	})
	if info.State.LastSeq != repairMsgs || info.State.Msgs >= repairMsgs || info.State.Msgs < repairMsgs-repairMsgs/4 {
		t.Fatalf("state after the restart %+v, want the last sequence %d and one block's messages missing", info.State, repairMsgs)
	}
	if info.State.Lost == nil || uint64(len(info.State.Lost.Msgs)) != repairMsgs-info.State.Msgs {
		t.Fatalf("stream info reports lost %+v for %d missing messages", info.State.Lost, repairMsgs-info.State.Msgs)
	}
	s, _ := js.Stream(ctx(t), "ONE")
	missing := uint64(0)
	for seq := uint64(1); seq <= repairMsgs; seq++ {
		m, err := s.GetMsg(ctx(t), seq)
		var apiErr *jetstream.APIError
		switch {
		case errors.As(err, &apiErr) && apiErr.ErrorCode == 10037:
			missing++
		case err != nil:
			t.Fatalf("get %d: %v", seq, err)
		case string(m.Data) != string(want[seq]):
			t.Fatalf("message %d has a wrong payload", seq)
		}
	}
	if missing != repairMsgs-info.State.Msgs {
		t.Fatalf("%d messages missing, stream info says %d", missing, repairMsgs-info.State.Msgs)
	}
	if ack, err := js.Publish(ctx(t), "one.new", []byte("after")); err != nil || ack.Sequence != repairMsgs+1 {
		t.Fatalf("publish after the restart: %+v %v", ack, err)
	}
	h := c.servers[k].jsHealth(httptest.NewRequest("GET", "/healthz", nil))
	if h == nil || h.StatusCode != 503 {
		t.Fatalf("healthz %+v, want the damage reported", h)
	}
	t.Logf("healthz: %s; %d of %d messages kept", h.Error, info.State.Msgs, repairMsgs)
	nc.Close()
}
