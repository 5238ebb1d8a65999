package server

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// The embedding API turns JetStream on and off in a running server and
// reports it as nats-server does: StoreDir and JetStreamConfig name the
// "jetstream" directory, a disabled JetStream stops answering, and its
// streams come back with their messages when it is enabled again.
func TestEmbedEnableDisableJetStream(t *testing.T) {
	s := runServer(t, nil)
	if s.JetStreamEnabled() || s.JetStreamConfig() != nil || s.StoreDir() != "" {
		t.Fatalf("JetStream reported on a server without it")
	}
	if jsz, err := s.Jsz(nil); err != nil || !jsz.Disabled {
		t.Fatalf("Jsz without JetStream: %+v %v", jsz, err)
	}
	dir := t.TempDir()
	port := s.getOpts().Port
	if err := s.EnableJetStream(&JetStreamConfig{StoreDir: dir}); err != nil {
		t.Fatalf("EnableJetStream: %v", err)
	}
	if s.getOpts().Port != port {
		t.Fatalf("EnableJetStream changed the port option %d -> %d", port, s.getOpts().Port)
	}
	if err := s.EnableJetStream(nil); err == nil {
		t.Fatal("EnableJetStream twice succeeded")
	}
	want := filepath.Join(dir, "jetstream")
	if !s.JetStreamEnabled() || s.StoreDir() != want || s.JetStreamConfig().StoreDir != want {
		t.Fatalf("StoreDir %q, config %+v, want %q", s.StoreDir(), s.JetStreamConfig(), want)
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream(nats.MaxWait(2 * time.Second))
	if _, err := js.AddStream(&nats.StreamConfig{Name: "E", Subjects: []string{"e"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish("e", []byte("one")); err != nil {
		t.Fatal(err)
	}
	jsz, err := s.Jsz(&JSzOptions{})
	if err != nil || jsz.Streams != 1 || jsz.Messages != 1 || jsz.Config.StoreDir != want {
		t.Fatalf("Jsz %+v %v", jsz, err)
	}
	v, err := s.Varz(nil)
	if err != nil || v.JetStream.Config == nil || v.JetStream.Config.StoreDir != want || v.JetStream.Stats.Store == 0 {
		t.Fatalf("Varz jetstream %+v %v", v.JetStream, err)
	}
	if _, err := s.Jsz(&JSzOptions{Accounts: true}); err == nil {
		t.Fatal("Jsz with account details succeeded although Tern does not report them")
	}

	if err := s.DisableJetStream(); err != nil {
		t.Fatalf("DisableJetStream: %v", err)
	}
	if s.JetStreamEnabled() || s.StoreDir() != "" {
		t.Fatal("JetStream still reported after DisableJetStream")
	}
	if _, err := js.StreamInfo("E"); !errors.Is(err, nats.ErrJetStreamNotEnabled) && !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("stream info with JetStream disabled: %v", err)
	}
	if err := s.EnableJetStream(nil); err != nil {
		t.Fatalf("EnableJetStream again: %v", err)
	}
	if m, err := js.GetMsg("E", 1); err != nil || string(m.Data) != "one" {
		t.Fatalf("message after re-enabling: %v %v", m, err)
	}
}

func TestEmbedAccountsAndConnz(t *testing.T) {
	s := runServer(t, nil)
	if g := s.GlobalAccount(); g == nil || g.Name != "$G" {
		t.Fatalf("GlobalAccount %v", g)
	}
	base := s.NumSubscriptions()
	nc, err := nats.Connect(s.ClientURL(), nats.Name("embedder"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.SubscribeSync("a.b"); err != nil || nc.Flush() != nil {
		t.Fatal(err)
	}
	if n := s.NumSubscriptions(); n != base+1 {
		t.Fatalf("NumSubscriptions %d, want %d", n, base+1)
	}
	cz, err := s.Connz(&ConnzOptions{Sort: ByCid, Subscriptions: true})
	if err != nil || cz.NumConns != 1 || cz.Conns[0].Name != "embedder" || len(cz.Conns[0].Subs) != 1 {
		t.Fatalf("Connz %+v %v", cz, err)
	}
	if _, err := s.Connz(&ConnzOptions{Sort: "sideways"}); err == nil {
		t.Fatal("Connz with an unknown sort succeeded")
	}
	nc.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cz, err = s.Connz(&ConnzOptions{State: ConnClosed})
		if err == nil && cz.NumConns == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("closed connections: %+v %v", cz, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestEmbedMoreMethods(t *testing.T) {
	o := testOptions()
	o.ServerName = "more"
	s := runServer(t, o)
	if s.String() != "more" || s.ConfigTime().IsZero() || s.JetStreamIsClustered() || s.JetStreamIsLeader() {
		t.Fatalf("String %q ConfigTime %v clustered %v leader %v", s.String(), s.ConfigTime(), s.JetStreamIsClustered(), s.JetStreamIsLeader())
	}
	loaded := s.NumLoadedAccounts()
	acc, err := s.RegisterAccount("NEW")
	if err != nil || acc.Name != "NEW" || s.NumLoadedAccounts() != loaded+1 {
		t.Fatalf("RegisterAccount: %v %v (%d accounts)", acc, err, s.NumLoadedAccounts())
	}
	if _, err := s.RegisterAccount("NEW"); !errors.Is(err, ErrAccountExists) {
		t.Fatalf("RegisterAccount twice: %v", err)
	}
	if got, isNew := s.LookupOrRegisterAccount("NEW"); isNew || got != acc {
		t.Fatalf("LookupOrRegisterAccount(NEW) = %v, %v", got, isNew)
	}
	if got, err := s.LookupAccount("NEW"); err != nil || got != acc {
		t.Fatalf("LookupAccount(NEW) = %v, %v", got, err)
	}
	if s.NumActiveAccounts() != 0 {
		t.Fatalf("active accounts %d without clients", s.NumActiveAccounts())
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.SubscribeSync("x.y"); err != nil || nc.Flush() != nil {
		t.Fatal(err)
	}
	if s.NumActiveAccounts() != 1 {
		t.Fatalf("active accounts %d with one client", s.NumActiveAccounts())
	}
	sz, err := s.Subsz(&SubszOptions{Subscriptions: true, Test: "x.y"})
	if err != nil || sz.NumSubs == 0 {
		t.Fatalf("Subsz %+v %v", sz, err)
	}
	if _, err := s.Subsz(&SubszOptions{Limit: 1}); err == nil {
		t.Fatal("Subsz with paging succeeded although Tern does not page")
	}
	if rz, err := s.Routez(nil); err != nil || rz == nil {
		t.Fatalf("Routez %v %v", rz, err)
	}
	if _, err := s.Routez(&RoutezOptions{Subscriptions: true}); err == nil {
		t.Fatal("Routez with subscriptions succeeded")
	}
	az, err := s.Accountz(nil)
	if err != nil || len(az.Accounts) != s.NumLoadedAccounts() {
		t.Fatalf("Accountz %+v %v", az, err)
	}
}
