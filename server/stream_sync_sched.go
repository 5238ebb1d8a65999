package server

import (
	"container/heap"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// syncSchedule runs the periodic store syncs of every file stream of a
// server (groupCommit.periodic) from one timer, armed for the earliest
// due stream: thousands of idle streams cost one timer, not one each.
// A wake-up syncs every stream due within a slack (a sixteenth of its
// interval) of now, a little early rather than waking again for each, so
// streams created one after another share wake-ups: at most about sixteen
// per interval whatever their number. The syncs run one after another on
// the timer's goroutine (the Advance goroutine of a manual clock), holding
// no schedule lock; each reschedules its stream. The heap holds each
// stream at most once (the item's index) and loses it when the stream
// stops, so it is bounded by the number of streams.
type syncSchedule struct {
	mu      lockorder.Mutex[lockorder.SyncSchedule]
	clk     clock.Clock
	due     syncHeap
	timer   clock.Timer // nil until the first arm
	armedAt time.Time   // when timer fires; zero when not armed
	running bool        // fire is syncing a batch; it arms the timer after
	stopped bool
	wakes   atomic.Int64 // timer firings (tests)
}

// syncItem is one stream's place in the schedule; its fields are guarded
// by the schedule's mu.
type syncItem struct {
	g     *groupCommit
	at    time.Time
	slack time.Duration
	index int // in due; -1 when not queued
}

func newSyncSchedule(clk clock.Clock) *syncSchedule {
	return &syncSchedule{clk: clk}
}

// syncSlack is how early a stream syncing every d may be synced to share
// a wake-up with another.
func syncSlack(d time.Duration) time.Duration { return d / 16 }

// add (re)schedules it d from now.
func (s *syncSchedule) add(it *syncItem, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	it.at, it.slack = s.clk.Now().Add(d), syncSlack(d)
	if it.index >= 0 {
		heap.Fix(&s.due, it.index)
	} else {
		heap.Push(&s.due, it)
	}
	s.armLocked()
}

// remove takes it out of the schedule (its stream stopped).
func (s *syncSchedule) remove(it *syncItem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it.index >= 0 {
		heap.Remove(&s.due, it.index)
	}
}

// armLocked sets the timer for the earliest due item unless it is set
// for that time or earlier already, or a batch runs (fire arms after it).
func (s *syncSchedule) armLocked() {
	if s.running || s.stopped || len(s.due) == 0 {
		return
	}
	want := s.due[0].at
	if !s.armedAt.IsZero() && !s.armedAt.After(want) {
		return
	}
	d := s.clk.Until(want)
	if s.timer == nil {
		s.timer = s.clk.AfterFunc(d, s.fire)
	} else {
		s.timer.Reset(d)
	}
	s.armedAt = want
}

// fire syncs every stream due by now (within its slack).
func (s *syncSchedule) fire() {
	s.wakes.Add(1)
	s.mu.Lock()
	if s.stopped || s.running {
		s.mu.Unlock()
		return
	}
	s.running, s.armedAt = true, time.Time{}
	now := s.clk.Now()
	var batch []*groupCommit
	for len(s.due) > 0 && !s.due[0].at.After(now.Add(s.due[0].slack)) {
		batch = append(batch, heap.Pop(&s.due).(*syncItem).g)
	}
	s.mu.Unlock()
	for _, g := range batch {
		g.periodic() // syncs and calls add again
	}
	s.mu.Lock()
	s.running = false
	s.armLocked()
	s.mu.Unlock()
}

// stop ends the schedule (JetStream shutdown, after every stream stopped).
func (s *syncSchedule) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
	}
	s.armedAt = time.Time{}
	for _, it := range s.due {
		it.index = -1
	}
	clear(s.due)
	s.due = s.due[:0]
}

// syncHeap orders items by due time.
type syncHeap []*syncItem

func (h syncHeap) Len() int           { return len(h) }
func (h syncHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }

func (h syncHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *syncHeap) Push(x any) {
	it := x.(*syncItem)
	it.index = len(*h)
	*h = append(*h, it)
}

func (h *syncHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	it.index = -1
	*h = old[:len(old)-1]
	return it
}
