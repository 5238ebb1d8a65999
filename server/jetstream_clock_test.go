package server

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/store"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go"
)

var clockT0 = time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)

// runManualClockServer starts a JetStream server on a manual clock.
func runManualClockServer(t *testing.T, edit func(*Options)) (*Server, *clock.Manual, *nats.Conn) {
	t.Helper()
	m := clock.NewManual(clockT0)
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	o.clock = m
	if edit != nil {
		edit(o)
	}
	s := runServer(t, o)
	nc, _ := jsClient(t, s)
	return s, m, nc
}

// A stream on a manual clock stamps its messages with that clock and
// expires them when it is advanced past max_age: not a nanosecond before,
// and without an hour of wall time passing.
func TestJSManualClockMaxAge(t *testing.T) {
	for _, storage := range []string{"memory", "file"} {
		t.Run(storage, func(t *testing.T) {
			_, m, nc := runManualClockServer(t, nil)
			r := jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"`+storage+`","max_age":3600000000000}`)
			if c := r.str("created"); c != clockT0.Format(time.RFC3339Nano) {
				t.Fatalf("created %q", c)
			}
			for i := 1; i <= 3; i++ {
				wantPubOK(t, jsPubRaw(t, nc, "s", "x"), "S", uint64(i))
			}
			got := jsAPIReq(t, nc, "$JS.API.STREAM.MSG.GET.S", `{"seq":2}`)
			if ts := got.str("message.time"); ts != clockT0.Format(time.RFC3339Nano) {
				t.Fatalf("message stamped %q, want the manual clock's %v", ts, clockT0)
			}
			m.Advance(time.Hour) // exactly max_age old: kept
			if n, _, _ := streamMsgs(t, nc, "S"); n != 3 {
				t.Fatalf("%d messages at max_age", n)
			}
			// The expiry timer runs on the goroutine advancing the clock,
			// so the messages are gone when Advance returns.
			m.Advance(1)
			if n, first, _ := streamMsgs(t, nc, "S"); n != 0 || first != 4 {
				t.Fatalf("past max_age: %d messages, first %d", n, first)
			}
			// A later message gets its own max_age from its own stamp.
			m.Advance(10 * time.Minute)
			wantPubOK(t, jsPubRaw(t, nc, "s", "late"), "S", 4)
			m.Advance(time.Hour)
			if n, _, _ := streamMsgs(t, nc, "S"); n != 1 {
				t.Fatalf("%d messages at the late one's max_age", n)
			}
			m.Advance(1)
			if n, _, _ := streamMsgs(t, nc, "S"); n != 0 {
				t.Fatalf("%d messages past the late one's max_age", n)
			}
		})
	}
}

// A file stream's periodic fsync (sync_interval) runs on the server's
// clock: the messages are made durable when the manual clock passes the
// interval, and only then (a power loss before it loses them).
func TestJSManualClockSyncInterval(t *testing.T) {
	for _, advance := range []bool{false, true} {
		name := "crash before the interval"
		if advance {
			name = "crash after the interval"
		}
		t.Run(name, func(t *testing.T) {
			fsys := vfs.NewMem()
			var syncs atomic.Int64
			fsys.InjectError(func(op, name string) error {
				if op == "sync" && strings.Contains(name, string(filepath.Separator)+"msgs"+string(filepath.Separator)) {
					syncs.Add(1)
				}
				return nil
			})
			s, m, nc := runManualClockServer(t, func(o *Options) {
				o.fsys = fsys
				o.SyncInterval = time.Minute
			})
			jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"file"}`)
			for i := 1; i <= 3; i++ {
				wantPubOK(t, jsPubRaw(t, nc, "s", "x"), "S", uint64(i))
			}
			// The one timer pending is the sync ticker, due one interval on.
			if next, ok := m.Next(); !ok || !next.Equal(clockT0.Add(time.Minute)) {
				t.Fatalf("next deadline %v %v", next, ok)
			}
			if n := syncs.Load(); n != 0 {
				t.Fatalf("%d fsyncs of the messages before the interval", n)
			}
			if advance {
				m.Advance(time.Minute)
				waitFor(t, 10*time.Second, "the periodic fsync", func() bool { return syncs.Load() > 0 })
			}
			mset := s.js.Load().account(globalAccountName).lookup("S")
			dir := filepath.Join(mset.jsa.dir, "S", "msgs")
			fsys.Crash()
			st, err := store.OpenFileStore(fsys, dir, store.FileStoreConfig{}, store.StoreLimits{})
			if err != nil {
				t.Fatalf("reopen after the crash: %v", err)
			}
			defer st.Stop()
			want := uint64(0)
			if advance {
				want = 3
			}
			if got := st.State().Msgs; got != want {
				t.Fatalf("%d messages survived the crash, want %d", got, want)
			}
		})
	}
}
