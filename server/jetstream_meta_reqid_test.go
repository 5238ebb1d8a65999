package server

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A copy (metaEntry.Copy) of a meta entry whose request id was applied
// already is skipped on every server, and its caller gets the first apply's outcome: a create's copy
// proposed after the stream was deleted does not re-create it (answered
// success), and a delete's copy proposed after the stream was created
// again does not delete it (answered with the first delete's not found).
func TestJetStreamClusterMetaRequestIDAppliedOnce(t *testing.T) {
	var mu sync.Mutex
	var created *metaEntry
	testHookMetaAnswer = func(s *Server, me *metaEntry) {
		mu.Lock()
		defer mu.Unlock()
		if me.Op == "add" && me.SA.Config.Name == "X" && created == nil {
			cp := *me
			created = &cp
		}
	}
	t.Cleanup(func() { testHookMetaAnswer = nil }) // after the cluster stopped
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	jc := ml.js.Load().cluster
	nc, js := jsClient(t, ml)
	answers := func() (string, *nats.Subscription) {
		inbox := nats.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return inbox, sub
	}
	propose := func(me *metaEntry) {
		jc.proposeMeta(me, func(e *ApiError) { t.Errorf("proposal refused: %v", e) })
	}

	createStream(t, js, jetstream.StreamConfig{Name: "X", Subjects: []string{"x"}, Replicas: 3})
	mu.Lock()
	dupCreate := created
	mu.Unlock()
	if dupCreate == nil || dupCreate.ID == "" {
		t.Fatalf("the create's entry carries no request id: %+v", dupCreate)
	}
	if err := js.DeleteStream(ctx(t), "X"); err != nil {
		t.Fatal(err)
	}
	inCreate, subCreate := answers()
	dupCreate.Reply, dupCreate.Copy = inCreate, true // a held request's copy
	propose(dupCreate)

	del := &metaEntry{Op: "del", SA: &streamAssignment{Account: globalAccountName, Config: StreamConfig{Name: "W"}},
		Origin: ml.Name(), ID: "test-delete-W", At: time.Now().UnixNano()}
	inFirst, subFirst := answers()
	del.Reply = inFirst
	propose(del)
	first, err := subFirst.NextMsg(3 * time.Second)
	if err != nil {
		t.Fatal("the first delete unanswered")
	}
	createStream(t, js, jetstream.StreamConfig{Name: "W", Subjects: []string{"w"}, Replicas: 3})
	inDup, subDup := answers()
	del.Reply, del.Copy = inDup, true
	propose(del)

	// A create after both: once it is applied everywhere, so are they.
	createStream(t, js, jetstream.StreamConfig{Name: "Z", Subjects: []string{"z"}, Replicas: 3})
	survivorsAgree(t, c, "Z", "Z everywhere", func(sa *streamAssignment) bool { return sa != nil })
	for _, s := range c.servers {
		sjc := s.js.Load().cluster
		if sjc.assignment(globalAccountName, "X") != nil {
			t.Errorf("%s: the create's copy re-created X", s.Name())
		}
		if sjc.assignment(globalAccountName, "W") == nil {
			t.Errorf("%s: the delete's copy deleted W created since", s.Name())
		}
		if got, want := sjc.reqList(), jc.reqList(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: request table differs from the leader's:\n%v\n%v", s.Name(), got, want)
		}
	}

	m, err := subCreate.NextMsg(3 * time.Second)
	if err != nil {
		t.Fatal("the create's copy unanswered")
	}
	var cr streamAnswerLite
	if json.Unmarshal(m.Data, &cr) != nil || cr.Error != nil || cr.Config.Name != "X" {
		t.Fatalf("the create's copy answered %s", m.Data)
	}
	m, err = subDup.NextMsg(3 * time.Second)
	if err != nil {
		t.Fatal("the delete's copy unanswered")
	}
	var a, b successResponse
	if json.Unmarshal(first.Data, &a) != nil || json.Unmarshal(m.Data, &b) != nil || a.Error == nil ||
		a.Error.ErrCode != 10059 || !reflect.DeepEqual(a, b) {
		t.Fatalf("the delete answered %s, its copy %s", first.Data, m.Data)
	}
}

// The table keeps the last metaReqsKept ids, in order, through a meta
// snapshot; a snapshot of an older version (no table) loads empty.
func TestMetaRequestTableSnapshot(t *testing.T) {
	var tab metaReqs
	for i := range metaReqsKept + 2 {
		rec := metaReqRec{ID: fmt.Sprint(i), At: int64(i)}
		if i%2 == 1 {
			rec.Err = errStreamNotFound()
		}
		tab.record(rec)
	}
	if _, ok := tab.find("0", 0); ok || len(tab.list()) != metaReqsKept {
		t.Fatalf("kept %d, the oldest still there: %v", len(tab.list()), ok)
	}
	var ms metaSnapshot
	if err := json.Unmarshal(encodeMetaSnapshot(nil, tab.list()), &ms); err != nil {
		t.Fatal(err)
	}
	var back metaReqs
	back.restore(ms.Reqs)
	if !reflect.DeepEqual(back.list(), tab.list()) {
		t.Fatal("the table changed through a snapshot")
	}
	if rec, ok := back.find("3", 3+int64(metaReqWindow)); !ok || rec.Err == nil || rec.Err.ErrCode != 10059 {
		t.Fatalf("id 3 after the snapshot: %v %+v", ok, rec)
	}
	if _, ok := back.find("3", 4+int64(metaReqWindow)); ok {
		t.Fatal("an id found past its window")
	}
	var old metaSnapshot
	if err := json.Unmarshal([]byte(`{"streams":[]}`), &old); err != nil || old.Reqs != nil {
		t.Fatalf("an older snapshot: %v %v", err, old.Reqs)
	}
}

// A server that catches up the meta group from a snapshot takes the
// request table from it, so it skips the same entries as the others: its
// table equals the leader's once it caught up (without the table in the
// snapshot it held only the ids it applied itself).
func TestJetStreamClusterMetaRequestTableInSnapshot(t *testing.T) {
	setForTest(t, &metaSnapshotEvery, 8)
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	down := slices.Index(c.servers, c.notMetaLeader(ml))
	_, js := jsClient(t, ml)
	createStream(t, js, jetstream.StreamConfig{Name: "FIRST", Subjects: []string{"first"}, Replicas: 3})
	c.servers[down].Shutdown()
	compactMeta(t, c, js, down, "B")
	c.servers[down] = runServer(t, c.opts[down])
	createStream(t, js, jetstream.StreamConfig{Name: "LAST", Subjects: []string{"last"}, Replicas: 3})
	survivorsAgree(t, c, "LAST", "LAST everywhere", func(sa *streamAssignment) bool { return sa != nil })
	got, want := c.servers[down].js.Load().cluster.reqList(), ml.js.Load().cluster.reqList()
	if len(want) < 13 || !reflect.DeepEqual(got, want) {
		t.Fatalf("restarted server's request table (%d ids) differs from the leader's (%d ids)", len(got), len(want))
	}
}

// A client cannot send a copy (and so name another request's id): copies
// are taken only from the system account, and one published in a client's
// account runs nothing.
func TestJetStreamClusterMetaCopyOnlyFromSystemAccount(t *testing.T) {
	c := runJSCluster(t, 3)
	ml := c.waitMetaLeader()
	nc, _ := jsClient(t, ml)
	body := mustJSON(t, metaCopy{Account: globalAccountName, Subject: "STREAM.CREATE.F", Orig: "_INBOX.someone",
		Reply: nats.NewInbox(), Body: mustJSON(t, jetstream.StreamConfig{Name: "F", Subjects: []string{"f"}})})
	if err := nc.Publish(metaCopySubject, body); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	neverWithin(t, time.Second, "a client's copy created F", func() bool {
		return ml.js.Load().cluster.assignment(globalAccountName, "F") != nil
	})
}

// While a meta peer speaks an older route protocol, entries carry no
// request id (that server would apply a copy again) and creates are not
// held; they apply as before.
func TestJetStreamClusterMetaRequestIDNotWithOlderPeer(t *testing.T) {
	var mu sync.Mutex
	ids := map[string]string{}
	testHookMetaAnswer = func(s *Server, me *metaEntry) {
		mu.Lock()
		defer mu.Unlock()
		ids[me.SA.Config.Name] = me.ID
	}
	t.Cleanup(func() { testHookMetaAnswer = nil }) // after the cluster stopped
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.routeProto = routeProtoMetaIDs - 1
		}
	})
	ml := c.waitMetaLeader()
	via := c.notMetaLeader(ml)
	_, js := jsClient(t, via)
	createStream(t, js, jetstream.StreamConfig{Name: "O", Subjects: []string{"o"}, Replicas: 3})
	mu.Lock()
	id, ok := ids["O"]
	mu.Unlock()
	if !ok || id != "" {
		t.Fatalf("the create's entry: applied %v, id %q", ok, id)
	}
	r := &apiRequest{jsa: via.js.Load().account(globalAccountName), reply: "_INBOX.x", subject: "STREAM.CREATE.P"}
	if h := r.newMetaHold("STREAM.CREATE.", raftID(ml.Name())); h != nil {
		t.Fatal("a create held while a peer cannot skip its copy")
	}
}
