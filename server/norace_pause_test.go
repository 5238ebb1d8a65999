//go:build !race

package server

import (
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// pausedLeader is the process leading an R3 stream of a chaos cluster,
// which a test stops (SIGSTOP) while requests queue at it: pc is a client
// of it that collects every answer sent to reply(tag), oc a client of the
// other two servers.
type pausedLeader struct {
	proc   *serverProcess
	pc, oc *nats.Conn
	inbox  string

	mu      sync.Mutex
	answers []*nats.Msg
	resumed bool
}

// leaderToPause finds the server leading stream and connects pc and oc.
func leaderToPause(t *testing.T, c *chaosCluster, stream string) *pausedLeader {
	old := -1
	waitFor(t, 10*time.Second, "the stream's leader", func() bool { old = c.streamLeader(stream); return old >= 0 })
	var others []string
	for i, p := range c.ports {
		if i != old {
			others = append(others, fmt.Sprintf("nats://127.0.0.1:%d", p))
		}
	}
	p := &pausedLeader{proc: c.procs[old], inbox: nats.NewInbox()}
	p.pc = connectNATS(t, fmt.Sprintf("nats://127.0.0.1:%d", c.ports[old]), nats.IgnoreDiscoveredServers())
	p.oc = connectNATS(t, strings.Join(others, ","), nats.IgnoreDiscoveredServers(), nats.MaxReconnects(-1))
	if _, err := p.pc.Subscribe(p.inbox+".*", func(m *nats.Msg) {
		p.mu.Lock()
		p.answers = append(p.answers, m)
		p.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := p.pc.Flush(); err != nil {
		t.Fatal(err)
	}
	return p
}

// reply is the reply subject of a request queued at the stopped leader.
func (p *pausedLeader) reply(tag string) string { return p.inbox + "." + tag }

// stop stops the leader's process; it goes on at resume, or when the
// test ends.
func (p *pausedLeader) stop(t *testing.T) {
	_ = p.proc.cmd.Process.Signal(syscall.SIGSTOP)
	t.Cleanup(func() {
		if !p.resumed {
			_ = p.proc.cmd.Process.Signal(syscall.SIGCONT)
		}
	})
}

// resume lets the stopped leader go on and waits for n answers, which it
// returns.
func (p *pausedLeader) resume(t *testing.T, n int) []*nats.Msg {
	_ = p.proc.cmd.Process.Signal(syscall.SIGCONT)
	p.resumed = true
	var got []*nats.Msg
	waitFor(t, 10*time.Second, "answers to the queued requests", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		got = append([]*nats.Msg(nil), p.answers...)
		return len(got) >= n
	})
	return got
}
