//go:build !windows

package server

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Process-level damage (issue 19): three real server processes hold an R3
// file stream under load; one replica's files are damaged at a time — a
// flipped bit, a truncated or a deleted block file — while it runs (its
// background scrub must find it) or while it is stopped (its start must),
// and a stopped replica's raft log directory is deleted or its tail cut
// (its start must find the loss against its log mark).
// The replica repairs itself from the others without operator action.
// Afterwards every acknowledged message must be served with its payload
// under every server as leader, and every leader must report the same
// stream state and payload digest.

var damageCycles = flag.Int("damage.cycles", 1, "rounds of the process damage test (each damages every server once)")

// damageRig is the servers and what the load was told.
type damageRig struct {
	procCluster
	dirs []string
	rng  *rand.Rand

	mu    sync.Mutex
	acked map[uint64][32]byte // payload digest by acknowledged sequence
	twice []string
}

const damagePayload = 16 << 10 // 4 MiB blocks seal every 256 messages

func newDamageRig(t *testing.T) *damageRig {
	r := &damageRig{acked: map[uint64][32]byte{}, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19))}
	for range 3 {
		r.dirs = append(r.dirs, t.TempDir())
	}
	r.procCluster = newProcCluster(t, 3, "D", "DAMAGE", func(i int) string {
		return fmt.Sprintf("store_dir: %q, scrub_interval: \"250ms\", scrub_rate: \"256M\"", r.dirs[i])
	})
	for i := range 3 {
		r.start(i)
	}
	return r
}

func (r *damageRig) start(i int) { r.startProc(i, "") }

func damageData(w, i int) []byte {
	b := make([]byte, damagePayload)
	for j := range b {
		b[j] = byte(w*7 + i*31 + j)
	}
	copy(b, fmt.Sprintf("w%d-%d", w, i))
	return b
}

// load publishes from one connection per server until stop, at most
// every pause, recording what is acknowledged.
func (r *damageRig) load(stop <-chan struct{}, pause time.Duration) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := nats.Connect(r.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
				nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
			if err != nil {
				return
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(pause):
				}
				data := damageData(w, i)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				ack, err := js.Publish(ctx, fmt.Sprintf("dmg.%d", i%5), data)
				cancel()
				if err == nil {
					r.record(ack.Sequence, sha256.Sum256(data))
				}
			}
		}()
	}
	return &wg
}

func (r *damageRig) record(seq uint64, sum [32]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.acked[seq]; ok && old != sum {
		r.twice = append(r.twice, fmt.Sprintf("seq %d acknowledged twice", seq))
	}
	r.acked[seq] = sum
}

func (r *damageRig) ackedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.acked)
}

// waitLog waits until server i's output holds more than n lines with s.
func (r *damageRig) waitLog(i int, s string, n int, what string) {
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(r.procs[i].output(), s) <= n {
		if time.Now().After(deadline) {
			r.t.Fatalf("D%d: %s: no new %q in its log\n%s", i+1, what, s, r.logs(4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitCurrent waits until the stream reports every replica current.
func (r *damageRig) waitCurrent(js jetstream.JetStream, what string) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := js.Stream(ctx, "DMG")
		cancel()
		if err == nil && st.CachedInfo().Cluster != nil && st.CachedInfo().Cluster.Leader != "" {
			ok := len(st.CachedInfo().Cluster.Replicas) == 2
			for _, p := range st.CachedInfo().Cluster.Replicas {
				ok = ok && p.Current
			}
			if ok {
				return
			}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: the stream's replicas not all current: %v\n%s", what, err, r.logs(4000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitRepaired waits until server i holds no repair marker (it caught up)
// and the stream reports every replica current.
func (r *damageRig) waitRepaired(i int, js jetstream.JetStream, what string) {
	deadline := time.Now().Add(30 * time.Second)
	for r.repairing(i) {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: D%d still repairing\n%s", what, i+1, r.logs(4000))
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.waitCurrent(js, what)
}

// repairing reports whether a repair marker is in server i's store.
func (r *damageRig) repairing(i int) bool {
	found := false
	filepath.Walk(r.dirs[i], func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Name() == repairMarker {
			found = true
		}
		return nil
	})
	return found
}

// sealedBlock picks a sealed block file of server i's store.
func (r *damageRig) sealedBlock(i int) string {
	blocks := storeBlocks(r.t, filepath.Join(r.dirs[i], "jetstream", globalAccountName, "streams", "DMG"))
	return blocks[r.rng.IntN(len(blocks))]
}

// damageKinds damage one block file.
var damageKinds = []struct {
	name string
	do   func(t *testing.T, rng *rand.Rand, p string)
}{
	{"bit flips", func(t *testing.T, rng *rand.Rand, p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 3; k++ { // past the block's first record (not a message)
			b[len(b)/8+rng.IntN(len(b)-len(b)/8)] ^= 1 << rng.IntN(8)
		}
		writeInPlace(t, p, b) // hard links (the raft snapshot's) see it too
	}},
	{"truncation", func(t *testing.T, rng *rand.Rand, p string) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, rng.Int64N(fi.Size())); err != nil {
			t.Fatal(err)
		}
	}},
	{"deletion", func(t *testing.T, _ *rand.Rand, p string) {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}},
}

const (
	scrubFound   = "the scrub found"
	scrubRestart = "restarting the replica to repair it"
	startFound   = "local state damaged"
)

// damageRunning damages a block of running server i: its scrub must find
// it and the replica repair itself.
func (r *damageRig) damageRunning(i, kind int, js jetstream.JetStream) {
	before := strings.Count(r.procs[i].output(), scrubFound)
	p := r.sealedBlock(i)
	damageKinds[kind].do(r.t, r.rng, p)
	r.t.Logf("D%d running: %s of %s", i+1, damageKinds[kind].name, filepath.Base(p))
	r.waitLog(i, scrubFound, before, "the scrub finding "+damageKinds[kind].name)
	r.waitLog(i, scrubRestart, before, "the replica restarting")
	r.waitRepaired(i, js, "after the repair of D"+fmt.Sprint(i+1))
}

// damageStopped damages server i while it is stopped: its start must find
// the damage. The damage goes to what the start rebuilds the replica
// from: a block of its latest linked raft snapshot, or, before the stream
// took one (65,536 entries), bits in the middle of its raft log (a lost
// or cut log: damageLog).
func (r *damageRig) damageStopped(i, kind int, js jetstream.JetStream) {
	r.procs[i].stop()
	blocks := repairBlocksOf(r.dirs[i])
	p, name := "", damageKinds[kind].name
	if len(blocks) > 0 {
		p = blocks[len(blocks)-1]
		damageKinds[kind].do(r.t, r.rng, p)
	} else {
		p, name = r.walSegment(i), "bit flips (raft log)"
		b, err := os.ReadFile(p)
		if err != nil {
			r.t.Fatal(err)
		}
		for k := 0; k < 3; k++ { // valid frames follow: damage, not a torn tail
			b[len(b)/4+r.rng.IntN(len(b)/2)] ^= 1 << r.rng.IntN(8)
		}
		writeInPlace(r.t, p, b)
	}
	r.t.Logf("D%d stopped: %s of %s", i+1, name, filepath.Base(p))
	r.start(i)
	r.waitLog(i, startFound, 0, "the start finding "+name)
	r.waitRepaired(i, js, "after D"+fmt.Sprint(i+1)+" restarted")
}

// logLossKinds damage the raft log of the stream DMG on stopped server i:
// a member whose log lost durable entries (raft_logmark.go).
var logLossKinds = []struct {
	name string
	do   func(r *damageRig, i int)
}{
	{"raft log directory deleted", func(r *damageRig, i int) {
		if err := os.RemoveAll(filepath.Dir(r.walSegment(i))); err != nil {
			r.t.Fatal(err)
		}
	}},
	{"raft log tail cut", func(r *damageRig, i int) {
		p := r.walSegment(i) // holds entries: cut in its second half, later segments gone
		segs, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "*.wal"))
		for _, s := range segs {
			if s > p {
				if err := os.Remove(s); err != nil {
					r.t.Fatal(err)
				}
			}
		}
		fi, err := os.Stat(p)
		if err != nil {
			r.t.Fatal(err)
		}
		if err := os.Truncate(p, fi.Size()/2+r.rng.Int64N(fi.Size()/4)); err != nil {
			r.t.Fatal(err)
		}
	}},
}

// damageLog damages the raft log of stopped server i: its start must find
// it lost durable entries.
func (r *damageRig) damageLog(i, kind int, js jetstream.JetStream) {
	r.procs[i].stop()
	logLossKinds[kind].do(r, i)
	r.t.Logf("D%d stopped: %s", i+1, logLossKinds[kind].name)
	r.start(i)
	r.waitLog(i, startFound, 0, "the start finding its "+logLossKinds[kind].name)
	r.waitRepaired(i, js, "after D"+fmt.Sprint(i+1)+" restarted")
}

// repairBlocksOf lists the block files of the latest linked snapshot of
// the stream DMG under dir.
func repairBlocksOf(dir string) []string {
	snaps := filepath.Join(dir, "jetstream", "_raft_", "S-"+globalAccountName+"-DMG", snapsDir)
	ents, _ := os.ReadDir(snaps)
	if len(ents) == 0 {
		return nil
	}
	var latest uint64
	for _, e := range ents {
		if n, err := strconv.ParseUint(e.Name(), 10, 64); err == nil && n > latest {
			latest = n
		}
	}
	out, _ := filepath.Glob(filepath.Join(snaps, strconv.FormatUint(latest, 10), "*.blk"))
	return out
}

// walSegment is the largest raft log segment of the stream DMG on server i.
func (r *damageRig) walSegment(i int) string {
	gdir := filepath.Join(r.dirs[i], "jetstream", "_raft_", "S-"+globalAccountName+"-DMG")
	segs, _ := filepath.Glob(filepath.Join(gdir, "wal", "*.wal")) // an earlier server's layout
	more, _ := filepath.Glob(filepath.Join(gdir, "*.wal"))
	segs = append(segs, more...)
	var best string
	var size int64
	for _, p := range segs {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Size() > size {
			best, size = p, fi.Size()
		}
	}
	if size < 1<<20 {
		r.t.Fatalf("no raft log segment of 1 MiB on D%d: %v", i+1, segs)
	}
	return best
}

// verify reads every acknowledged message under every server as leader.
func (r *damageRig) verify() {
	nc := connectNATS(r.t, r.urls())
	defer nc.Close()
	r.mu.Lock()
	acked := make(map[uint64][32]byte, len(r.acked))
	for k, v := range r.acked {
		acked[k] = v
	}
	if len(r.twice) > 0 {
		r.t.Fatalf("%s", strings.Join(r.twice, "\n"))
	}
	r.mu.Unlock()
	seen := viewUnderEachLeader(r.t, nc, "DMG", 3, 90*time.Second, func(ctx context.Context, js jetstream.JetStream) (string, string, bool) {
		st, err := js.Stream(ctx, "DMG")
		if err != nil || st.CachedInfo().Cluster == nil || st.CachedInfo().Cluster.Leader == "" {
			return "", "", false
		}
		info := st.CachedInfo()
		h := sha256.New()
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			m, err := st.GetMsg(rctx, seq)
			cancel()
			if err != nil {
				if _, want := acked[seq]; want {
					return info.Cluster.Leader, fmt.Sprintf("acknowledged seq %d: %v", seq, err), true
				}
				continue
			}
			sum := sha256.Sum256(m.Data)
			if want, ok := acked[seq]; ok && want != sum {
				return info.Cluster.Leader, fmt.Sprintf("acknowledged seq %d has a wrong payload", seq), true
			}
			h.Write(sum[:])
		}
		for seq := range acked {
			if seq < info.State.FirstSeq || seq > info.State.LastSeq {
				return info.Cluster.Leader, fmt.Sprintf("acknowledged seq %d outside %d..%d", seq, info.State.FirstSeq, info.State.LastSeq), true
			}
		}
		return info.Cluster.Leader, fmt.Sprintf("msgs=%d first=%d last=%d bytes=%d digest=%x", info.State.Msgs,
			info.State.FirstSeq, info.State.LastSeq, info.State.Bytes, h.Sum(nil)[:8]), true
	})
	names := sameUnderEachLeader(r.t, "stream DMG", seen)
	if v := seen[names[0]]; !strings.HasPrefix(v, "msgs=") {
		r.t.Fatalf("%s\n%s", v, r.logs(4000))
	}
	r.t.Logf("%d acknowledged; every server led DMG with %s", len(acked), seen[names[0]])
}

func TestProcessDamageRepair(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three server processes")
	}
	t0 := time.Now()
	r := newDamageRig(t)
	t.Logf("servers up after %v", time.Since(t0).Round(time.Millisecond))
	nc := connectNATS(t, r.urls())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	createStreamEventually(t, js, jetstream.StreamConfig{Name: "DMG", Subjects: []string{"dmg.>"}, Replicas: 3, Storage: jetstream.FileStorage})
	// Fill about three blocks quickly, then keep a slower load on.
	fillStop := make(chan struct{})
	fill := r.load(fillStop, 0)
	for r.ackedCount() < 800 {
		time.Sleep(20 * time.Millisecond) // polling the ack count
	}
	close(fillStop)
	fill.Wait()
	stop := make(chan struct{})
	var once sync.Once
	halt := func() { once.Do(func() { close(stop) }) }
	defer halt()
	wg := r.load(stop, 10*time.Millisecond)
	t.Logf("filled after %v", time.Since(t0).Round(time.Millisecond))
	r.waitCurrent(js, "before any damage")
	for cycle := 0; cycle < *damageCycles; cycle++ {
		for i := range 3 {
			// Over two rounds each kind hits a running server.
			kind := (cycle + i) % len(damageKinds)
			if (2*cycle+i)%3 == 0 {
				r.damageStopped(i, kind, js)
			} else {
				r.damageRunning(i, kind, js)
			}
		}
		for k := range logLossKinds {
			r.damageLog((cycle+k+1)%3, k, js)
		}
	}
	halt()
	wg.Wait()
	t.Logf("damage repaired after %v", time.Since(t0).Round(time.Millisecond))
	r.verify()
	t.Logf("verified after %v", time.Since(t0).Round(time.Millisecond))
}
