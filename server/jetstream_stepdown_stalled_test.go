package server

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// stalledWriter publishes one message at a time until stopped, each
// answered or given up after a second, and records what it got.
type stalledWriter struct {
	mu       sync.Mutex
	acked    []uint64
	ackTimes []time.Time
	refused  int
	lastRef  time.Time // the last refusal
	timeouts int
}

func (w *stalledWriter) run(nc *nats.Conn, subj string, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		resp, err := nc.Request(subj, []byte("x"), time.Second)
		w.mu.Lock()
		switch {
		case errors.Is(err, nats.ErrTimeout):
			w.timeouts++
		case err != nil:
			w.refused++ // no responders
			w.lastRef = time.Now()
		default:
			var ack struct {
				Seq   uint64    `json:"seq"`
				Error *ApiError `json:"error"`
			}
			if json.Unmarshal(resp.Data, &ack); ack.Error != nil {
				w.refused++
				w.lastRef = time.Now()
			} else {
				w.acked = append(w.acked, ack.Seq)
				w.ackTimes = append(w.ackTimes, time.Now())
			}
		}
		w.mu.Unlock()
	}
}

// longestGap is the longest time between two acks after from.
func (w *stalledWriter) longestGap(from time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var gap time.Duration
	last := from
	for _, at := range w.ackTimes {
		if at.Before(from) {
			continue
		}
		gap = max(gap, at.Sub(last))
		last = at
	}
	return gap
}

// A stepdown whose transfer goes to a member that is live but cannot
// take over (its group stalled) holds the stream's writes for one
// election timeout at most: raft refuses proposals while the transfer is
// pending (the publisher gets 10008 at once and retries, no publish
// waits), abandons it after an election timeout, and the stepdown's
// retry goes to the other member. Measured: the longest time between two
// acks was 0.49 s (10 ticks); a retry to the same member again would hold
// writes for the stepdown's whole 4 s wait. No acknowledged message is
// lost.
//
// Both followers are stalled for the stepdown's pick, then the one not
// picked is released: the transfer is pending on a stalled member.
func TestJetStreamClusterStepdownStalledMember(t *testing.T) {
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "SM", Subjects: []string{"sm"}, Replicas: 3})
	c.waitAllApplied(t, "SM", 3, 0, 10*time.Second)
	// The leader STREAM.INFO named could be gone by the time its replica
	// was looked up (CI once found none): take the groups as they are.
	var lg *raftGroup
	followers := map[raft.ID]*raftGroup{}
	waitFor(t, 10*time.Second, "one leading replica and two followers", func() bool {
		lg, followers = nil, map[raft.ID]*raftGroup{}
		for _, m := range c.replicas("SM") {
			switch g := m.groupNow(); {
			case g == nil:
				return false
			case g.leads.Load():
				lg = g
			default:
				followers[raftID(m.jsa.js.srv.Name())] = g
			}
		}
		return lg != nil && len(followers) == 2
	})
	w := &stalledWriter{}
	stop, done := make(chan struct{}), make(chan struct{})
	wnc := connectNATS(t, c.servers[0].ClientURL())
	go func() { defer close(done); w.run(wnc, "sm", stop) }()
	var stopOnce sync.Once
	stopWriter := func() { stopOnce.Do(func() { close(stop); <-done }) }
	t.Cleanup(stopWriter)
	waitFor(t, 5*time.Second, "writes acked", func() bool { return w.ackCount() > 10 })

	releases := map[raft.ID]func(){}
	for id, g := range followers {
		rel := make(chan struct{})
		releases[id] = sync.OnceFunc(func() { close(rel) })
		t.Cleanup(releases[id]) // a failing test still stops its servers
		g.control(func(*raft.Node) { <-rel })
	}
	from := time.Now()
	answered := make(chan *nats.Msg, 1)
	go func() {
		resp, _ := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.SM", nil, 5*time.Second)
		answered <- resp
	}()
	var target raft.ID
	waitFor(t, 2*time.Second, "the stepdown's transfer started", func() bool {
		ch := make(chan raft.ID, 1)
		lg.control(func(n *raft.Node) { ch <- n.Status().Transferee })
		target = <-ch
		return target != raft.None
	})
	for id, release := range releases {
		if id != target {
			release()
		}
	}
	resp := <-answered
	took := time.Since(from)
	waitFor(t, 5*time.Second, "writes acked after the stepdown", func() bool { return w.lastAck().After(from.Add(took)) })
	gap := w.longestGap(from)
	releases[target]()
	stopWriter()
	bound := 2 * raft.DefaultElectionTicks * raftTick // an election timeout is 10 to 20 ticks
	refusing := w.lastRef.Sub(from)
	t.Logf("stepdown answered in %v; writes refused for %v, longest time between acks %v; %d acked, %d refused, %d timed out",
		took, refusing, gap, w.ackCount(), w.refused, w.timeouts)
	if gap > bound+raftTick || refusing > bound+raftTick {
		t.Fatalf("writes refused for %v (longest wait for an ack %v) by a transfer to a stalled member, more than an election timeout (%v)", refusing, gap, bound)
	}
	if resp == nil || !strings.Contains(string(resp.Data), `"success":true`) {
		t.Fatalf("stepdown answered %v", respData(resp))
	}
	if w.timeouts > 0 {
		t.Fatalf("%d publishes timed out: held, not refused", w.timeouts)
	}
	last := w.acked[len(w.acked)-1]
	waitFor(t, 10*time.Second, "every replica stored every acked message", func() bool {
		for _, m := range c.replicas("SM") {
			var ss StreamState
			m.st().FastState(&ss)
			if ss.LastSeq < last || ss.Msgs != ss.LastSeq {
				return false
			}
		}
		return true
	})
	checkReplicasAgree(t, c, "SM", w.storedBy(c))
}

func (w *stalledWriter) ackCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

func (w *stalledWriter) lastAck() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ackTimes) == 0 {
		return time.Time{}
	}
	return w.ackTimes[len(w.ackTimes)-1]
}

// storedBy is the message count of the stream's leader replica.
func (w *stalledWriter) storedBy(c *jsTestCluster) uint64 {
	var ss StreamState
	c.replicas("SM")[0].st().FastState(&ss)
	return ss.Msgs
}

func respData(m *nats.Msg) string {
	if m == nil {
		return "nothing"
	}
	return string(m.Data)
}
