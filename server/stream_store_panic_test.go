package server

import (
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/testutil/faultfs"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// badStorePanicOptions is a JetStream server's options whose file system
// panics, once armed, in a write to stream BAD's store.
func badStorePanicOptions(t *testing.T) (*faultfs.PanicFS, *Options) {
	sep := string(os.PathSeparator)
	pfs := &faultfs.PanicFS{FS: vfs.Default, Match: sep + "BAD" + sep + "msgs" + sep}
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	o.fsys = pfs
	return pfs, o
}

// TestJetStreamStorePanicAtShutdown: a panic in a file stream's store
// write while Shutdown stops the stream (its final sync and checkpoint)
// ended the whole process. Now the panic is logged, the stream's stop goes
// on and Shutdown returns.
func TestJetStreamStorePanicAtShutdown(t *testing.T) {
	pfs, o := badStorePanicOptions(t)
	s := runServer(t, o)
	nc, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Storage: jetstream.FileStorage})
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx(t), "bad", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	nc.Close()
	pfs.Write.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Shutdown()
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Shutdown did not return after the store panicked")
	}
	if !pfs.Fired.Load() {
		t.Fatal("the armed store write never came: the test proves nothing")
	}
}

// TestJetStreamStorePanicOnPublish: a stream on one server stores and
// flushes a publish on the publisher's goroutine; a panic in its store's
// write there ended the whole process. Now the publisher gets a store
// failure (10077), the stream refuses writes from then on, /healthz
// reports it, and the server and the other stream keep working. "store":
// a write inside StoreMsg (a message that does not fit the active block:
// the block is sealed, its index written);
// "flush": the flush at the end of the publisher's read (sync_interval).
func TestJetStreamStorePanicOnPublish(t *testing.T) {
	for _, where := range []string{"store", "flush"} {
		t.Run(where, func(t *testing.T) { testStorePanicOnPublish(t, where) })
	}
}

func testStorePanicOnPublish(t *testing.T, where string) {
	setForTest(t, &fileStoreBlockSize, 64<<10)
	pfs, o := badStorePanicOptions(t)
	o.SyncInterval = 2 * time.Minute // acks wait for a flush, not an fsync
	s := runServer(t, o)
	_, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "BAD", Subjects: []string{"bad"}, Storage: jetstream.FileStorage})
	createStream(t, js, jetstream.StreamConfig{Name: "GOOD", Subjects: []string{"good"}, Storage: jetstream.FileStorage})
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx(t), "bad", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	data := []byte("y")
	if where == "store" {
		data = make([]byte, 70<<10) // past the active block: StoreMsg seals it
	}
	storeFailed := func(what string, err error) {
		t.Helper()
		var apiErr *jetstream.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10077 {
			t.Fatalf("%s: %v, want a store failure (10077)", what, err)
		}
	}
	pfs.Write.Store(true)
	_, err := js.Publish(ctx(t), "bad", data)
	if !pfs.Fired.Load() {
		t.Fatal("the armed store write never came: the test proves nothing")
	}
	storeFailed("the publish whose write panicked", err)
	_, err = js.Publish(ctx(t), "bad", []byte("z"))
	storeFailed("a publish after the panic", err)
	for i := 0; i < 5; i++ {
		if _, err := js.Publish(ctx(t), "good", []byte("g")); err != nil {
			t.Fatalf("GOOD publish %d: %v", i, err)
		}
	}
	if h := s.jsHealth(httptest.NewRequest("GET", "/healthz", nil)); h == nil || h.StatusCode != 503 || !strings.Contains(h.Error, "BAD") {
		t.Fatalf("/healthz does not report the failed stream: %+v", h)
	}
}
