package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
)

func (o *Options) parseAuthorization(ce *configErrors, tk any) {
	m := asMap(ce, tk)
	var defPerms *Permissions
	for _, name := range []string{"default_permissions", "default_permission", "permissions"} {
		if dp, ok := lookupKey(m, name); ok {
			defPerms = parsePermissions(ce, dp)
		}
	}
	for k, v := range m {
		switch strings.ToLower(k) {
		case "user", "username":
			o.Username = asString(ce, v)
		case "pass", "password":
			o.Password = asString(ce, v)
		case "token":
			o.Authorization = asString(ce, v)
		case "timeout":
			o.AuthTimeout = asSeconds(ce, v)
		case "users":
			users, nkeys := parseUsers(ce, v, defPerms)
			o.addConfigUsers(ce, v, users, nkeys)
		case "default_permissions", "default_permission", "permissions":
		default:
			ce.unknownKey("authorization", k, v)
		}
	}
}

func asSeconds(ce *configErrors, tk any) float64 {
	switch x := conf.Unwrap(tk).(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case string:
		d, err := time.ParseDuration(x)
		if err != nil {
			ce.errf(tk, "error parsing timeout %q", x)
		}
		return d.Seconds()
	}
	ce.errf(tk, "expected a timeout, got %T", conf.Unwrap(tk))
	return 0
}

func lookupKey(m map[string]any, key string) (any, bool) {
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v, true
		}
	}
	return nil, false
}

// parseUsers reads a users array of {user,password|nkey,permissions}.
func parseUsers(ce *configErrors, tk any, def *Permissions) ([]*User, []*NkeyUser) {
	arr, ok := conf.Unwrap(tk).([]any)
	if !ok {
		ce.errf(tk, "expected users to be an array")
		return nil, nil
	}
	var users []*User
	var nkeys []*NkeyUser
	for _, e := range arr {
		m := asMap(ce, e)
		u := &User{Permissions: def}
		var nkey string
		for k, v := range m {
			switch strings.ToLower(k) {
			case "user", "username":
				u.Username = asString(ce, v)
			case "pass", "password":
				u.Password = asString(ce, v)
			case "nkey":
				nkey = asString(ce, v)
			case "permissions", "permission", "authorization":
				u.Permissions = parsePermissions(ce, v)
			case "allowed_connection_types", "connection_types", "clients":
				u.AllowedConnectionTypes = parseConnTypes(ce, v)
			default:
				ce.unknownKey("user", k, v)
			}
		}
		switch {
		case nkey != "":
			if !strings.HasPrefix(nkey, "U") {
				ce.errf(e, "not a valid public nkey for a user: %q", nkey)
				continue
			}
			nkeys = append(nkeys, &NkeyUser{Nkey: nkey, Permissions: u.Permissions, AllowedConnectionTypes: u.AllowedConnectionTypes})
		case u.Username != "":
			users = append(users, u)
		default:
			ce.errf(e, "user entry requires a user")
		}
	}
	return users, nkeys
}

func parsePermissions(ce *configErrors, tk any) *Permissions {
	m := asMap(ce, tk)
	p := &Permissions{}
	for k, v := range m {
		switch strings.ToLower(k) {
		case "publish", "pub", "import":
			p.Publish = parseSubjectPermission(ce, v)
		case "subscribe", "sub", "export":
			p.Subscribe = parseSubjectPermission(ce, v)
		case "allow_responses", "allow_responses_ttl", "publish_allow_responses":
			p.Response = parseResponsePermission(ce, v)
		default:
			ce.unknownKey("permissions", k, v)
		}
	}
	if err := checkPermissions(p); err != nil {
		ce.errf(tk, "%v", err)
	}
	return p
}

// parseSubjectPermission accepts a subject, a list (allow) or {allow,deny}.
func parseSubjectPermission(ce *configErrors, tk any) *SubjectPermission {
	if m, ok := conf.Unwrap(tk).(map[string]any); ok {
		sp := &SubjectPermission{}
		for k, v := range m {
			switch strings.ToLower(k) {
			case "allow":
				sp.Allow = asStrings(ce, v)
			case "deny":
				sp.Deny = asStrings(ce, v)
			default:
				ce.unknownKey("subject permission", k, v)
			}
		}
		return sp
	}
	return &SubjectPermission{Allow: asStrings(ce, tk)}
}

func parseResponsePermission(ce *configErrors, tk any) *ResponsePermission {
	switch x := conf.Unwrap(tk).(type) {
	case bool:
		if !x {
			return nil
		}
		return &ResponsePermission{MaxMsgs: 1}
	case map[string]any:
		rp := &ResponsePermission{MaxMsgs: 1}
		for k, v := range x {
			switch strings.ToLower(k) {
			case "max", "max_msgs", "max_messages", "max_responses":
				rp.MaxMsgs = asInt(ce, v)
			case "expires", "expiration", "ttl":
				rp.Expires = asDuration(ce, v)
			default:
				ce.unknownKey("allow_responses", k, v)
			}
		}
		return rp
	}
	ce.errf(tk, "allow_responses expects a boolean or a map")
	return nil
}

// parseAccounts reads accounts { NAME { users, jetstream, exports, imports } }.
func (o *Options) parseAccounts(ce *configErrors, tk any) {
	for name, v := range asMap(ce, tk) {
		acc := NewAccount(name)
		o.Accounts = append(o.Accounts, acc)
		m, ok := conf.Unwrap(v).(map[string]any)
		if !ok {
			continue // `accounts { A: {} }` or a bare name
		}
		var defPerms *Permissions
		if dp, ok := lookupKey(m, "default_permissions"); ok {
			defPerms = parsePermissions(ce, dp)
		}
		for k, av := range m {
			switch strings.ToLower(k) {
			case "default_permissions":
			case "users":
				users, nkeys := parseUsers(ce, av, defPerms)
				for _, u := range users {
					u.Account = acc
				}
				for _, n := range nkeys {
					n.Account = acc
				}
				o.addConfigUsers(ce, av, users, nkeys)
			case "jetstream":
				parseAccountJetStream(ce, acc, av)
			case "exports":
				parseExports(ce, acc, av)
			case "imports":
				parseImports(ce, acc, av)
			default:
				ce.unknownKey("account", k, av)
			}
		}
	}
}

func jsEnabledValue(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return strings.EqualFold(x, "enabled") || strings.EqualFold(x, "enable") || strings.EqualFold(x, "true")
	case map[string]any:
		return true
	}
	return false
}

func parseExports(ce *configErrors, acc *Account, tk any) {
	arr, _ := conf.Unwrap(tk).([]any)
	for _, e := range arr {
		m := asMap(ce, e)
		var subject string
		service := false
		var allowed []*Account
		for k, v := range m {
			switch strings.ToLower(k) {
			case "stream":
				subject = asString(ce, v)
			case "service":
				subject, service = asString(ce, v), true
			case "accounts":
				for _, n := range asStrings(ce, v) {
					allowed = append(allowed, &Account{Name: n})
				}
			default:
				ce.unknownKey("export", k, v)
			}
		}
		if err := acc.addExport(subject, service, allowed); err != nil {
			ce.errf(e, "invalid export subject %q", subject)
		}
	}
}

func parseImports(ce *configErrors, acc *Account, tk any) {
	arr, _ := conf.Unwrap(tk).([]any)
	for _, e := range arr {
		m := asMap(ce, e)
		var spec importSpec
		for k, v := range m {
			switch strings.ToLower(k) {
			case "stream", "service":
				spec.service = strings.EqualFold(k, "service")
				src := asMap(ce, v)
				for sk, sv := range src {
					switch strings.ToLower(sk) {
					case "account":
						spec.account = asString(ce, sv)
					case "subject":
						spec.subject = asString(ce, sv)
					default:
						ce.unknownKey("import", sk, sv)
					}
				}
			case "prefix", "to":
				spec.to = asString(ce, v)
			default:
				ce.unknownKey("import", k, v)
			}
		}
		if spec.account == "" || spec.subject == "" {
			ce.errf(e, "import requires an account and a subject")
			continue
		}
		acc.cfgImports = append(acc.cfgImports, spec)
	}
}

func (o *Options) parseJetStream(ce *configErrors, tk any) {
	m, ok := conf.Unwrap(tk).(map[string]any)
	if !ok {
		o.JetStream = jsEnabledValue(conf.Unwrap(tk))
		return
	}
	o.JetStream = true
	for k, v := range m {
		switch strings.ToLower(k) {
		case "enabled", "enable":
			o.JetStream = asBool(ce, v)
		case "disabled", "disable":
			o.JetStream = !asBool(ce, v)
		case "store_dir", "storedir", "store":
			o.StoreDir = asString(ce, v)
		case "max_memory_store", "max_mem_store", "max_mem":
			o.JetStreamMaxMemory = asStorageSize(ce, v)
		case "max_file_store", "max_file":
			o.JetStreamMaxStore = asStorageSize(ce, v)
		case "domain":
			o.JetStreamDomain = asString(ce, v)
		case "sync_interval", "sync":
			if s, ok := conf.Unwrap(v).(string); ok && strings.EqualFold(s, "always") {
				o.SyncAlways = true
				continue
			}
			o.SyncInterval = asDuration(ce, v)
		case "stale_direct_reads":
			o.JetStreamStaleDirectReads = asBool(ce, v)
		case "scrub_rate": // Tern only: stream_scrub.go
			if o.JetStreamScrubRate = asStorageSize(ce, v); o.JetStreamScrubRate <= 0 {
				o.JetStreamScrubRate = -1
			}
		case "scrub_interval": // Tern only
			o.JetStreamScrubInterval = asDuration(ce, v)
		case "max_open_files": // Tern only: jetstream_fdbudget.go
			if o.JetStreamMaxOpenFiles = asInt(ce, v); o.JetStreamMaxOpenFiles <= 0 {
				ce.errf(v, "max_open_files must be a positive number of files")
			}
		case "limits":
			o.parseJetStreamLimits(ce, v)
		default:
			ce.unknownKey("jetstream", k, v)
		}
	}
}

// parseJetStreamLimits reads jetstream { limits {} }: the server-wide
// consumer limits Tern enforces (consumer_check.go, consumer_create.go);
// the others are refused.
func (o *Options) parseJetStreamLimits(ce *configErrors, tk any) {
	o.JetStreamLimits = JSLimitOpts{}
	for k, v := range asMap(ce, tk) {
		switch strings.ToLower(k) {
		case "max_ack_pending":
			o.JetStreamLimits.MaxAckPending = asInt(ce, v)
		case "max_request_batch":
			o.JetStreamLimits.MaxRequestBatch = asInt(ce, v)
		case "default_max_consumers":
			o.JetStreamLimits.DefaultMaxConsumers = asInt(ce, v)
		default:
			ce.unknownKey("jetstream limits", k, v)
		}
	}
}

// asStorageSize takes a number, or a string such as "512M" whose K/M/G/T
// suffix is a power of 1024, as nats-server's getStorageSize does.
func asStorageSize(ce *configErrors, tk any) int64 {
	str, ok := conf.Unwrap(tk).(string)
	if !ok {
		return int64(asInt(ce, tk))
	}
	if str == "" {
		return 0
	}
	shift := map[byte]uint{'K': 10, 'M': 20, 'G': 30, 'T': 40}[str[len(str)-1]]
	n, err := strconv.ParseInt(str[:len(str)-1], 10, 64)
	if shift == 0 || err != nil {
		ce.errf(tk, "invalid storage size %q: sizes defined as strings must end in K, M, G, T", str)
		return 0
	}
	return n << shift
}

func (o *Options) parseCluster(ce *configErrors, tk any) {
	for k, v := range asMap(ce, tk) {
		switch strings.ToLower(k) {
		case "name":
			o.Cluster.Name = asString(ce, v)
		case "listen":
			host, port, err := parseListen(conf.Unwrap(v))
			if err != nil {
				ce.errf(v, "%v", err)
				continue
			}
			o.Cluster.Host, o.Cluster.Port = host, port
		case "host", "net":
			o.Cluster.Host = asString(ce, v)
		case "port":
			o.Cluster.Port = asInt(ce, v)
		case "routes":
			o.Routes = parseURLs(ce, v)
		case "advertise", "cluster_advertise":
			o.Cluster.Advertise = asString(ce, v)
		case "no_advertise":
			o.Cluster.NoAdvertise = asBool(ce, v)
		case "connect_retries":
			o.Cluster.ConnectRetries = asInt(ce, v)
		case "pool_size":
			o.Cluster.PoolSize = asInt(ce, v)
		case "authorization":
			o.parseClusterAuthorization(ce, v)
		case "tls":
			o.parseClusterTLS(ce, v)
		default:
			ce.unknownKey("cluster", k, v)
		}
	}
}
