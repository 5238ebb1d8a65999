package server

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// With JetStream enabled for the system account, a system user made a
// push consumer deliver to $JSC.MCOPY and stored forged copies in its
// stream: the consumer's leader delivered them as the server's own
// publishes (no client connection), which the meta leader took for copies
// of held writes, creating and deleting streams of any account.
// nats-server never enables JetStream for the system account.
func TestJetStreamClusterMetaCopyNotThroughSystemStream(t *testing.T) {
	c := runJSClusterWith(t, 3, func(_ int, o *Options) {
		a, sys := NewAccount("A"), NewAccount("SYS")
		a.jetstream, sys.jetstream = true, true
		o.Accounts = []*Account{a, sys}
		o.SystemAccount = "SYS"
		o.Users = []*User{{Username: "a", Password: "a", Account: a}, {Username: "sys", Password: "sys", Account: sys}}
	})
	ml := c.waitMetaLeader()
	_, ajs := jsClientAs(t, ml, "a")
	createStream(t, ajs, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}, Replicas: 3})
	nc, js := jsClientAs(t, c.notMetaLeader(ml), "sys")
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "F", Subjects: []string{"f"}}); err != nil {
		t.Logf("no stream in the system account: %v", err)
		return
	}
	req := []byte(`{"stream_name":"F","config":{"durable_name":"P","deliver_subject":"` + metaCopySubject + `","ack_policy":"none"}}`)
	m, err := nc.Request("$JS.API.CONSUMER.DURABLE.CREATE.F.P", req, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("push consumer: %s", m.Data)
	for _, body := range [][]byte{forgedCopy(t, "FORGED", false), forgedCopy(t, "KEEP", true)} {
		if _, err := js.Publish(ctx(t), "f", body); err != nil {
			t.Fatal(err)
		}
	}
	jc := ml.js.Load().cluster
	neverWithin(t, 2*time.Second, "a forged copy ran", func() bool {
		return jc.assignment("A", "FORGED") != nil || jc.assignment("A", "KEEP") == nil
	})
}
