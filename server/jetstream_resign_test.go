package server

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterResignedLeaderAnswersUnavailable: a request that a
// server left to the stream's leader and that reaches it just after it
// resigned is answered 10008 by it, as long as some server has not yet
// acknowledged the resignation; once all have, the old leader stays
// silent (the new leader answers). The request is handed to the old
// leader as its route would hand it (no client); a server that never
// acknowledges stands for one that has not yet.
func TestJetStreamClusterResignedLeaderAnswersUnavailable(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "RSG", Subjects: []string{"rsg.>"}, Replicas: 3})
	first := st.CachedInfo().Cluster.Leader
	old := c.serverNamed(first)
	nc := connectNATS(t, old.ClientURL())
	if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.RSG", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	awaitNewLeader(t, c, nc, "RSG", first)
	mset := old.js.Load().account(globalAccountName).lookup("RSG")
	waitFor(t, 10*time.Second, "every server to acknowledge the resignation", func() bool {
		mset.mu.Lock()
		defer mset.mu.Unlock()
		return mset.resign.waiting != nil && len(mset.resign.waiting) == 0
	})
	mset.mu.Lock()
	term := mset.resign.term
	mset.resignedLocked(term, []string{"GHOST"})
	mset.mu.Unlock()

	sub, err := nc.SubscribeSync("answers.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	jsa := old.js.Load().account(globalAccountName)
	routed := func(reply string) {
		jsa.apiRequest(nil, nil, nil, "$JS.API.STREAM.INFO.RSG", reply, nil, nil)
		old.deliver(nil, old.globalAccount(), reply, "", nil, []byte("marker"))
	}
	routed("answers.1")
	m, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var resp apiResponse
	if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Error == nil || resp.Error.ErrCode != 10008 {
		t.Fatalf("the resigned leader answered %q, want 10008", m.Data)
	}
	// GHOST acknowledges: nobody can have left a request to it any more.
	ack := old.name + " " + strconv.FormatUint(term, 10) + " GHOST"
	old.deliver(nil, old.SystemAccount(), resignAckPrefix+globalAccountName+".RSG", "", nil, []byte(ack))
	mset.mu.Lock()
	left := len(mset.resign.waiting)
	mset.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d servers still waited for after the acknowledgement", left)
	}
	routed("answers.2")
	for _, want := range []string{"answers.1", "answers.2"} {
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != want || string(m.Data) != "marker" {
			t.Fatalf("got %q on %s, want the marker on %s: after every acknowledgement the old leader is silent", m.Data, m.Subject, want)
		}
	}
}

// TestRouteForwardBeforeAfterRoutesCallback: a subscriber made with
// subscribeInternalAfterRoutes runs only once the message is queued to the
// routes, so what it sends over a route arrives after the message.
func TestRouteForwardBeforeAfterRoutesCallback(t *testing.T) {
	servers := runCluster(t, 2, nil)
	a, b := servers[0], servers[1]
	acc := a.globalAccount()
	_, err := acc.subscribeInternalAfterRoutes("ord.x", func(_ *subscription, _ *client, _ *Account, _, _ string, _, _ []byte) {
		a.deliver(nil, acc, "ord.y", "", nil, nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	nb := connectNATS(t, b.ClientURL())
	sub, err := nb.SubscribeSync("ord.*")
	if err != nil {
		t.Fatal(err)
	}
	if err := nb.Flush(); err != nil {
		t.Fatal(err)
	}
	na := connectNATS(t, a.ClientURL())
	waitFor(t, 5*time.Second, "b's interest at a", func() bool {
		for _, sub := range matchSubject(acc, "ord.x").Plain {
			if sub.route != nil {
				return true
			}
		}
		return false
	})
	for i := 0; i < 100; i++ {
		if err := na.Publish("ord.x", nil); err != nil {
			t.Fatal(err)
		}
		var got []string
		for len(got) < 2 {
			m, err := sub.NextMsg(5 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, m.Subject)
		}
		if got[0] != "ord.x" || got[1] != "ord.y" {
			t.Fatalf("received %v: the callback's message overtook the one it got", got)
		}
	}
}
