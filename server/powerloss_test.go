//go:build linux

package server

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nats-io/nats-server/v2/internal/memfuse"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Process-level power loss (issue 19): real server processes whose store
// directories sit on a FUSE mount of a vfs.MemFS, which keeps a write only
// once it was fsynced (a name once its directory was). A cycle publishes,
// kills every server at once (SIGKILL), drops what was not synced (the
// last unsynced bytes of a file survive in part: a torn write) and starts
// the servers again: every acknowledged message must be back at its
// sequence with its payload, and no sequence is acknowledged twice.

var (
	powerCycles = flag.Int("powerloss.cycles", 3, "power cuts per power-loss test")
	powerSync   = flag.String("powerloss.sync", "",
		`sync_interval of the power-loss tests' servers ("" = the default config; "2m" measures the opt-out)`)
	powerMeasure = flag.Bool("powerloss.measure", false,
		"report what the power-loss tests lose instead of failing on it")
)

// powerRig is the MemFS, its mount and the servers on it.
type powerRig struct {
	procCluster
	mem *vfs.MemFS
	mnt *memfuse.Mount
	dir string
	rng *rand.Rand
}

func newPowerRig(t *testing.T, servers int) *powerRig {
	if err := memfuse.Available(); err != nil {
		t.Skipf("FUSE is not available: %v", err)
	}
	r := &powerRig{mem: vfs.NewMem(), dir: t.TempDir(), rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19))}
	r.t = t
	r.mount()
	t.Cleanup(func() {
		r.killAll()
		if r.mnt != nil {
			_ = r.mnt.Unmount()
		}
	})
	sync := ""
	if *powerSync != "" {
		sync = ", sync_interval: " + *powerSync
	}
	r.procCluster = newProcCluster(t, servers, "P", "POWER", func(i int) string {
		return fmt.Sprintf("store_dir: %q%s", filepath.Join(r.dir, fmt.Sprintf("n%d", i+1)), sync)
	})
	return r
}

func (r *powerRig) mount() {
	m, err := memfuse.New(r.dir, r.mem)
	if err != nil {
		r.t.Fatalf("mounting the lossy file system: %v", err)
	}
	r.mnt = m
}

func (r *powerRig) startAll() {
	for i := range r.confs {
		r.startProc(i, "")
	}
}

func (r *powerRig) killAll() {
	for _, p := range r.procs {
		if p != nil && p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	for _, p := range r.procs {
		if p != nil && p.cmd.ProcessState == nil {
			_ = p.cmd.Wait()
		}
	}
}

// powerCut kills every server at the same instant and loses what was not
// synced, tearing the unsynced tail of each file at a random length.
func (r *powerRig) powerCut() {
	r.killAll()
	if err := r.mnt.Unmount(); err != nil {
		r.t.Fatalf("unmount: %v", err)
	}
	r.mnt = nil
	r.mem.CrashKeep(func(_ string, n int) int {
		if r.rng.IntN(2) == 0 {
			return 0
		}
		return r.rng.IntN(n + 1)
	})
	r.mount()
}

// powerLedger is what clients were told: payload by acknowledged sequence.
type powerLedger struct {
	mu    sync.Mutex
	bySeq map[uint64]string
	twice []string
	// streams created (acknowledged) just before a cut, with the payload
	// of the one message each got ("" if that publish was not acked).
	streams map[string]string
}

func (l *powerLedger) acked(seq uint64, payload string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if old, ok := l.bySeq[seq]; ok && old != payload {
		l.twice = append(l.twice, fmt.Sprintf("seq %d acknowledged for %q and for %q", seq, old, payload))
	}
	l.bySeq[seq] = payload
}

// publishUntilCut publishes from two connections per server until the cut
// (asynchronously, so acks are in flight when it comes).
func (r *powerRig) publishUntilCut(l *powerLedger, cycle int, dur time.Duration) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 * len(r.ports) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", r.ports[w%len(r.ports)]), nats.NoReconnect(),
				nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
			if err != nil {
				return
			}
			defer nc.Close()
			js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(256))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i%20 == 19 {
					time.Sleep(2 * time.Millisecond) // a few thousand per second: quick to verify
				}
				payload := fmt.Sprintf("c%d-w%d-%d", cycle, w, i)
				f, err := js.PublishAsync(fmt.Sprintf("pl.%d", i%8), []byte(payload))
				if err != nil {
					return
				}
				go func() {
					select {
					case ack := <-f.Ok():
						l.acked(ack.Sequence, payload)
					case <-f.Err():
					}
				}()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		// (An R3 stream takes 100-300 ms to create under this load.)
		after := dur / 2
		if len(r.ports) > 1 {
			after = 0
		}
		r.createUntilCut(l, cycle, stop, after)
	}()
	time.Sleep(dur)
	r.powerCut()
	close(stop)
	wg.Wait()
}

// createUntilCut creates streams one after another from after until the
// cut, publishing one message to each: a stream whose creation was
// acknowledged must be back after the cut, whole.
func (r *powerRig) createUntilCut(l *powerLedger, cycle int, stop <-chan struct{}, after time.Duration) {
	select {
	case <-stop:
		return
	case <-time.After(after):
	}
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", r.ports[cycle%len(r.ports)]), nats.NoReconnect(),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	if err != nil {
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		name := fmt.Sprintf("PLC%dN%d", cycle, k)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"plc." + name}, Replicas: len(r.ports)})
		cancel()
		if err != nil {
			return
		}
		l.mu.Lock()
		l.streams[name] = ""
		l.mu.Unlock()
		ctx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		ack, err := js.Publish(ctx, "plc."+name, []byte(name))
		cancel()
		if err != nil {
			return
		}
		if ack.Sequence != 1 {
			l.mu.Lock()
			l.twice = append(l.twice, fmt.Sprintf("the first message of new stream %s acknowledged at %d", name, ack.Sequence))
			l.mu.Unlock()
		}
		l.mu.Lock()
		l.streams[name] = name
		l.mu.Unlock()
	}
}

// verifyStreams checks every stream whose creation was acknowledged: it
// exists, and holds its one message if that was acknowledged.
func (r *powerRig) verifyStreams(l *powerLedger, js jetstream.JetStream) (lost []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, want := range l.streams {
		var st jetstream.Stream
		var err error
		for try := 0; try < 50; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			st, err = js.Stream(ctx, name)
			cancel()
			if err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			lost = append(lost, fmt.Sprintf("stream %s, created before a cut: %v", name, err))
			continue
		}
		if want == "" {
			continue
		}
		var m *jetstream.RawStreamMsg
		for try := 0; try < 20; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			m, err = st.GetMsg(ctx, 1)
			cancel()
			if err == nil || strings.Contains(err.Error(), "not found") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || string(m.Data) != want {
			lost = append(lost, fmt.Sprintf("stream %s lost its acknowledged message: %v", name, err))
		}
	}
	return lost
}

// readAll reads the stream PL with batched direct gets: payload by
// sequence. What a replica not yet current leaves out is looked up again
// one by one.
func readAll(nc *nats.Conn) map[uint64]string {
	got := map[uint64]string{}
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return got
	}
	defer sub.Unsubscribe()
	for start := uint64(1); ; {
		req := fmt.Sprintf(`{"seq":%d,"batch":1000}`, start)
		if err := nc.PublishRequest("$JS.API.DIRECT.GET.PL", inbox, []byte(req)); err != nil {
			return got
		}
		n := 0
		for {
			m, err := sub.NextMsg(2 * time.Second)
			if err != nil {
				return got
			}
			if m.Header.Get("Status") != "" {
				break
			}
			seq, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
			if err != nil {
				return got
			}
			got[seq] = string(m.Data)
			start = max(start, seq+1)
			n++
		}
		if n == 0 {
			return got
		}
	}
}

// verify reads every acknowledged sequence back after a restart.
func (r *powerRig) verify(l *powerLedger, replicas int) (lost []string) {
	t := r.t
	nc := connectNATS(t, r.urls())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	var st jetstream.Stream
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s, err := js.Stream(ctx, "PL")
		cancel()
		if err == nil {
			st = s
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream PL not back after the power cut: %v\n%s", err, r.logs(3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	lost = r.verifyStreams(l, js)
	all := readAll(nc)
	l.mu.Lock()
	defer l.mu.Unlock()
	lost = append(lost, l.twice...)
	for seq, want := range l.bySeq {
		if all[seq] == want {
			continue
		}
		var got *jetstream.RawStreamMsg
		var err error
		for try := 0; try < 20; try++ {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			got, err = st.GetMsg(ctx, seq)
			cancel()
			if err == nil || strings.Contains(err.Error(), "not found") {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		switch {
		case err != nil:
			lost = append(lost, fmt.Sprintf("seq %d (%q): %v", seq, want, err))
		case string(got.Data) != want:
			lost = append(lost, fmt.Sprintf("seq %d holds %q, acknowledged for %q", seq, got.Data, want))
		}
	}
	return lost
}

func runPowerLoss(t *testing.T, servers int) {
	r := newPowerRig(t, servers)
	r.startAll()
	nc := connectNATS(t, r.urls())
	js, _ := jetstream.New(nc)
	createStreamEventually(t, js, jetstream.StreamConfig{Name: "PL", Subjects: []string{"pl.>"}, Replicas: servers, AllowDirect: true})
	nc.Close()
	l := &powerLedger{bySeq: map[uint64]string{}, streams: map[string]string{}}
	total := 0
	for cycle := 1; cycle <= *powerCycles; cycle++ {
		r.publishUntilCut(l, cycle, time.Duration(400+r.rng.IntN(600))*time.Millisecond)
		r.startAll()
		lost := r.verify(l, servers)
		l.mu.Lock()
		total = len(l.bySeq)
		l.mu.Unlock()
		l.mu.Lock()
		streams := len(l.streams)
		l.mu.Unlock()
		t.Logf("cycle %d: %d acknowledged so far, %d streams created before cuts, %d lost or wrong", cycle, total, streams, len(lost))
		if servers > 1 && len(lost) == 0 {
			r.replicasAgree()
		}
		if len(lost) > 0 {
			if *powerMeasure {
				t.Logf("power loss (sync_interval %q): %d of %d acknowledged publishes lost, e.g. %s",
					*powerSync, len(lost), total, lost[0])
				return
			}
			t.Fatalf("after power cut %d, %d of %d acknowledged publishes are lost or wrong, e.g.\n%s\n%s",
				cycle, len(lost), total, strings.Join(lost[:min(10, len(lost))], "\n"), r.logs(3000))
		}
	}
	if total == 0 {
		t.Fatal("nothing was acknowledged: the test proved nothing")
	}
}

// replicasAgree moves the stream's leadership until every server led it
// once, and checks that each leader reports the same stream state.
func (r *powerRig) replicasAgree() {
	nc := connectNATS(r.t, r.urls())
	defer nc.Close()
	type view struct{ msgs, bytes, first, last uint64 }
	seen := viewUnderEachLeader(r.t, nc, "PL", len(r.ports), 30*time.Second, func(ctx context.Context, js jetstream.JetStream) (string, view, bool) {
		st, err := js.Stream(ctx, "PL")
		if err != nil || st.CachedInfo().Cluster == nil || st.CachedInfo().Cluster.Leader == "" {
			return "", view{}, false
		}
		s := st.CachedInfo().State
		return st.CachedInfo().Cluster.Leader, view{s.Msgs, s.Bytes, s.FirstSeq, s.LastSeq}, true
	})
	sameUnderEachLeader(r.t, "after the power cut", seen)
}

// createStreamEventually creates cfg, retrying while a new cluster has no
// meta leader yet.
func createStreamEventually(t *testing.T, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := js.CreateStream(ctx, cfg)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("creating stream %s: %v", cfg.Name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestPowerLossOneServer: an R1 file stream on one server survives power
// cuts with nothing acknowledged lost.
func TestPowerLossOneServer(t *testing.T) { runPowerLoss(t, 1) }

// TestPowerLossCluster: an R3 file stream on three servers cut at once.
func TestPowerLossCluster(t *testing.T) { runPowerLoss(t, 3) }
