package server

import (
	"strings"
	"testing"
)

// EnableJetStream at run time on a server whose options enable JetStream
// for the system account is refused (with nats-server's words for an
// account's refusal) and leaves the server as it was: JetStream off, the
// options unchanged. It stored the half-made JetStream first
// (JetStreamEnabled true, the accounts before the system account enabled,
// the options saying JetStream) and then returned the account's error.
func TestEmbedEnableSystemJetStreamRefused(t *testing.T) {
	o := testOptions()
	o.StoreDir = t.TempDir()
	a, sys := NewAccount("A"), NewAccount("SYS")
	a.jetstream, sys.jetstream = true, true
	o.Accounts, o.SystemAccount = []*Account{a, sys}, "SYS"
	s := runServer(t, o)
	err := s.EnableJetStream(nil)
	if err == nil || !strings.Contains(err.Error(), errSystemJetStream.Error()) {
		t.Errorf("EnableJetStream: %v", err)
	}
	if s.JetStreamEnabled() || s.getOpts().JetStream {
		t.Errorf("after the refusal JetStream enabled %v, options %v", s.JetStreamEnabled(), s.getOpts().JetStream)
	}
}
