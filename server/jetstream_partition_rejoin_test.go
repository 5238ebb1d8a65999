package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// rejoinWithin is how soon after a heal an isolated server must answer
// for every stream again (issue 19: "within seconds of a heal").
const rejoinWithin = 5 * time.Second

// TestJetStreamClusterRejoinAfterPartition isolates one server of three
// while R3 streams take writes on the majority side (some of them led by
// the isolated server when it was cut off), heals, and requires that
// within rejoinWithin a client connected to that server gets STREAM.INFO
// answered for every stream (no 10008) and that the server's replicas
// hold every message. Issue 19 saw a server's JetStream answer 10008 well
// after every fault had healed.
func TestJetStreamClusterRejoinAfterPartition(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const streams = 6
	for i := range streams {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("RJ%d", i), Subjects: []string{fmt.Sprintf("rj%d.>", i)}, Replicas: 3})
	}
	// Leaders spread over the servers: the isolated one, the meta leader,
	// leads some streams too.
	iso := c.waitMetaLeader()
	var rest []*Server
	for _, s := range c.servers {
		if s != iso {
			rest = append(rest, s)
		}
	}
	ncRest := connectNATS(t, rest[0].ClientURL()+","+rest[1].ClientURL(), nats.MaxReconnects(-1))
	publish := func(i, n int) {
		for k := range n {
			waitFor(t, 15*time.Second, "a publish", func() bool {
				resp, err := ncRest.Request(fmt.Sprintf("rj%d.x", i), []byte(fmt.Sprint(k)), time.Second)
				if err != nil {
					return false
				}
				var ack casAck
				return json.Unmarshal(resp.Data, &ack) == nil && ack.Error == nil && ack.Seq > 0
			})
		}
	}
	for i := range streams {
		publish(i, 5)
	}
	partition([]*Server{iso}, rest)
	cut := time.Now()
	for i := range streams { // on the majority side, under new leaders where iso led
		publish(i, 20)
	}
	// Long enough for the isolated server to give up its leaderships and
	// campaign, again and again, in the groups it is cut off from.
	for time.Since(cut) < 4*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	heal(c.servers)
	healed := time.Now()
	waitForMesh(t, c.servers)

	nc := connectNATS(t, iso.ClientURL(), nats.IgnoreDiscoveredServers())
	pending := map[string]string{}
	for i := range streams {
		pending[fmt.Sprintf("RJ%d", i)] = "not asked yet"
	}
	deadline := healed.Add(rejoinWithin)
	for len(pending) > 0 && time.Now().Before(deadline) {
		for name := range pending {
			if why := rejoined(nc, iso, name, 25); why != "" {
				pending[name] = why
			} else {
				delete(pending, name)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(pending) > 0 {
		var why []string
		for name, w := range pending {
			why = append(why, name+": "+w)
		}
		t.Fatalf("%v after the heal, %s does not serve every stream: %s", rejoinWithin, iso.Name(), strings.Join(why, "; "))
	}
	t.Logf("%s served every stream %v after the heal", iso.Name(), time.Since(healed).Round(time.Millisecond))
}

// rejoined reports why server s does not serve stream name yet ("": it
// does): STREAM.INFO through its client nc must be answered without
// error, and its own replica must hold msgs messages.
func rejoined(nc *nats.Conn, s *Server, name string, msgs uint64) string {
	resp, err := nc.Request("$JS.API.STREAM.INFO."+name, nil, 500*time.Millisecond)
	if err != nil {
		return "STREAM.INFO: " + err.Error()
	}
	var r struct {
		Error *ApiError `json:"error"`
	}
	if json.Unmarshal(resp.Data, &r) != nil || r.Error != nil {
		return "STREAM.INFO answered " + string(resp.Data)
	}
	jsa := s.js.Load().account(globalAccountName)
	if jsa == nil {
		return "no account"
	}
	mset := jsa.lookup(name)
	if mset == nil {
		return "no replica"
	}
	var st StreamState
	mset.st().FastState(&st)
	if st.Msgs != msgs {
		return fmt.Sprintf("its replica holds %d of %d messages", st.Msgs, msgs)
	}
	return ""
}
