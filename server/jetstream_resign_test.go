package server

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterResignedLeaderForwards: a request that a server
// left to the stream's leader and that reaches it just after it resigned
// is forwarded by it to the new leader, which answers it (it used to be
// answered 10008), as long as some server has not yet acknowledged the
// resignation; without a later term (nobody leads) a read is answered
// 10008; once every server has acknowledged, the old leader stays silent
// (the new leader answers). The request is handed to the old leader as
// its route would hand it (no client); a server that never acknowledges
// stands for one that has not yet.
func TestJetStreamClusterResignedLeaderForwards(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "RSG", Subjects: []string{"rsg.>"}, Replicas: 3})
	first := st.CachedInfo().Cluster.Leader
	old := c.serverNamed(first)
	nc := connectNATS(t, old.ClientURL())
	if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.RSG", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	second := awaitNewLeader(t, c, nc, "RSG", first)
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
	routed := func(subject, reply string) {
		jsa.apiRequest(nil, nil, nil, subject, reply, nil, nil)
		old.deliver(nil, old.globalAccount(), reply, "", nil, []byte("marker"))
	}
	next := func() *nats.Msg {
		t.Helper()
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// The window is open and a later term is known: the new leader
	// answers, once (the marker shows where the old leader's own answer
	// would have been).
	routed("$JS.API.STREAM.INFO.RSG", "answers.1")
	var info []byte
	for range 2 {
		if m := next(); m.Subject != "answers.1" {
			t.Fatalf("got %q on %s, want answers.1", m.Data, m.Subject)
		} else if string(m.Data) != "marker" {
			info = m.Data
		}
	}
	if leader, code := infoLeader(t, info); code != 0 || leader != second {
		t.Fatalf("the forwarded STREAM.INFO was answered %s, want the info from %s", info, second)
	}
	// A change too: the new leader steps down.
	routed("$JS.API.STREAM.LEADER.STEPDOWN.RSG", "answers.2")
	var stepdown []byte
	for range 2 {
		if m := next(); m.Subject != "answers.2" {
			t.Fatalf("got %q on %s, want answers.2", m.Data, m.Subject)
		} else if string(m.Data) != "marker" {
			stepdown = m.Data
		}
	}
	if !isSuccess(stepdown) {
		t.Fatalf("the forwarded stepdown was answered %s", stepdown)
	}
	// No later term than the one it served in (it stepped down for lack
	// of a quorum): nobody leads, and a read is answered 10008.
	now := mset.groupTerm()
	mset.mu.Lock()
	served := mset.servedTerm
	mset.servedTerm = now
	mset.mu.Unlock()
	routed("$JS.API.STREAM.INFO.RSG", "answers.3")
	m := next()
	var resp apiResponse
	if err := json.Unmarshal(m.Data, &resp); err != nil || resp.Error == nil || resp.Error.ErrCode != 10008 {
		t.Fatalf("the resigned leader, with nobody leading, answered %q, want 10008", m.Data)
	}
	mset.mu.Lock()
	mset.servedTerm = served
	mset.mu.Unlock()
	// GHOST acknowledges: nobody can have left a request to it any more.
	ack := old.name + " " + strconv.FormatUint(term, 10) + " GHOST"
	old.deliver(nil, old.SystemAccount(), resignAckPrefix+globalAccountName+".RSG", "", nil, []byte(ack))
	mset.mu.Lock()
	left := len(mset.resign.waiting)
	mset.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d servers still waited for after the acknowledgement", left)
	}
	routed("$JS.API.STREAM.INFO.RSG", "answers.4")
	for _, want := range []string{"answers.3", "answers.4"} {
		m := next()
		if m.Subject != want || string(m.Data) != "marker" {
			t.Fatalf("got %q on %s, want the marker on %s: after every acknowledgement the old leader is silent", m.Data, m.Subject, want)
		}
	}
}

// infoLeader is the leader a STREAM.INFO answer names, or its error code.
func infoLeader(t *testing.T, b []byte) (string, int) {
	t.Helper()
	var resp struct {
		Error   *ApiError `json:"error"`
		Cluster *struct {
			Leader string `json:"leader"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if resp.Error != nil {
		return "", int(resp.Error.ErrCode)
	}
	if resp.Cluster == nil {
		return "", 0
	}
	return resp.Cluster.Leader, 0
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
