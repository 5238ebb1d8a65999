package server

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// upsClient is a client connected to one server of the test.
type upsClient struct {
	name string
	nc   *nats.Conn
	js   jetstream.JetStream
}

// publishOutcome publishes once and says how it went: "ok" (acknowledged
// by stream), "none" (nobody listens: no stream has the subject) or the
// error's text.
func publishOutcome(js jetstream.JetStream, subject, stream string) string {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ack, err := js.Publish(c, subject, []byte("x"))
	switch {
	case err == nil && ack.Stream == stream:
		return "ok"
	case err == nil:
		return "acknowledged by stream " + ack.Stream
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return "none"
	}
	return err.Error()
}

// awaitPublish polls until a publish to subject through every client has
// the outcome want ("ok" or "none"), each within a deadline. An update is
// answered once the meta group applied it; the stream's leader takes the
// new configuration from the stream's log a moment later, and the other
// servers learn of its interest after that.
func awaitPublish(t *testing.T, clients []upsClient, subject, stream, want string) {
	t.Helper()
	for _, cl := range clients {
		last := ""
		deadline := time.Now().Add(15 * time.Second)
		for last != want {
			if time.Now().After(deadline) {
				t.Fatalf("publish to %q through %s: %q, want %q", subject, cl.name, last, want)
			}
			if last = publishOutcome(cl.js, subject, stream); last != want {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// storedOn is how many messages of the stream have subject, asked of the
// stream's leader (STREAM.INFO with a subjects filter).
func storedOn(t *testing.T, js jetstream.JetStream, stream, subject string) uint64 {
	t.Helper()
	st, err := js.Stream(ctx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx(t), jetstream.WithSubjectFilter(subject))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[subject]
}

func updateSubjects(t *testing.T, js jetstream.JetStream, cfg jetstream.StreamConfig, subjects ...string) jetstream.StreamConfig {
	t.Helper()
	cfg.Subjects = subjects
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("update to %v: %v", subjects, err)
	}
	return cfg
}

// checkSubjectUpdates adds a subject to a stream, then removes another,
// and checks through every client that the stream takes the added one and
// no longer takes the removed one (nothing stored, no responders, as
// nats-server answers).
func checkSubjectUpdates(t *testing.T, clients []upsClient, cfg jetstream.StreamConfig) jetstream.StreamConfig {
	t.Helper()
	js := clients[0].js
	awaitPublish(t, clients, "up.a", cfg.Name, "ok")
	awaitPublish(t, clients, "up.b", cfg.Name, "none")

	cfg = updateSubjects(t, js, cfg, "up.a", "up.b")
	expectPublish(t, clients, "up.b", cfg.Name, "ok")
	expectPublish(t, clients, "up.a", cfg.Name, "ok")

	before := storedOn(t, js, cfg.Name, "up.a")
	cfg = updateSubjects(t, js, cfg, "up.b")
	expectPublish(t, clients, "up.a", cfg.Name, "none")
	if after := storedOn(t, js, cfg.Name, "up.a"); after != before {
		t.Fatalf("removed up.a: %d messages stored, then %d", before, after)
	}
	expectPublish(t, clients, "up.b", cfg.Name, "ok")
	return cfg
}

// expectPublish publishes to subject once through every client, right
// after an update was answered: the stream's leader answers an update once
// it listens to the new subjects (and no longer to the removed ones), and
// its interest reaches each server before its answer does (one route).
func expectPublish(t *testing.T, clients []upsClient, subject, stream, want string) {
	t.Helper()
	for _, cl := range clients {
		if got := publishOutcome(cl.js, subject, stream); got != want {
			t.Fatalf("publish to %q through %s right after the update: %q, want %q", subject, cl.name, got, want)
		}
	}
}

func TestJetStreamUpdateSubjectsSingleServer(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	cfg := jetstream.StreamConfig{Name: "UPS", Subjects: []string{"up.a"}}
	createStream(t, js, cfg)
	checkSubjectUpdates(t, []upsClient{{s.Name(), nc, js}}, cfg)
}

// TestJetStreamClusterUpdateSubjects updates a stream's subjects and
// publishes through its leader and through the other servers, then again
// after the leader stepped down. The leader of a replicated stream (a
// stream in a cluster has a raft group, an R1 one of one server) listens
// to the stream's subjects only while it leads (startServing); applying a
// new configuration from the log changed the configuration and left those
// subscriptions as they were, so an added subject got no responders and a
// removed one was still stored, until the next change of leader.
func TestJetStreamClusterUpdateSubjects(t *testing.T) {
	for _, replicas := range []int{1, 3} {
		t.Run(fmt.Sprintf("R%d", replicas), func(t *testing.T) {
			c := runJSCluster(t, 3)
			var clients []upsClient
			for _, s := range c.servers {
				nc, js := jsClient(t, s)
				clients = append(clients, upsClient{s.Name(), nc, js})
			}
			cfg := jetstream.StreamConfig{Name: "UPS", Subjects: []string{"up.a"}, Replicas: replicas}
			createStream(t, clients[0].js, cfg)
			cfg = checkSubjectUpdates(t, clients, cfg)

			if replicas == 1 {
				return // no other replica to lead
			}
			leader := streamLeaderVia(clients[0].nc, cfg.Name)
			if _, err := clients[0].nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+cfg.Name, nil, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			awaitNewLeader(t, c, clients[0].nc, cfg.Name, leader)
			// The new leader serves the configuration it applied as a
			// follower, and the next update too.
			awaitPublish(t, clients, "up.b", cfg.Name, "ok")
			awaitPublish(t, clients, "up.a", cfg.Name, "none")
			cfg = updateSubjects(t, clients[1].js, cfg, "up.a")
			checkSubjectUpdates(t, clients, cfg)
		})
	}
}

// TestJetStreamClusterUpdateSubjectsOverlap: an update may not take a
// subject of another stream (10065), as a create may not and as on one
// server.
func TestJetStreamClusterUpdateSubjectsOverlap(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[1])
	createStream(t, js, jetstream.StreamConfig{Name: "OVA", Subjects: []string{"ov.a.*"}, Replicas: 3})
	cfg := jetstream.StreamConfig{Name: "OVB", Subjects: []string{"ov.b"}, Replicas: 3}
	createStream(t, js, cfg)
	cfg.Subjects = []string{"ov.b", "ov.a.x"}
	_, err := js.UpdateStream(ctx(t), cfg)
	if code := apiCode(err); code != 10065 {
		t.Fatalf("update overlapping another stream: %v (code %d), want 10065", err, code)
	}
	cfg.Subjects = []string{"ov.b", "ov.c"}
	if _, err := js.UpdateStream(ctx(t), cfg); err != nil {
		t.Fatalf("update its own and a free subject: %v", err)
	}
}

// TestJetStreamClusterUpdateSubjectsWhilePublishing publishes to a
// subject the stream keeps, through a server that does not lead, while
// other subjects come and go. Every publish is acknowledged (the kept
// subject never goes without a listener: new subscriptions are made before
// old ones are dropped) and every acknowledged one is stored.
func TestJetStreamClusterUpdateSubjectsWhilePublishing(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	cfg := jetstream.StreamConfig{Name: "UPW", Subjects: []string{"up.a"}, Replicas: 3}
	createStream(t, js, cfg)
	leader := streamLeaderVia(connectNATS(t, c.servers[0].ClientURL()), cfg.Name)
	var via *Server
	for _, s := range c.servers {
		if s.Name() != leader {
			via = s
		}
	}
	_, pjs := jsClient(t, via)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var acked []uint64
	var failures []string
	var done atomic.Int64 // publishes answered so far
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 5000; i++ { // bounded even if stop never closes
			select {
			case <-stop:
				return
			default:
			}
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			ack, err := pjs.Publish(c, "up.a", []byte(fmt.Sprint(i)))
			cancel()
			done.Add(1)
			if err != nil {
				failures = append(failures, err.Error())
				continue
			}
			acked = append(acked, ack.Sequence)
		}
	}()
	for round := 0; round < 6; round++ {
		if round%2 == 0 {
			cfg = updateSubjects(t, js, cfg, "up.a", "up.b")
		} else {
			cfg = updateSubjects(t, js, cfg, "up.a", "up.c")
		}
		// Some publishes between one update and the next.
		n := done.Load()
		waitFor(t, 10*time.Second, "publishes after an update", func() bool { return done.Load() >= n+3 })
	}
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d publishes to the kept subject failed, first: %s", len(failures), failures[0])
	}
	if len(acked) == 0 {
		t.Fatal("no publish acknowledged")
	}
	st, err := js.Stream(ctx(t), cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range acked {
		m, err := st.GetMsg(ctx(t), seq)
		if err != nil || m.Subject != "up.a" {
			t.Fatalf("acknowledged seq %d: %v %v", seq, m, err)
		}
	}
	waitReplicasApplied(t, c, cfg.Name)
	checkReplicasAgree(t, c, cfg.Name, uint64(len(acked)))
}
