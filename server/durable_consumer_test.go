package server

import (
	"errors"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats.go/jetstream"
)

// A durable consumer whose creation was answered exists after a power
// loss right after the answer, and one whose deletion was answered does
// not come back (its directory removal was fsynced into the parent before
// the answer).
func TestDurableConsumerCreateDelete(t *testing.T) {
	disk := vfs.NewMem()
	o := testOptions()
	o.JetStream, o.StoreDir, o.fsys = true, t.TempDir(), disk
	s := runServer(t, o)
	_, js := jsClient(t, s)
	st := createStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}})
	for _, name := range []string{"KEEP", "GONE"} {
		if _, err := st.CreateConsumer(ctx(t), jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.DeleteConsumer(ctx(t), "GONE"); err != nil {
		t.Fatal(err)
	}
	powerCut([]*vfs.MemFS{disk}, []*Server{s})
	s = runServer(t, o)
	_, js = jsClient(t, s)
	st, err := js.Stream(ctx(t), "S")
	if err != nil {
		t.Fatalf("stream after the power loss: %v", err)
	}
	if _, err := st.Consumer(ctx(t), "KEEP"); err != nil {
		t.Fatalf("consumer KEEP after the power loss: %v", err)
	}
	if _, err := st.Consumer(ctx(t), "GONE"); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("deleted consumer GONE after the power loss: %v", err)
	}
}
