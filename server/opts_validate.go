package server

import "fmt"

// validateLimits refuses negative limits and durations. A negative value
// would otherwise switch a limit off (max_payload), fire a timer in a loop
// (ping_interval) or be read differently by each check that uses it.
// MaxConn is the exception: as in nats-server, a negative MaxConn set by an
// embedder refuses every client; in a config file it is an error.
func validateLimits(o *Options) error {
	ints := []struct {
		name string
		v    int64
	}{
		{"max_payload", int64(o.MaxPayload)},
		{"max_control_line", int64(o.MaxControlLine)},
		{"max_pending", o.MaxPending},
		{"max_subscriptions", int64(o.MaxSubs)},
		{"ping_max", int64(o.MaxPingsOut)},
		{"max_closed_clients", int64(o.MaxClosedClients)},
		{"ping_interval", int64(o.PingInterval)},
		{"write_deadline", int64(o.WriteDeadline)},
		{"lame_duck_duration", int64(o.LameDuckDuration)},
		{"lame_duck_grace_period", int64(o.LameDuckGracePeriod)},
		{"auth timeout", int64(o.AuthTimeout)},
		{"log_size_limit", o.LogSizeLimit},
		{"log_max_num", o.LogMaxFiles},
		{"cluster connect_retries", int64(o.Cluster.ConnectRetries)},
		{"sync_interval", int64(o.SyncInterval)},
		{"max_open_files", int64(o.JetStreamMaxOpenFiles)},
	}
	for _, l := range ints {
		if l.v < 0 {
			return fmt.Errorf("%s can not be negative (%d)", l.name, l.v)
		}
	}
	if o.LameDuckDuration > 0 && o.LameDuckGracePeriod >= o.LameDuckDuration {
		return fmt.Errorf("lame duck grace period (%v) should be strictly lower than lame duck duration (%v)",
			o.LameDuckGracePeriod, o.LameDuckDuration)
	}
	return nil
}

// systemJetStream reports whether o enables JetStream for the system
// account, which is refused, as nats-server does: what a server publishes
// there is the cluster's own word (cluster_only.go), and a system user's
// stream would have the server publish what it stored, on subjects it
// chose (a push consumer's deliver subject), as the server. Like
// nats-server, the options are accepted and Start refuses to run
// (sysJetStreamRefusal, fatal) before anything listens; a reload that
// would enable it is refused, and so is EnableJetStream at run time
// (errSystemJetStream) before it makes anything.
func systemJetStream(o *Options) bool {
	if !o.JetStream || o.NoSystemAccount {
		return false
	}
	sys := o.SystemAccount
	if sys == "" {
		sys = DEFAULT_SYSTEM_ACCOUNT
	}
	for _, a := range o.Accounts {
		if a.Name == sys && a.jetstream {
			return true
		}
	}
	return false
}

// sysJetStreamRefusal is nats-server's fatal log line for it, word for word.
const sysJetStreamRefusal = "Not allowed to enable JetStream on the system account"

// errSystemJetStream is an account's refusal (jetstream.go enableAccount),
// in nats-server's words for it.
var errSystemJetStream = fmt.Errorf("jetstream can not be enabled on the system account")
