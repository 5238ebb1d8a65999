package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// JetStream on a server that has routes but no JetStream cluster (the
// seed of a cluster, with JetStream of its own): creating and updating a
// stream subscribes it, which sends the interest to the routes, so a
// publish from the other server is stored. Under -race the lock-order
// checker watches this path: subscribing takes routeTable.mu, which must
// not be taken under jsAccount.mu (addStream and updateStream used to).
func TestStreamCreateUpdateOnRoutedServer(t *testing.T) {
	dir := t.TempDir()
	servers := runCluster(t, 2, func(i int, o *Options) {
		if i == 0 {
			o.JetStream, o.StoreDir = true, dir
		}
	})
	_, js := jsClient(t, servers[0])
	nc2 := connectNATS(t, servers[1].ClientURL())
	st := createStream(t, js, jetstream.StreamConfig{Name: "ROUTED", Subjects: []string{"a.>"}})
	stored := func(subject string, want uint64) {
		t.Helper()
		waitFor(t, 10*time.Second, "interest in "+subject+" on the other server", func() bool {
			return servers[1].accs.lookup(globalAccountName).sl.HasInterest(subject)
		})
		if err := nc2.Publish(subject, []byte("x")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the publish from the other server stored", func() bool {
			info, err := st.Info(ctx(t))
			return err == nil && info.State.Msgs == want
		})
	}
	stored("a.1", 1)
	if _, err := js.UpdateStream(ctx(t), jetstream.StreamConfig{Name: "ROUTED", Subjects: []string{"a.>", "b.>"}}); err != nil {
		t.Fatal(err)
	}
	stored("b.1", 2)
}
