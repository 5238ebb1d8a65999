package server

import (
	"crypto/tls"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// stubResolver and stubAuth only need to exist: NewServer must refuse them.
type stubResolver struct{}

func (stubResolver) Fetch(string) (string, error) { return "", nil }
func (stubResolver) Store(string, string) error   { return nil }
func (stubResolver) IsReadOnly() bool             { return true }
func (stubResolver) Start(*Server) error          { return nil }
func (stubResolver) IsTrackingUpdate() bool       { return false }
func (stubResolver) Reload() error                { return nil }
func (stubResolver) Close()                       {}

type stubAuth struct{}

func (stubAuth) Check(ClientAuthentication) bool { return true }

func testUserNkey(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// refusedOptionCases sets each refused option, one per case, to a non-zero
// value; the name is the one the error must carry.
func refusedOptionCases(t *testing.T) map[string]func(*Options) {
	nkey := testUserNkey(t)
	u, _ := url.Parse("nats://127.0.0.1:7422")
	return map[string]func(*Options){
		"TLSRateLimit":                func(o *Options) { o.TLSRateLimit = 10 },
		"OCSPConfig":                  func(o *Options) { o.OCSPConfig = &OCSPConfig{Mode: OCSPModeAlways} },
		"OCSPCacheConfig":             func(o *Options) { o.OCSPCacheConfig = &OCSPResponseCacheConfig{Type: LOCAL} },
		"TrustedKeys":                 func(o *Options) { o.TrustedKeys = []string{"OABC"} },
		"TrustedOperators":            func(o *Options) { o.TrustedOperators = []*jwt.OperatorClaims{jwt.NewOperatorClaims("OABC")} },
		"AccountResolver":             func(o *Options) { o.AccountResolver = stubResolver{} },
		"AccountResolverTLSConfig":    func(o *Options) { o.AccountResolverTLSConfig = &tls.Config{} },
		"AuthCallout":                 func(o *Options) { o.AuthCallout = &AuthCallout{Issuer: "AABC"} },
		"DefaultSentinel":             func(o *Options) { o.DefaultSentinel = "jwt" },
		"CustomClientAuthentication":  func(o *Options) { o.CustomClientAuthentication = stubAuth{} },
		"CustomRouterAuthentication":  func(o *Options) { o.CustomRouterAuthentication = stubAuth{} },
		"AlwaysEnableNonce":           func(o *Options) { o.AlwaysEnableNonce = true },
		"Proxies":                     func(o *Options) { o.Proxies = &ProxiesConfig{Trusted: []*ProxyConfig{{Key: "XABC"}}} },
		"ProxyRequired":               func(o *Options) { o.ProxyRequired = true },
		"ProxyProtocol":               func(o *Options) { o.ProxyProtocol = true },
		"MaxSubTokens":                func(o *Options) { o.MaxSubTokens = 8 },
		"WriteTimeout":                func(o *Options) { o.WriteTimeout = WriteTimeoutPolicyRetry },
		"TraceHeaders":                func(o *Options) { o.TraceHeaders = true },
		"FeatureFlags":                func(o *Options) { o.FeatureFlags = map[string]bool{"js_ack_fc_v2": true} },
		"JetStreamKey":                func(o *Options) { o.JetStreamKey = "secret" },
		"JetStreamOldKey":             func(o *Options) { o.JetStreamOldKey = "old" },
		"JetStreamCipher":             func(o *Options) { o.JetStreamCipher = AES },
		"JetStreamTpm":                func(o *Options) { o.JetStreamTpm = JSTpmOpts{KeysFile: "keys.json"} },
		"JetStreamLimits.MaxHAAssets": func(o *Options) { o.JetStreamLimits.MaxHAAssets = 10 },
		"JetStreamLimits.Duplicates":  func(o *Options) { o.JetStreamLimits.Duplicates = time.Minute },
		"JetStreamLimits.MaxBatchInflightPerStream": func(o *Options) { o.JetStreamLimits.MaxBatchInflightPerStream = 1 },
		"JetStreamLimits.MaxBatchInflightTotal":     func(o *Options) { o.JetStreamLimits.MaxBatchInflightTotal = 1 },
		"JetStreamLimits.MaxBatchSize":              func(o *Options) { o.JetStreamLimits.MaxBatchSize = 1 },
		"JetStreamLimits.MaxBatchTimeout":           func(o *Options) { o.JetStreamLimits.MaxBatchTimeout = time.Second },
		"JetStreamUniqueTag":                        func(o *Options) { o.JetStreamUniqueTag = "az" },
		"JetStreamExtHint":                          func(o *Options) { o.JetStreamExtHint = "will_extend" },
		"JsAccDefaultDomain":                        func(o *Options) { o.JsAccDefaultDomain = map[string]string{"A": "hub"} },
		"NoJetStreamStrict":                         func(o *Options) { o.NoJetStreamStrict = true },
		"Websocket.Host":                            func(o *Options) { o.Websocket.Host = "127.0.0.1" },
		"Websocket.Port":                            func(o *Options) { o.Websocket.Port = -1 },
		"MQTT.Host":                                 func(o *Options) { o.MQTT.Host = "127.0.0.1" },
		"MQTT.Port":                                 func(o *Options) { o.MQTT.Port = 1883 },
		"LeafNode.Host":                             func(o *Options) { o.LeafNode.Host = "127.0.0.1" },
		"LeafNode.Port":                             func(o *Options) { o.LeafNode.Port = -1 },
		"LeafNode.Remotes":                          func(o *Options) { o.LeafNode.Remotes = []*RemoteLeafOpts{{URLs: []*url.URL{u}}} },
		"Gateway.Host":                              func(o *Options) { o.Gateway.Host = "127.0.0.1" },
		"Gateway.Port":                              func(o *Options) { o.Gateway.Port = -1 },
		"Gateway.Gateways":                          func(o *Options) { o.Gateway.Gateways = []*RemoteGatewayOpts{{Name: "B", URLs: []*url.URL{u}}} },
		"Cluster.Permissions":                       func(o *Options) { o.Cluster.Permissions = &RoutePermissions{} },
		"Cluster.TLSMap":                            func(o *Options) { o.Cluster.TLSMap = true },
		"Cluster.TLSCheckKnownURLs":                 func(o *Options) { o.Cluster.TLSCheckKnownURLs = true },
		"Cluster.Compression":                       func(o *Options) { o.Cluster.Compression = CompressionOpts{Mode: CompressionS2Auto} },
		"Cluster.WriteTimeout":                      func(o *Options) { o.Cluster.WriteTimeout = WriteTimeoutPolicyClose },
		"Users[0].ConnectionDeadline": func(o *Options) {
			o.Users = []*User{{Username: "a", Password: "p", ConnectionDeadline: time.Now().Add(time.Hour)}}
		},
		"Users[0].ProxyRequired": func(o *Options) {
			o.Users = []*User{{Username: "a", Password: "p", ProxyRequired: true}}
		},
		"Nkeys[0].ProxyRequired": func(o *Options) {
			o.Nkeys = []*NkeyUser{{Nkey: nkey, ProxyRequired: true}}
		},
	}
}

func TestCompatRefusedOptions(t *testing.T) {
	cases := refusedOptionCases(t)
	// Every entry of the refusal tables has a case, so none goes untested.
	for _, name := range refusedOptions {
		if cases[name] == nil {
			t.Errorf("refused option %s has no test case", name)
		}
	}
	for _, name := range refusedUserOptions {
		if cases["Users[0]."+name] == nil {
			t.Errorf("refused user option %s has no test case", name)
		}
	}
	for name, set := range cases {
		t.Run(name, func(t *testing.T) {
			o := testOptions()
			set(o)
			s, err := NewServer(o)
			if err == nil {
				s.Shutdown()
				t.Fatalf("NewServer accepted %s", name)
			}
			// Exactly this option is named: no other field trips.
			want := "option " + name + " is not supported by Tern yet"
			if err.Error() != want {
				t.Fatalf("error %q, want %q", err, want)
			}
		})
	}
}

func TestCompatRefusedOptionsAllNamed(t *testing.T) {
	o := testOptions()
	o.TLSRateLimit = 10
	o.Cluster.Permissions = &RoutePermissions{}
	o.Websocket.Port = -1
	_, err := NewServer(o)
	if err == nil {
		t.Fatal("NewServer accepted unsupported options")
	}
	for _, name := range []string{"TLSRateLimit", "Cluster.Permissions", "Websocket.Port"} {
		if !strings.Contains(err.Error(), "option "+name+" is not supported") {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

func TestCompatReloadRefusesOptions(t *testing.T) {
	s := runServer(t, testOptions())
	nw := s.getOpts().Clone()
	nw.TrustedKeys = []string{"OABC"}
	err := s.ReloadOptions(nw)
	if err == nil || !strings.Contains(err.Error(), "option TrustedKeys is not supported by Tern yet") {
		t.Fatalf("ReloadOptions error %v, want TrustedKeys refused", err)
	}
	if len(s.getOpts().TrustedKeys) != 0 {
		t.Fatal("refused reload was applied")
	}
}

// TestCompatAcceptedTuningOptions sets every accepted tuning option, and
// settings of listeners that stay off, and checks the server runs.
func TestCompatAcceptedTuningOptions(t *testing.T) {
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	o.NoSublistCache = true
	o.DisableShortFirstPing = true
	o.NoFastProducerStall = true
	o.MaxTracedMsgLen = 64
	o.ProfBlockRate = 1
	o.DisableJetStreamBanner = true
	o.ConnectErrorReports = 5
	o.ReconnectErrorReports = 5
	o.Metadata = map[string]string{"region": "eu"}
	o.JetStreamMaxCatchup = 1 << 20
	o.JetStreamRequestQueueLimit = 1000
	o.JetStreamInfoQueueLimit = 1000
	o.JetStreamConcurrentIOs = 4
	o.JetStreamMetaCompact = 100
	o.JetStreamMetaCompactSize = 1 << 20
	o.JetStreamMetaCompactSync = true
	o.StreamMaxBufferedMsgs = 100
	o.StreamMaxBufferedSize = 1 << 20
	o.Cluster.ConnectBackoff = true
	o.Cluster.PinnedAccounts = []string{"A"}
	o.Cluster.PingInterval = time.Minute
	o.Cluster.MaxPingsOut = 3
	o.Cluster.WriteDeadline = time.Second
	o.Cluster.Compression.Mode = CompressionOff // what Tern's routes do
	// Inert without their listener, as in nats-server.
	o.Websocket.NoTLS = true
	o.MQTT.AckWait = time.Second
	o.LeafNode.ReconnectInterval = time.Second
	o.Gateway.Name = "G"
	// Bookkeeping and empty restrictions.
	o.Users = []*User{{Username: "u", Password: "p", AllowedConnectionTypes: map[string]struct{}{}}}
	o.Nkeys = []*NkeyUser{{Nkey: testUserNkey(t), Issued: 1, SigningKey: "AABC"}}

	// The list above covers acceptedCompatOptions.
	v := reflect.ValueOf(o).Elem()
	for _, path := range acceptedCompatOptions {
		if isUnset(fieldByPath(v, path)) {
			t.Errorf("accepted option %s not set by this test", path)
		}
	}
	if err := checkUnsupportedOptions(o); err != nil {
		t.Fatal(err)
	}
	s := runServer(t, o)
	nc := connectNATS(t, s.ClientURL(), nats.UserInfo("u", "p"))
	sub, err := nc.SubscribeSync("compat")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("compat", []byte("ok")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(2 * time.Second); err != nil || string(m.Data) != "ok" {
		t.Fatalf("got %v, %v", m, err)
	}
	if !s.JetStreamEnabled() {
		t.Fatal("JetStream not enabled")
	}
}

// implementedOptions are the Options fields Tern implements; with the
// refused and accepted tables they must cover every exported field, so a
// field added later has to be classified.
var implementedOptions = []string{
	"ConfigFile", "ServerName", "Host", "Port", "ClientAdvertise", "Trace",
	"Debug", "TraceVerbose", "NoLog", "NoSigs", "Logtime", "LogtimeUTC",
	"MaxConn", "MaxSubs", "Nkeys", "Users", "Accounts", "NoAuthUser",
	"SystemAccount", "NoSystemAccount", "Username", "Password",
	"Authorization", "PingInterval", "MaxPingsOut", "HTTPHost", "HTTPPort",
	"HTTPBasePath", "ProfPort", "HTTPSPort", "AuthTimeout", "MaxControlLine",
	"MaxPayload", "MaxPending", "WriteDeadline", "MaxClosedClients",
	"LameDuckDuration", "LameDuckGracePeriod", "NoHeaderSupport",
	"DontListen", "Routes", "RoutesStr", "JetStream", "JetStreamMaxMemory",
	"JetStreamMaxStore", "JetStreamDomain", "StoreDir", "SyncInterval",
	"SyncAlways", "JetStreamStaleDirectReads", "JetStreamScrubRate", "JetStreamScrubInterval", "JetStreamMaxOpenFiles", "PidFile", "PortsFileDir", "LogFile", "LogSizeLimit",
	"LogMaxFiles", "Syslog", "RemoteSyslog", "Tags", "CheckConfig",
	"Cluster.Name", "Cluster.Host", "Cluster.Port", "Cluster.Advertise",
	"Cluster.NoAdvertise", "Cluster.ConnectRetries", "Cluster.PoolSize",
	"Cluster.ListenStr", "Cluster.Username", "Cluster.Password", "Cluster.AuthTimeout",
	// TLS (tls_config.go, tls_conn.go, tls_map.go).
	"TLS", "TLSVerify", "TLSMap", "TLSCert", "TLSKey", "TLSCaCert", "TLSConfig",
	"TLSTimeout", "TLSPinnedCerts", "TLSHandshakeFirst", "TLSHandshakeFirstFallback", "AllowNonTLS",
	"Cluster.TLSConfig", "Cluster.TLSTimeout", "Cluster.TLSPinnedCerts",
}

func TestCompatOptionsClassified(t *testing.T) {
	known := slices.Concat(implementedOptions, refusedOptions, acceptedCompatOptions)
	covered := func(path string) bool {
		if path == "Cluster" {
			return true // walked field by field below
		}
		// A listener struct is covered by the paths checked inside it.
		return slices.ContainsFunc(known, func(k string) bool {
			return k == path || strings.HasPrefix(k, path+".")
		})
	}
	for _, path := range known {
		fieldByPath(reflect.ValueOf(Options{}), path) // panics on a stale name
	}
	walk := func(typ reflect.Type, prefix string) {
		for f := range typ.Fields() {
			if f.IsExported() && !covered(prefix+f.Name) {
				t.Errorf("option %s%s is neither implemented, refused nor accepted", prefix, f.Name)
			}
		}
	}
	walk(reflect.TypeFor[Options](), "")
	walk(reflect.TypeFor[ClusterOpts](), "Cluster.")
}
