package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// A simulated consumer client (simOptions.consumers): a durable pull
// consumer of stream F, created through the stream's log, pulled from
// the stream's leader and acknowledged with AckSync (or left for
// redelivery, or naked), under the same faults as the publishers. The
// per-step digest check covers the consumer's state on every replica
// (simStreamDigest folds consumersDigestLocked); at the end no message
// whose AckSync was answered is pending on any replica, and none was
// delivered after the answer (a consumer sequence above every replica's
// delivered sequence when the answer came: consumer sequences are
// assigned in log order); no delivery (consumer sequence) reaches the
// client twice.

const (
	simPullPrefix = "_SIMP." // pull request replies: deliveries and statuses
	simAckPrefix  = "_SIMA." // AckSync answers: _SIMA.<stream seq>
	simConsumer   = "D"
)

type simConsumerClient struct {
	acked map[uint64]bool   // stream seqs whose AckSync was answered
	bound map[uint64]uint64 // stream seq → the highest delivered consumer seq of a replica when its first AckSync was answered
	csqs  map[uint64]string // consumer seqs received → the delivery's ack subject
	// cameBack describes the first delivery made after an AckSync of its
	// message was answered.
	cameBack string
	pulls    int
	// reads are each node's connection of the client while a read is
	// under way: plain +ACKs wait in its read batch hook until it ends.
	reads map[*simNode]*client
	plain int // plain +ACKs sent
}

// subscribeConsumerClient makes node n's connection of the client.
func (w *simWorld) subscribeConsumerClient(n *simNode, inc int) {
	acc := n.srv.globalAccount()
	if _, err := acc.subscribeInternal(simPullPrefix+">", "", func(_ *subscription, c *client, _ *Account, _, reply string, _, _ []byte) {
		if reply != "" {
			r := strings.Clone(reply)
			if c == nil { // every node's subscription gets a copy; the leader's own (not routed) is the client's
				w.received(r)
			}
			w.at(1+w.rng.Int64N(20), func() { w.simAck(n, inc, r) })
		}
	}); err != nil {
		w.fail("%s: pull subscription: %v", n.name, err)
	}
	if _, err := acc.subscribeInternal(simAckPrefix+">", "", func(_ *subscription, _ *client, _ *Account, subject, _ string, _, _ []byte) {
		if seq, err := strconv.ParseUint(strings.TrimPrefix(subject, simAckPrefix), 10, 64); err == nil {
			if !w.cons.acked[seq] {
				w.cons.bound[seq] = w.deliveredBound()
			}
			w.cons.acked[seq] = true
		}
	}); err != nil {
		w.fail("%s: ack subscription: %v", n.name, err)
	}
}

// createConsumer proposes the consumer through stream F's leader.
func (w *simWorld) createConsumer() bool {
	lead := w.streamLeader("F")
	if lead == nil {
		return false
	}
	mset := lead.stream("F")
	mset.mu.Lock()
	exists := mset.consumers[simConsumer] != nil
	mset.mu.Unlock()
	if exists {
		return true
	}
	cfg := &ConsumerConfig{Durable: simConsumer, AckPolicy: AckExplicit, AckWait: 300 * time.Millisecond, MaxDeliver: -1, MaxAckPending: 50}
	mset.proposeConsumerEntry(&cstate.Entry{Op: cstate.OpCreate, TS: w.virtual().UnixNano(), Consumer: simConsumer, Config: stateConfig(cfg)}, "")
	lead.pump()
	return false
}

// consumerStep pulls a batch from the stream's leader, as a client that
// found it would.
func (w *simWorld) consumerStep() {
	if w.now >= w.opts.duration {
		return
	}
	if n := w.streamLeader("F"); n != nil {
		w.cons.pulls++
		reply := simPullPrefix + strconv.Itoa(w.cons.pulls)
		body := []byte(`{"batch":5,"expires":400000000}`)
		n.srv.deliver(nil, n.srv.globalAccount(), jsAPIPrefix+"CONSUMER.MSG.NEXT.F."+simConsumer, reply, nil, body)
		n.pump()
	}
	w.at(50+w.rng.Int64N(200), w.consumerStep)
}

// received checks a delivery the client got (ack subject ackSubj).
func (w *simWorld) received(ackSubj string) {
	a, ok := cstate.ParseAckSubject(ackSubj)
	if !ok {
		return // simAck reports it
	}
	if prev, ok := w.cons.csqs[a.CSeq]; ok {
		w.fail("consumer seq %d delivered twice: %s and %s", a.CSeq, prev, ackSubj)
		return
	}
	w.cons.csqs[a.CSeq] = ackSubj
	if b, ok := w.cons.bound[a.SSeq]; ok && a.CSeq > b && w.cons.cameBack == "" {
		// Reported at the end, unless a power loss lost acknowledged entries.
		w.cons.cameBack = fmt.Sprintf("message %d delivered as %s after its AckSync was answered (replicas had delivered up to consumer seq %d)", a.SSeq, ackSubj, b)
	}
}

// deliveredBound is the highest delivered consumer sequence of the
// consumer's replicas now: at least the one of the replica that answered.
func (w *simWorld) deliveredBound() uint64 {
	var b uint64
	for _, n := range w.nodes {
		mset := n.stream("F")
		if mset == nil {
			continue
		}
		mset.mu.Lock()
		if o := mset.consumers[simConsumer]; o != nil {
			b = max(b, o.state.Delivered().Consumer)
		}
		mset.mu.Unlock()
	}
	return b
}

// simAck acknowledges a delivery on the node it came from: mostly an
// AckSync, sometimes a nak, sometimes nothing (redelivered later).
func (w *simWorld) simAck(n *simNode, inc int, ackSubj string) {
	if !n.up || n.inc != inc {
		return
	}
	a, ok := cstate.ParseAckSubject(ackSubj)
	if !ok {
		w.fail("a delivery with ack subject %q", ackSubj)
		return
	}
	switch r := w.rng.IntN(10); {
	case r < 7:
		n.srv.deliver(nil, n.srv.globalAccount(), ackSubj, simAckPrefix+strconv.FormatUint(a.SSeq, 10), nil, []byte("+ACK"))
	case r < 8:
		n.srv.deliver(nil, n.srv.globalAccount(), ackSubj, "", nil, []byte("-NAK"))
	case r < 9:
		w.plainAck(n, ackSubj)
	}
	n.pump()
}

// plainAck sends a +ACK without a reply as a client's read loop does: the
// acks of one read (a window of 5 to 35 steps) are proposed together when
// it ends (consumer_cluster_acks.go), in one OpAcks entry on a leader.
func (w *simWorld) plainAck(n *simNode, ackSubj string) {
	mset := n.stream("F")
	if mset == nil {
		return
	}
	if w.cons.reads == nil {
		w.cons.reads = map[*simNode]*client{}
	}
	c := w.cons.reads[n]
	if c == nil {
		c = &client{}
		w.cons.reads[n] = c
		inc := n.inc
		w.at(5+w.rng.Int64N(30), func() {
			delete(w.cons.reads, n)
			if n.up && n.inc == inc {
				c.endReadBatch()
				n.pump()
			}
		})
	}
	w.cons.plain++
	mset.ackMsg(nil, c, nil, ackSubj, "", nil, []byte("+ACK"))
}

// checkConsumer: at the end, every replica has the consumer, and nothing
// whose AckSync was answered is pending on any of them.
func (w *simWorld) checkConsumer() {
	if w.cons.cameBack != "" && w.stats.Lost == 0 {
		w.fail("%s", w.cons.cameBack)
		return
	}
	lead := w.streamLeader("F")
	sa := lead.cluster().assignment(globalAccountName, "F")
	for _, p := range sa.Peers {
		mset := w.nodeNamed(p).stream("F")
		mset.mu.Lock()
		o := mset.consumers[simConsumer]
		var bad uint64
		for seq := range w.cons.acked {
			if o != nil {
				if _, pending := o.state.PendingOf(seq); pending && (bad == 0 || seq < bad) {
					bad = seq
				}
			}
		}
		mset.mu.Unlock()
		switch {
		case o == nil:
			w.fail("%s has no consumer %s", p, simConsumer)
			return
		case bad != 0 && w.stats.Lost == 0:
			w.fail("%s: message %d is pending, but its AckSync was answered", p, bad)
			return
		}
	}
}

// TestSimStreamConsumer runs the simulator with the consumer client.
func TestSimStreamConsumer(t *testing.T) {
	if testing.Short() && *simSeed == 0 {
		t.Skip("the stream simulator runs seeds for a while")
	}
	setForTest(t, &fileStoreBlockSize, 2048)
	first, count := uint64(1), 10
	if *simSeeds != 0 {
		first, count = *simFirst, *simSeeds
	}
	if *simSeed != 0 {
		first, count = *simSeed, 1
	}
	var total simStats
	acked, received, plain := 0, 0, 0
	for seed := first; seed < first+uint64(count); seed++ {
		w, err := runSimStreamWith(t, simOptions{seed: seed, consumers: true})
		total.add(w.stats)
		acked += len(w.cons.acked)
		received += len(w.cons.csqs)
		plain += w.cons.plain
		if err != nil {
			t.Fatalf("seed %d: %v\nstats %+v\n%s\nreplay: go test ./server -run 'TestSimStreamConsumer$' -count=1 -v -sim.seed=%d",
				seed, err, w.stats, strings.Join(w.trace[max(0, len(w.trace)-60):], "\n"), seed)
		}
	}
	t.Logf("%d seeds: %+v; %d deliveries received, %d consumer acks answered, %d plain acks sent", count, total, received, acked, plain)
	if acked == 0 {
		t.Fatal("the consumer client acknowledged nothing")
	}
}

// TestSimStreamConsumerReplays: a seed with the consumer client runs the
// same way twice (the consumer's leader side and apply are deterministic
// under the simulator's clock).
func TestSimStreamConsumerReplays(t *testing.T) {
	setForTest(t, &fileStoreBlockSize, 2048)
	for _, seed := range []uint64{3, 11} {
		a, errA := runSimStreamWith(t, simOptions{seed: seed, consumers: true})
		b, errB := runSimStreamWith(t, simOptions{seed: seed, consumers: true})
		if errA != nil || errB != nil {
			t.Fatalf("seed %d: %v / %v", seed, errA, errB)
		}
		if a.stats != b.stats || len(a.cons.acked) != len(b.cons.acked) || strings.Join(a.trace, "\n") != strings.Join(b.trace, "\n") {
			t.Fatalf("seed %d ran differently twice:\n%+v %d\n%+v %d", seed, a.stats, len(a.cons.acked), b.stats, len(b.cons.acked))
		}
	}
}
