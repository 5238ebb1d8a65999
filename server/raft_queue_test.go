package server

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go/jetstream"
)

// A raft queue is FIFO across its ring's wrap-around and growth, refuses
// items beyond its bound, and gives back grown slots once empty.
func TestRaftQueueOrderBoundTrim(t *testing.T) {
	q := newRaftQueue[int](64)
	next, want := 0, 0
	for round := range 6 {
		for range 3 + 5*round { // grows while the head is mid-ring
			if !q.push(next) {
				t.Fatalf("push %d refused with %d queued", next, q.size())
			}
			next++
		}
		for range 2 + 4*round {
			v, ok := q.pop()
			if !ok || v != want {
				t.Fatalf("pop = %d, %v; want %d", v, ok, want)
			}
			want++
		}
	}
	for q.size() < 64 {
		q.push(next)
		next++
	}
	if q.push(next) {
		t.Fatal("a full queue took one more item")
	}
	for q.size() > 0 {
		if v, _ := q.pop(); v != want {
			t.Fatalf("pop = %d, want %d", v, want)
		}
		want++
	}
	q.trim()
	if q.buf != nil {
		t.Fatalf("an empty grown queue kept %d slots", len(q.buf))
	}
	q.push(1)
	q.trim()
	if len(q.buf) != raftQueueKeep {
		t.Fatalf("a queue holding an item has %d slots, want %d", len(q.buf), raftQueueKeep)
	}
}

// The consumer is woken when the queue becomes non-empty, and again by
// more when it stopped with items left.
func TestRaftQueueWakes(t *testing.T) {
	q := newRaftQueue[int](100)
	q.push(1)
	q.push(2)
	select {
	case <-q.ready:
	default:
		t.Fatal("no token after the first push")
	}
	q.pop()
	q.more()
	select {
	case <-q.ready:
	default:
		t.Fatal("no token with an item left")
	}
	q.pop()
	q.more()
	select {
	case <-q.ready:
		t.Fatal("a token for an empty queue")
	default:
	}
}

// Proposals beyond the queue's bound are refused at once, and every one
// queued is proposed once the group gets to them.
func TestRaftGroupProposalBound(t *testing.T) {
	servers := runCluster(t, 1, nil)
	sm := &countingSM{}
	g, err := servers[0].startRaftGroup("B", []raft.ID{raftID(servers[0].Name())}, raft.NewMemoryStorage(), sm)
	if err != nil {
		t.Fatal(err)
	}
	waitLeader(t, []*countingSM{sm})
	const bound = 16
	g.props.mu.Lock()
	g.props.max = bound
	g.props.mu.Unlock()
	release := make(chan struct{})
	g.control(func(*raft.Node) { <-release }) // the group is busy
	outcomes := make(chan error, bound+1)
	for i := range bound + 1 {
		g.Propose([]byte(fmt.Sprint(i)), doneFunc(func(err error) { outcomes <- err }))
	}
	select {
	case err := <-outcomes:
		if !errors.Is(err, raft.ErrProposalDropped) {
			t.Fatalf("proposal beyond the bound: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a proposal beyond the bound waited")
	}
	close(release)
	for range bound {
		if err := <-outcomes; err != nil {
			t.Fatalf("queued proposal: %v", err)
		}
	}
	waitApplied(t, []*countingSM{sm}, bound)
}

// A group asleep keeps no queue slots: with 10,000 idle groups, the slots
// kept for the next message were ~1 KiB a group.
func TestJetStreamClusterSleepingGroupsKeepNoQueueSlots(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	for i := range 4 {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("QS%d", i), Subjects: []string{fmt.Sprintf("qs.%d", i)}, Replicas: 3})
		if _, err := js.Publish(ctx(t), fmt.Sprintf("qs.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	slots := func() (held int) {
		for _, s := range c.servers {
			s.raft.mu.Lock()
			for _, g := range s.raft.groups {
				if g.sleeping.Load() {
					for _, n := range []int{queueSlots(g.inbox), queueSlots(g.props), queueSlots(g.reads)} {
						held += n
					}
				}
			}
			s.raft.mu.Unlock()
		}
		return held
	}
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	waitFor(t, 5*time.Second, "sleeping groups without queue slots", func() bool { return slots() == 0 })
}

func queueSlots[T any](q *raftQueue[T]) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.buf)
}
