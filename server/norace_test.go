//go:build !race

package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// casInput/casOutput are one compare-and-set write, or one read of the
// key's last message, in the history.
type casInput struct {
	Key      string
	Expected uint64
	Value    string
	Read     bool
}

type casOutput struct {
	Kind int    // casOK, casWrongSeq, casNotStored, casRead
	Rev  uint64 // new sequence (casOK), the reported current one (casWrongSeq), the one read (casRead; 0: none)
}

const (
	casOK = iota
	casWrongSeq
	casNotStored
	casRead
)

// casModel is a per-key register whose revision is the stream sequence of
// the key's last message. A rejection must be explained by the state: the
// reported sequence is the register's current revision. A read returns
// the current revision (0 before the first write).
var casModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(casInput).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		rev, in, out := state.(uint64), input.(casInput), output.(casOutput)
		switch out.Kind {
		case casOK:
			return rev == in.Expected && out.Rev > rev, out.Rev
		case casWrongSeq:
			return rev != in.Expected && rev == out.Rev, rev
		case casRead:
			return rev == out.Rev, rev
		}
		return true, rev // not stored: no effect
	},
	Equal: func(a, b any) bool { return a.(uint64) == b.(uint64) },
}

// chaosCluster is three server processes whose list of processes
// (procs) the chaos replaces under mu as it restarts them.
type chaosCluster struct {
	procCluster
	mu  sync.Mutex
	net *routeNet // the routes' proxies (startPartitionableCluster), or nil
}

// startChaosCluster starts three servers of binary ("" = this build).
func startChaosCluster(t *testing.T, binary string) *chaosCluster {
	c := &chaosCluster{procCluster: newProcCluster(t, 3, "N", "CHAOS", func(int) string {
		return fmt.Sprintf("store_dir: %q", t.TempDir())
	})}
	for i := range c.confs {
		c.startProc(i, binary)
	}
	return c
}

// bounce stops server i (SIGKILL, or a graceful SIGINT) and restarts it
// after a pause, as a rolling restart or a crash would.
func (c *chaosCluster) bounce(i int, pause time.Duration, sig syscall.Signal) {
	c.mu.Lock()
	p := c.procs[i]
	c.mu.Unlock()
	_ = p.cmd.Process.Signal(sig)
	_ = p.cmd.Wait()
	time.Sleep(pause)
	np := startProcess(c.t, c.ports[i], "-c", c.confs[i])
	c.mu.Lock()
	c.procs[i] = np
	c.mu.Unlock()
}

// chaosKeys is how many registers the clients race on: few enough that
// concurrent compare-and-sets collide all the time, enough that each key's
// history stays small for the linearizability checker.
const chaosKeys = 16

func TestNoRaceJetStreamClusterCASChaos(t *testing.T) {
	runCASChaos(t, "")
}

// TestNoRaceJetStreamClusterCASChaosPause pauses the stream's leader with
// SIGSTOP for 1-3 s, again and again, while the clients write and read
// (STREAM.MSG.GET, and direct gets from every replica) through every
// server. A leader that wakes up must not answer a read from the state it
// had when it stopped: a new leader took writes meanwhile. Issue 19 saw a
// resumed leader answer 1 to 23 reads from its old state before read
// indexes; TERN_CHAOS_BINARY runs the test on another build (an older one
// fails it: the history is not linearizable). Readers also ask
// STREAM.INFO through every server: its last_seq must be at least every
// sequence a write had returned before the request (a woken leader
// answered from its old state before STREAM.INFO waited for a read index).
func TestNoRaceJetStreamClusterCASChaosPause(t *testing.T) {
	runChaos(t, chaosRun{binary: os.Getenv("TERN_CHAOS_BINARY"), direct: os.Getenv("TERN_CHAOS_NO_DIRECT") == "", info: true,
		duration: 5 * time.Second,
		fault: func(c *chaosCluster, n int) {
			time.Sleep(time.Duration(500+rand.IntN(1000)) * time.Millisecond)
			if i := c.streamLeader("KV"); i >= 0 {
				d := time.Duration(1000+rand.IntN(2000)) * time.Millisecond
				t.Logf("pausing the leader N%d for %v", i+1, d)
				c.pause(i, d)
			}
		}})
}

// streamLeader is the index of the server leading the stream (-1: none
// known within a second).
func (c *chaosCluster) streamLeader(name string) int {
	nc, err := nats.Connect(c.urls(), nats.Timeout(time.Second))
	if err != nil {
		return -1
	}
	defer nc.Close()
	resp, err := nc.Request("$JS.API.STREAM.INFO."+name, nil, time.Second)
	if err != nil {
		return -1
	}
	var info struct {
		Cluster *struct {
			Leader string `json:"leader"`
		} `json:"cluster"`
	}
	if json.Unmarshal(resp.Data, &info) != nil || info.Cluster == nil {
		return -1
	}
	for i := range c.procs {
		if info.Cluster.Leader == fmt.Sprintf("N%d", i+1) {
			return i
		}
	}
	return -1
}

// pause stops server i with SIGSTOP for d, then lets it go on (SIGCONT).
func (c *chaosCluster) pause(i int, d time.Duration) {
	c.mu.Lock()
	p := c.procs[i]
	c.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	defer p.cmd.Process.Signal(syscall.SIGCONT)
	time.Sleep(d)
}

// TestNoRaceJetStreamClusterRollingUpgrade starts the cluster on an older
// Tern binary (TERN_UPGRADE_FROM, built by scripts/upgrade), upgrades the
// servers one at a time (graceful stop, start of this build) under the
// compare-and-set load, then goes on with kill -9 chaos on the new version.
func TestNoRaceJetStreamClusterRollingUpgrade(t *testing.T) {
	old := os.Getenv("TERN_UPGRADE_FROM")
	if old == "" {
		t.Skip("set TERN_UPGRADE_FROM to an older nats-server binary of Tern (scripts/upgrade does)")
	}
	runCASChaos(t, old)
}

// runCASChaos runs 8 compare-and-set clients on an R3 stream while servers
// are bounced, then checks every acknowledged write and linearizability.
// With an older binary the first three bounces upgrade the servers in turn.
func runCASChaos(t *testing.T, upgradeFrom string) {
	runChaos(t, chaosRun{binary: upgradeFrom, upgrade: upgradeFrom != "", fault: func(c *chaosCluster, n int) {
		// Kill -9 a random server every couple of seconds, then bring it
		// back; every third bounce is a graceful restart instead (rolling
		// upgrade).
		time.Sleep(1500 * time.Millisecond)
		sig, victim := syscall.SIGKILL, rand.IntN(3)
		if n%3 == 2 {
			sig = syscall.SIGINT
		}
		if upgradeFrom != "" && n < 3 {
			sig, victim = syscall.SIGINT, n // upgrade server n
		}
		c.bounce(victim, 500*time.Millisecond, sig)
	}})
}

// chaosRun is one chaos test: the cluster's binary ("" = this build),
// whether its first three faults upgrade it, the fault the run repeats
// (n counts them), whether readers also use direct gets and STREAM.INFO,
// and the default duration (TERN_CHAOS_DURATION overrides it).
type chaosRun struct {
	binary   string
	upgrade  bool
	fault    func(c *chaosCluster, n int)
	direct   bool
	info     bool
	duration time.Duration
	// partitions runs the cluster with its routes through proxies that
	// the fault can cut (route_net_test.go).
	partitions bool
}

// chaosHistory is the operations of a run, appended by its clients.
type chaosHistory struct {
	mu    sync.Mutex
	ops   []porcupine.Operation
	infos []infoRead // STREAM.INFO answers (outside the registers' model)
	reads [3]int     // reads answered through each server
	start time.Time
}

// infoRead is a STREAM.INFO answer: the stream's last sequence, the
// request's call and return times, and the server it went through.
type infoRead struct {
	call, ret int64
	last      uint64
	server    int
}

func (h *chaosHistory) add(op porcupine.Operation, server int) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	if server >= 0 {
		h.reads[server]++
	}
	h.mu.Unlock()
}

func (h *chaosHistory) now() int64 { return time.Since(h.start).Nanoseconds() }

func runChaos(t *testing.T, run chaosRun) {
	duration := cmp.Or(run.duration, 12*time.Second)
	if d, err := time.ParseDuration(os.Getenv("TERN_CHAOS_DURATION")); err == nil {
		duration = d
	}
	var c *chaosCluster
	if run.partitions {
		c, _ = startPartitionableCluster(t)
	} else {
		c = startChaosCluster(t, run.binary)
	}
	nc := connectNATS(t, c.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	js, _ := jetstream.New(nc)
	waitFor(t, 20*time.Second, "the R3 stream", func() bool {
		_, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "KV", Subjects: []string{"kv.>"}, Replicas: 3,
			AllowDirect: run.direct})
		return err == nil
	})
	h := &chaosHistory{start: time.Now()}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chaosWriter(t, c, h, w, stop)
		}()
	}
	// Readers: one per server, connected to that server only, so reads go
	// through every server, also the moment one is back from a kill. With
	// direct gets a second one per server reads as KV Get does, from the
	// replica on its server.
	for i := range c.ports {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chaosReader(t, c, h, 100+i, i, chaosRead, stop)
		}()
		if run.direct {
			wg.Add(1)
			go func() {
				defer wg.Done()
				chaosReader(t, c, h, 110+i, i, chaosDirectRead, stop)
			}()
		}
		if run.info {
			wg.Add(1)
			go func() {
				defer wg.Done()
				chaosInfoReader(c, h, i, stop)
			}()
		}
	}
	deadline := time.Now().Add(duration)
	for n := 0; time.Now().Before(deadline) || run.upgrade && n < 3; n++ {
		run.fault(c, n)
	}
	if run.partitions { // the last fault healed: every server serves again
		servesReadsAgain(t, c, "KV", 10*time.Second)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	stored := readWholeStream(t, js, "KV")
	end := h.now()
	t.Logf("reads answered through each server: %v", h.reads)
	for i, n := range h.reads {
		if n == 0 {
			t.Fatalf("no read through server %d was answered", i+1)
		}
	}
	if run.info {
		if len(h.infos) == 0 {
			t.Fatal("no STREAM.INFO was answered")
		}
		if n, ex := staleInfos(h.ops, h.infos); n > 0 {
			t.Errorf("%d of %d STREAM.INFO answers showed a last sequence below one a write had returned before they were asked, e.g. %s",
				n, len(h.infos), ex)
		}
	}
	checkChaosHistory(t, h.ops, stored, end)
	for i, conf := range c.confs { // what the kills exercised: restores from linked snapshots
		snaps, _ := filepath.Glob(filepath.Join(filepath.Dir(conf), "jetstream", "_raft_", "*", snapsDir, "*"))
		t.Logf("server %d: %d linked snapshot directories", i+1, len(snaps))
	}
}

// chaosWriter makes compare-and-set writes through any server until stop.
func chaosWriter(t *testing.T, c *chaosCluster, h *chaosHistory, w int, stop chan struct{}) {
	cas := connectNATS(t, c.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	known := map[string]uint64{}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("kv.k%d", rand.IntN(chaosKeys))
		in := casInput{Key: key, Expected: known[key], Value: fmt.Sprintf("w%d-%d", w, n)}
		call := h.now()
		out := chaosWrite(cas, in)
		ret := h.now()
		switch out.Kind {
		case casOK, casWrongSeq:
			known[key] = out.Rev
		default:
			ret = -1 // unknown outcome: resolved after the run
		}
		h.add(porcupine.Operation{ClientId: w, Input: in, Call: call, Output: out, Return: ret}, -1)
	}
}

// chaosReader reads through server i only until stop.
// (id: its client id in the history).
func chaosReader(t *testing.T, c *chaosCluster, h *chaosHistory, id, i int, read func(*nats.Conn, string) (uint64, bool), stop chan struct{}) {
	rc := connectNATS(t, fmt.Sprintf("nats://127.0.0.1:%d", c.ports[i]), nats.MaxReconnects(-1),
		nats.ReconnectWait(20*time.Millisecond), nats.IgnoreDiscoveredServers())
	for {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("kv.k%d", rand.IntN(chaosKeys))
		call := h.now()
		rev, ok := read(rc, key)
		ret := h.now()
		if !ok { // no answer, or 10008: a read without an outcome
			if !rc.IsConnected() {
				time.Sleep(10 * time.Millisecond) // back off while reconnecting
			}
			continue
		}
		h.add(porcupine.Operation{ClientId: id, Input: casInput{Key: key, Read: true},
			Output: casOutput{Kind: casRead, Rev: rev}, Call: call, Return: ret}, i)
	}
}

// chaosWrite publishes with the expectation and classifies the answer.
// Anything but a definite answer is casNotStored for now (resolved later).
func chaosWrite(nc *nats.Conn, in casInput) casOutput {
	m := nats.NewMsg(in.Key)
	m.Data = []byte(in.Value)
	m.Header.Set(JSExpectedLastSubjSeq, strconv.FormatUint(in.Expected, 10))
	resp, err := nc.RequestMsg(m, 2*time.Second)
	if err != nil {
		return casOutput{Kind: casNotStored, Rev: 1<<64 - 1}
	}
	var ack casAck
	if json.Unmarshal(resp.Data, &ack) != nil {
		return casOutput{Kind: casNotStored, Rev: 1<<64 - 1}
	}
	switch {
	case ack.Error == nil && ack.Seq > 0:
		return casOutput{Kind: casOK, Rev: ack.Seq}
	case ack.Error != nil && ack.Error.ErrCode == 10071:
		rev, _ := strconv.ParseUint(strings.TrimPrefix(ack.Error.Description, "wrong last sequence: "), 10, 64)
		return casOutput{Kind: casWrongSeq, Rev: rev}
	}
	return casOutput{Kind: casNotStored, Rev: 1<<64 - 1}
}

// chaosRead reads the stream sequence of key's last message with
// STREAM.MSG.GET (answered by the stream's leader; 0: the key has no
// message). ok is false when the read has no outcome (no answer, 10008).
func chaosRead(nc *nats.Conn, key string) (rev uint64, ok bool) {
	resp, err := nc.Request("$JS.API.STREAM.MSG.GET.KV", []byte(`{"last_by_subj":"`+key+`"}`), 2*time.Second)
	if err != nil {
		return 0, false
	}
	var r struct {
		Error   *ApiError `json:"error"`
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
	}
	if json.Unmarshal(resp.Data, &r) != nil {
		return 0, false
	}
	switch {
	case r.Error != nil && r.Error.ErrCode == 10037: // no message found
		return 0, true
	case r.Error == nil && r.Message != nil:
		return r.Message.Seq, true
	}
	return 0, false
}

// chaosDirectRead reads the stream sequence of key's last message with a
// direct get, as KV Get does (answered by a replica, the one on the
// server the client is connected to if there is one). ok is false when
// the read has no outcome (no answer).
func chaosDirectRead(nc *nats.Conn, key string) (rev uint64, ok bool) {
	resp, err := nc.Request("$JS.API.DIRECT.GET.KV."+key, nil, 2*time.Second)
	if err != nil {
		return 0, false
	}
	if st := resp.Header.Get("Status"); st == "404" {
		return 0, true
	} else if st != "" {
		return 0, false
	}
	seq, err := strconv.ParseUint(resp.Header.Get(JSSequence), 10, 64)
	return seq, err == nil
}

// chaosInfoReader asks STREAM.INFO through server i only until stop,
// every 10 ms without waiting for the answers: a paused server finds a
// pile of requests when it wakes, as clients that retry make.
func chaosInfoReader(c *chaosCluster, h *chaosHistory, i int, stop chan struct{}) {
	rc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", c.ports[i]), nats.MaxReconnects(-1),
		nats.ReconnectWait(20*time.Millisecond), nats.IgnoreDiscoveredServers())
	if err != nil {
		return
	}
	defer rc.Close()
	var mu sync.Mutex
	calls := map[string]int64{} // reply subject -> call time
	inbox := nats.NewInbox()
	sub, err := rc.Subscribe(inbox+".*", func(m *nats.Msg) {
		ret := h.now()
		mu.Lock()
		call, ok := calls[m.Subject]
		delete(calls, m.Subject)
		mu.Unlock()
		var r struct {
			Error *ApiError `json:"error"`
			State *struct {
				LastSeq uint64 `json:"last_seq"`
			} `json:"state"`
		}
		if !ok || json.Unmarshal(m.Data, &r) != nil || r.Error != nil || r.State == nil {
			return
		}
		h.mu.Lock()
		h.infos = append(h.infos, infoRead{call: call, ret: ret, last: r.State.LastSeq, server: i})
		h.mu.Unlock()
	})
	if err != nil {
		return
	}
	defer sub.Unsubscribe()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		reply := fmt.Sprintf("%s.%d", inbox, n)
		mu.Lock()
		calls[reply] = h.now()
		mu.Unlock()
		_ = rc.PublishRequest("$JS.API.STREAM.INFO.KV", reply, nil)
	}
}

// staleInfos counts the STREAM.INFO answers whose last sequence is below a
// sequence that an answered write (acknowledged, or rejected naming the
// key's current sequence) had returned before the request was made.
func staleInfos(history []porcupine.Operation, infos []infoRead) (n int, example string) {
	type seen struct {
		ret int64
		seq uint64
	}
	var ws []seen
	for _, op := range history {
		if out := op.Output.(casOutput); (out.Kind == casOK || out.Kind == casWrongSeq) && op.Return >= 0 {
			ws = append(ws, seen{op.Return, out.Rev})
		}
	}
	slices.SortFunc(ws, func(a, b seen) int { return cmp.Compare(a.ret, b.ret) })
	for i := 1; i < len(ws); i++ {
		ws[i].seq = max(ws[i].seq, ws[i-1].seq)
	}
	for _, in := range infos {
		i, _ := slices.BinarySearchFunc(ws, in.call, func(a seen, call int64) int { return cmp.Compare(a.ret, call) })
		if i > 0 && ws[i-1].seq > in.last {
			if n++; example == "" {
				example = fmt.Sprintf("through server %d at %d: last_seq %d, sequence %d had been returned at %d",
					in.server+1, in.call, in.last, ws[i-1].seq, ws[i-1].ret)
			}
		}
	}
	return n, example
}

type storedMsg struct {
	subj string
	seq  uint64
}

func readWholeStream(t *testing.T, js jetstream.JetStream, name string) map[string]storedMsg {
	var st jetstream.Stream
	waitFor(t, 30*time.Second, "stream available after chaos", func() bool {
		var err error
		st, err = js.Stream(ctx(t), name)
		return err == nil
	})
	info := st.CachedInfo()
	out := map[string]storedMsg{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		var m *jetstream.RawStreamMsg
		waitFor(t, 10*time.Second, "message "+strconv.FormatUint(seq, 10), func() bool {
			var err error
			m, err = st.GetMsg(ctx(t), seq)
			return err == nil
		})
		out[string(m.Data)] = storedMsg{subj: m.Subject, seq: m.Sequence}
	}
	t.Logf("stream holds %d messages", len(out))
	return out
}

// checkChaosHistory resolves ambiguous writes from the stream, checks that
// every acknowledged write is stored as acknowledged, and that the history
// is linearizable.
func checkChaosHistory(t *testing.T, history []porcupine.Operation, stored map[string]storedMsg, end int64) {
	acked, wrong, unknown, reads := 0, 0, 0, 0
	var unknownAt []int // ambiguous writes found in the stream
	for i := range history {
		op := &history[i]
		in, out := op.Input.(casInput), op.Output.(casOutput)
		sm, ok := stored[in.Value]
		switch out.Kind {
		case casRead:
			reads++
		case casOK:
			acked++
			if !ok || sm.seq != out.Rev || sm.subj != in.Key {
				t.Fatalf("acknowledged write %+v -> %+v is not in the stream as acknowledged (%+v, %v)", in, out, sm, ok)
			}
		case casWrongSeq:
			wrong++
			if ok {
				t.Fatalf("rejected write %+v is in the stream at %d", in, sm.seq)
			}
		default:
			unknown++
			if op.Return < 0 {
				op.Return = end
			}
			if ok {
				op.Output = casOutput{Kind: casOK, Rev: sm.seq}
				unknownAt = append(unknownAt, i)
			}
		}
	}
	if n, ex := staleReads(history); n > 0 {
		t.Errorf("%d reads returned a revision older than one a write had returned before they were made, e.g. %s", n, ex)
	}
	boundAmbiguous(history, unknownAt)
	t.Logf("history: %d ops, %d acknowledged, %d rejected (10071), %d ambiguous, %d reads", len(history), acked, wrong, unknown, reads)
	if acked == 0 {
		t.Fatal("no write succeeded")
	}
	limit := 60*time.Second + time.Duration(len(history)/1000)*time.Second
	switch checkCAS(history, limit) {
	case porcupine.Ok:
	case porcupine.Unknown:
		t.Fatalf("the linearizability check did not finish within %v (%d ops)", limit, len(history))
	default:
		t.Fatalf("history is not linearizable")
	}
}

// staleReads counts the reads that returned a revision of their key below
// one that an answered write (acknowledged, or rejected naming the current
// revision) had returned before the read was made: revisions only grow,
// so such a read saw an old state. It is a plain symptom of what the
// linearizability check finds, named read by read.
func staleReads(history []porcupine.Operation) (n int, example string) {
	type seen struct {
		ret int64
		rev uint64
	}
	byKey := map[string][]seen{}
	for _, op := range history {
		if out := op.Output.(casOutput); (out.Kind == casOK || out.Kind == casWrongSeq) && op.Return >= 0 {
			k := op.Input.(casInput).Key
			byKey[k] = append(byKey[k], seen{op.Return, out.Rev})
		}
	}
	for k, ws := range byKey { // by return time, with the highest revision returned so far
		slices.SortFunc(ws, func(a, b seen) int { return cmp.Compare(a.ret, b.ret) })
		for i := 1; i < len(ws); i++ {
			ws[i].rev = max(ws[i].rev, ws[i-1].rev)
		}
		byKey[k] = ws
	}
	for _, op := range history {
		out := op.Output.(casOutput)
		if out.Kind != casRead {
			continue
		}
		ws := byKey[op.Input.(casInput).Key]
		i, _ := slices.BinarySearchFunc(ws, op.Call, func(a seen, call int64) int { return cmp.Compare(a.ret, call) })
		if i > 0 && ws[i-1].rev > out.Rev {
			if n++; example == "" {
				example = fmt.Sprintf("client %d read %s at %d, revision %d had been returned at %d",
					op.ClientId, op.Input.(casInput).Key, out.Rev, ws[i-1].rev, ws[i-1].ret)
			}
		}
	}
	return n, example
}

// boundAmbiguous ends each write at (stored) sooner than the end of the
// run, where its unknown outcome left it: sequences are given in apply
// order, so a write stored at S took effect before any operation that saw
// a sequence above S (an acknowledged write, a rejection naming the
// current sequence, a read) took effect, hence before that operation
// returned. Open to the end, the ambiguous writes of a long run made the
// check's search and memory blow up (millions of operations).
func boundAmbiguous(history []porcupine.Operation, stored []int) {
	type seen struct {
		rev uint64
		ret int64
	}
	var done []seen
	isStored := make(map[int]bool, len(stored))
	for _, i := range stored {
		isStored[i] = true
	}
	for i, op := range history {
		if out := op.Output.(casOutput); !isStored[i] && out.Kind != casNotStored && out.Rev > 0 {
			done = append(done, seen{out.Rev, op.Return})
		}
	}
	slices.SortFunc(done, func(a, b seen) int { return cmp.Compare(a.rev, b.rev) })
	for i := len(done) - 2; i >= 0; i-- { // the earliest return among revisions >= done[i].rev
		done[i].ret = min(done[i].ret, done[i+1].ret)
	}
	for _, i := range stored {
		op := &history[i]
		rev := op.Output.(casOutput).Rev
		k, _ := slices.BinarySearchFunc(done, rev+1, func(a seen, r uint64) int { return cmp.Compare(a.rev, r) })
		if k < len(done) && done[k].ret < op.Return {
			op.Return = max(done[k].ret, op.Call)
		}
	}
}

// checkCAS checks a resolved history against casModel. A write that is not
// in the stream had no effect, and its answer says nothing about the state
// (the model accepts it anywhere), so it cannot make a history
// unlinearizable: the check leaves it out. Left in, the ambiguous ones,
// open until the end of the run, made the search blow up (one run's check
// did not finish in two minutes).
//
// Each key's history is checked in segments cut where none of its
// operations is pending: porcupine's memory grows with the square of a
// partition's length (a 10-minute run, 400k operations per key, took
// 23 GB). A cut is sound because the state there is forced: successful
// writes raise the revision (the model requires it), so every
// linearization of what came before ends at the highest revision written.
func checkCAS(history []porcupine.Operation, limit time.Duration) porcupine.CheckResult {
	deadline := time.Now().Add(limit)
	byKey := map[string][]porcupine.Operation{}
	for _, op := range history {
		if op.Output.(casOutput).Kind != casNotStored {
			k := op.Input.(casInput).Key
			byKey[k] = append(byKey[k], op)
		}
	}
	for _, ops := range byKey {
		slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		var state uint64 // the revision at the start of the segment
		start, end := 0, int64(math.MinInt64)
		for i := 0; i <= len(ops); i++ {
			if i < len(ops) && (i == start || ops[i].Call <= end) {
				end = max(end, ops[i].Return)
				continue
			}
			if res := checkSegment(ops[start:i], state, time.Until(deadline)); res != porcupine.Ok {
				return res
			}
			for _, op := range ops[start:i] {
				if out := op.Output.(casOutput); out.Kind == casOK {
					state = max(state, out.Rev)
				}
			}
			start = i
			if i < len(ops) {
				end = ops[i].Return
			}
		}
	}
	return porcupine.Ok
}

// checkSegment checks one key's operations from a known revision.
func checkSegment(ops []porcupine.Operation, from uint64, limit time.Duration) porcupine.CheckResult {
	if limit <= 0 {
		return porcupine.Unknown
	}
	m := casModel
	m.Partition = nil
	m.Init = func() any { return from }
	return porcupine.CheckOperationsTimeout(m, ops, limit)
}

// TestNoRaceCASCheck: the check still finds a lost update among writes
// that had no effect, and passes the same history without it.
func TestNoRaceCASCheck(t *testing.T) {
	op := func(client int, expected uint64, kind int, rev uint64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: casInput{Key: "k", Expected: expected},
			Output: casOutput{Kind: kind, Rev: rev}, Call: call, Return: ret}
	}
	good := []porcupine.Operation{
		op(0, 0, casOK, 5, 0, 10),
		op(1, 0, casNotStored, 1<<64-1, 5, 100), // ambiguous, open to the end
		op(2, 0, casWrongSeq, 5, 20, 30),
		op(3, 5, casOK, 7, 40, 50),
	}
	if res := checkCAS(good, time.Minute); res != porcupine.Ok {
		t.Fatalf("a linearizable history checked %v", res)
	}
	// Both writes expected 0 and both were stored, one after the other.
	lost := append(slices.Clone(good), op(4, 0, casOK, 9, 60, 70))
	if res := checkCAS(lost, time.Minute); res != porcupine.Illegal {
		t.Fatalf("a lost update checked %v", res)
	}
	// An ambiguous write stored at 6 took effect before the write of 7
	// returned at 50: it ends there, not at the end of the run.
	amb := append(slices.Clone(good), op(7, 5, casOK, 6, 42, 1000))
	amb[3].Call = 45 // the write of 7
	boundAmbiguous(amb, []int{len(amb) - 1})
	if ret := amb[len(amb)-1].Return; ret != 50 {
		t.Fatalf("the ambiguous write ends at %d, want 50", ret)
	}
	read := func(client int, rev uint64, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: casInput{Key: "k", Read: true},
			Output: casOutput{Kind: casRead, Rev: rev}, Call: call, Return: ret}
	}
	// Reads of the current revision, one of them concurrent with the
	// write that changes it, are fine.
	reads := append(slices.Clone(good), read(5, 5, 35, 38), read(6, 7, 45, 60), read(5, 7, 60, 61))
	if res := checkCAS(reads, time.Minute); res != porcupine.Ok {
		t.Fatalf("linearizable reads checked %v", res)
	}
	// After the write of 7 returned, nobody may read 5, or nothing (a
	// replica answering from an empty store).
	for _, rev := range []uint64{5, 0} {
		stale := append(slices.Clone(good), read(5, rev, 55, 56))
		if res := checkCAS(stale, time.Minute); res != porcupine.Illegal {
			t.Fatalf("a stale read of %d checked %v", rev, res)
		}
	}
}

// startJSProcess starts one JetStream server process on a free port with
// a fresh store directory; args start it again on the same store.
func startJSProcess(t *testing.T) (*serverProcess, []string) {
	port := freePort(t)
	args := []string{"-a", "127.0.0.1", "-p", strconv.Itoa(port), "-js", "-sd", t.TempDir()}
	return startProcess(t, port, args...), args
}

// TestNoRaceJetStreamKill9FileStream kills a single server with SIGKILL
// while publishers run; after a restart every acknowledged message is
// there with its sequence, subject and payload, and the per-subject counts
// equal a full scan.
func TestNoRaceJetStreamKill9FileStream(t *testing.T) {
	p, args := startJSProcess(t)
	port, url := p.port, p.url()
	nc := connectNATS(t, url)
	js, _ := jetstream.New(nc)
	createStream(t, js, jetstream.StreamConfig{Name: "K9", Subjects: []string{"k9.>"}})
	type acked struct {
		subj string
		seq  uint64
	}
	var mu sync.Mutex
	acks := map[string]acked{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pc, err := nats.Connect(url, nats.NoReconnect())
			if err != nil {
				return
			}
			defer pc.Close()
			pjs, _ := jetstream.New(pc)
			for i := 0; ; i++ {
				subj := fmt.Sprintf("k9.s%d", i%16)
				payload := fmt.Sprintf("w%d-%d", w, i)
				f, err := pjs.PublishAsync(subj, []byte(payload))
				if err != nil {
					return
				}
				select {
				case ack := <-f.Ok():
					mu.Lock()
					acks[payload] = acked{subj, ack.Sequence}
					mu.Unlock()
				case <-f.Err():
					return
				case <-time.After(5 * time.Second):
					return
				}
			}
		}()
	}
	waitFor(t, 10*time.Second, "some acks", func() bool { mu.Lock(); defer mu.Unlock(); return len(acks) > 2000 })
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	wg.Wait()
	startProcess(t, port, args...)
	nc2 := connectNATS(t, url)
	js2, _ := jetstream.New(nc2)
	stored := readWholeStream(t, js2, "K9")
	mu.Lock()
	defer mu.Unlock()
	for payload, a := range acks {
		sm, ok := stored[payload]
		if !ok || sm.seq != a.seq || sm.subj != a.subj {
			t.Fatalf("acknowledged %q (%+v) is not stored as acknowledged: %+v %v", payload, a, sm, ok)
		}
	}
	counts := map[string]uint64{}
	for _, sm := range stored {
		counts[sm.subj]++
	}
	st, _ := js2.Stream(ctx(t), "K9")
	info, err := st.Info(ctx(t), jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(info.State.Subjects) != fmt.Sprint(counts) {
		t.Fatalf("per-subject state %v differs from a full scan %v", info.State.Subjects, counts)
	}
	t.Logf("%d acknowledged, %d stored after SIGKILL", len(acks), len(stored))
}
