package server

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterPubAckFollowsInboxChanges: pub acks of an R3 stream
// and its compare-and-set publishes (fresh subjects) reach the publisher's
// reply subscriptions as they are when the ack is sent, not as they were
// when earlier acks went out: the match of every reply inbox of one
// connection, and of every fresh subject under the stream's wildcard, is
// cached by prefix (internal/sublist/prefix.go), so a subscription removed
// or added under that prefix since must be seen. The publisher is on the
// stream leader's server (the ack goes straight from apply to its
// connection) and on another server (the ack and the interest cross a
// route).
func TestJetStreamClusterPubAckFollowsInboxChanges(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "ACKR", Subjects: []string{"ackr.>"},
		Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	li := c.waitLeaderIndex(t, "ACKR")
	for _, tc := range []struct {
		name string
		idx  int
	}{{"Leader", li}, {"OtherServer", (li + 1) % 3}} {
		t.Run(tc.name, func(t *testing.T) {
			nc := connectNATS(t, c.servers[tc.idx].ClientURL())
			inbox := "_INBOX.ackr" + tc.name
			subj := "ackr." + tc.name + "."
			n := 0
			publish := func(reply string) {
				t.Helper()
				n++
				m := nats.NewMsg(subj + strconv.Itoa(n))
				m.Reply = reply
				m.Header.Set(JSExpectedLastSubjSeq, "0")
				if err := nc.PublishMsg(m); err != nil {
					t.Fatal(err)
				}
			}
			subA := syncSub(t, nc, inbox+".*")
			for i := range 4 { // enough misses of both prefixes to cache them
				publish(inbox + ".a" + strconv.Itoa(i))
				wantAck(t, subA)
			}
			if err := subA.Unsubscribe(); err != nil {
				t.Fatal(err)
			}
			subB := syncSub(t, nc, inbox+".*")
			// Another server learns of subB through the route: publish
			// until an ack reaches it (each to a fresh inbox, as clients do).
			deadline := time.Now().Add(10 * time.Second)
			for got := false; !got; {
				if time.Now().After(deadline) {
					t.Fatal("no ack reached the re-created inbox subscription")
				}
				publish(inbox + ".b" + strconv.Itoa(n))
				_, got = tryAck(t, subB, 200*time.Millisecond)
			}
			drain(subB)
			subC := syncSub(t, nc, inbox+".lit")
			waitFor(t, 10*time.Second, "the literal inbox to get its ack", func() bool {
				publish(inbox + ".lit")
				_, gotC := tryAck(t, subC, 200*time.Millisecond)
				if _, gotB := tryAck(t, subB, 5*time.Second); !gotB {
					t.Fatal("the wildcard inbox lost an ack the literal one is sent")
				}
				return gotC
			})
			// Acks to other inboxes under the prefix do not reach the
			// literal one: they come before the next ack to it, which
			// has a later sequence.
			for i := range 3 {
				publish(inbox + ".c" + strconv.Itoa(i))
			}
			var last uint64
			for last == 0 {
				if m, ack, ok := ackMsg(t, subB, 5*time.Second); !ok {
					t.Fatal("no ack on the wildcard inbox")
				} else if m.Subject == inbox+".c2" {
					last = ack.Seq
				}
			}
			publish(inbox + ".lit")
			for {
				m, ack, ok := ackMsg(t, subC, 5*time.Second)
				if !ok {
					t.Fatal("no ack on the literal inbox")
				}
				if m.Subject != inbox+".lit" {
					t.Fatalf("the literal inbox got the ack sent to %s", m.Subject)
				}
				if ack.Seq > last {
					break
				}
			}
		})
	}
}

func syncSub(t *testing.T, nc *nats.Conn, subject string) *nats.Subscription {
	t.Helper()
	sub, err := nc.SubscribeSync(subject)
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return sub
}

// tryAck waits up to d for a pub ack on sub; it fails the test on an
// error ack or a sequence of 0.
func tryAck(t *testing.T, sub *nats.Subscription, d time.Duration) (casAck, bool) {
	t.Helper()
	_, ack, ok := ackMsg(t, sub, d)
	return ack, ok
}

// ackMsg is tryAck with the message (its subject is the reply inbox).
func ackMsg(t *testing.T, sub *nats.Subscription, d time.Duration) (*nats.Msg, casAck, bool) {
	t.Helper()
	m, err := sub.NextMsg(max(d, time.Millisecond))
	if err != nil {
		return nil, casAck{}, false
	}
	var ack casAck
	if err := json.Unmarshal(m.Data, &ack); err != nil || ack.Error != nil || ack.Seq == 0 {
		t.Fatalf("ack %q on %s: %v", m.Data, m.Subject, err)
	}
	return m, ack, true
}

func wantAck(t *testing.T, sub *nats.Subscription) {
	t.Helper()
	if _, ok := tryAck(t, sub, 5*time.Second); !ok {
		t.Fatalf("no ack on %s", sub.Subject)
	}
}

// drain takes whatever acks sub already holds (several publishes may
// have been answered by the time one was read).
func drain(sub *nats.Subscription) {
	for {
		if _, err := sub.NextMsg(time.Millisecond); err != nil {
			return
		}
	}
}
