package consumer

import (
	"errors"
	"slices"
	"testing"
)

// The pause API's entries carry the configuration with the new pause_until
// (set at apply): it replaces the configuration, snapshots carry it, and
// every change of pause_until is told, a past one as a resume.
func TestPauseAPIConfig(t *testing.T) {
	f := newFixture(t, 3, explicit())
	withPause := func(until int64, raw string) *Config {
		c := f.s.cfg.clone()
		c.PauseUntil, c.Raw = until, []byte(raw)
		return &c
	}
	out := f.apply(Entry{Op: OpPause, TS: 10, Until: 20, Config: withPause(20, "p20")})
	if len(out.Events) != 1 || out.Events[0] != (Event{Kind: EventPaused, Until: 20}) || !out.Changed {
		t.Fatalf("pause: %+v", out)
	}
	if f.s.Config().PauseUntil != 20 || string(f.s.Config().Raw) != "p20" || f.s.PausedUntil() != 20 {
		t.Fatalf("config after the pause: %+v paused %d", f.s.Config(), f.s.PausedUntil())
	}
	r, err := RestoreSnapshot(f.s.AppendSnapshot(nil))
	if err != nil || string(r.Config().Raw) != "p20" || r.PausedUntil() != 20 || r.Digest() != f.s.Digest() {
		t.Fatalf("snapshot: %v %+v", err, r)
	}
	if out := f.apply(Entry{Op: OpPause, TS: 11, Until: 20, Config: withPause(20, "p20")}); len(out.Events) != 0 || out.Changed {
		t.Fatalf("the same pause again: %+v", out)
	}
	// Deliveries are refused while paused, by the entry's stamp.
	if out := f.deliver(15, 1); !errors.Is(out.Err, ErrPaused) {
		t.Fatalf("delivery while paused: %+v", out)
	}
	// The timer's resume leaves pause_until in the config.
	if out := f.apply(Entry{Op: OpResume, TS: 21, Until: 20}); len(out.Events) != 1 || out.Events[0].Kind != EventResumed {
		t.Fatalf("timer resume: %+v", out)
	}
	if f.s.Config().PauseUntil != 20 || f.s.PausedUntil() != 0 {
		t.Fatalf("after the timer: config %d paused %d", f.s.Config().PauseUntil, f.s.PausedUntil())
	}
	// A pause_until already past changes the config and is told, paused false.
	out = f.apply(Entry{Op: OpPause, TS: 30, Until: 25, Config: withPause(25, "p25")})
	if len(out.Events) != 1 || out.Events[0].Kind != EventResumed || f.s.PausedUntil() != 0 || string(f.s.Config().Raw) != "p25" {
		t.Fatalf("past pause: %+v paused %d", out, f.s.PausedUntil())
	}
	// The API's resume clears it (told: pause_until changed).
	out = f.apply(Entry{Op: OpResume, TS: 31, Config: withPause(0, "none")})
	if len(out.Events) != 1 || out.Events[0].Kind != EventResumed || f.s.Config().PauseUntil != 0 {
		t.Fatalf("API resume: %+v", out)
	}
	if out := f.apply(Entry{Op: OpResume, TS: 32, Config: withPause(0, "none")}); len(out.Events) != 0 || out.Changed {
		t.Fatalf("resume of nothing: %+v", out)
	}
	if out := f.deliver(33, 1); len(out.Deliveries) != 1 {
		t.Fatalf("delivery after the resume: %+v", out)
	}
}

// Replicas applying the same pause and pin entries, one of them restored
// from a snapshot midway, agree byte for byte.
func TestPausePinDeterministic(t *testing.T) {
	mk := func() *fixture { return newFixture(t, 4, explicit()) }
	a, b := mk(), mk()
	log := []Entry{
		{Op: OpPin, TS: 5, Text: "A"},
		{Op: OpDeliver, TS: 6, Seqs: []uint64{1, 2}},
		{Op: OpPause, TS: 7, Until: 50},
		{Op: OpPin, TS: 8, Text: "B"}, // refused: A holds the pin
		{Op: OpUnpin, TS: 9, Text: "B"},
		{Op: OpResume, TS: 40, Until: 50}, // not passed yet: nothing
		{Op: OpUnpin, TS: 41, Text: "A"},
		{Op: OpPin, TS: 42, Text: "C"},
		{Op: OpResume, TS: 60, Until: 50},
		{Op: OpUnpin, TS: 61},
	}
	var c *fixture
	for i, e := range log {
		for _, f := range []*fixture{a, b, c} {
			if f == nil {
				continue
			}
			e := e
			if e.Op == OpDeliver {
				e.Gen = f.s.gen
			}
			if e.Op == OpPause {
				cfg := f.s.cfg.clone()
				cfg.PauseUntil = e.Until
				e.Config = &cfg
			}
			f.apply(e)
		}
		if i == 4 {
			r, err := RestoreSnapshot(a.s.AppendSnapshot(nil))
			if err != nil {
				t.Fatal(err)
			}
			c = &fixture{t: t, src: a.src, s: r}
		}
		sa, sb, sc := a.s.AppendSnapshot(nil), b.s.AppendSnapshot(nil), []byte(nil)
		if c != nil {
			sc = c.s.AppendSnapshot(nil)
		}
		if !slices.Equal(sa, sb) || (c != nil && !slices.Equal(sa, sc)) {
			t.Fatalf("after %v: replicas differ", e.Op)
		}
	}
	if pin, _ := a.s.Pinned(); pin != "" || a.s.PausedUntil() != 0 || a.s.Config().PauseUntil != 50 {
		t.Fatalf("end: pin %q paused %d config %d", pin, a.s.PausedUntil(), a.s.Config().PauseUntil)
	}
}
