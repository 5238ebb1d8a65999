package server

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Simulated readers (simOptions.reads) read the last message of a subject
// through one server at a time, with STREAM.MSG.GET (only the stream's
// leader answers: there are no routes) or a direct get (the replica on
// that server answers), while the publishers write and the faults run.
// The check: a read returns a sequence no older than any that an answer
// (a publish acknowledged or rejected naming the subject's sequence, or a
// read) had returned before it was made — a subject's last sequence only
// grows, so an older one is a stale read.

const simReadPrefix = "_SIMR."

// simReadTimeout is how long (virtual ms) a reader waits for an answer:
// a STREAM.MSG.GET sent to a server that does not lead the stream gets
// none (no routes carry it to the leader).
const simReadTimeout = 300

// simRead is one read and its answer.
type simRead struct {
	stream, subj string
	direct       bool
	node         string
	call, ret    int64 // virtual ms; ret -1: no answer
	seq          uint64
}

// subscribeReadClient takes the answers to reads made through n.
func (w *simWorld) subscribeReadClient(n *simNode) {
	acc := n.srv.globalAccount()
	if _, err := acc.subscribeInternal(simReadPrefix+">", "", func(_ *subscription, _ *client, _ *Account, subject, _ string, hdr, msg []byte) {
		w.onRead(n, subject, hdr, msg)
	}); err != nil {
		w.fail("%s: read subscription: %v", n.name, err)
	}
}

// readStep makes the next read, then again once it is answered or after a
// client's timeout.
func (w *simWorld) readStep() {
	if w.now >= w.opts.duration || w.err != nil {
		return
	}
	n := w.nodes[w.rng.IntN(len(w.nodes))]
	cfg := w.streams[w.rng.IntN(len(w.streams))]
	direct := w.rng.IntN(2) == 0
	if leads := w.servingLeaders(cfg.Name); !direct && len(leads) > 0 && w.rng.IntN(3) > 0 {
		n = leads[w.rng.IntN(len(leads))] // mostly where an answer can come from
	}
	if !n.up {
		w.at(5, w.readStep)
		return
	}
	r := &simRead{stream: cfg.Name, subj: fmt.Sprintf("%s.k%d", cfg.Name, w.rng.IntN(6)), direct: direct,
		node: n.name, call: w.now, ret: -1}
	id := len(w.reads)
	w.reads = append(w.reads, r)
	reply := simReadPrefix + strconv.Itoa(id)
	subject, body := "$JS.API.STREAM.MSG.GET."+r.stream, []byte(`{"last_by_subj":"`+r.subj+`"}`)
	if r.direct {
		subject, body = "$JS.API.DIRECT.GET."+r.stream+"."+r.subj, nil
	}
	if n.srv.deliver(nil, n.srv.globalAccount(), subject, reply, nil, body) == 0 {
		w.at(2, w.readStep) // no replica serves direct gets here
		return
	}
	n.pump()
	w.at(simReadTimeout, func() {
		if r.ret < 0 {
			w.readStep()
		}
	})
}

// servingLeaders are the nodes whose replica of the stream believes it
// leads: two while a deposed leader has not noticed yet.
func (w *simWorld) servingLeaders(name string) []*simNode {
	var out []*simNode
	for _, n := range w.upNodes() {
		if m := n.stream(name); m != nil && m.isLeader() {
			out = append(out, n)
		}
	}
	return out
}

// onRead records a read's answer: the message's sequence, 0 for none.
func (w *simWorld) onRead(n *simNode, subject string, hdr, msg []byte) {
	id, err := strconv.Atoi(strings.TrimPrefix(subject, simReadPrefix))
	if err != nil || id >= len(w.reads) {
		w.fail("%s: a read answer on %q", n.name, subject)
		return
	}
	r := w.reads[id]
	var seq uint64
	var ok bool
	if r.direct {
		seq, ok = simDirectAnswer(hdr)
	} else {
		seq, ok = simMsgGetAnswer(msg)
	}
	if !ok || r.ret >= 0 {
		return // no outcome (10008), or answered already
	}
	r.ret, r.seq = w.now, seq
	w.stats.Reads++
	w.at(w.rng.Int64N(10)+1, w.readStep)
}

func simDirectAnswer(hdr []byte) (uint64, bool) {
	switch {
	case len(hdr) == 0:
		return 0, false
	case strings.HasPrefix(string(hdr), "NATS/1.0 404"):
		return 0, true
	case strings.HasPrefix(string(hdr), "NATS/1.0 "):
		return 0, false
	}
	seq, err := strconv.ParseUint(string(getHeader(JSSequence, hdr)), 10, 64)
	return seq, err == nil
}

func simMsgGetAnswer(msg []byte) (uint64, bool) {
	var resp struct {
		Error   *ApiError `json:"error"`
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
	}
	if json.Unmarshal(msg, &resp) != nil {
		return 0, false
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == 10037:
		return 0, true
	case resp.Error == nil && resp.Message != nil:
		return resp.Message.Seq, true
	}
	return 0, false
}

// checkReads fails the run at the first stale read. Runs that may lose
// acknowledged publishes (opt-out power loss) are not checked.
func (w *simWorld) checkReads() {
	if !w.opts.durable() || w.opts.powerLoss {
		return
	}
	type seen struct {
		at  int64
		seq uint64
	}
	bySubj := map[string][]seen{}
	for _, op := range w.ops {
		if op.answers > 0 && op.seen > 0 {
			bySubj[op.subj] = append(bySubj[op.subj], seen{op.at, op.seen})
		}
	}
	for _, r := range w.reads {
		if r.ret >= 0 {
			bySubj[r.subj] = append(bySubj[r.subj], seen{r.ret, r.seq})
		}
	}
	for k, ss := range bySubj { // by time, with the highest sequence seen so far
		slices.SortFunc(ss, func(a, b seen) int { return cmp.Compare(a.at, b.at) })
		for i := 1; i < len(ss); i++ {
			ss[i].seq = max(ss[i].seq, ss[i-1].seq)
		}
		bySubj[k] = ss
	}
	for id, r := range w.reads {
		if r.ret < 0 {
			continue
		}
		ss := bySubj[r.subj]
		i, _ := slices.BinarySearchFunc(ss, r.call, func(a seen, call int64) int { return cmp.Compare(a.at, call) })
		if i > 0 && ss[i-1].seq > r.seq {
			kind := "STREAM.MSG.GET"
			if r.direct {
				kind = "direct get"
			}
			w.fail("stale read %d: %s of %s through %s at %d ms answered %d, but %d had been answered at %d ms",
				id, kind, r.subj, r.node, r.call, r.seq, ss[i-1].seq, ss[i-1].at)
			return
		}
	}
}

// TestSimStreamReads runs seeds with readers beside the publishers: no
// read, through any server and whatever the faults, is stale. Many seeds:
// go test ./server -run 'TestSimStreamReads$' -sim.seeds=300 (about 90 s).
func TestSimStreamReads(t *testing.T) {
	if testing.Short() && *simSeed == 0 {
		t.Skip("the stream simulator runs seeds for a while")
	}
	setForTest(t, &fileStoreBlockSize, 2048)
	first, count := uint64(1), 4
	if *simSeeds != 0 {
		first, count = *simFirst, *simSeeds
	}
	if *simSeed != 0 {
		first, count = *simSeed, 1
	}
	var total simStats
	for seed := first; seed < first+uint64(count); seed++ {
		w, err := runSimStreamWith(t, simOptions{seed: seed, reads: true})
		total.add(w.stats)
		if err != nil {
			t.Fatalf("seed %d: %v\nstats %+v\n%s\nreplay: go test ./server -run 'TestSimStreamReads$' -count=1 -v -sim.seed=%d",
				seed, err, w.stats, strings.Join(w.trace[max(0, len(w.trace)-60):], "\n"), seed)
		}
	}
	t.Logf("%d seeds: %+v", count, total)
	if total.Reads == 0 {
		t.Fatal("no read was answered")
	}
}

// TestSimStreamCatchesStaleReads: with stale_direct_reads (direct gets
// answered at once from the replica's state, as nats-server does) the
// read check finds a stale read within a few seeds.
func TestSimStreamCatchesStaleReads(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 2048)
	for seed := uint64(1); seed <= 5; seed++ {
		_, err := runSimStreamWith(t, simOptions{seed: seed, reads: true, staleReads: true})
		if err != nil && strings.Contains(err.Error(), "stale read") {
			t.Logf("seed %d: %v", seed, err)
			return
		}
	}
	t.Fatal("no stale read found in 5 seeds with stale_direct_reads")
}

// TestSimStreamReadsReplay: a seed with readers runs the same way twice
// (the reads a group holds are kept in order, never in a map).
func TestSimStreamReadsReplay(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 2048)
	for _, seed := range []uint64{3} {
		a, errA := runSimStreamWith(t, simOptions{seed: seed, reads: true})
		b, errB := runSimStreamWith(t, simOptions{seed: seed, reads: true})
		if errA != nil || errB != nil {
			t.Fatalf("seed %d: %v / %v", seed, errA, errB)
		}
		if a.stats != b.stats || strings.Join(a.trace, "\n") != strings.Join(b.trace, "\n") {
			t.Fatalf("seed %d ran differently twice:\n%+v\n%+v", seed, a.stats, b.stats)
		}
	}
}
