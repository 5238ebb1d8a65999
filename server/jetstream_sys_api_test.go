package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// runJSClusterSysUser starts 3 servers with a JetStream account A (user a)
// and a system account SYS (user sys).
func runJSClusterSysUser(t *testing.T) *jsTestCluster {
	return runJSClusterSysUserOlder(t, 0)
}

// runJSClusterSysUserOlder is runJSClusterSysUser with its third server
// advertising route protocol proto (0: the current one).
func runJSClusterSysUserOlder(t *testing.T, proto int) *jsTestCluster {
	return runJSClusterWith(t, 3, func(i int, o *Options) {
		a, sys := NewAccount("A"), NewAccount("SYS")
		a.jetstream = true
		o.Accounts = []*Account{a, sys}
		o.SystemAccount = "SYS"
		o.Users = []*User{{Username: "a", Password: "a", Account: a}, {Username: "sys", Password: "sys", Account: sys}}
		if i == 2 && proto > 0 {
			o.routeProto = proto
		}
	})
}

// metaLeaderOff has the meta leader hand over until it is not s.
func (c *jsTestCluster) metaLeaderOff(t *testing.T, s *Server) {
	t.Helper()
	waitFor(t, 10*time.Second, "a meta leader other than "+s.Name(), func() bool {
		if c.waitMetaLeader() == s {
			c.stepDownMeta()
			return false
		}
		return true
	})
}

// stepDownMeta has the meta leader hand over, as a system user's
// $JS.API.META.LEADER.STEPDOWN does.
func (c *jsTestCluster) stepDownMeta() {
	js := c.waitMetaLeader().js.Load()
	js.cluster.mu.Lock()
	g := js.cluster.meta
	js.cluster.mu.Unlock()
	transferLeadership(g)
}

// $JS.API.META.LEADER.STEPDOWN and the other cluster-operator calls are
// answered only for the system account, as nats-server does: a JetStream
// tenant gets no answer and cannot force a meta election (issue 16).
func TestJetStreamClusterMetaStepdownSystemOnly(t *testing.T) {
	c := runJSClusterSysUser(t)
	leader := c.waitMetaLeader()
	var other *Server
	for _, s := range c.servers {
		if s != leader {
			other = s
		}
	}
	for _, s := range []*Server{leader, other} {
		nc := connectNATS(t, s.ClientURL(), nats.UserInfo("a", "a"))
		inbox := nats.NewInbox()
		answers, err := nc.SubscribeSync(inbox)
		if err != nil {
			t.Fatal(err)
		}
		for _, subj := range []string{"$JS.API.META.LEADER.STEPDOWN", "$JS.API.SERVER.REMOVE", "$JS.API.ACCOUNT.PURGE.A", "$JS.API.META.RESCUE"} {
			if err := nc.PublishRequest(subj, inbox, []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
		// INFO is answered by the meta leader too, after the calls above
		// (same route, same order): once it is back, they were ignored.
		if _, err := nc.Request("$JS.API.INFO", nil, 5*time.Second); err != nil {
			t.Fatalf("account info via %s: %v", s.Name(), err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if m, err := answers.NextMsg(0); err == nil {
			t.Fatalf("a non-system account was answered: %s", m.Data)
		}
		if now := c.waitMetaLeader(); now != leader {
			t.Fatalf("meta leader moved from %s to %s on a tenant's request", leader.Name(), now.Name())
		}
	}

	// The system account steps the meta leader down, from any server.
	sys := connectNATS(t, other.ClientURL(), nats.UserInfo("sys", "sys"))
	m, err := sys.Request("$JS.API.META.LEADER.STEPDOWN", nil, 5*time.Second)
	if err != nil {
		t.Fatalf("system account stepdown: %v", err)
	}
	var resp struct {
		Type    string    `json:"type"`
		Success bool      `json:"success"`
		Error   *ApiError `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &resp); err != nil || !resp.Success || resp.Error != nil ||
		resp.Type != "io.nats.jetstream.api.v1.meta_leader_stepdown_response" {
		t.Fatalf("stepdown answer %s (%v)", m.Data, err)
	}
	waitFor(t, 10*time.Second, "a new meta leader", func() bool { return c.waitMetaLeader() != leader })
}
