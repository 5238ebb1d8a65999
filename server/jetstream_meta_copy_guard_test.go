package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// forgedCopy is a held write's copy as a forger would publish it: a
// create of stream name in account A, or a delete when del.
func forgedCopy(t *testing.T, name string, del bool) []byte {
	mc := metaCopy{Account: "A", Subject: "STREAM.CREATE." + name, Orig: "_INBOX.victim", Reply: nats.NewInbox(),
		Body: mustJSON(t, jetstream.StreamConfig{Name: name, Subjects: []string{name}})}
	if del {
		mc.Subject, mc.Body = "STREAM.DELETE."+name, nil
	}
	return mustJSON(t, mc)
}

// forgeryAttempt has a cluster with stream KEEP in account A, and checks
// that send's forged copies (a create of FORGED, a delete of KEEP) change
// nothing on the meta leader, and that the refusals were counted.
func forgeryAttempt(t *testing.T, c *jsTestCluster, send func(body []byte)) {
	t.Helper()
	ml := c.waitMetaLeader()
	_, js := jsClientAs(t, ml, "a")
	createStream(t, js, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}, Replicas: 3})
	refused := func() int64 {
		var n int64
		for _, s := range c.servers {
			n += s.clusterOnly.refused.Load()
		}
		return n
	}
	before := refused()
	send(forgedCopy(t, "FORGED", false))
	send(forgedCopy(t, "KEEP", true))
	jc := ml.js.Load().cluster
	neverWithin(t, time.Second, "a forged copy ran", func() bool {
		return jc.assignment("A", "FORGED") != nil || jc.assignment("A", "KEEP") == nil
	})
	if refused() < before+2 {
		t.Fatalf("%d forged copies counted as refused, want 2", refused()-before)
	}
}

// jsClientAs connects user (password the same) to s.
func jsClientAs(t *testing.T, s *Server, user string) (*nats.Conn, jetstream.JetStream) {
	nc := connectNATS(t, s.ClientURL(), nats.UserInfo(user, user))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// A user of the system account published held-write copies on
// $JSC.MCOPY from a plain client connection, naming any account: a forged
// create created a stream in account A, a forged delete deleted one.
// Copies are now the cluster's own only: a client's publish there is
// refused (-ERR, counted, the connection stays), on the meta leader's
// server and on any other, whatever the client's account.
func TestJetStreamClusterMetaCopyNotFromSystemUser(t *testing.T) {
	c := runJSClusterSysUser(t)
	ml := c.waitMetaLeader()
	for _, s := range []*Server{ml, c.notMetaLeader(ml)} {
		errs := make(chan error, 8)
		nc := connectNATS(t, s.ClientURL(), nats.UserInfo("sys", "sys"),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
		forgeryAttempt(t, c, func(body []byte) {
			if err := nc.Publish(metaCopySubject, body); err != nil {
				t.Fatal(err)
			}
			if err := nc.Flush(); err != nil {
				t.Fatal(err)
			}
		})
		for range 2 {
			select {
			case err := <-errs:
				t.Logf("via %s: %v", s.Name(), err)
			case <-time.After(2 * time.Second):
				t.Errorf("via %s: the client was not told its publish was refused", s.Name())
			}
		}
		if !nc.IsConnected() {
			t.Errorf("via %s: the connection closed", s.Name())
		}
		// Nor may it name the subject as a reply (an answer would go there).
		if err := nc.PublishRequest("$JS.API.INFO", metaCopySubject, nil); err != nil {
			t.Fatal(err)
		}
		select {
		case <-errs:
		case <-time.After(2 * time.Second):
			t.Errorf("via %s: a request with reply %s not refused", s.Name(), metaCopySubject)
		}
		_, js := jsClientAs(t, ml, "a")
		if err := js.DeleteStream(ctx(t), "KEEP"); err != nil {
			t.Fatal(err)
		}
	}
}

// An import cannot carry a client's message to $JSC.MCOPY: with the
// system account exporting it as a service and account A importing it as
// "forge", a user of A forged copies through the import.
func TestJetStreamClusterMetaCopyNotThroughImport(t *testing.T) {
	c := runJSClusterWith(t, 3, func(_ int, o *Options) {
		a, sys := NewAccount("A"), NewAccount("SYS")
		a.jetstream = true
		if err := sys.AddServiceExport(metaCopySubject, nil); err != nil {
			t.Fatal(err)
		}
		a.cfgImports = append(a.cfgImports, importSpec{service: true, account: "SYS", subject: metaCopySubject, to: "forge"})
		o.Accounts = []*Account{a, sys}
		o.SystemAccount = "SYS"
		o.Users = []*User{{Username: "a", Password: "a", Account: a}, {Username: "sys", Password: "sys", Account: sys}}
	})
	ml := c.waitMetaLeader()
	nc, _ := jsClientAs(t, c.notMetaLeader(ml), "a")
	forgeryAttempt(t, c, func(body []byte) {
		if err := nc.Publish("forge", body); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	})
}

// A server older than route protocol 10 does not keep its clients off
// $JSC.MCOPY: it relays their publishes there to its routes. The meta
// leader takes copies only from this server or from meta peers of route
// protocol 10 or later, so a forgery sent through such a server runs
// nothing.
func TestJetStreamClusterMetaCopyNotFromOlderRoute(t *testing.T) {
	c := runJSClusterSysUserOlder(t, routeProtoClusterOnly-1)
	old := c.servers[2]
	c.metaLeaderOff(t, old)
	nc := connectNATS(t, old.ClientURL(), nats.UserInfo("sys", "sys"))
	forgeryAttempt(t, c, func(body []byte) {
		if err := nc.Publish(metaCopySubject, body); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	})
}

// A copy reaching the meta leader while a meta peer of an older route
// protocol is connected is not run: its entry would carry the original's
// id, which that peer does not apply (it would apply the copy again where
// the others skip it). The holding server checked when it held the write;
// the older peer may have connected since.
func TestJetStreamClusterMetaCopyNotRunWithOlderPeer(t *testing.T) {
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.routeProto = routeProtoMetaIDs - 1
		}
	})
	old := c.servers[2]
	c.metaLeaderOff(t, old)
	ml := c.waitMetaLeader()
	body := mustJSON(t, metaCopy{Account: globalAccountName, Subject: "STREAM.CREATE.OLDC", Orig: "_INBOX.orig",
		Reply: nats.NewInbox(), Body: mustJSON(t, jetstream.StreamConfig{Name: "OLDC", Subjects: []string{"oldc"}})})
	ml.deliver(nil, ml.SystemAccount(), metaCopySubject, "", nil, body) // as a holding server sends it
	jc := ml.js.Load().cluster
	neverWithin(t, time.Second, "a copy ran with an older meta peer", func() bool {
		return jc.assignment(globalAccountName, "OLDC") != nil
	})
	if ml.clusterOnly.notRun.Load() == 0 {
		t.Error("the copy not run was not counted (nor logged)")
	}
}
