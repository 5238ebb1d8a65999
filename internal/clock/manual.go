package clock

import (
	"container/heap"
	"time"

	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// Manual is a clock that moves only when Advance is called. Timers due
// during an Advance fire in order of their deadline, ties in the order
// the timers were created; Now reads each one's deadline while it fires.
// AfterFunc callbacks run synchronously on the goroutine calling Advance
// (without the clock's lock, so they may use the clock, but they must not
// call Advance); timer and ticker channels hold one value, and a tick
// that finds the channel full is dropped, as with package time. A timer
// set to fire in d <= 0 is due at once and fires on the next Advance
// (even Advance(0)), never inside the call that set it, so callers may
// hold their locks while they set timers.
//
// All methods are safe for concurrent use; runs are deterministic when a
// single goroutine advances the clock.
type Manual struct {
	mu      lockorder.Mutex[lockorder.ClockManual]
	now     time.Time
	created uint64
	pending timerHeap
}

// NewManual returns a Manual clock reading start.
func NewManual(start time.Time) *Manual { return &Manual{now: start} }

func (m *Manual) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *Manual) Since(t time.Time) time.Duration { return m.Now().Sub(t) }
func (m *Manual) Until(t time.Time) time.Duration { return t.Sub(m.Now()) }

func (m *Manual) AfterFunc(d time.Duration, f func()) Timer {
	return m.add(&manualTimer{f: f}, d)
}

func (m *Manual) NewTimer(d time.Duration) Timer {
	return m.add(&manualTimer{ch: make(chan time.Time, 1)}, d)
}

func (m *Manual) NewTicker(d time.Duration) Ticker {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	return manualTicker{m.add(&manualTimer{ch: make(chan time.Time, 1), period: d}, d)}
}

func (m *Manual) add(t *manualTimer, d time.Duration) *manualTimer {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.created++
	t.m, t.seq, t.index = m, m.created, -1
	m.arm(t, d)
	return t
}

// arm schedules t at now+d; the caller holds mu.
func (m *Manual) arm(t *manualTimer, d time.Duration) {
	t.when = m.now.Add(max(d, 0))
	if t.index >= 0 {
		heap.Fix(&m.pending, t.index)
		return
	}
	heap.Push(&m.pending, t)
}

// Next returns the earliest deadline of a pending timer or ticker.
func (m *Manual) Next() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.pending) == 0 {
		return time.Time{}, false
	}
	return m.pending[0].when, true
}

// Pending returns how many timers and tickers are pending.
func (m *Manual) Pending() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}

// Advance moves the clock forward by d (a negative d counts as 0), firing
// every timer that falls due on the way, including those that callbacks
// set within the span.
func (m *Manual) Advance(d time.Duration) {
	m.mu.Lock()
	target := m.now.Add(max(d, 0))
	m.mu.Unlock()
	for m.fireNext(target) {
	}
	m.mu.Lock()
	if m.now.Before(target) {
		m.now = target
	}
	m.mu.Unlock()
}

// fireNext fires the earliest timer due by target, if any.
func (m *Manual) fireNext(target time.Time) bool {
	m.mu.Lock()
	if len(m.pending) == 0 || m.pending[0].when.After(target) {
		m.mu.Unlock()
		return false
	}
	t := m.pending[0]
	if t.when.After(m.now) {
		m.now = t.when
	}
	if t.period > 0 {
		t.when = t.when.Add(t.period)
		heap.Fix(&m.pending, 0)
	} else {
		heap.Pop(&m.pending)
	}
	f := t.f
	if f == nil {
		// Sent under mu, so that a Stop or Reset that returns after this
		// point drains it: no stale value is received after either.
		select {
		case t.ch <- m.now:
		default:
		}
	}
	m.mu.Unlock()
	if f != nil {
		f()
	}
	return true
}

type manualTimer struct {
	m      *Manual
	when   time.Time
	seq    uint64        // creation order, breaking ties between deadlines
	period time.Duration // a ticker's; 0 for a timer
	f      func()        // an AfterFunc timer's; nil for the others
	ch     chan time.Time
	index  int // in m.pending; -1 when not pending
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) Stop() bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return t.stopLocked()
}

func (t *manualTimer) stopLocked() bool {
	if t.ch != nil {
		select {
		case <-t.ch:
		default:
		}
	}
	if t.index < 0 {
		return false
	}
	heap.Remove(&t.m.pending, t.index)
	return true
}

func (t *manualTimer) Reset(d time.Duration) bool {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	was := t.stopLocked()
	t.m.arm(t, d)
	return was
}

// manualTicker is a periodic manualTimer.
type manualTicker struct{ t *manualTimer }

func (t manualTicker) C() <-chan time.Time { return t.t.ch }
func (t manualTicker) Stop()               { t.t.Stop() }

// timerHeap orders pending timers by deadline, then creation.
type timerHeap []*manualTimer

func (h timerHeap) Len() int { return len(h) }

func (h timerHeap) Less(i, j int) bool {
	if !h[i].when.Equal(h[j].when) {
		return h[i].when.Before(h[j].when)
	}
	return h[i].seq < h[j].seq
}

func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *timerHeap) Push(x any) {
	t := x.(*manualTimer)
	t.index = len(*h)
	*h = append(*h, t)
}

func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*h = old[:len(old)-1]
	return t
}
