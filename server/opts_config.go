package server

import (
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/conf"
)

// configErrors collects problems while mapping a config file onto Options.
type configErrors struct {
	errs     []configProblem
	warnings []configProblem
}

// configProblem is one error or warning and where in the file it is.
type configProblem struct {
	line, col int
	msg       string
}

func (ce *configErrors) errf(t any, format string, v ...any) {
	ce.errs = append(ce.errs, problemAt(t, format, v...))
}

func (ce *configErrors) warnf(t any, format string, v ...any) {
	ce.warnings = append(ce.warnings, problemAt(t, format, v...))
}

func problemAt(t any, format string, v ...any) configProblem {
	p := configProblem{msg: position(t) + fmt.Sprintf(format, v...)}
	if tk, ok := t.(*conf.Token); ok {
		p.line, p.col = tk.Line, tk.Column
	}
	return p
}

// inFileOrder sorts problems by position (maps have no order of their own)
// and returns their texts.
func inFileOrder(ps []configProblem) []string {
	slices.SortStableFunc(ps, func(a, b configProblem) int {
		if a.line != b.line {
			return a.line - b.line
		}
		return a.col - b.col
	})
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.msg
	}
	return out
}

func position(t any) string {
	if tk, ok := t.(*conf.Token); ok {
		return tk.Position() + ": "
	}
	return ""
}

// ProcessConfigFile parses a NATS config file into new Options.
func ProcessConfigFile(configFile string) (*Options, error) {
	opts := &Options{Logtime: true}
	if err := opts.ProcessConfigFile(configFile); err != nil {
		return nil, err
	}
	return opts, nil
}

// ProcessConfigFile applies a NATS config file to o. Unknown keys are
// reported as warnings (logged at start), not errors.
func (o *Options) ProcessConfigFile(configFile string) error {
	o.ConfigFile = configFile
	if configFile == "" {
		return nil
	}
	m, err := conf.ParseFileWithChecks(configFile)
	if err != nil {
		return err
	}
	ce := &configErrors{}
	// The parsed map has no order; process keys sorted so the result (and
	// which of two conflicting keys wins) never varies between runs.
	for _, k := range slices.Sorted(maps.Keys(m)) {
		o.processConfigKey(ce, k, m[k])
	}
	o.configWarnings = inFileOrder(ce.warnings)
	if len(ce.errs) > 0 {
		return fmt.Errorf("%s", strings.Join(inFileOrder(ce.errs), "\n"))
	}
	return nil
}

// ConfigWarnings returns the warnings of the last config file processed.
func (o *Options) ConfigWarnings() []string { return o.configWarnings }

func (o *Options) processConfigKey(ce *configErrors, k string, tk any) {
	v := conf.Unwrap(tk)
	switch strings.ToLower(k) {
	case "listen":
		host, port, err := parseListen(v)
		if err != nil {
			ce.errf(tk, "%v", err)
			return
		}
		o.Host, o.Port = host, port
	case "host", "net":
		o.Host = asString(ce, tk)
	case "port":
		o.Port = asInt(ce, tk)
	case "server_name":
		o.ServerName = asString(ce, tk)
	case "client_advertise":
		o.ClientAdvertise = asString(ce, tk)
	case "server_tags":
		o.Tags = asStrings(ce, tk)
	case "debug":
		o.Debug = asBool(ce, tk)
	case "trace":
		o.Trace = asBool(ce, tk)
	case "trace_verbose":
		o.TraceVerbose = asBool(ce, tk)
		o.Trace = o.Trace || o.TraceVerbose
	case "logtime":
		o.Logtime = asBool(ce, tk)
	case "logtime_utc":
		o.LogtimeUTC = asBool(ce, tk)
	case "log_file", "logfile":
		o.LogFile = asString(ce, tk)
	case "log_size_limit", "logfile_size_limit":
		o.LogSizeLimit = int64(asInt(ce, tk))
	case "log_max_num", "logfile_max_num":
		o.LogMaxFiles = int64(asInt(ce, tk))
	case "syslog":
		o.Syslog = asBool(ce, tk)
	case "remote_syslog":
		o.RemoteSyslog = asString(ce, tk)
	case "pid_file", "pidfile":
		o.PidFile = asString(ce, tk)
	case "ports_file_dir":
		o.PortsFileDir = asString(ce, tk)
	case "http", "monitor", "http_listen":
		host, port, err := parseListen(v)
		if err != nil {
			ce.errf(tk, "%v", err)
			return
		}
		o.HTTPHost, o.HTTPPort = host, port
	case "https":
		host, port, err := parseListen(v)
		if err != nil {
			ce.errf(tk, "%v", err)
			return
		}
		o.HTTPHost, o.HTTPSPort = host, port
	case "prof_port":
		o.ProfPort = asInt(ce, tk)
	case "prof_block_rate":
		o.ProfBlockRate = asInt(ce, tk)
	case "http_port", "monitor_port":
		o.HTTPPort = asInt(ce, tk)
	case "https_port":
		o.HTTPSPort = asInt(ce, tk)
	case "http_base_path":
		o.HTTPBasePath = asString(ce, tk)
	default:
		o.processLimitsKey(ce, k, tk)
	}
}

func (o *Options) processLimitsKey(ce *configErrors, k string, tk any) {
	switch strings.ToLower(k) {
	case "max_control_line":
		o.MaxControlLine = asInt32(ce, k, tk)
	case "max_payload":
		o.MaxPayload = asInt32(ce, k, tk)
	case "max_pending":
		o.MaxPending = int64(asInt(ce, tk))
	case "max_connections", "max_conn":
		if o.MaxConn = asInt(ce, tk); o.MaxConn < 0 {
			ce.errf(tk, "%s can not be negative", k)
		}
	case "max_subscriptions", "max_subs":
		o.MaxSubs = asInt(ce, tk)
	case "ping_interval":
		o.PingInterval = asDuration(ce, tk)
	case "ping_max":
		o.MaxPingsOut = asInt(ce, tk)
	case "write_deadline":
		o.WriteDeadline = asDuration(ce, tk)
	case "lame_duck_duration":
		o.LameDuckDuration = asDuration(ce, tk)
	case "lame_duck_grace_period":
		o.LameDuckGracePeriod = asDuration(ce, tk)
	case "max_closed_clients":
		o.MaxClosedClients = asInt(ce, tk)
	case "no_header_support":
		o.NoHeaderSupport = asBool(ce, tk)
	default:
		o.processBlockKey(ce, k, tk)
	}
}

func (o *Options) processBlockKey(ce *configErrors, k string, tk any) {
	switch strings.ToLower(k) {
	case "authorization":
		o.parseAuthorization(ce, tk)
	case "accounts":
		o.parseAccounts(ce, tk)
	case "system_account", "system":
		o.SystemAccount = asString(ce, tk)
	case "no_system_account", "no_system", "no_sys_acc":
		o.NoSystemAccount = asBool(ce, tk)
	case "no_auth_user":
		o.NoAuthUser = asString(ce, tk)
	case "jetstream":
		o.parseJetStream(ce, tk)
	case "store_dir", "storedir":
		o.StoreDir = asString(ce, tk)
	case "cluster":
		o.parseCluster(ce, tk)
	case "tls":
		o.parseClientTLS(ce, tk)
	case "allow_non_tls":
		o.AllowNonTLS = asBool(ce, tk)
	default:
		ce.unknownKey("", k, tk)
	}
}

// parseListen accepts "host:port", ":port", a bare port or a host.
func parseListen(v any) (string, int, error) {
	switch x := v.(type) {
	case int64:
		return "", int(x), nil
	case string:
		if !strings.Contains(x, ":") {
			return x, 0, nil
		}
		host, port, err := net.SplitHostPort(x)
		if err != nil {
			return "", 0, fmt.Errorf("could not parse address string %q", x)
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return "", 0, fmt.Errorf("could not parse port %q", port)
		}
		return host, p, nil
	}
	return "", 0, fmt.Errorf("expected listen address, got %T", v)
}

func asString(ce *configErrors, tk any) string {
	switch x := conf.Unwrap(tk).(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	ce.errf(tk, "expected a string, got %T", conf.Unwrap(tk))
	return ""
}

func asInt(ce *configErrors, tk any) int {
	switch x := conf.Unwrap(tk).(type) {
	case int64:
		return int(x)
	case float64:
		return int(x)
	}
	ce.errf(tk, "expected a number, got %T", conf.Unwrap(tk))
	return 0
}

// asInt32 is asInt for int32 options; values that do not fit are errors
// rather than wrapping around (4GB would become 0, 3GB negative).
func asInt32(ce *configErrors, k string, tk any) int32 {
	n := asInt(ce, tk)
	if n > math.MaxInt32 || n < math.MinInt32 {
		ce.errf(tk, "%s value is too big", k)
		return 0
	}
	return int32(n)
}

func asBool(ce *configErrors, tk any) bool {
	if b, ok := conf.Unwrap(tk).(bool); ok {
		return b
	}
	ce.errf(tk, "expected a boolean, got %T", conf.Unwrap(tk))
	return false
}

// asDuration takes "2m"-style strings, or integers as seconds.
func asDuration(ce *configErrors, tk any) time.Duration {
	switch x := conf.Unwrap(tk).(type) {
	case string:
		d, err := time.ParseDuration(x)
		if err != nil {
			ce.errf(tk, "error parsing duration %q: %v", x, err)
		}
		return d
	case int64:
		return time.Duration(x) * time.Second
	case float64:
		return time.Duration(x * float64(time.Second))
	}
	ce.errf(tk, "expected a duration, got %T", conf.Unwrap(tk))
	return 0
}

func asStrings(ce *configErrors, tk any) []string {
	switch x := conf.Unwrap(tk).(type) {
	case string:
		return []string{x}
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, asString(ce, e))
		}
		return out
	}
	ce.errf(tk, "expected a string or an array of strings, got %T", conf.Unwrap(tk))
	return nil
}

func asMap(ce *configErrors, tk any) map[string]any {
	if m, ok := conf.Unwrap(tk).(map[string]any); ok {
		return m
	}
	ce.errf(tk, "expected a map, got %T", conf.Unwrap(tk))
	return nil
}

func parseURLs(ce *configErrors, tk any) []*url.URL {
	var out []*url.URL
	for _, s := range asStrings(ce, tk) {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil {
			ce.errf(tk, "error parsing url %q: %v", s, err)
			continue
		}
		out = append(out, u)
	}
	return out
}
