package server

import (
	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// Bounds of a raft group's queues (tuning, not options: nats-server has no
// such keys). A queue holds memory only for what it holds: an idle group
// keeps raftQueueKeep slots (none once asleep), a busy one grows by
// doubling up to the bound and gives the slots back at the next tick it
// finds the queue empty.
// With thousands of groups, preallocated 8,192-slot channels held about
// 1.2 MiB per group whatever its load.
var (
	// raftInboxMax bounds the peer messages waiting for a group; more are
	// dropped (raft retries), as a full channel dropped them.
	raftInboxMax = 8192
	// raftProposalMax bounds the proposals waiting for a group; more are
	// refused with raft.ErrProposalDropped.
	raftProposalMax = 8192
)

// raftQueueKeep is how many slots an empty queue keeps.
const raftQueueKeep = 8

// raftQueue is a bounded FIFO that grows with its load: producers on any
// goroutine, one consumer (the group goroutine), which waits on ready.
type raftQueue[T any] struct {
	mu    lockorder.Mutex[lockorder.RaftQueue]
	buf   []T // a ring: n items from head
	head  int
	n     int
	max   int
	ready chan struct{} // holds a token while items may be waiting
}

func newRaftQueue[T any](max int) *raftQueue[T] {
	return &raftQueue[T]{max: max, ready: make(chan struct{}, 1)}
}

// push queues v unless the queue is full, and wakes the consumer.
func (q *raftQueue[T]) push(v T) bool {
	if !q.pushQuiet(v) {
		return false
	}
	q.signal()
	return true
}

// pushQuiet queues v unless the queue is full, without waking the
// consumer: the caller signals once it has queued its whole batch. (A
// consumer already awake may take v meanwhile: the order is kept.)
func (q *raftQueue[T]) pushQuiet(v T) bool {
	q.mu.Lock()
	if q.n >= q.max {
		q.mu.Unlock()
		return false
	}
	if q.n == len(q.buf) {
		q.grow()
	}
	q.buf[(q.head+q.n)%len(q.buf)] = v
	q.n++
	q.mu.Unlock()
	return true
}

// grow doubles the ring (never beyond max), keeping the order.
func (q *raftQueue[T]) grow() {
	size := min(max(raftQueueKeep, 2*len(q.buf)), q.max)
	buf := make([]T, size)
	k := copy(buf, q.buf[q.head:])
	copy(buf[k:], q.buf[:q.head])
	q.buf, q.head = buf, 0
}

// pop takes the oldest item.
func (q *raftQueue[T]) pop() (v T, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.n == 0 {
		return v, false
	}
	var zero T
	v, q.buf[q.head] = q.buf[q.head], zero // the slot keeps no payload alive
	q.head = (q.head + 1) % len(q.buf)
	q.n--
	return v, true
}

// more hands the consumer a token again when it stopped with items left.
func (q *raftQueue[T]) more() {
	q.mu.Lock()
	left := q.n > 0
	q.mu.Unlock()
	if left {
		q.signal()
	}
}

func (q *raftQueue[T]) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// trim gives back the slots of a grown queue that is empty now.
func (q *raftQueue[T]) trim() {
	q.mu.Lock()
	if q.n == 0 && len(q.buf) > raftQueueKeep {
		q.buf, q.head = nil, 0
	}
	q.mu.Unlock()
}

// release gives back every slot of an empty queue (a group going to
// sleep: with 10,000 idle groups, the kept slots were ~1 KiB a group).
func (q *raftQueue[T]) release() {
	q.mu.Lock()
	if q.n == 0 {
		q.buf, q.head = nil, 0
	}
	q.mu.Unlock()
}

// size is how many items wait.
func (q *raftQueue[T]) size() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}
