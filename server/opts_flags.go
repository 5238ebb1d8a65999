package server

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// usage is printed for -h.
const usage = `Usage: nats-server [options]

Server Options:
    -a, --addr, --net <host>         Bind to host address (default: 0.0.0.0)
    -p, --port <port>                Use port for clients (default: 4222)
    -n, --name, --server_name <name> Server name (default: auto)
    -P, --pid <file>                 File to store PID
    -m, --http_port <port>           Use port for http monitoring
    -ms,--https_port <port>          Use port for https monitoring
    -c, --config <file>              Configuration file
    -t                               Test configuration and exit
    -sl,--signal <signal>[=<pid>]    Send signal to nats-server process (ldm, stop, quit, term, reopen, reload)
        --client_advertise <string>  Client URL to advertise to other servers
        --ports_file_dir <dir>       Creates a ports file in the specified directory (<executable_name>_<pid>.ports).

Logging Options:
    -l, --log <file>                 File to redirect log output
    -T, --logtime                    Timestamp log entries (default: true)
    -s, --syslog                     Log to syslog or windows event log
    -r, --remote_syslog <addr>       Syslog server addr (udp://localhost:514)
    -D, --debug                      Enable debugging output
    -V, --trace                      Trace the raw protocol
    -VV                              Verbose trace (traces system account as well)
    -DV                              Debug and trace
    -DVV                             Debug and verbose trace (traces system account as well)
        --log_size_limit <limit>     Logfile size limit (default: auto)
        --max_traced_msg_len <len>   Maximum printable length for traced messages (default: unlimited)

JetStream Options:
    -js, --jetstream                 Enable JetStream functionality
    -sd, --store_dir <dir>           Set the storage directory

Authorization Options:
        --user <user>                User required for connections
        --pass <password>            Password required for connections
        --auth <token>               Authorization token required for connections

TLS Options:
        --tls                        Require TLS from clients (certificate and key below)
        --tlscert <file>             Server certificate file
        --tlskey <file>              Private key of the server certificate
        --tlsverify                  Require TLS and a client certificate signed by --tlscacert
        --tlscacert <file>           CA certificate that client certificates are verified against

Cluster Options:
        --routes <rurl-1, rurl-2>    Routes to solicit and connect
        --cluster <cluster-url>      Cluster URL for solicited routes
        --cluster_name <string>      Cluster Name, if not set one will be dynamically generated
        --no_advertise <bool>        Do not advertise known cluster information to clients
        --cluster_advertise <string> Cluster URL to advertise to other servers
        --connect_retries <number>   For implicit routes, number of connect retries

Common Options:
    -h, --help                       Show this message
    -v, --version                    Show version
`

// Usage returns the -h text.
func Usage() string { return usage }

// flagValues collects what the command line said before it is applied.
type flagValues struct {
	showVersion, showHelp, showTLSHelp bool
	signal, cluster, routes            string
	dv, dvv, vv                        bool
}

// ConfigureOptions parses the command line (and the config file it names)
// into Options, as nats-server's ConfigureOptions does.
func ConfigureOptions(fs *flag.FlagSet, args []string, printVersion, printHelp, printTLSHelp func()) (*Options, error) {
	opts := &Options{Logtime: true}
	fv := &flagValues{}
	defineFlags(fs, opts, fv)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fv.showVersion && printVersion != nil {
		printVersion()
		return nil, nil
	}
	if fv.showHelp && printHelp != nil {
		printHelp()
		return nil, nil
	}
	if fv.showTLSHelp && printTLSHelp != nil {
		printTLSHelp()
		return nil, nil
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[canonicalFlag(f.Name)] = true })
	if fv.signal != "" {
		return nil, ProcessSignal(fv.signal)
	}
	if opts.ConfigFile != "" {
		fileOpts, err := ProcessConfigFile(opts.ConfigFile)
		if err != nil {
			return nil, err
		}
		flagged := *opts
		*opts = *fileOpts
		mergeFlags(opts, &flagged, set)
	}
	if err := applyFlagValues(opts, fv, set); err != nil {
		return nil, err
	}
	opts.inFlags = set
	return opts, nil
}

func defineFlags(fs *flag.FlagSet, o *Options, fv *flagValues) {
	str := func(p *string, names ...string) {
		for _, n := range names {
			fs.StringVar(p, n, *p, "")
		}
	}
	num := func(p *int, names ...string) {
		for _, n := range names {
			fs.IntVar(p, n, *p, "")
		}
	}
	boolean := func(p *bool, names ...string) {
		for _, n := range names {
			fs.BoolVar(p, n, *p, "")
		}
	}
	str(&o.Host, "a", "addr", "net")
	num(&o.Port, "p", "port")
	str(&o.ServerName, "n", "name", "server_name")
	str(&o.PidFile, "P", "pid")
	num(&o.HTTPPort, "m", "http_port")
	num(&o.HTTPSPort, "ms", "https_port")
	num(&o.ProfPort, "profile")
	str(&o.ConfigFile, "c", "config")
	boolean(&o.CheckConfig, "t")
	str(&fv.signal, "sl", "signal")
	str(&o.ClientAdvertise, "client_advertise")
	str(&o.PortsFileDir, "ports_file_dir")
	str(&o.LogFile, "l", "log")
	boolean(&o.Logtime, "T", "logtime")
	boolean(&o.LogtimeUTC, "logtime_utc")
	boolean(&o.Syslog, "s", "syslog")
	str(&o.RemoteSyslog, "r", "remote_syslog")
	boolean(&o.Debug, "D", "debug")
	boolean(&o.Trace, "V", "trace")
	boolean(&fv.vv, "VV")
	boolean(&fv.dv, "DV")
	boolean(&fv.dvv, "DVV")
	fs.Int64Var(&o.LogSizeLimit, "log_size_limit", 0, "")
	var maxTraced int
	num(&maxTraced, "max_traced_msg_len")
	boolean(&o.JetStream, "js", "jetstream")
	str(&o.StoreDir, "sd", "store_dir")
	str(&o.Username, "user")
	str(&o.Password, "pass")
	str(&o.Authorization, "auth")
	boolean(&o.TLS, "tls")
	boolean(&o.TLSVerify, "tlsverify")
	str(&o.TLSCert, "tlscert")
	str(&o.TLSKey, "tlskey")
	str(&o.TLSCaCert, "tlscacert")
	str(&fv.routes, "routes")
	str(&fv.cluster, "cluster", "cluster_listen")
	str(&o.Cluster.Name, "cluster_name")
	str(&o.Cluster.Advertise, "cluster_advertise")
	boolean(&o.Cluster.NoAdvertise, "no_advertise")
	num(&o.Cluster.ConnectRetries, "connect_retries")
	boolean(&fv.showVersion, "v", "version")
	boolean(&fv.showHelp, "h", "help")
	boolean(&fv.showTLSHelp, "help_tls")
}

// canonicalFlag maps flag aliases to one name so "set on the command line"
// can be checked per option.
func canonicalFlag(n string) string {
	aliases := map[string]string{
		"a": "addr", "net": "addr", "p": "port", "n": "name", "server_name": "name", "P": "pid",
		"m": "http_port", "ms": "https_port", "c": "config", "l": "log", "T": "logtime", "s": "syslog",
		"r": "remote_syslog", "D": "debug", "V": "trace", "js": "jetstream", "sd": "store_dir",
		"cluster_listen": "cluster", "sl": "signal", "v": "version", "h": "help",
	}
	if c, ok := aliases[n]; ok {
		return c
	}
	return n
}

// mergeFlags copies every option set on the command line over the file's.
func mergeFlags(o, f *Options, set map[string]bool) {
	apply := map[string]func(){
		"addr": func() { o.Host = f.Host }, "port": func() { o.Port = f.Port },
		"name": func() { o.ServerName = f.ServerName }, "pid": func() { o.PidFile = f.PidFile },
		"http_port": func() { o.HTTPPort = f.HTTPPort }, "https_port": func() { o.HTTPSPort = f.HTTPSPort },
		"profile":          func() { o.ProfPort = f.ProfPort },
		"client_advertise": func() { o.ClientAdvertise = f.ClientAdvertise },
		"ports_file_dir":   func() { o.PortsFileDir = f.PortsFileDir },
		"log":              func() { o.LogFile = f.LogFile }, "logtime": func() { o.Logtime = f.Logtime },
		"logtime_utc": func() { o.LogtimeUTC = f.LogtimeUTC }, "syslog": func() { o.Syslog = f.Syslog },
		"remote_syslog": func() { o.RemoteSyslog = f.RemoteSyslog }, "debug": func() { o.Debug = f.Debug },
		"trace": func() { o.Trace = f.Trace }, "log_size_limit": func() { o.LogSizeLimit = f.LogSizeLimit },
		"jetstream": func() { o.JetStream = f.JetStream }, "store_dir": func() { o.StoreDir = f.StoreDir },
		"user": func() { o.Username = f.Username }, "pass": func() { o.Password = f.Password },
		"auth":              func() { o.Authorization = f.Authorization },
		"cluster_name":      func() { o.Cluster.Name = f.Cluster.Name },
		"cluster_advertise": func() { o.Cluster.Advertise = f.Cluster.Advertise },
		"no_advertise":      func() { o.Cluster.NoAdvertise = f.Cluster.NoAdvertise },
		"connect_retries":   func() { o.Cluster.ConnectRetries = f.Cluster.ConnectRetries },
		"t":                 func() { o.CheckConfig = f.CheckConfig },
	}
	for name := range set {
		if fn, ok := apply[name]; ok {
			fn()
		}
	}
	mergeTLSFlags(o, f, set)
	o.ConfigFile = f.ConfigFile
}

func applyFlagValues(o *Options, fv *flagValues, set map[string]bool) error {
	if fv.dv || fv.dvv {
		o.Debug, o.Trace = true, true
	}
	if fv.vv || fv.dvv {
		o.Trace, o.TraceVerbose = true, true
	}
	if fv.cluster != "" {
		u, err := url.Parse(fv.cluster)
		if err != nil {
			return fmt.Errorf("error parsing cluster url: %v", err)
		}
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			return fmt.Errorf("error parsing cluster url: %v", err)
		}
		o.Cluster.Host = host
		if o.Cluster.Port, err = strconv.Atoi(port); err != nil {
			return fmt.Errorf("error parsing cluster port: %v", err)
		}
		o.Cluster.ListenStr = fv.cluster
	}
	if err := applyTLSFlags(o, set); err != nil {
		return err
	}
	if fv.routes != "" {
		o.RoutesStr = fv.routes
		o.Routes = nil
		for _, r := range strings.Split(fv.routes, ",") {
			u, err := url.Parse(strings.TrimSpace(r))
			if err != nil {
				return fmt.Errorf("error parsing route url %q: %v", r, err)
			}
			o.Routes = append(o.Routes, u)
		}
	}
	return nil
}
