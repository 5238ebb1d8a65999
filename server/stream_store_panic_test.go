package server

import (
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/testutil/faultfs"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamStorePanicAtShutdown: a panic in a file stream's store
// write while Shutdown stops the stream (its final sync and checkpoint)
// ended the whole process. Now the panic is logged, the stream's stop goes
// on and Shutdown returns.
func TestJetStreamStorePanicAtShutdown(t *testing.T) {
	sep := string(os.PathSeparator)
	pfs := &faultfs.PanicFS{FS: vfs.Default, Match: sep + "BAD" + sep + "msgs" + sep}
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	o.fsys = pfs
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
