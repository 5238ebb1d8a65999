package server

import (
	"crypto/tls"
	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/jwt/v2"
)

// Options configure a Server. Field names follow nats-server's Options for
// everything Tern supports, so embedders can switch packages.
type Options struct {
	ConfigFile          string        `json:"-"`
	ServerName          string        `json:"server_name"`
	Host                string        `json:"addr"`
	Port                int           `json:"port"`
	ClientAdvertise     string        `json:"-"`
	Trace               bool          `json:"-"`
	Debug               bool          `json:"-"`
	TraceVerbose        bool          `json:"-"`
	NoLog               bool          `json:"-"`
	NoSigs              bool          `json:"-"`
	Logtime             bool          `json:"-"`
	LogtimeUTC          bool          `json:"-"`
	MaxConn             int           `json:"max_connections"`
	MaxSubs             int           `json:"max_subscriptions,omitempty"`
	Nkeys               []*NkeyUser   `json:"-"`
	Users               []*User       `json:"-"`
	Accounts            []*Account    `json:"-"`
	NoAuthUser          string        `json:"-"`
	SystemAccount       string        `json:"-"`
	NoSystemAccount     bool          `json:"-"`
	Username            string        `json:"-"`
	Password            string        `json:"-"`
	Authorization       string        `json:"-"`
	PingInterval        time.Duration `json:"ping_interval"`
	MaxPingsOut         int           `json:"ping_max"`
	HTTPHost            string        `json:"http_host"`
	HTTPPort            int           `json:"http_port"`
	HTTPBasePath        string        `json:"http_base_path"`
	ProfPort            int           `json:"-"`
	HTTPSPort           int           `json:"https_port"`
	AuthTimeout         float64       `json:"auth_timeout"`
	MaxControlLine      int32         `json:"max_control_line"`
	MaxPayload          int32         `json:"max_payload"`
	MaxPending          int64         `json:"max_pending"`
	WriteDeadline       time.Duration `json:"-"`
	MaxClosedClients    int           `json:"-"`
	LameDuckDuration    time.Duration `json:"-"`
	LameDuckGracePeriod time.Duration `json:"-"`
	NoHeaderSupport     bool          `json:"-"`
	// DontListen: no client listener; clients connect with InProcessConn.
	DontListen bool `json:"dont_listen"`

	Cluster   ClusterOpts `json:"cluster,omitempty"`
	Routes    []*url.URL  `json:"-"`
	RoutesStr string      `json:"-"`

	JetStream          bool   `json:"jetstream"`
	JetStreamMaxMemory int64  `json:"-"`
	JetStreamMaxStore  int64  `json:"-"`
	JetStreamDomain    string `json:"-"`
	StoreDir           string `json:"-"`
	// SyncInterval 0 (nothing configured) is the durable default: a
	// publish is acknowledged only once an fsync covers it, as with
	// SyncAlways. A positive interval opts out: the stores and raft logs
	// are fsynced every SyncInterval, and a power loss can lose what was
	// acknowledged within it.
	SyncInterval time.Duration `json:"-"`
	SyncAlways   bool          `json:"-"`
	// JetStreamStaleDirectReads (jetstream { stale_direct_reads: true })
	// lets a replica answer a direct get (KV Get) at once from its own
	// state, possibly stale, as nats-server does. By default a replica
	// answers only once it has applied what the stream had committed when
	// the request came (a raft read index), so a read sees every write
	// acknowledged before it.
	JetStreamStaleDirectReads bool `json:"-"`
	// JetStreamScrubRate (jetstream { scrub_rate: "4M" }, Tern only) is
	// how many bytes a second the background scrub reads of the stores'
	// sealed blocks to check their checksums; 0 is the default (4 MiB),
	// negative turns the scrub off (scrub_rate: 0 in a config file).
	JetStreamScrubRate int64 `json:"-"`
	// JetStreamScrubInterval (jetstream { scrub_interval: "1h" }, Tern
	// only) is the time between the starts of two scrub passes over every
	// file stream; 0 is the default (1 hour). The first pass starts one
	// interval after the server.
	JetStreamScrubInterval time.Duration `json:"-"`
	// JetStreamMaxOpenFiles (jetstream { max_open_files: 1024 }, Tern
	// only) bounds the files the stores and raft logs keep open: past it
	// the least recently used idle ones are closed and opened again on
	// their next use (jetstream_fdbudget.go). 0 is the default: a quarter
	// of RLIMIT_NOFILE, at least 256 and at most 1024.
	JetStreamMaxOpenFiles int `json:"-"`

	PidFile      string `json:"-"`
	PortsFileDir string `json:"-"`
	LogFile      string `json:"-"`
	LogSizeLimit int64  `json:"-"`
	LogMaxFiles  int64  `json:"-"`
	Syslog       bool   `json:"-"`
	RemoteSyslog string `json:"-"`
	// Tags describe the server (server_tags): varz, route INFO, placement.
	Tags jwt.TagList `json:"-"`

	// CheckConfig makes the server only validate its configuration.
	CheckConfig bool `json:"-"`

	// The fields below are accepted for source compatibility with
	// nats-server; NewServer refuses a non-zero value until Tern implements
	// it (checkUnsupportedOptions in opts_compat.go), except for the
	// harmless tuning knobs listed in acceptedCompatOptions there.
	TraceHeaders               bool         `json:"-"`
	NoSublistCache             bool         `json:"-"`
	DisableShortFirstPing      bool         `json:"-"`
	MaxSubTokens               uint8        `json:"-"`
	DefaultSentinel            string       `json:"-"`
	ProxyRequired              bool         `json:"-"`
	ProxyProtocol              bool         `json:"-"`
	AuthCallout                *AuthCallout `json:"-"`
	NoFastProducerStall        bool         `json:"-"`
	Gateway                    GatewayOpts  `json:"gateway,omitempty"`
	LeafNode                   LeafNodeOpts `json:"leaf,omitempty"`
	NoJetStreamStrict          bool         `json:"-"`
	JetStreamExtHint           string       `json:"-"`
	JetStreamKey               string       `json:"-"`
	JetStreamOldKey            string       `json:"-"`
	JetStreamCipher            StoreCipher  `json:"-"`
	JetStreamUniqueTag         string
	JetStreamLimits            JSLimitOpts
	JetStreamTpm               JSTpmOpts
	JetStreamMaxCatchup        int64
	JetStreamRequestQueueLimit int64
	JetStreamInfoQueueLimit    int64
	JetStreamMetaCompact       uint64
	JetStreamMetaCompactSize   uint64
	JetStreamMetaCompactSync   bool
	JetStreamConcurrentIOs     int
	StreamMaxBufferedMsgs      int                   `json:"-"`
	StreamMaxBufferedSize      int64                 `json:"-"`
	JsAccDefaultDomain         map[string]string     `json:"-"`
	Websocket                  WebsocketOpts         `json:"-"`
	MQTT                       MQTTOpts              `json:"-"`
	ProfBlockRate              int                   `json:"-"`
	TLSTimeout                 float64               `json:"tls_timeout"`
	TLS                        bool                  `json:"-"`
	TLSVerify                  bool                  `json:"-"`
	TLSMap                     bool                  `json:"-"`
	TLSCert                    string                `json:"-"`
	TLSKey                     string                `json:"-"`
	TLSCaCert                  string                `json:"-"`
	TLSConfig                  *tls.Config           `json:"-"`
	TLSPinnedCerts             PinnedCertSet         `json:"-"`
	TLSRateLimit               int64                 `json:"-"`
	TLSHandshakeFirst          bool                  `json:"-"`
	TLSHandshakeFirstFallback  time.Duration         `json:"-"`
	AllowNonTLS                bool                  `json:"-"`
	WriteTimeout               WriteTimeoutPolicy    `json:"-"`
	MaxTracedMsgLen            int                   `json:"-"`
	TrustedKeys                []string              `json:"-"`
	TrustedOperators           []*jwt.OperatorClaims `json:"-"`
	AccountResolver            AccountResolver       `json:"-"`
	AccountResolverTLSConfig   *tls.Config           `json:"-"`
	AlwaysEnableNonce          bool
	CustomClientAuthentication Authentication `json:"-"`
	CustomRouterAuthentication Authentication `json:"-"`
	DisableJetStreamBanner     bool           `json:"-"`
	ConnectErrorReports        int
	ReconnectErrorReports      int
	Metadata                   map[string]string `json:"-"`
	FeatureFlags               map[string]bool   `json:"-"`
	OCSPConfig                 *OCSPConfig
	Proxies                    *ProxiesConfig
	OCSPCacheConfig            *OCSPResponseCacheConfig

	configWarnings []string
	// fields the command line set explicitly; they win over the config file.
	inFlags map[string]bool
	// routeProto, when set, is the route protocol announced instead of
	// routeProto: tests make a server look like an older one to its peers.
	routeProto int
	// fsys, when set, is the file system under JetStream's stores, raft
	// logs and snapshots (tests stand a crash FS under them); nil is the OS.
	fsys vfs.FS
	// clock, when set, is the clock of JetStream and raft (tests drive a
	// clock.Manual); nil is the real one. See internal/clock.
	clock clock.Clock
	// raftHost, when set, drives the raft groups and carries their
	// messages instead of goroutines and routes (the simulator).
	raftHost raftHost
}

// ClusterOpts configure the cluster (route) listener.
type ClusterOpts struct {
	Name           string `json:"name,omitempty"`
	Host           string `json:"addr,omitempty"`
	Port           int    `json:"cluster_port,omitempty"`
	Advertise      string `json:"-"`
	NoAdvertise    bool   `json:"-"`
	ConnectRetries int    `json:"-"`
	PoolSize       int    `json:"-"`
	ListenStr      string `json:"-"`
	// Route authentication (cluster { authorization {...} }): a peer that
	// dials in must send these in its CONNECT within AuthTimeout seconds.
	Username    string  `json:"-"`
	Password    string  `json:"-"`
	AuthTimeout float64 `json:"auth_timeout,omitempty"`

	// Accepted for source compatibility with nats-server; NewServer refuses
	// a non-zero value until Tern implements it, except for the tuning
	// knobs listed in acceptedCompatOptions (opts_compat.go).
	Permissions       *RoutePermissions  `json:"-"`
	TLSTimeout        float64            `json:"-"`
	TLSConfig         *tls.Config        `json:"-"`
	TLSMap            bool               `json:"-"`
	TLSCheckKnownURLs bool               `json:"-"`
	TLSPinnedCerts    PinnedCertSet      `json:"-"`
	ConnectBackoff    bool               `json:"-"`
	PinnedAccounts    []string           `json:"-"`
	Compression       CompressionOpts    `json:"-"`
	PingInterval      time.Duration      `json:"-"`
	MaxPingsOut       int                `json:"-"`
	WriteDeadline     time.Duration      `json:"-"`
	WriteTimeout      WriteTimeoutPolicy `json:"-"`
}

// User is a user/password user.
type User struct {
	Username    string       `json:"user"`
	Password    string       `json:"password"`
	Permissions *Permissions `json:"permissions,omitempty"`
	Account     *Account     `json:"account,omitempty"`

	// Accepted for source compatibility with nats-server; NewServer refuses
	// a non-zero value until Tern implements it.
	ConnectionDeadline     time.Time           `json:"connection_deadline,omitempty"`
	AllowedConnectionTypes map[string]struct{} `json:"connection_types,omitempty"`
	ProxyRequired          bool                `json:"proxy_required,omitempty"`
}

// NkeyUser is a user authenticated by an nkey signature of the nonce.
type NkeyUser struct {
	Nkey        string       `json:"user"`
	Permissions *Permissions `json:"permissions,omitempty"`
	Account     *Account     `json:"account,omitempty"`

	// Accepted for source compatibility with nats-server; NewServer refuses
	// a non-zero AllowedConnectionTypes or ProxyRequired until Tern
	// implements them. Issued and SigningKey are bookkeeping copied from a
	// user JWT, which nothing in Tern reads (it has no JWT users).
	Issued                 int64               `json:"issued,omitempty"`
	SigningKey             string              `json:"signing_key,omitempty"`
	AllowedConnectionTypes map[string]struct{} `json:"connection_types,omitempty"`
	ProxyRequired          bool                `json:"proxy_required,omitempty"`
}

// SubjectPermission is an allow and a deny list of subjects.
type SubjectPermission struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

// ResponsePermission lets a user publish to reply subjects it received.
type ResponsePermission struct {
	MaxMsgs int           `json:"max"`
	Expires time.Duration `json:"ttl"`
}

// Permissions of a user.
type Permissions struct {
	Publish   *SubjectPermission  `json:"publish"`
	Subscribe *SubjectPermission  `json:"subscribe"`
	Response  *ResponsePermission `json:"responses,omitempty"`
}

// setBaselineOptions fills in nats-server's defaults for every unset field.
func setBaselineOptions(o *Options) {
	setTLSDefaults(o)
	if o.Host == "" {
		o.Host = DEFAULT_HOST
	}
	if o.Port == 0 {
		o.Port = DEFAULT_PORT
	} else if o.Port == RANDOM_PORT {
		o.Port = 0
	}
	if o.HTTPHost == "" {
		o.HTTPHost = o.Host
	}
	if o.MaxConn == 0 {
		o.MaxConn = DEFAULT_MAX_CONNECTIONS
	}
	if o.PingInterval == 0 {
		o.PingInterval = DEFAULT_PING_INTERVAL
	}
	if o.MaxPingsOut == 0 {
		o.MaxPingsOut = DEFAULT_PING_MAX_OUT
	}
	if o.AuthTimeout == 0 {
		o.AuthTimeout = AUTH_TIMEOUT.Seconds()
	}
	if o.MaxControlLine == 0 {
		o.MaxControlLine = MAX_CONTROL_LINE_SIZE
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = MAX_PAYLOAD_SIZE
	}
	if o.MaxPending == 0 {
		o.MaxPending = MAX_PENDING_SIZE
	}
	if o.WriteDeadline == 0 {
		o.WriteDeadline = DEFAULT_FLUSH_DEADLINE
	}
	if o.MaxClosedClients == 0 {
		o.MaxClosedClients = DEFAULT_MAX_CLOSED_CLIENTS
	}
	if o.LameDuckDuration == 0 {
		o.LameDuckDuration = DEFAULT_LAME_DUCK_DURATION
	}
	if o.LameDuckGracePeriod == 0 {
		o.LameDuckGracePeriod = DEFAULT_LAME_DUCK_GRACE_PERIOD
	}
	setStoreDirDefault(o)
}

// syncEachWrite reports whether acknowledgements wait for an fsync: the
// default (no sync_interval configured) and sync_interval "always".
func (o *Options) syncEachWrite() bool {
	return o.SyncAlways || o.SyncInterval <= 0
}

// backgroundSync is how often a store is fsynced in the background (which
// also checkpoints it and removes the files of dropped blocks): the
// configured sync_interval, else every 2 minutes.
func (o *Options) backgroundSync() time.Duration {
	if o.SyncInterval > 0 {
		return o.SyncInterval
	}
	return defaultBackgroundSync
}

const defaultBackgroundSync = 2 * time.Minute

// setStoreDirDefault gives JetStream its default store directory.
func setStoreDirDefault(o *Options) {
	if o.JetStream && o.StoreDir == "" {
		o.StoreDir = filepath.Join(os.TempDir(), "nats", "jetstream")
	}
}

// Clone returns a deep enough copy of o for reloads.
func (o *Options) Clone() *Options {
	c := *o
	c.Users = append([]*User(nil), o.Users...)
	c.Nkeys = append([]*NkeyUser(nil), o.Nkeys...)
	c.Accounts = append([]*Account(nil), o.Accounts...)
	c.Routes = append([]*url.URL(nil), o.Routes...)
	return &c
}
