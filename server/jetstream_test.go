package server

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// runJSServer starts an in-process server with JetStream in a temp dir.
func runJSServer(t testing.TB) *Server {
	t.Helper()
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	return runServer(t, o)
}

func jsClient(t testing.TB, s *Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc := connectNATS(t, s.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func apiCode(err error) uint16 {
	var ae *jetstream.APIError
	if errors.As(err, &ae) {
		return uint16(ae.ErrorCode)
	}
	return 0
}

func TestJetStreamStreamBasics(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	st := createStream(t, js, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	cfg := st.CachedInfo().Config
	if cfg.MaxMsgs != -1 || cfg.MaxBytes != -1 || cfg.MaxMsgsPerSubject != -1 || cfg.Duplicates != 2*time.Minute || cfg.Replicas != 1 {
		t.Fatalf("normalised config %+v", cfg)
	}
	for i := 1; i <= 5; i++ {
		ack, err := js.Publish(ctx(t), fmt.Sprintf("orders.%d", i%2), []byte(fmt.Sprint(i)))
		if err != nil || ack.Sequence != uint64(i) || ack.Stream != "ORDERS" {
			t.Fatalf("publish %d: %+v %v", i, ack, err)
		}
	}
	info, err := st.Info(ctx(t), jetstream.WithSubjectFilter("orders.*"))
	if err != nil || info.State.Msgs != 5 || info.State.Subjects["orders.1"] != 3 {
		t.Fatalf("info %+v %v", info, err)
	}
	m, err := st.GetMsg(ctx(t), 3)
	if err != nil || string(m.Data) != "3" || m.Subject != "orders.1" {
		t.Fatalf("get 3: %+v %v", m, err)
	}
	m, err = st.GetLastMsgForSubject(ctx(t), "orders.0")
	if err != nil || m.Sequence != 4 {
		t.Fatalf("last orders.0: %+v %v", m, err)
	}
	if _, err := st.GetMsg(ctx(t), 99); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if err := st.DeleteMsg(ctx(t), 2); err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx(t), jetstream.WithPurgeSubject("orders.1")); err != nil {
		t.Fatal(err)
	}
	info, _ = st.Info(ctx(t))
	if info.State.Msgs != 1 {
		t.Fatalf("after purge %+v", info.State)
	}
	// idempotent create, conflicting create, overlap
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatalf("idempotent create: %v", err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"other"}}); apiCode(err) != 10058 {
		t.Fatalf("conflicting create: %v", err)
	}
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "O2", Subjects: []string{"orders.x"}}); apiCode(err) != 10065 {
		t.Fatalf("overlap: %v", err)
	}
	names := js.StreamNames(ctx(t))
	var got []string
	for n := range names.Name() {
		got = append(got, n)
	}
	if len(got) != 1 || got[0] != "ORDERS" {
		t.Fatalf("names %v", got)
	}
	if err := js.DeleteStream(ctx(t), "ORDERS"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx(t), "ORDERS"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestJetStreamKV(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	kv, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "cfg", History: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "cfg", History: 3}); err != nil {
		t.Fatalf("idempotent bucket create: %v", err)
	}
	rev, err := kv.Put(ctx(t), "a", []byte("1"))
	if err != nil || rev != 1 {
		t.Fatal(rev, err)
	}
	e, err := kv.Get(ctx(t), "a")
	if err != nil || string(e.Value()) != "1" || e.Revision() != 1 {
		t.Fatalf("get: %v %v", e, err)
	}
	if _, err := kv.Create(ctx(t), "a", []byte("x")); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Fatalf("create existing: %v", err)
	}
	if _, err := kv.Update(ctx(t), "a", []byte("2"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx(t), "a", []byte("3"), 1); apiCode(err) != 10071 {
		t.Fatalf("stale update: %v", err)
	}
	if _, err := kv.Create(ctx(t), "b", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx(t), "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx(t), "a"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("deleted get: %v", err)
	}
	if _, err := kv.Create(ctx(t), "a", []byte("again")); err != nil {
		t.Fatalf("create after delete: %v", err)
	}
	if err := kv.Purge(ctx(t), "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx(t), "b"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("purged get: %v", err)
	}
}

// createStream creates a stream or fails the test.
func createStream(t testing.TB, js jetstream.JetStream, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	st, err := js.CreateStream(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// setForTest sets a package variable (a tuning knob) for the test and
// restores it afterwards; the test must not run in parallel.
func setForTest[T any](t testing.TB, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}
