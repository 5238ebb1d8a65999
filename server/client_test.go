package server

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"
)

func connectNATS(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	// nats.go's 2 s connect timeout (for the INFO after the TCP accept)
	// failed once in CI while the race-instrumented servers replayed
	// 20,000 messages on a machine loaded well beyond its two cores; a
	// test's own Timeout option still wins (options apply in order).
	opts = append([]nats.Option{nats.Timeout(10 * time.Second)}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestClientPubSub(t *testing.T) {
	s := runServer(t, nil)
	nc := connectNATS(t, s.ClientURL())
	sub, err := nc.SubscribeSync("foo.*")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if err := nc.Publish("foo.bar", []byte("hello")); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 10; i++ {
		m, err := sub.NextMsg(2 * time.Second)
		if err != nil || string(m.Data) != "hello" || m.Subject != "foo.bar" {
			t.Fatalf("msg %d: %v %+v", i, err, m)
		}
	}
	if info := nc.ConnectedServerVersion(); info != VERSION {
		t.Fatalf("version %q", info)
	}
	if !nc.HeadersSupported() {
		t.Fatal("headers not supported")
	}
}

func TestClientQueueGroups(t *testing.T) {
	s := runServer(t, nil)
	pub := connectNATS(t, s.ClientURL())
	var counts [3]atomic.Int32
	var total atomic.Int32
	for i := range counts {
		nc := connectNATS(t, s.ClientURL())
		if _, err := nc.QueueSubscribe("work", "workers", func(*nats.Msg) {
			counts[i].Add(1)
			total.Add(1)
		}); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	const n = 300
	for i := 0; i < n; i++ {
		if err := pub.Publish("work", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "all queue messages", func() bool { return total.Load() == n })
	for i := range counts {
		if counts[i].Load() == 0 {
			t.Fatalf("member %d got nothing", i)
		}
	}
	if err := pub.Flush(); err != nil {
		t.Fatal(err)
	}
	if total.Load() != n {
		t.Fatalf("each message must go to exactly one member: %d", total.Load())
	}
}

func TestClientRequestReply(t *testing.T) {
	s := runServer(t, nil)
	srv := connectNATS(t, s.ClientURL())
	if _, err := srv.Subscribe("svc.echo", func(m *nats.Msg) {
		r := nats.NewMsg(m.Reply)
		r.Data = append([]byte("echo:"), m.Data...)
		r.Header.Set("X-Seen", m.Header.Get("X-In"))
		_ = m.RespondMsg(r)
	}); err != nil {
		t.Fatal(err)
	}
	srv.Flush()
	nc := connectNATS(t, s.ClientURL())
	for i := 0; i < 50; i++ {
		req := nats.NewMsg("svc.echo")
		req.Data = []byte("hi")
		req.Header.Set("X-In", "v1")
		resp, err := nc.RequestMsg(req, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Data) != "echo:hi" || resp.Header.Get("X-Seen") != "v1" {
			t.Fatalf("bad response %q %v", resp.Data, resp.Header)
		}
	}
	// Old-style requests use a unique inbox with UNSUB max 1.
	oc := connectNATS(t, s.ClientURL(), nats.UseOldRequestStyle())
	if resp, err := oc.Request("svc.echo", []byte("old"), 2*time.Second); err != nil || string(resp.Data) != "echo:old" {
		t.Fatalf("old style: %v %v", err, resp)
	}
}

func TestClientNoResponders(t *testing.T) {
	s := runServer(t, nil)
	nc := connectNATS(t, s.ClientURL())
	start := time.Now()
	_, err := nc.Request("nobody.home", nil, 5*time.Second)
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("expected no responders, got %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("no responders should be immediate")
	}
}

func TestClientEchoOff(t *testing.T) {
	s := runServer(t, nil)
	nc := connectNATS(t, s.ClientURL(), nats.NoEcho())
	other := connectNATS(t, s.ClientURL())
	own, _ := nc.SubscribeSync("e")
	theirs, _ := other.SubscribeSync("e")
	nc.Flush()
	other.Flush()
	nc.Publish("e", []byte("1"))
	nc.Flush()
	if _, err := theirs.NextMsg(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if m, err := own.NextMsg(100 * time.Millisecond); err == nil {
		t.Fatalf("echo off delivered own message %q", m.Data)
	}
}

func TestClientDrain(t *testing.T) {
	s := runServer(t, nil)
	nc := connectNATS(t, s.ClientURL())
	var got atomic.Int32
	if _, err := nc.Subscribe("d", func(*nats.Msg) {
		time.Sleep(time.Millisecond)
		got.Add(1)
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	pub := connectNATS(t, s.ClientURL())
	for i := 0; i < 100; i++ {
		pub.Publish("d", nil)
	}
	pub.Flush()
	waitFor(t, 5*time.Second, "first delivery", func() bool { return got.Load() > 0 })
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("drain did not close")
	}
	if got.Load() != 100 {
		t.Fatalf("drain lost messages: %d", got.Load())
	}
}

func TestClientReconnect(t *testing.T) {
	o := testOptions()
	o.Port = freePort(t)
	s := runServer(t, o)
	var reconnected atomic.Bool
	nc := connectNATS(t, s.ClientURL(), nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1),
		nats.ReconnectHandler(func(*nats.Conn) { reconnected.Store(true) }))
	sub, _ := nc.SubscribeSync("r")
	nc.Flush()
	s.Shutdown()
	s2 := runServer(t, o)
	waitFor(t, 10*time.Second, "reconnect", reconnected.Load)
	pub := connectNATS(t, s2.ClientURL())
	pub.Publish("r", []byte("after"))
	pub.Flush()
	if m, err := sub.NextMsg(2 * time.Second); err != nil || string(m.Data) != "after" {
		t.Fatalf("subscription not restored: %v", err)
	}
}

func TestClientAuthUserPassword(t *testing.T) {
	hash, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), 4)
	o := testOptions()
	o.Users = []*User{{Username: "alice", Password: "pw"}, {Username: "bob", Password: string(hash)}}
	s := runServer(t, o)
	connectNATS(t, s.ClientURL(), nats.UserInfo("alice", "pw"))
	connectNATS(t, s.ClientURL(), nats.UserInfo("bob", "s3cret"))
	for _, bad := range [][2]string{{"alice", "nope"}, {"bob", "pw"}, {"eve", "pw"}} {
		if nc, err := nats.Connect(s.ClientURL(), nats.UserInfo(bad[0], bad[1]), nats.NoReconnect()); err == nil {
			nc.Close()
			t.Fatalf("%v connected", bad)
		} else if !errors.Is(err, nats.ErrAuthorization) {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	if _, err := nats.Connect(s.ClientURL(), nats.NoReconnect()); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("no creds: %v", err)
	}
}

func TestClientAuthToken(t *testing.T) {
	o := testOptions()
	o.Authorization = "tok"
	s := runServer(t, o)
	connectNATS(t, s.ClientURL(), nats.Token("tok"))
	if _, err := nats.Connect(s.ClientURL(), nats.Token("bad")); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("bad token: %v", err)
	}
}

func TestClientAuthNkey(t *testing.T) {
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	o := testOptions()
	o.Nkeys = []*NkeyUser{{Nkey: pub}}
	s := runServer(t, o)
	sign := func(nonce []byte) ([]byte, error) { return kp.Sign(nonce) }
	connectNATS(t, s.ClientURL(), nats.Nkey(pub, sign))
	other, _ := nkeys.CreateUser()
	wrongSign := func(nonce []byte) ([]byte, error) { return other.Sign(nonce) }
	if _, err := nats.Connect(s.ClientURL(), nats.Nkey(pub, wrongSign)); !errors.Is(err, nats.ErrAuthorization) {
		t.Fatalf("wrong signature: %v", err)
	}
}

func TestClientPermissions(t *testing.T) {
	o := testOptions()
	o.Users = []*User{{Username: "u", Password: "p", Permissions: &Permissions{
		Publish:   &SubjectPermission{Allow: []string{"ok.>"}},
		Subscribe: &SubjectPermission{Allow: []string{"ok.>"}, Deny: []string{"ok.hidden"}},
	}}}
	s := runServer(t, o)
	errs := make(chan error, 10)
	nc := connectNATS(t, s.ClientURL(), nats.UserInfo("u", "p"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	sub, _ := nc.SubscribeSync("ok.*")
	nc.Publish("no.way", []byte("x"))
	select {
	case err := <-errs:
		if !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no permission error")
	}
	if !nc.IsConnected() {
		t.Fatal("permission violation must not close the connection")
	}
	nc.Publish("ok.hidden", []byte("h"))
	nc.Publish("ok.fine", []byte("f"))
	m, err := sub.NextMsg(2 * time.Second)
	if err != nil || m.Subject != "ok.fine" {
		t.Fatalf("got %v %v (denied subject must not be delivered)", m, err)
	}
}

func TestClientAllowResponses(t *testing.T) {
	o := testOptions()
	o.Users = []*User{
		{Username: "svc", Password: "p", Permissions: &Permissions{
			Subscribe: &SubjectPermission{Allow: []string{"req"}},
			Response:  &ResponsePermission{MaxMsgs: 1},
		}},
		{Username: "cli", Password: "p"},
	}
	s := runServer(t, o)
	svc := connectNATS(t, s.ClientURL(), nats.UserInfo("svc", "p"))
	svc.Subscribe("req", func(m *nats.Msg) { m.Respond([]byte("pong")) })
	svc.Flush()
	cli := connectNATS(t, s.ClientURL(), nats.UserInfo("cli", "p"))
	for i := 0; i < 3; i++ {
		if r, err := cli.Request("req", nil, 2*time.Second); err != nil || string(r.Data) != "pong" {
			t.Fatalf("request %d: %v", i, err)
		}
	}
}

func TestClientManyPublishersFanout(t *testing.T) {
	s := runServer(t, nil)
	const subs, pubs, per = 4, 4, 500
	var got atomic.Int64
	for i := 0; i < subs; i++ {
		nc := connectNATS(t, s.ClientURL())
		nc.Subscribe("fan.>", func(*nats.Msg) { got.Add(1) })
		nc.Flush()
	}
	var wg sync.WaitGroup
	for i := 0; i < pubs; i++ {
		nc := connectNATS(t, s.ClientURL())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < per; j++ {
				nc.Publish("fan.x", make([]byte, 128))
			}
			nc.Flush()
		}()
	}
	wg.Wait()
	waitFor(t, 10*time.Second, "fanout", func() bool { return got.Load() == subs*pubs*per })
}
