package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// A server older than route protocol 10 relays its clients' requests
// whatever their reply subject: one naming $JSC.MCOPY as its reply
// reached the system account's responders of the newer servers, which
// answered there as the server itself (no client connection): messages
// on the cluster-only subject, made because a client asked, that the
// meta leader took for its own server's. A routed message naming a
// cluster-only reply subject is now dropped where it arrives.
func TestJetStreamClusterMetaCopyNoAnswerFromOlderRouteRequest(t *testing.T) {
	c := runJSClusterSysUserOlder(t, routeProtoClusterOnly-1)
	old, watch := c.servers[2], c.servers[0]
	got := make(chan string, 16)
	wnc := connectNATS(t, watch.ClientURL(), nats.UserInfo("sys", "sys"))
	if _, err := wnc.Subscribe(metaCopySubject, func(m *nats.Msg) {
		var a struct {
			Server struct {
				Name string `json:"name"`
			} `json:"server"`
		}
		_ = json.Unmarshal(m.Data, &a)
		if a.Server.Name != old.Name() { // the older server's own answer it may send
			got <- a.Server.Name
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := wnc.Flush(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the older server knows the watcher's interest", func() bool {
		return old.SystemAccount().sl.Match(metaCopySubject).Len() > 1
	})
	nc := connectNATS(t, old.ClientURL(), nats.UserInfo("sys", "sys"))
	if err := nc.PublishRequest("$SYS.REQ.SERVER.PING.VARZ", metaCopySubject, nil); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case name := <-got:
		t.Fatalf("%s answered a client's request on %s", name, metaCopySubject)
	case <-time.After(time.Second):
	}
}
