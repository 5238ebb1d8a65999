package server

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterAccountStorageLimit: an account's max_file holds on
// an R3 stream, counting every replica on every server (as nats-server
// does), and the account's streams held only on other servers (learnt from
// their usage reports): the stream's leader refuses with 10023 once the
// total, plus the message three times, would pass the limit. The refused
// messages never enter the log: the replicas keep the same messages.
func TestJetStreamClusterAccountStorageLimit(t *testing.T) {
	const limit = 64 << 10
	c := runJSClusterWith(t, 3, func(_ int, o *Options) {
		acc := NewAccount("L")
		acc.jetstream = true
		acc.jsLimits = &jsLimits{MaxMemory: -1, MaxStore: limit, MaxStreams: -1}
		o.Accounts = []*Account{acc}
		o.Users = []*User{{Username: "l", Password: "l", Account: acc}}
	})
	nc := connectNATS(t, c.servers[0].ClientURL(), nats.UserInfo("l", "l"))
	js, _ := jetstream.New(nc)
	payload := []byte(strings.Repeat("x", 1000))
	// OTHER, one replica, holds about a third of the limit.
	createStream(t, js, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"other"}})
	for i := 0; i < 20; i++ {
		if _, err := js.Publish(ctx(t), "other", payload); err != nil {
			t.Fatalf("publish to OTHER: %v", err)
		}
	}
	others := c.accountReplicas("L", "OTHER")
	if len(others) != 1 {
		t.Fatalf("OTHER has %d replicas", len(others))
	}
	otherHost := others[0].jsa.js.srv.Name()
	var ost StreamState
	others[0].st().FastState(&ost)

	createStream(t, js, jetstream.StreamConfig{Name: "LIM", Subjects: []string{"lim"}, Replicas: 3})
	// LIM's leader must learn OTHER's size from a report.
	var leader *stream
	waitFor(t, 20*time.Second, "LIM led away from OTHER's server", func() bool {
		leader = nil
		for _, m := range c.accountReplicas("L", "LIM") {
			m.mu.Lock()
			lead := m.leader
			m.mu.Unlock()
			if lead {
				leader = m
			}
		}
		if leader != nil && leader.jsa.js.srv.Name() == otherHost {
			_, _ = nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.LIM", nil, 5*time.Second)
			return false
		}
		return leader != nil
	})
	waitFor(t, 10*time.Second, "LIM's leader counts OTHER", func() bool {
		return leader.jsa.clusterUsage(leader.jsa.js.cluster, FileStorage) == ost.Bytes
	})
	publish := func() error {
		_, err := js.Publish(ctx(t), "lim", payload)
		return err
	}
	if err := publish(); err != nil {
		t.Fatal(err)
	}
	var st StreamState
	leader.st().FastState(&st)
	per := st.Bytes
	fits := (limit - ost.Bytes - 3*per) / (3 * per) // more messages the account has room for
	var stored uint64
	var err error
	for stored = 0; stored <= fits; stored++ {
		if err = publish(); err != nil {
			break
		}
	}
	if apiCode(err) != 10023 || stored != fits {
		t.Fatalf("%d more messages stored (room for %d of %d bytes each beside OTHER's %d), then %v",
			stored, fits, per, ost.Bytes, err)
	}
	// The stream stays up and the replicas agree.
	waitFor(t, 10*time.Second, "replicas with the same messages", func() bool {
		for _, m := range c.accountReplicas("L", "LIM") {
			var st StreamState
			m.st().FastState(&st)
			if st.Msgs != 1+stored {
				return false
			}
		}
		return true
	})
	if err := publish(); apiCode(err) != 10023 {
		t.Fatalf("publish at the limit: %v", err)
	}
	// Account info shows the usage the limit is held to, and both
	// streams, from a server that does not hold OTHER.
	for _, s := range c.servers {
		if s.Name() == otherHost {
			continue
		}
		nc := connectNATS(t, s.ClientURL(), nats.UserInfo("l", "l"))
		js, _ := jetstream.New(nc)
		waitFor(t, 10*time.Second, "account info counting every replica", func() bool {
			info, err := js.AccountInfo(ctx(t))
			return err == nil && info.Store == ost.Bytes+3*(1+stored)*per && info.Streams == 2
		})
		break
	}
}

// accountReplicas lists the local replicas of an account's stream.
func (c *jsTestCluster) accountReplicas(account, name string) []*stream {
	var out []*stream
	for _, s := range c.servers {
		if js := s.js.Load(); js != nil {
			if jsa := js.account(account); jsa != nil {
				if m := jsa.lookup(name); m != nil {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// A server holding no replica of an account with limits of its own sends
// no usage report every second (an empty one counts as none): one goes
// while it holds such a replica, and one empty report when it stops
// holding any, so the others forget the replica at once.
func TestJetStreamClusterUsageReportsOnlyWhenHeld(t *testing.T) {
	c := runJSClusterWith(t, 3, func(_ int, o *Options) {
		acc := NewAccount("L")
		acc.jetstream = true
		acc.jsLimits = &jsLimits{MaxMemory: -1, MaxStore: 1 << 20, MaxStreams: -1}
		o.Accounts = []*Account{acc}
		o.Users = []*User{{Username: "l", Password: "l", Account: acc}}
	})
	sent := func() (n uint64) {
		for _, s := range c.servers {
			n += s.js.Load().cluster.usageSend.sent.Load()
		}
		return n
	}
	quiet := func(what string) {
		t.Helper()
		before := sent()
		time.Sleep(2500 * time.Millisecond) // an observation window: the count is the result
		if d := sent() - before; d != 0 {
			t.Fatalf("%s: %d usage reports sent in 2.5 s", what, d)
		}
	}
	quiet("no replica of a limited account held")

	nc := connectNATS(t, c.servers[0].ClientURL(), nats.UserInfo("l", "l"))
	js, _ := jetstream.New(nc)
	createStream(t, js, jetstream.StreamConfig{Name: "ONE", Subjects: []string{"one"}})
	if _, err := js.Publish(ctx(t), "one", []byte("x")); err != nil {
		t.Fatal(err)
	}
	held := c.accountReplicas("L", "ONE")
	if len(held) != 1 {
		t.Fatalf("ONE has %d replicas", len(held))
	}
	host := held[0].jsa.js.srv.Name()
	reported := func(want bool) func() bool {
		return func() bool {
			for _, s := range c.servers {
				if s.Name() == host {
					continue
				}
				u := &s.js.Load().cluster.usage
				u.mu.Lock()
				n := len(u.by[host].streams)
				u.mu.Unlock()
				if (n > 0) != want {
					return false
				}
			}
			return true
		}
	}
	waitFor(t, 10*time.Second, "ONE reported by its server", reported(true))
	if err := js.DeleteStream(ctx(t), "ONE"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the empty report after ONE's deletion", reported(false))
	quiet("after the empty report")
}
