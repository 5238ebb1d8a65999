package server

import (
	"strings"
	"testing"
)

// With JetStream enabled for the system account, a system user made a
// push consumer deliver to $JSC.MCOPY and stored forged copies in its
// stream: the consumer's leader delivered them as the server's own
// publishes (no client connection), which the meta leader took for copies
// of held writes, creating and deleting streams of any account (commit
// 861f4be has that forgery as a test). As in nats-server, JetStream
// cannot be enabled for the system account: the options are refused,
// whether the system account is named or the default one.
func TestJetStreamClusterMetaCopyNotThroughSystemStream(t *testing.T) {
	for _, name := range []string{"SYS", DEFAULT_SYSTEM_ACCOUNT} {
		o := testOptions()
		o.ServerName, o.JetStream, o.StoreDir = "S1", true, t.TempDir()
		a, sys := NewAccount("A"), NewAccount(name)
		a.jetstream, sys.jetstream = true, true
		o.Accounts = []*Account{a, sys}
		if name != DEFAULT_SYSTEM_ACCOUNT {
			o.SystemAccount = name
		}
		o.Users = []*User{{Username: "a", Password: "a", Account: a}, {Username: "sys", Password: "sys", Account: sys}}
		s, err := NewServer(o)
		if err == nil {
			s.Shutdown()
			t.Fatalf("JetStream enabled for system account %s", name)
		}
		if !strings.Contains(err.Error(), "system account") {
			t.Errorf("system account %s: %v", name, err)
		}
	}
}
