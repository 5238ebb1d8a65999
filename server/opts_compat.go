package server

// This file holds nats-server option types that Tern accepts so embedders'
// code compiles unchanged, but does not implement yet, and the check that
// refuses them. Each type keeps nats-server's exported field names and types;
// none of them is read anywhere else in Tern.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strings"
	"time"
)

// refusedOptions are paths (from Options) of settings Tern does not
// implement: a non-zero value makes NewServer and ReloadOptions fail rather
// than run a server that silently lacks TLS, auth, limits or a listener.
//
// For Websocket, MQTT, LeafNode and Gateway only what would start a
// listener or a solicited connection is checked: nats-server ignores the
// rest of those structs when no listener or remote is configured, and so
// does Tern.
var refusedOptions = []string{
	// TLS for clients: connection rate limits and OCSP.
	"TLSRateLimit", "OCSPConfig", "OCSPCacheConfig",
	// Authentication and authorization Tern lacks.
	"TrustedKeys", "TrustedOperators", "AccountResolver",
	"AccountResolverTLSConfig", "AuthCallout", "DefaultSentinel",
	"CustomClientAuthentication", "CustomRouterAuthentication",
	"AlwaysEnableNonce", "Proxies", "ProxyRequired", "ProxyProtocol",
	// Limits and protocol behaviour.
	"MaxSubTokens", "WriteTimeout", "TraceHeaders", "FeatureFlags",
	// JetStream.
	"JetStreamKey", "JetStreamOldKey", "JetStreamCipher", "JetStreamTpm",
	"JetStreamLimits.MaxHAAssets", "JetStreamLimits.Duplicates",
	"JetStreamLimits.MaxBatchInflightPerStream", "JetStreamLimits.MaxBatchInflightTotal",
	"JetStreamLimits.MaxBatchSize", "JetStreamLimits.MaxBatchTimeout",
	"JetStreamUniqueTag", "JetStreamExtHint",
	"JsAccDefaultDomain", "NoJetStreamStrict",
	// Other listeners and outbound connections.
	"Websocket.Host", "Websocket.Port",
	"MQTT.Host", "MQTT.Port",
	"LeafNode.Host", "LeafNode.Port", "LeafNode.Remotes",
	"Gateway.Host", "Gateway.Port", "Gateway.Gateways",
	// Routes: certificate mapping, permissions, compression.
	"Cluster.Permissions",
	"Cluster.TLSMap", "Cluster.TLSCheckKnownURLs",
	"Cluster.Compression", "Cluster.WriteTimeout",
}

// refusedUserOptions are the fields of each User and NkeyUser that Tern
// refuses when set. NkeyUser's Issued and SigningKey are accepted: they are
// copied from a user JWT, and Tern has no JWT users to check them against.
var refusedUserOptions = []string{"ConnectionDeadline", "ProxyRequired"}

// acceptedCompatOptions are nats-server settings Tern accepts and ignores,
// because ignoring them changes neither what clients see nor security.
var acceptedCompatOptions = []string{
	"NoSublistCache",             // a cache on/off switch; matching results are the same
	"DisableShortFirstPing",      // only when the first PING goes out
	"NoFastProducerStall",        // flow-control tuning for fast publishers
	"MaxTracedMsgLen",            // truncation of trace log lines
	"ProfBlockRate",              // block-profile sampling rate, applied with prof_port only
	"DisableJetStreamBanner",     // start-up log decoration
	"ConnectErrorReports",        // how often connect failures are logged
	"ReconnectErrorReports",      // how often reconnect failures are logged
	"Metadata",                   // descriptive key/values reported in Z responses
	"JetStreamMaxCatchup",        // replica catch-up throughput
	"JetStreamRequestQueueLimit", // internal API queue depth
	"JetStreamInfoQueueLimit",    // internal API queue depth
	"JetStreamConcurrentIOs",     // storage parallelism
	"JetStreamMetaCompact",       // when the meta log is snapshotted
	"JetStreamMetaCompactSize",   // when the meta log is snapshotted
	"JetStreamMetaCompactSync",   // fsync of meta snapshots
	"StreamMaxBufferedMsgs",      // internal buffering of stream ingest
	"StreamMaxBufferedSize",      // internal buffering of stream ingest
	"Cluster.ConnectBackoff",     // reconnect pacing
	"Cluster.PinnedAccounts",     // dedicated route connections; same traffic either way
	"Cluster.PingInterval",       // route liveness timing
	"Cluster.MaxPingsOut",        // route liveness timing
	"Cluster.WriteDeadline",      // route stall timeout
}

// checkUnsupportedOptions returns an error naming every refused option
// that o sets.
func checkUnsupportedOptions(o *Options) error {
	var errs []error
	refuse := func(name string) {
		errs = append(errs, fmt.Errorf("option %s is not supported by Tern yet", name))
	}
	oc := *o
	if oc.Cluster.Compression.Mode == CompressionOff {
		// "off" is what Tern's routes do (nats-server's test helpers ask for it).
		oc.Cluster.Compression = CompressionOpts{}
	}
	v := reflect.ValueOf(&oc).Elem()
	for _, path := range refusedOptions {
		if !isUnset(fieldByPath(v, path)) {
			refuse(path)
		}
	}
	for i, u := range o.Users {
		if u != nil {
			checkUserFields(reflect.ValueOf(u).Elem(), fmt.Sprintf("Users[%d]", i), refuse)
		}
	}
	for i, u := range o.Nkeys {
		if u != nil {
			checkUserFields(reflect.ValueOf(u).Elem(), fmt.Sprintf("Nkeys[%d]", i), refuse)
		}
	}
	return errors.Join(errs...)
}

func checkUserFields(v reflect.Value, prefix string, refuse func(string)) {
	for _, name := range refusedUserOptions {
		if f := v.FieldByName(name); f.IsValid() && !isUnset(f) {
			refuse(prefix + "." + name)
		}
	}
}

// fieldByPath follows a dotted path of field names from v. A path that
// does not resolve is a bug in the tables above, caught by any test.
func fieldByPath(v reflect.Value, path string) reflect.Value {
	for name := range strings.SplitSeq(path, ".") {
		v = v.FieldByName(name)
		if !v.IsValid() {
			panic("opts_compat: no option " + path)
		}
	}
	return v
}

// isUnset treats empty maps and slices like nil ones: an empty
// AllowedConnectionTypes restricts nothing in nats-server either.
func isUnset(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		return v.Len() == 0
	}
	return v.IsZero()
}

// WebsocketOpts configure nats-server's websocket listener.
type WebsocketOpts struct {
	Host             string
	Port             int
	Advertise        string
	NoAuthUser       string
	JWTCookie        string
	UsernameCookie   string
	PasswordCookie   string
	TokenCookie      string
	Username         string
	Password         string
	Token            string
	AuthTimeout      float64
	NoTLS            bool
	TLSConfig        *tls.Config
	TLSMap           bool
	TLSPinnedCerts   PinnedCertSet
	SameOrigin       bool
	AllowedOrigins   []string
	Compression      bool
	HandshakeTimeout time.Duration
	PingInterval     time.Duration
	Headers          map[string]string
}

// MQTTOpts configure nats-server's MQTT listener.
type MQTTOpts struct {
	Host                      string
	Port                      int
	NoAuthUser                string
	Username                  string
	Password                  string
	Token                     string
	JsDomain                  string
	StreamReplicas            int
	ConsumerReplicas          int
	ConsumerMemoryStorage     bool
	ConsumerInactiveThreshold time.Duration
	AuthTimeout               float64
	TLSConfig                 *tls.Config
	TLSMap                    bool
	TLSTimeout                float64
	TLSPinnedCerts            PinnedCertSet
	AckWait                   time.Duration
	JSAPITimeout              time.Duration
	MaxAckPending             uint16
}

// LeafNodeOpts configure leaf node connections, accepted and solicited.
type LeafNodeOpts struct {
	Host                      string             `json:"addr,omitempty"`
	Port                      int                `json:"port,omitempty"`
	Username                  string             `json:"-"`
	Password                  string             `json:"-"`
	ProxyRequired             bool               `json:"-"`
	Nkey                      string             `json:"-"`
	Account                   string             `json:"-"`
	Users                     []*User            `json:"-"`
	AuthTimeout               float64            `json:"auth_timeout,omitempty"`
	TLSConfig                 *tls.Config        `json:"-"`
	TLSTimeout                float64            `json:"tls_timeout,omitempty"`
	TLSMap                    bool               `json:"-"`
	TLSPinnedCerts            PinnedCertSet      `json:"-"`
	TLSHandshakeFirst         bool               `json:"-"`
	TLSHandshakeFirstFallback time.Duration      `json:"-"`
	Advertise                 string             `json:"-"`
	NoAdvertise               bool               `json:"-"`
	ReconnectInterval         time.Duration      `json:"-"`
	WriteDeadline             time.Duration      `json:"-"`
	WriteTimeout              WriteTimeoutPolicy `json:"-"`
	Compression               CompressionOpts    `json:"-"`
	Remotes                   []*RemoteLeafOpts  `json:"remotes,omitempty"`
	MinVersion                string
	IsolateLeafnodeInterest   bool          `json:"-"`
	DialTimeout               time.Duration `json:"-"`
}

// SignatureHandler signs a server nonce for a solicited leaf connection; it
// returns the user JWT and the raw signature.
type SignatureHandler func([]byte) (string, []byte, error)

// RemoteLeafOpts describe one leaf node connection this server solicits.
type RemoteLeafOpts struct {
	LocalAccount      string           `json:"local_account,omitempty"`
	NoRandomize       bool             `json:"-"`
	URLs              []*url.URL       `json:"urls,omitempty"`
	Credentials       string           `json:"-"`
	Nkey              string           `json:"-"`
	SignatureCB       SignatureHandler `json:"-"`
	TLS               bool             `json:"-"`
	TLSConfig         *tls.Config      `json:"-"`
	TLSTimeout        float64          `json:"tls_timeout,omitempty"`
	TLSHandshakeFirst bool             `json:"-"`
	Hub               bool             `json:"hub,omitempty"`
	DenyImports       []string         `json:"-"`
	DenyExports       []string         `json:"-"`
	FirstInfoTimeout  time.Duration    `json:"-"`
	DialTimeout       time.Duration    `json:"-"`
	Compression       CompressionOpts  `json:"-"`

	Websocket struct {
		Compression bool `json:"-"`
		NoMasking   bool `json:"-"`
	}

	Proxy struct {
		URL        string        `json:"-"`
		Username   string        `json:"-"`
		Password   string        `json:"-"`
		Timeout    time.Duration `json:"-"`
		TLSConfig  *tls.Config   `json:"-"`
		TLSTimeout float64       `json:"-"`
	}

	JetStreamClusterMigrate      bool          `json:"jetstream_cluster_migrate,omitempty"`
	JetStreamClusterMigrateDelay time.Duration `json:"jetstream_cluster_migrate_delay,omitempty"`
	LocalIsolation               bool          `json:"local_isolation,omitempty"`
	RequestIsolation             bool          `json:"request_isolation,omitempty"`
	Disabled                     bool          `json:"-"`
	IgnoreDiscoveredServers      bool          `json:"-"`
}

// GatewayOpts configure super-cluster gateways.
type GatewayOpts struct {
	Name              string               `json:"name"`
	Host              string               `json:"addr,omitempty"`
	Port              int                  `json:"port,omitempty"`
	Username          string               `json:"-"`
	Password          string               `json:"-"`
	AuthTimeout       float64              `json:"auth_timeout,omitempty"`
	TLSConfig         *tls.Config          `json:"-"`
	TLSTimeout        float64              `json:"tls_timeout,omitempty"`
	TLSMap            bool                 `json:"-"`
	TLSCheckKnownURLs bool                 `json:"-"`
	TLSPinnedCerts    PinnedCertSet        `json:"-"`
	Advertise         string               `json:"advertise,omitempty"`
	ConnectRetries    int                  `json:"connect_retries,omitempty"`
	ConnectBackoff    bool                 `json:"connect_backoff,omitempty"`
	Gateways          []*RemoteGatewayOpts `json:"gateways,omitempty"`
	RejectUnknown     bool                 `json:"reject_unknown,omitempty"`
	WriteDeadline     time.Duration        `json:"-"`
	WriteTimeout      WriteTimeoutPolicy   `json:"-"`
}

// RemoteGatewayOpts name another cluster and where to reach it.
type RemoteGatewayOpts struct {
	Name       string      `json:"name"`
	TLSConfig  *tls.Config `json:"-"`
	TLSTimeout float64     `json:"tls_timeout,omitempty"`
	URLs       []*url.URL  `json:"urls,omitempty"`
}

// JSLimitOpts are server-wide JetStream limits.
type JSLimitOpts struct {
	MaxRequestBatch           int           `json:"max_request_batch,omitempty"`
	MaxAckPending             int           `json:"max_ack_pending,omitempty"`
	MaxHAAssets               int           `json:"max_ha_assets,omitempty"`
	Duplicates                time.Duration `json:"max_duplicate_window,omitempty"`
	MaxBatchInflightPerStream int           `json:"max_batch_inflight_per_stream,omitempty"`
	MaxBatchInflightTotal     int           `json:"max_batch_inflight_total,omitempty"`
	MaxBatchSize              int           `json:"max_batch_size,omitempty"`
	MaxBatchTimeout           time.Duration `json:"max_batch_timeout,omitempty"`
	DefaultMaxConsumers       int           `json:"default_max_consumers,omitempty"`
}

// JSTpmOpts locate a TPM-sealed JetStream encryption key.
type JSTpmOpts struct {
	KeysFile    string
	KeyPassword string
	SrkPassword string
	Pcr         int
}

// StoreCipher selects the cipher of JetStream encryption at rest.
type StoreCipher int

// The ciphers of StoreCipher.
const (
	ChaCha StoreCipher = iota
	AES
	NoCipher
)

func (c StoreCipher) String() string {
	switch c {
	case ChaCha:
		return "ChaCha20-Poly1305"
	case AES:
		return "AES-GCM"
	case NoCipher:
		return "None"
	}
	return "Unknown StoreCipher"
}

// WriteTimeoutPolicy says what happens to a connection whose writes stall
// past the write deadline.
type WriteTimeoutPolicy uint8

// The values of WriteTimeoutPolicy.
const (
	WriteTimeoutPolicyDefault = iota
	WriteTimeoutPolicyClose
	WriteTimeoutPolicyRetry
)

func (p WriteTimeoutPolicy) String() string {
	switch p {
	case WriteTimeoutPolicyDefault:
		return "default"
	case WriteTimeoutPolicyClose:
		return "close"
	case WriteTimeoutPolicyRetry:
		return "retry"
	}
	return fmt.Sprintf("WriteTimeoutPolicy(%d)", uint8(p))
}

// CompressionOpts configure S2 compression of route and leaf connections.
type CompressionOpts struct {
	Mode          string
	RTTThresholds []time.Duration
}

// Modes of CompressionOpts.
const (
	CompressionNotSupported   = "not supported"
	CompressionOff            = "off"
	CompressionAccept         = "accept"
	CompressionS2Auto         = "s2_auto"
	CompressionS2Uncompressed = "s2_uncompressed"
	CompressionS2Fast         = "s2_fast"
	CompressionS2Better       = "s2_better"
	CompressionS2Best         = "s2_best"
)

// RoutePermissions limit what crosses routes.
type RoutePermissions struct {
	Import *SubjectPermission `json:"import"`
	Export *SubjectPermission `json:"export"`
}

// PinnedCertSet holds lower-case hex SHA-256 digests of the accepted
// certificates' DER SubjectPublicKeyInfo.
type PinnedCertSet map[string]struct{}

// AuthCallout delegates client authentication to an external service.
type AuthCallout struct {
	Issuer          string
	Account         string
	AuthUsers       []string
	XKey            string
	AllowedAccounts []string
}

// OCSPMode is the OCSP stapling policy.
type OCSPMode uint8

// The values of OCSPMode.
const (
	OCSPModeAuto OCSPMode = iota
	OCSPModeAlways
	OCSPModeNever
	OCSPModeMust
)

// OCSPConfig configures OCSP stapling.
type OCSPConfig struct {
	Mode         OCSPMode
	OverrideURLs []string
}

// OCSPResponseCacheType selects the OCSP peer response cache.
type OCSPResponseCacheType int

// The values of OCSPResponseCacheType.
const (
	NONE OCSPResponseCacheType = iota + 1
	LOCAL
)

// OCSPResponseCacheConfig configures the OCSP peer response cache.
type OCSPResponseCacheConfig struct {
	Type            OCSPResponseCacheType
	LocalStore      string
	PreserveRevoked bool
	SaveInterval    float64
}

// ProxiesConfig lists the proxies trusted to forward client connections.
type ProxiesConfig struct {
	Trusted []*ProxyConfig
}

// ProxyConfig is one trusted proxy, by public key.
type ProxyConfig struct {
	Key string
}

// AccountResolver fetches and stores account JWTs in operator mode.
type AccountResolver interface {
	Fetch(name string) (string, error)
	Store(name, jwt string) error
	IsReadOnly() bool
	Start(server *Server) error
	IsTrackingUpdate() bool
	Reload() error
	Close()
}

// Authentication is an embedder's own client (or route) authenticator.
type Authentication interface {
	Check(c ClientAuthentication) bool
}

// ClientAuthentication is what an Authentication sees of a connection.
type ClientAuthentication interface {
	GetOpts() *ClientOpts
	GetTLSConnectionState() *tls.ConnectionState
	RegisterUser(*User)
	RemoteAddress() net.Addr
	GetNonce() []byte
	Kind() int
	GetID() uint64
}
