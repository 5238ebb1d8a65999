package server

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// N idle file streams created one second apart share one sync timer and
// a few wake-ups per interval, not a timer and a wake-up each; every
// stream is still synced within its interval, and the timer is stopped
// at shutdown.
func TestJSSyncScheduleOneTimer(t *testing.T) {
	const n = 32
	fsys := vfs.NewMem()
	var mu sync.Mutex
	synced := map[string]bool{}      // msgs directories fsynced
	instants := map[time.Time]bool{} // clock readings at those fsyncs
	var now func() time.Time
	fsys.InjectError(func(op, name string) error {
		sep := string(filepath.Separator)
		mu.Lock()
		defer mu.Unlock()
		if i := strings.Index(name, sep+"msgs"+sep); op == "sync" && i >= 0 && now != nil {
			synced[name[:i]] = true
			instants[now()] = true
		}
		return nil
	})
	s, m, nc := runManualClockServer(t, func(o *Options) {
		o.fsys = fsys
		o.SyncInterval = time.Minute
	})
	jsCreate(t, nc, "S0", `{"name":"S0","subjects":["s0"],"storage":"file"}`)
	one := m.Pending()
	for i := 1; i < n; i++ {
		m.Advance(time.Second)
		jsCreate(t, nc, fmt.Sprintf("S%d", i), fmt.Sprintf(`{"name":"S%d","subjects":["s%d"],"storage":"file"}`, i, i))
	}
	if got := m.Pending(); got != one {
		t.Fatalf("%d timers pending with %d streams, %d with one", got, n, one)
	}
	for i := 0; i < n; i++ {
		wantPubOK(t, jsPubRaw(t, nc, fmt.Sprintf("s%d", i), "x"), fmt.Sprintf("S%d", i), 1)
	}
	mu.Lock()
	now = m.Now
	mu.Unlock()
	// One interval after the last creation every stream has synced.
	for i := 0; i < 60; i++ {
		m.Advance(time.Second)
	}
	mu.Lock()
	got, wakes := len(synced), len(instants)
	mu.Unlock()
	if got != n {
		t.Fatalf("%d of %d streams synced within the interval", got, n)
	}
	if wakes > n/3 {
		t.Fatalf("the syncs of %d streams created a second apart ran at %d instants", n, wakes)
	}
	s.Shutdown()
	if p := m.Pending(); p != 0 {
		t.Fatalf("%d timers pending after shutdown", p)
	}
}
