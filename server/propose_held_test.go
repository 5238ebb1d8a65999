package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Proposals a client's read queues for a group wake it once, at the end of
// the read (not at the first), and a proposal queued by anyone else wakes
// it at once even behind held ones.
func TestHeldProposalsWakeAtReadEnd(t *testing.T) {
	g := &raftGroup{props: newRaftQueue[proposal](100), done: make(chan struct{})}
	c := &client{}
	token := func() bool {
		select {
		case <-g.props.ready:
			return true
		default:
			return false
		}
	}
	for i := range 10 {
		holdProposal(c, g, []byte{byte(i)}, nil)
	}
	if token() {
		t.Fatal("the group was woken before the read ended")
	}
	if n := g.props.size(); n != 10 {
		t.Fatalf("%d proposals queued, want 10", n)
	}
	c.endReadBatch()
	if !token() {
		t.Fatal("the group was not woken at the end of the read")
	}
	c.endReadBatch()
	if token() {
		t.Fatal("a read that held nothing woke the group")
	}
	holdProposal(c, g, []byte{10}, nil)
	g.Propose([]byte{11}, nil) // another proposer, behind a held proposal
	if !token() {
		t.Fatal("a proposal from elsewhere did not wake the group")
	}
	for want := range 12 {
		p, ok := g.props.pop()
		if !ok || p.data[0] != byte(want) {
			t.Fatalf("pop %d: %v %v", want, p.data, ok)
		}
	}
	c.endReadBatch()
}

// A held proposal the queue refuses is answered at once and owes no wake.
func TestHeldProposalRefusedWhenFull(t *testing.T) {
	g := &raftGroup{props: newRaftQueue[proposal](1), done: make(chan struct{})}
	c := &client{}
	var errs []error
	done := doneFunc(func(err error) { errs = append(errs, err) })
	holdProposal(c, g, []byte{1}, done)
	holdProposal(c, g, []byte{2}, done)
	if len(errs) != 1 || errs[0] == nil {
		t.Fatalf("answers %v, want one refusal", errs)
	}
	c.endReadBatch()
	g.props.pop()
	close(g.done)
	holdProposal(c, g, []byte{3}, done)
	if len(errs) != 2 || errs[1] != errGroupStopped {
		t.Fatalf("answers %v, want a stopped group's refusal", errs)
	}
}

// A burst of publishes in one write to an R3 stream's leader (one read or a
// few) is stored in order and every publish is acknowledged with its
// sequence, through the leader and through a follower.
func TestJetStreamClusterPublishBurstOneRead(t *testing.T) {
	c := runJSCluster(t, 3)
	nc, err := nats.Connect(c.servers[0].ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	var leader string
	waitFor(t, 10*time.Second, "a ready leader", func() bool { leader, _ = c.readyLeader("B"); return leader != "" })
	const n = 400
	seq := uint64(0)
	for _, via := range []string{"leader", "follower"} {
		s := c.serverNamed(leader)
		if via == "follower" {
			for _, o := range c.servers {
				if o.Name() != leader {
					s = o
				}
			}
		}
		// The stream's interest has reached s once a publish through it is stored.
		snc, err := nats.Connect(s.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		sjs, _ := jetstream.New(snc)
		waitFor(t, 10*time.Second, "a publish through "+via, func() bool {
			_, err := sjs.Publish(ctx, "b.warm", nil)
			return err == nil
		})
		snc.Close()
		seq = burstStreamState(t, js, ctx).LastSeq
		r := dialRaw(t, s)
		r.connect(`{"verbose":false,"pedantic":false,"protocol":1}`)
		r.send("SUB r.> 1\r\nPING\r\n")
		r.expect("PONG\r\n")
		var burst strings.Builder
		for i := range n {
			fmt.Fprintf(&burst, "PUB b.%s r.%d 3\r\n%03d\r\n", via, i, i%1000)
		}
		r.send(burst.String())
		for i := range n {
			seq++
			if l := r.line(); !strings.HasPrefix(l, fmt.Sprintf("MSG r.%d 1 ", i)) {
				t.Fatalf("%s: ack %d: %q", via, i, l)
			}
			if body := r.line(); !strings.Contains(body, fmt.Sprintf(`"seq":%d`, seq)) {
				t.Fatalf("%s: ack %d = %q, want seq %d", via, i, body, seq)
			}
		}
	}
	if st := burstStreamState(t, js, ctx); st.LastSeq != seq || st.Msgs != seq {
		t.Fatalf("stream state %+v, want %d messages", st, seq)
	}
}

func burstStreamState(t *testing.T, js jetstream.JetStream, ctx context.Context) jetstream.StreamState {
	t.Helper()
	s, err := js.Stream(ctx, "B")
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().State
}

// holdAtEnd is a read batch hook that, at the end of the read, queues a
// proposal for g through c (as a hook delivering with c to a subject a
// replicated stream takes would).
type holdAtEnd struct {
	g    *raftGroup
	data byte
}

func (h *holdAtEnd) readBatchEnd(c *client) {
	select {
	case <-h.g.props.ready: // the group took the read's wake meanwhile
	default:
	}
	holdProposal(c, h.g, []byte{h.data}, nil)
}

// A proposal held while the read's hooks run wakes its group: the held
// wakes' hook ran before (it was added by an earlier publish) or is added
// during the run and runs only at the next read, and an idle group sleeps
// without ticks, so the publish waited for the client's next read.
func TestHeldProposalDuringReadEndWakes(t *testing.T) {
	for _, earlier := range []bool{true, false} {
		g := &raftGroup{props: newRaftQueue[proposal](100), done: make(chan struct{})}
		c := &client{}
		if earlier {
			holdProposal(c, g, []byte{0}, nil) // the wake hook comes first
		}
		c.readHooks = append(c.readHooks, &holdAtEnd{g: g, data: 1})
		c.endReadBatch()
		select {
		case <-g.props.ready:
		default:
			t.Fatalf("wake hook added earlier %v: a proposal held at the read's end was not woken", earlier)
		}
	}
}
