package server

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterWedgedMetaLeaderStreamCalls: while the wedged meta
// leader's server is deposed, its stalled meta group applies nothing, so
// a stream created through the new meta leader is unknown there. A call
// on that stream from a client connected to the deposed server (a
// consumer create, a stream info) is answered by the stream's leader; the
// deposed server, knowing no meta leader, must not answer it 10008 first
// (a 10008 for a consumer that was created says "not done" for a change
// done). The same holds for a meta leader stepdown asked through it.
func TestJetStreamClusterWedgedMetaLeaderStreamCalls(t *testing.T) {
	c, victim := wedgeMetaLeaderDeposed(t, nil)
	vs := c.servers[victim]
	jc := vs.js.Load().cluster
	_, js := jsClient(t, c.servers[(victim+1)%3])
	waitFor(t, 15*time.Second, "a stream created through the new meta leader", func() bool {
		cctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := js.CreateStream(cctx, jetstream.StreamConfig{Name: "NEW", Subjects: []string{"new"}, Replicas: 3})
		return err == nil
	})
	if jc.assignment(globalAccountName, "NEW") != nil {
		t.Fatal("the stalled meta group applied the create")
	}
	waitFor(t, 10*time.Second, "NEW's leader known on the deposed server", func() bool {
		return jc.streamLeader(globalAccountName, "NEW") != ""
	})

	_, jsv := jsClient(t, vs)
	for i := range 3 {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := jsv.CreateOrUpdateConsumer(cctx, "NEW", jetstream.ConsumerConfig{Durable: "D" + string(rune('0'+i))})
		cancel()
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == 10008 {
			_, cerr := js.Consumer(context.Background(), "NEW", "D"+string(rune('0'+i)))
			t.Fatalf("a consumer create through the deposed server answered 10008 (%v); looked up elsewhere: %v", err, cerr)
		}
		if err != nil {
			t.Fatalf("a consumer create through the deposed server: %v", err)
		}
		cctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		_, err = jsv.Stream(cctx, "NEW")
		cancel()
		if err != nil {
			t.Fatalf("a stream info through the deposed server: %v", err)
		}
	}
}

// wedgeMetaLeaderDeposed starts a 3-server cluster (tweak: more options),
// wedges its meta leader's group (its goroutine waits for the end of a
// stall of the meta log's files, lifted at cleanup) and waits until its
// server deposed it; it returns the cluster and the wedged server's index.
func wedgeMetaLeaderDeposed(t *testing.T, tweak func(i int, o *Options)) (*jsTestCluster, int) {
	t.Helper()
	c, fss := metaStallCluster(t, tweak)
	victim := c.metaLeaderIndex()
	waitFor(t, 15*time.Second, "every group asleep", func() bool { return c.groupsAwake() == "" })
	if c.metaLeaderIndex() != victim {
		t.Skip("the meta leadership moved before the stall")
	}
	jc := c.servers[victim].js.Load().cluster
	mg, _ := jc.metaGroup()
	fss[victim].Stall()
	gate := fss[victim].Gate()
	mg.control(func(*raft.Node) { <-gate })
	waitFor(t, 15*time.Second, "the wedged meta leader deposed", func() bool { return jc.metaDeposed() })
	return c, victim
}

// TestJetStreamClusterWedgedMetaLeaderStepdownThrough: a meta leader
// stepdown asked by a system user connected to the deposed server is done
// by the new meta leader, which answers it; the deposed server, knowing
// no meta leader, must not answer 10008 first.
func TestJetStreamClusterWedgedMetaLeaderStepdownThrough(t *testing.T) {
	c, victim := wedgeMetaLeaderDeposed(t, func(i int, o *Options) {
		a, sys := NewAccount("A"), NewAccount("SYS")
		a.jetstream = true
		o.Accounts = []*Account{a, sys}
		o.SystemAccount = "SYS"
		o.Users = []*User{{Username: "a", Password: "a", Account: a}, {Username: "sys", Password: "sys", Account: sys}}
	})
	vs := c.servers[victim]
	waitFor(t, 15*time.Second, "a new meta leader", func() bool {
		for _, s := range c.servers {
			if s != vs && s.js.Load().cluster.isMetaLeader() {
				return true
			}
		}
		return false
	})
	sys := connectNATS(t, vs.ClientURL(), nats.UserInfo("sys", "sys"))
	m, err := sys.Request("$JS.API.META.LEADER.STEPDOWN", nil, 5*time.Second)
	if err != nil {
		t.Fatalf("a meta stepdown through the deposed server: %v", err)
	}
	var resp successResponse
	if err := json.Unmarshal(m.Data, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Success {
		t.Fatalf("a meta stepdown through the deposed server: %s", m.Data)
	}
}
