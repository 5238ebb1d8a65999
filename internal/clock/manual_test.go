package clock

import (
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Callbacks fire in deadline order, ties in creation order, each reading
// its own deadline as the time; one set by a callback within the span
// fires in the same Advance.
func TestManualOrder(t *testing.T) {
	m := NewManual(t0)
	var got []string
	rec := func(name string, at time.Duration) func() {
		return func() {
			if now := m.Now(); !now.Equal(t0.Add(at)) {
				t.Errorf("%s ran at %v, want %v", name, now.Sub(t0), at)
			}
			got = append(got, name)
		}
	}
	m.AfterFunc(3*time.Second, rec("c", 3*time.Second))
	m.AfterFunc(time.Second, rec("a1", time.Second))
	m.AfterFunc(2*time.Second, func() {
		rec("b", 2*time.Second)()
		m.AfterFunc(500*time.Millisecond, rec("b+", 2500*time.Millisecond))
	})
	m.AfterFunc(time.Second, rec("a2", time.Second))
	m.AfterFunc(10*time.Second, rec("late", 10*time.Second))
	if next, ok := m.Next(); !ok || !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("Next = %v %v", next, ok)
	}
	m.Advance(time.Second - 1)
	if len(got) != 0 {
		t.Fatalf("fired early: %v", got)
	}
	m.Advance(5*time.Second + 1)
	if want := []string{"a1", "a2", "b", "b+", "c"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if now := m.Now(); !now.Equal(t0.Add(6 * time.Second)) {
		t.Fatalf("now %v", now.Sub(t0))
	}
	if next, _ := m.Next(); !next.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("Next = %v", next.Sub(t0))
	}
}

// A timer due now fires on the next Advance, not inside AfterFunc.
func TestManualDueNow(t *testing.T) {
	m := NewManual(t0)
	var n int
	m.AfterFunc(0, func() { n++ })
	m.AfterFunc(-time.Second, func() { n++ })
	if n != 0 {
		t.Fatal("fired inside AfterFunc")
	}
	m.Advance(0)
	if n != 2 {
		t.Fatalf("fired %d", n)
	}
	if _, ok := m.Next(); ok {
		t.Fatal("a fired timer is still pending")
	}
}

func TestManualStopReset(t *testing.T) {
	m := NewManual(t0)
	var n int
	tm := m.AfterFunc(time.Second, func() { n++ })
	if tm.C() != nil {
		t.Fatal("an AfterFunc timer has a channel")
	}
	if !tm.Stop() || tm.Stop() {
		t.Fatal("Stop reports wrongly")
	}
	m.Advance(2 * time.Second)
	if n != 0 {
		t.Fatal("a stopped timer fired")
	}
	if tm.Reset(time.Second) {
		t.Fatal("Reset of a stopped timer reports it pending")
	}
	if !tm.Reset(3 * time.Second) { // moves the deadline out
		t.Fatal("Reset of a pending timer reports it stopped")
	}
	m.Advance(2 * time.Second)
	if n != 0 {
		t.Fatal("fired at the old deadline")
	}
	m.Advance(time.Second)
	if n != 1 {
		t.Fatalf("fired %d times", n)
	}
	if tm.Stop() {
		t.Fatal("Stop of a fired timer reports it stopped it")
	}
	tm.Reset(time.Second) // a fired timer is rearmed
	m.Advance(time.Second)
	if n != 2 {
		t.Fatalf("fired %d times", n)
	}
}

func TestManualTimerChannel(t *testing.T) {
	m := NewManual(t0)
	tm := m.NewTimer(time.Second)
	m.Advance(time.Hour)
	select {
	case at := <-tm.C():
		if !at.Equal(t0.Add(time.Second)) {
			t.Fatalf("sent %v", at.Sub(t0))
		}
	default:
		t.Fatal("nothing sent")
	}
	// Stop and Reset drain a value not yet received: none is stale.
	tm.Reset(time.Second)
	m.Advance(time.Second)
	tm.Stop()
	tm.Reset(time.Second)
	select {
	case <-tm.C():
		t.Fatal("a stale value after Stop and Reset")
	default:
	}
	m.Advance(time.Second)
	if at := <-tm.C(); !at.Equal(t0.Add(time.Hour + 2*time.Second)) {
		t.Fatalf("sent %v", at.Sub(t0))
	}
}

// A ticker fires every period; ticks nobody received are dropped, the
// oldest kept; Stop ends it.
func TestManualTicker(t *testing.T) {
	m := NewManual(t0)
	tk := m.NewTicker(time.Second)
	m.Advance(3500 * time.Millisecond)
	if at := <-tk.C(); !at.Equal(t0.Add(time.Second)) {
		t.Fatalf("kept %v", at.Sub(t0))
	}
	select {
	case <-tk.C():
		t.Fatal("a dropped tick was kept")
	default:
	}
	if next, _ := m.Next(); !next.Equal(t0.Add(4 * time.Second)) {
		t.Fatalf("next tick at %v", next.Sub(t0))
	}
	m.Advance(500 * time.Millisecond)
	if at := <-tk.C(); !at.Equal(t0.Add(4 * time.Second)) {
		t.Fatalf("ticked %v", at.Sub(t0))
	}
	tk.Stop()
	m.Advance(time.Hour)
	select {
	case <-tk.C():
		t.Fatal("ticked after Stop")
	default:
	}
	if _, ok := m.Next(); ok {
		t.Fatal("a stopped ticker is pending")
	}
}

// Goroutines set, stop and reset timers and read the clock while another
// advances it: under -race, and every timer left armed fires.
func TestManualConcurrent(t *testing.T) {
	m := NewManual(t0)
	var fired, armed atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				d := time.Duration(g*7+i%13) * time.Millisecond
				tm := m.AfterFunc(d, func() { fired.Add(1) })
				switch i % 3 {
				case 0:
					if tm.Stop() {
						continue
					}
				case 1:
					tm.Reset(d + time.Millisecond)
				}
				armed.Add(1)
				_ = m.Since(t0)
				if tk := m.NewTimer(d); i%2 == 0 {
					tk.Stop()
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			m.Advance(time.Millisecond)
		}
	}
	m.Advance(time.Hour)
	// A timer reset after it fired fires twice; one stopped too late, once.
	if f, a := fired.Load(), armed.Load(); f < a || a == 0 {
		t.Fatalf("fired %d of %d armed", f, a)
	}
	if _, ok := m.Next(); ok {
		t.Fatal("timers still pending")
	}
}

func TestRealClock(t *testing.T) {
	c := Real
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	tm := c.NewTimer(time.Millisecond)
	tk := c.NewTicker(time.Millisecond)
	defer tk.Stop()
	deadline := time.After(10 * time.Second)
	for _, ch := range []<-chan time.Time{tm.C(), tk.C()} {
		select {
		case <-ch:
		case <-deadline:
			t.Fatal("no fire")
		}
	}
	select {
	case <-done:
	case <-deadline:
		t.Fatal("AfterFunc did not run")
	}
	if c.Since(c.Now().Add(-time.Second)) < time.Second || c.Until(c.Now().Add(time.Hour)) <= 0 {
		t.Fatal("Since/Until")
	}
	if n := testing.AllocsPerRun(10, func() { _ = c.Now() }); n != 0 {
		t.Fatalf("Now allocates %v", n)
	}
}
