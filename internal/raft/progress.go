package raft

// progressState is how the leader replicates to one follower.
type progressState uint8

const (
	// stateProbe: one append at a time until the follower's match is found.
	stateProbe progressState = iota
	// stateReplicate: appends are pipelined, up to MaxInflight in flight.
	stateReplicate
	// stateSnapshot: a snapshot was sent; wait for its acknowledgement.
	stateSnapshot
)

func (s progressState) String() string {
	return [...]string{"probe", "replicate", "snapshot"}[s]
}

// inflights is a ring of the appends in flight to a peer: their last
// indexes and entry bytes. It is full at size appends, or at maxBytes bytes
// (the append that crossed the mark is let through). The ring grows with the
// appends out, so an idle group's follower costs no preallocated slots.
type inflights struct {
	start, count    int
	size            int
	buf             []uint64
	sizes           []uint64
	bytes, maxBytes uint64
}

func newInflights(size int, maxBytes uint64) inflights {
	return inflights{size: size, maxBytes: maxBytes}
}

func (in *inflights) full() bool {
	return in.count == in.size || in.maxBytes > 0 && in.bytes >= in.maxBytes
}

func (in *inflights) add(last, bytes uint64) {
	if in.count == in.size {
		panic("raft: inflights overflow")
	}
	if in.count == len(in.buf) {
		in.grow()
	}
	i := (in.start + in.count) % len(in.buf)
	in.buf[i], in.sizes[i] = last, bytes
	in.count++
	in.bytes += bytes
}

// grow doubles the ring (at most to size), keeping the order.
func (in *inflights) grow() {
	n := min(max(4, 2*len(in.buf)), in.size)
	buf, sizes := make([]uint64, n), make([]uint64, n)
	for k := 0; k < in.count; k++ {
		j := (in.start + k) % len(in.buf)
		buf[k], sizes[k] = in.buf[j], in.sizes[j]
	}
	in.buf, in.sizes, in.start = buf, sizes, 0
}

// freeLE releases every append whose last index is <= to.
func (in *inflights) freeLE(to uint64) {
	for in.count > 0 && in.buf[in.start] <= to {
		in.bytes -= in.sizes[in.start]
		in.start = (in.start + 1) % len(in.buf)
		in.count--
	}
	if in.count == 0 {
		in.start, in.bytes = 0, 0
	}
}

func (in *inflights) freeFirst() {
	if in.count > 0 {
		in.freeLE(in.buf[in.start])
	}
}

func (in *inflights) reset() { in.start, in.count, in.bytes = 0, 0, 0 }

// progress is the leader's view of one follower.
type progress struct {
	match, next     uint64
	state           progressState
	probeSent       bool   // probe: an append is out, wait for an answer or a heartbeat
	pendingSnapshot uint64 // snapshot: index of the snapshot sent
	snapTicks       int    // snapshot: ticks since it was sent
	recentActive    bool   // heard from since the last check-quorum round
	heard           bool   // heard from in this term (quorumActive)
	idleTicks       int    // ticks since the last message from the peer
	sendEmpty       bool   // send an append at the next flush even without entries
	readAck         uint64 // highest read round the peer acknowledged
	fresh           bool   // heard from since the leader last woke (quiesce.go)
	down            bool   // its server was down when last looked at (quiesce.go)
	epoch           uint64 // its server's PeerHealth.Epoch when last looked at
	inflights       inflights
}

func newProgress(next uint64, maxInflight int, maxInflightBytes uint64) *progress {
	return &progress{next: next, inflights: newInflights(maxInflight, maxInflightBytes), recentActive: true}
}

func (p *progress) becomeProbe() {
	if p.state == stateSnapshot {
		p.next = max(p.match+1, p.pendingSnapshot+1)
	} else {
		p.next = p.match + 1
	}
	p.state, p.probeSent, p.pendingSnapshot = stateProbe, false, 0
	p.inflights.reset()
}

func (p *progress) becomeReplicate() {
	p.state, p.probeSent, p.pendingSnapshot = stateReplicate, false, 0
	p.next = p.match + 1
	p.inflights.reset()
}

func (p *progress) becomeSnapshot(index uint64) {
	p.state, p.probeSent, p.pendingSnapshot, p.snapTicks = stateSnapshot, false, index, 0
	p.inflights.reset()
}

// maybeUpdate records that the follower holds the log up to n; it reports
// whether that is news.
func (p *progress) maybeUpdate(n uint64) bool {
	updated := n > p.match
	if updated {
		p.match = n
		p.probeSent = false
	}
	p.next = max(p.next, n+1)
	return updated
}

// maybeDecrTo handles a rejection of the append after index `rejected`;
// hint is the leader's guess of the last index that could match. It reports
// whether the rejection was current (not a stale duplicate).
func (p *progress) maybeDecrTo(rejected, hint uint64) bool {
	switch p.state {
	case stateReplicate:
		if rejected <= p.match {
			return false
		}
		p.becomeProbe()
	case stateProbe:
		if p.next-1 != rejected {
			return false
		}
	default:
		return false
	}
	if hint < p.match {
		// A follower whose log is intact never hints below what it
		// acknowledged (its entries up to match agree with ours). This
		// one lost its tail — a machine crash before an fsync, a damaged
		// tail cut off at restart — so it is probed from what it has:
		// kept at match+1 it would reject the same probe for ever.
		p.match = hint
	}
	p.next = max(min(rejected, hint+1), p.match+1)
	p.probeSent = false
	return true
}

func (p *progress) paused() bool {
	switch p.state {
	case stateProbe:
		return p.probeSent
	case stateReplicate:
		return p.inflights.full()
	}
	return true
}
