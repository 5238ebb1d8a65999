package server

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// TestMain runs the package's tests with the lock-order checker (under
// -race, internal/lockorder) reporting every distinct violation as it
// happens rather than ending the process at the first, and fails the run
// if there was any: a handler that recovers panics (callInternal) cannot
// hide one.
func TestMain(m *testing.M) {
	var mu sync.Mutex
	seen := map[string]bool{}
	lockorder.SetHandler(func(msg string) {
		first, _, _ := strings.Cut(msg, "\n")
		mu.Lock()
		defer mu.Unlock()
		if !seen[first] {
			seen[first] = true
			fmt.Fprintln(os.Stderr, msg)
		}
	})
	code := m.Run()
	if f := os.Getenv("LOCKORDER_EDGES"); f != "" { // for LOCKS.md
		_ = os.WriteFile(f, []byte(strings.Join(lockorder.Edges(), "\n")+"\n"), 0o644)
	}
	if v := lockorder.Violations(); len(v) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d lock-order violations (%d distinct), printed above\n", len(v), len(seen))
		code = 1
	}
	os.Exit(code)
}
