package sim

import "github.com/nats-io/nats-server/v2/internal/raft"

type evKind uint8

const (
	evTick    evKind = iota // a node's clock ticks
	evDeliver               // a message arrives
	evClient                // clients propose
	evFault                 // the fault injector acts
	evRestart               // a crashed node comes back
	evHeal                  // a partition ends
)

// event is something that happens at virtual time at (milliseconds). seq
// breaks ties in scheduling order, so the queue order is deterministic.
type event struct {
	at   int64
	seq  uint64
	kind evKind
	node int    // index of the node (tick, restart)
	gen  uint64 // incarnation (tick, restart) or partition generation (heal)
	msg  raft.Message
}

// queue is a binary min-heap of events by (at, seq).
type queue struct {
	evs []event
	seq uint64
}

func (q *queue) less(i, j int) bool {
	a, b := &q.evs[i], &q.evs[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (q *queue) push(e event) {
	q.seq++
	e.seq = q.seq
	q.evs = append(q.evs, e)
	for i := len(q.evs) - 1; i > 0; {
		p := (i - 1) / 2
		if !q.less(i, p) {
			break
		}
		q.evs[i], q.evs[p] = q.evs[p], q.evs[i]
		i = p
	}
}

func (q *queue) peek() *event { return &q.evs[0] }

func (q *queue) pop() event {
	top := q.evs[0]
	last := len(q.evs) - 1
	q.evs[0] = q.evs[last]
	q.evs[last] = event{}
	q.evs = q.evs[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && q.less(l, m) {
			m = l
		}
		if r < last && q.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		q.evs[i], q.evs[m] = q.evs[m], q.evs[i]
		i = m
	}
	return top
}
