package server

import (
	"encoding/binary"
	"errors"
	"slices"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Linearizable reads: a read of a group's state is queued (raftGroup.Read)
// and served on the group goroutine once the replica has applied up to a
// read index, the leader's commit index confirmed by a heartbeat round
// made after the read was queued (internal/raft/read.go). A group has one
// ReadIndex request out at a time: every read queued while it is out
// shares the next one, so one heartbeat round (fewer rounds, larger
// batches: under load the rounds' messages cost more than the wait). A follower's request goes to the leader and back;
// it is then served from the follower's own state once applied that far.
//
// A leader under its lease (raftLeaseTicks) takes its commit index as the
// read index at once, when the reads are taken from the queue (after they
// arrived: a leader stopped meanwhile finds its lease gone), and the batch
// waits only for the apply; followers' requests are answered the same way
// by such a leader, one message there and one back.
//
// A request the core drops (the leader stepped down, no leader is known,
// a message was lost) is asked again: at once when the group's leader or
// term changes, else after readRetryTicks. A read not served within
// readGiveUpTicks is told errReadTimeout and gets no state.

// readRetryTicks is how long an asked batch waits for its read index
// before it is asked again (half an election timeout).
const readRetryTicks = 8

// readGiveUpTicks bounds a read's wait (4 s at 50 ms ticks): clients time
// out sooner, a read of a group cut off from its quorum gives up here.
const readGiveUpTicks = 80

// raftReadMax bounds the reads queued for a group, and those it holds
// (asked, or waiting for the apply); more are refused.
var raftReadMax = 8192

var (
	errReadTimeout = errors.New("raft read: no read index in time")
	errReadsFull   = errors.New("raft read: too many reads waiting")
)

// groupRead is one queued read; serve is called once, on the group
// goroutine (or the caller's, for a refusal): with nil when the state may
// be read, else with why it may not. It delivers its answer with
// deliverBatch(wake, …): the receivers are woken once per batch served
// (nil wake: deliver wakes them at once).
type groupRead struct {
	serve func(err error, wake map[*client]struct{})
	born  uint64 // the group's tick count when it was asked first
}

// readBatch is the reads of one ReadIndex call.
type readBatch struct {
	reads []groupRead
	id    uint64 // the request context
	asked uint64 // tick of the call
	index uint64 // read index, once known
}

// groupReads is the state of a group's reads (group goroutine only).
type groupReads struct {
	ticks    uint64
	seq      uint64               // the last request context handed out
	inflight []*readBatch         // asked, in order (a slice: the simulator replays)
	ready    []*readBatch         // index known, waiting for the apply
	retry    []groupRead          // to ask again
	held     int                  // reads in inflight, ready and retry
	wake     map[*client]struct{} // the receivers a finish woke
	lead     raft.ID              // leader and term of the last pass:
	term     uint64               // a change means asked batches are lost
}

// Read queues a linearizable read of the group's state; serve is called
// once (see groupRead). A full queue or a stopped group refuses at once.
func (g *raftGroup) Read(serve func(err error, wake map[*client]struct{})) {
	select {
	case <-g.done:
		serve(errGroupStopped, nil)
		return
	default:
	}
	if !g.reads.push(groupRead{serve: serve}) {
		serve(errReadsFull, nil)
	}
}

// startReads asks one read index for every read queued since the last
// pass and for the reads to ask again.
func (g *raftGroup) startReads() {
	rd := &g.rd
	b := &readBatch{reads: rd.retry, asked: rd.ticks}
	rd.retry = nil
	for rd.held < raftReadMax { // at the bound the queue waits (finish signals it)
		r, ok := g.reads.pop()
		if !ok {
			break
		}
		r.born = rd.ticks
		rd.held++
		b.reads = append(b.reads, r)
	}
	if len(b.reads) == 0 {
		return
	}
	if index, ok := g.drv.Node.LeaseRead(); ok { // a leader under its lease: no round
		b.index = index
		rd.ready = append(rd.ready, b)
		return
	}
	if len(rd.inflight) > 0 { // one request at a time: these wait for its answer
		rd.retry = b.reads
		return
	}
	rd.seq++
	var ctx [8]byte
	binary.BigEndian.PutUint64(ctx[:], rd.seq)
	if err := g.drv.Node.ReadIndex(ctx[:]); err != nil {
		rd.retry = b.reads // no leader, or too many pending: next tick
		return
	}
	b.id = rd.seq
	rd.inflight = append(rd.inflight, b)
}

// readStates takes the read indexes a Ready brought (Driver.Reads).
func (g *raftGroup) readStates(rs []raft.ReadState) {
	rd := &g.rd
	for _, s := range rs {
		if len(s.Ctx) != 8 {
			continue
		}
		id := binary.BigEndian.Uint64(s.Ctx)
		i := slices.IndexFunc(rd.inflight, func(b *readBatch) bool { return b.id == id })
		if i < 0 {
			continue // asked again meanwhile
		}
		b := rd.inflight[i]
		rd.inflight = slices.Delete(rd.inflight, i, i+1)
		b.index = s.Index
		rd.ready = append(rd.ready, b)
	}
}

// serveReads serves the batches whose index the replica has applied, and
// asks again for those a change of leader or term lost (after each pass);
// it reports whether it asked.
func (g *raftGroup) serveReads() bool {
	rd := &g.rd
	g.serveApplied()
	if st := g.seen; st.Lead != rd.lead || st.Term != rd.term {
		rd.lead, rd.term = st.Lead, st.Term
		if len(rd.inflight) > 0 {
			g.askAgain(func(*readBatch) bool { return true })
			g.startReads()
			g.serveApplied() // those a lease answered
			return true
		}
	}
	if len(rd.inflight) == 0 && len(rd.retry) > 0 { // the reads that waited for the last answer
		g.startReads()
		g.serveApplied()
		return true
	}
	return false
}

// serveApplied serves the batches whose index the replica has applied.
func (g *raftGroup) serveApplied() {
	rd := &g.rd
	if len(rd.ready) == 0 {
		return
	}
	_, applied := g.drv.Node.Indexes()
	g.finishReadyIf(func(b *readBatch) bool { return b.index <= applied }, nil)
}

// finishReadyIf finishes, with err, the ready batches done says are done
// and keeps the others in order.
func (g *raftGroup) finishReadyIf(done func(*readBatch) bool, err error) {
	rd := &g.rd
	k := 0
	for _, b := range rd.ready {
		if done(b) {
			g.finish(b.reads, err)
		} else {
			rd.ready[k] = b
			k++
		}
	}
	clear(rd.ready[k:])
	rd.ready = rd.ready[:k]
}

// readTick ages the reads: batches asked too long ago are asked again,
// reads past their bound give up.
func (g *raftGroup) readTick() {
	rd := &g.rd
	rd.ticks++
	if len(rd.inflight) == 0 && len(rd.retry) == 0 && len(rd.ready) == 0 {
		return
	}
	g.askAgain(func(b *readBatch) bool { return rd.ticks-b.asked >= readRetryTicks })
	// Applying lags: give up on the oldest.
	g.finishReadyIf(func(b *readBatch) bool { return rd.ticks-b.reads[0].born >= readGiveUpTicks }, errReadTimeout)
	live := rd.retry[:0]
	for _, r := range rd.retry {
		if rd.ticks-r.born >= readGiveUpTicks {
			g.finish([]groupRead{r}, errReadTimeout)
		} else {
			live = append(live, r)
		}
	}
	clear(rd.retry[len(live):])
	rd.retry = live
	if len(rd.retry) > 0 {
		g.startReads()
	}
}

// askAgain moves the asked batches that lost picks to the retry list.
func (g *raftGroup) askAgain(lost func(*readBatch) bool) {
	rd := &g.rd
	rd.inflight = slices.DeleteFunc(rd.inflight, func(b *readBatch) bool {
		if lost(b) {
			rd.retry = append(rd.retry, b.reads...)
			return true
		}
		return false
	})
}

// finish serves reads the group held, and lets the queue go on below
// the bound.
func (g *raftGroup) finish(reads []groupRead, err error) {
	if g.rd.wake == nil {
		g.rd.wake = map[*client]struct{}{}
	}
	for _, r := range reads {
		r.serve(err, g.rd.wake)
	}
	wakeAll(g.rd.wake)
	g.rd.held -= len(reads)
	g.reads.more()
}
