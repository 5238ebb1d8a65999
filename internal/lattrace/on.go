//go:build lattrace

package lattrace

import (
	"bufio"
	"fmt"
	"os"
	"time"
)

// On reports whether marks are recorded.
const On = true

type event struct {
	ns    int64
	stage string
	arg   int
}

var (
	// mu guards events: a one-slot channel, not a mutex, so this debug-only
	// package (built with -tags lattrace) needs no lock class in LOCKS.md.
	mu     = make(chan struct{}, 1)
	events []event
	path   = os.Getenv("TERN_LATTRACE")
)

func init() {
	if path == "" {
		return
	}
	events = make([]event, 0, 1<<20)
	go func() {
		f, err := os.Create(fmt.Sprintf("%s.%d", path, os.Getpid()))
		if err != nil {
			return
		}
		w := bufio.NewWriter(f)
		for {
			time.Sleep(500 * time.Millisecond)
			mu <- struct{}{}
			evs := events
			events = make([]event, 0, 1<<20)
			<-mu
			for _, e := range evs {
				fmt.Fprintf(w, "%d %s %d\n", e.ns, e.stage, e.arg)
			}
			w.Flush()
		}
	}()
}

// Mark records stage with arg at the wall clock's time (comparable across
// the processes of one machine).
func Mark(stage string, arg int) {
	if path == "" {
		return
	}
	ns := time.Now().UnixNano()
	mu <- struct{}{}
	if len(events) < cap(events) {
		events = append(events, event{ns: ns, stage: stage, arg: arg})
	}
	<-mu
}
