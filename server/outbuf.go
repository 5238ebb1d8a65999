package server

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// outChunkSize is the size of pooled outbound chunks. Output is a list of
// chunks written with one writev, so queuing never copies what is already
// queued and a busy connection recycles a few chunks instead of growing one
// large buffer.
const outChunkSize = 32 * 1024

// Flow control: a publisher whose read fed a receiver that has more than
// stallBytes queued waits (at most stallMax) for that receiver's writer to
// catch up, so fast publishers slow to their consumers' pace instead of
// piling up memory. Past max_pending the receiver is still cut off.
const (
	stallBytes = 2 * 1024 * 1024
	stallMax   = 50 * time.Millisecond
)

var chunkPool = sync.Pool{New: func() any { b := make([]byte, 0, outChunkSize); return &b }}

// outbound is a client's pending output, guarded by the client's mu.
type outbound struct {
	chunks  [][]byte
	pending int // bytes queued
	spare   [][]byte
	wbufs   net.Buffers   // the write loop's scratch iovec list
	hdr     []byte        // scratch for MSG/HMSG control lines
	stc     chan struct{} // closed when pending drops below the stall mark
	// pendingHint is pending as of the last queued message, read without
	// the lock by publishers deciding whether to wait (flow control).
	pendingHint atomic.Int64
	sig         chan struct{}
	done        chan struct{}
	writes      atomic.Int64 // socket writes made by the write loop
	batch       raftBatchOut // the RAFTB frame being filled (outbuf_batch.go)
	// beatsOnly is batch.beats of an open frame, read by the write loop
	// without the lock (outbuf_batch.go).
	beatsOnly atomic.Bool
}

func (o *outbound) init() {
	o.sig = make(chan struct{}, 1)
	o.done = make(chan struct{})
}

func (o *outbound) signal() {
	select {
	case o.sig <- struct{}{}:
	default:
	}
}

// write queues p after the open RAFTB frame, which it closes (what was
// queued before leaves before).
func (o *outbound) write(p []byte) {
	if o.batch.size != nil {
		o.closeBatch()
	}
	o.put(p)
}

func (o *outbound) writeString(s string) {
	o.write(unsafeBytes(s))
}

// writeMsg queues a message: its control line (kept as the scratch
// buffer for the next one), headers, payload and the closing CRLF.
func (o *outbound) writeMsg(ctrl, hdr, msg []byte) {
	o.hdr = ctrl
	o.write(ctrl)
	o.write(hdr)
	o.write(msg)
	o.writeString("\r\n")
	o.pendingHint.Store(int64(o.pending)) // once per message, for flow control
}

// take hands the queued chunks to the write loop.
func (o *outbound) take() ([][]byte, int) {
	o.closeBatch()
	chunks, n := o.chunks, o.pending
	o.chunks, o.spare = o.spare[:0], nil
	o.pending = 0
	o.pendingHint.Store(0)
	return chunks, n
}

// recycle returns written chunks to the pool and keeps the slice for reuse.
func (o *outbound) recycle(chunks [][]byte) {
	for i, c := range chunks {
		if cap(c) == outChunkSize {
			c = c[:0]
			chunkPool.Put(&c)
		}
		chunks[i] = nil
	}
	if o.spare == nil && cap(chunks) <= 1024 {
		o.spare = chunks[:0]
	}
}

// drop discards everything queued (slow consumer close).
func (o *outbound) drop() {
	chunks, _ := o.take()
	o.recycle(chunks)
}
