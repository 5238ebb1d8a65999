package server

import (
	"encoding/binary"
	"runtime"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A RAFTB frame (raft_batch.go) is built in place in a route's output:
// its control line goes out with the size digits zero-padded to a fixed
// width, records follow as they are queued, and the frame is closed (its
// size written into the digits, its CRLF queued) by whatever queues
// anything else on the route and by the write loop's take, so the frame
// leaves with the next write and holds every raft record queued since the
// last one. Nothing waits for a timer, records are copied once (as a RAFT
// frame is), and the open frame counts in pending as any output does.

// raftBatchLine is the control line of an open frame; its size digits are
// filled in when it closes.
const raftBatchLine = "RAFTB 0000000\r\n"

// raftBatchDigits is where the size digits sit in raftBatchLine.
const raftBatchDigits = len("RAFTB ")

// raftBatchOut is the open RAFTB frame of a route's output (guarded by
// the client's mu with the rest of outbound).
type raftBatchOut struct {
	size     []byte // the open frame's size digits (in a chunk); nil: none open
	start    int    // pending when its payload began
	from, to raft.ID
	// beats: every record of the open frame is a heartbeat or its answer
	// (the write loop waits for more of them: yieldToRaftSenders).
	beats bool
}

// put queues p after what is queued (an open frame stays open).
func (o *outbound) put(p []byte) {
	o.pending += len(p)
	for len(p) > 0 {
		n := len(o.chunks)
		if n == 0 || len(o.chunks[n-1]) == cap(o.chunks[n-1]) {
			o.chunks = append(o.chunks, (*chunkPool.Get().(*[]byte))[:0])
			n++
		}
		last := o.chunks[n-1]
		m := copy(last[len(last):cap(last)], p)
		o.chunks[n-1] = last[:len(last)+m]
		p = p[m:]
	}
}

// putRaftRecord queues a raft record (appendRaftRecord) from one peer id
// to another in the open frame, or in a new one when none is open, the
// open one is for other peer ids or would grow past raftBatchMax; opened
// tells a new frame was begun.
func (o *outbound) putRaftRecord(from, to raft.ID, typ raft.MessageType, rec []byte) (opened bool) {
	if o.batch.size != nil && (o.batch.from != from || o.batch.to != to || o.pending-o.batch.start+len(rec) > raftBatchMax) {
		o.closeBatch()
	}
	if o.batch.size == nil {
		o.openBatch(from, to)
		o.batch.beats = true
		opened = true
	}
	o.put(rec)
	o.batch.beats = o.batch.beats && (typ == raft.MsgHeartbeat || typ == raft.MsgHeartbeatResp)
	o.beatsOnly.Store(o.batch.beats)
	return opened
}

// openBatch queues the control line of a new frame (in one chunk, so its
// digits can be filled in later) and the peer ids it carries.
func (o *outbound) openBatch(from, to raft.ID) {
	n := len(o.chunks)
	if n == 0 || cap(o.chunks[n-1])-len(o.chunks[n-1]) < len(raftBatchLine) {
		o.chunks = append(o.chunks, (*chunkPool.Get().(*[]byte))[:0])
		n++
	}
	last := o.chunks[n-1]
	k := len(last)
	last = append(last, raftBatchLine...)
	o.chunks[n-1] = last
	o.pending += len(raftBatchLine)
	o.batch = raftBatchOut{size: last[k+raftBatchDigits : k+len(raftBatchLine)-2], start: o.pending, from: from, to: to}
	var ids [2 * binary.MaxVarintLen64]byte
	o.put(binary.AppendUvarint(binary.AppendUvarint(ids[:0], uint64(from)), uint64(to)))
}

// closeBatch ends the open frame, if any: its size goes into the control
// line, its CRLF after the records.
func (o *outbound) closeBatch() {
	if o.batch.size == nil {
		return
	}
	v := o.pending - o.batch.start
	for i := len(o.batch.size) - 1; i >= 0; i-- {
		o.batch.size[i] = byte('0' + v%10)
		v /= 10
	}
	o.batch = raftBatchOut{}
	o.beatsOnly.Store(false)
	o.put(crlfBytes)
}

var crlfBytes = []byte("\r\n")

// yieldToRaftSenders lets the goroutines made runnable with the route's
// writer run first when the open RAFTB frame holds only heartbeats and
// their answers: the groups woken by one tick of the raft clock
// (raft_clock.go), or by one frame of heartbeats read, then queue theirs
// before the frame closes. Woken by the first of them, the writer would
// otherwise run next on its processor (Go runs a goroutine just readied
// before the others queued) and send it alone. Nothing waits for a
// timer: the writer runs again as soon as the processor has no other
// goroutine to run. A frame with anything else (an append, a vote, an
// answer to an append) goes at once: a publish waits for those.
func (c *client) yieldToRaftSenders() {
	if c.out.beatsOnly.Load() {
		runtime.Gosched()
	}
}
