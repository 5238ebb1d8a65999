package clock

import "time"

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	Since(t time.Time) time.Duration
	Until(t time.Time) time.Duration
	// AfterFunc calls f on a goroutine of its own (Real) or on the
	// goroutine advancing the clock (Manual) once d has passed. Its
	// Timer's C is nil.
	AfterFunc(d time.Duration, f func()) Timer
	NewTimer(d time.Duration) Timer
	NewTicker(d time.Duration) Ticker
}

// Timer is a single event, as *time.Timer.
type Timer interface {
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did.
	Stop() bool
	// Reset rearms the timer to fire d from now; it reports whether the
	// timer was pending.
	Reset(d time.Duration) bool
}

// Ticker is a periodic event, as *time.Ticker: a tick not received
// before the next one is dropped.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

// Real is package time.
var Real Clock = realClock{}

type realClock struct{}

func (realClock) Now() time.Time                  { return time.Now() }
func (realClock) Since(t time.Time) time.Duration { return time.Since(t) }
func (realClock) Until(t time.Time) time.Duration { return time.Until(t) }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return realTimer{time.AfterFunc(d, f)} }
func (realClock) NewTimer(d time.Duration) Timer            { return realTimer{time.NewTimer(d)} }
func (realClock) NewTicker(d time.Duration) Ticker          { return realTicker{time.NewTicker(d)} }

// realTimer and realTicker hold one pointer, so an interface holds them
// without allocating: Real costs nothing over package time.
type realTimer struct{ t *time.Timer }

func (t realTimer) C() <-chan time.Time        { return t.t.C }
func (t realTimer) Stop() bool                 { return t.t.Stop() }
func (t realTimer) Reset(d time.Duration) bool { return t.t.Reset(d) }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }
