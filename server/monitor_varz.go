package server

import (
	"runtime"
	"strings"
	"time"
)

// Varz is /varz, with nats-server's field names.
type Varz struct {
	ID               string            `json:"server_id"`
	Name             string            `json:"server_name"`
	Version          string            `json:"version"`
	Proto            int               `json:"proto"`
	GitCommit        string            `json:"git_commit,omitempty"`
	GoVersion        string            `json:"go"`
	Host             string            `json:"host"`
	Port             int               `json:"port"`
	AuthRequired     bool              `json:"auth_required,omitempty"`
	TLSRequired      bool              `json:"tls_required,omitempty"`
	TLSVerify        bool              `json:"tls_verify,omitempty"`
	MaxConn          int               `json:"max_connections"`
	MaxSubs          int               `json:"max_subscriptions,omitempty"`
	PingInterval     time.Duration     `json:"ping_interval"`
	MaxPingsOut      int               `json:"ping_max"`
	HTTPHost         string            `json:"http_host"`
	HTTPPort         int               `json:"http_port"`
	HTTPBasePath     string            `json:"http_base_path"`
	HTTPSPort        int               `json:"https_port"`
	AuthTimeout      float64           `json:"auth_timeout"`
	MaxControlLine   int32             `json:"max_control_line"`
	MaxPayload       int               `json:"max_payload"`
	MaxPending       int64             `json:"max_pending"`
	Cluster          ClusterOptsVarz   `json:"cluster,omitempty"`
	TLSTimeout       float64           `json:"tls_timeout"`
	WriteDeadline    time.Duration     `json:"write_deadline"`
	Start            time.Time         `json:"start"`
	Now              time.Time         `json:"now"`
	Uptime           string            `json:"uptime"`
	Mem              int64             `json:"mem"`
	Cores            int               `json:"cores"`
	MaxProcs         int               `json:"gomaxprocs"`
	CPU              float64           `json:"cpu"`
	Connections      int               `json:"connections"`
	TotalConnections uint64            `json:"total_connections"`
	Routes           int               `json:"routes"`
	Remotes          int               `json:"remotes"`
	Leafs            int               `json:"leafnodes"`
	InMsgs           int64             `json:"in_msgs"`
	OutMsgs          int64             `json:"out_msgs"`
	InBytes          int64             `json:"in_bytes"`
	OutBytes         int64             `json:"out_bytes"`
	SlowConsumers    int64             `json:"slow_consumers"`
	StaleConnections int64             `json:"stale_connections"`
	Subscriptions    uint32            `json:"subscriptions"`
	HTTPReqStats     map[string]uint64 `json:"http_req_stats"`
	ConfigLoadTime   time.Time         `json:"config_load_time"`
	Tags             []string          `json:"tags,omitempty"`
	SystemAccount    string            `json:"system_account,omitempty"`
	JetStream        JetStreamVarz     `json:"jetstream"`
}

// ClusterOptsVarz is the cluster section of /varz.
type ClusterOptsVarz struct {
	Name string   `json:"name,omitempty"`
	Host string   `json:"addr,omitempty"`
	Port int      `json:"cluster_port,omitempty"`
	URLs []string `json:"urls,omitempty"`

	TLSTimeout  float64 `json:"tls_timeout,omitempty"`
	TLSRequired bool    `json:"tls_required,omitempty"`
	TLSVerify   bool    `json:"tls_verify,omitempty"`
}

// JetStreamVarz is the jetstream section of /varz (empty until enabled).
type JetStreamVarz struct {
	Config *JetStreamConfig `json:"config,omitempty"`
	Stats  *JetStreamStats  `json:"stats,omitempty"`
	Meta   *MetaClusterInfo `json:"meta,omitempty"`
}

func (s *Server) varz() *Varz {
	o := s.getOpts()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	now := time.Now().UTC()
	v := &Varz{
		ID: s.id, Name: s.name, Version: VERSION, Proto: PROTO, GoVersion: runtime.Version(),
		Host: o.Host, Port: s.clientPort(), AuthRequired: s.getAuth().required, MaxConn: o.MaxConn,
		MaxSubs: o.MaxSubs, PingInterval: o.PingInterval, MaxPingsOut: o.MaxPingsOut,
		HTTPHost: o.HTTPHost, HTTPPort: o.HTTPPort, HTTPBasePath: o.HTTPBasePath, HTTPSPort: o.HTTPSPort,
		AuthTimeout: o.AuthTimeout, MaxControlLine: o.MaxControlLine, MaxPayload: int(o.MaxPayload),
		MaxPending: o.MaxPending, WriteDeadline: o.WriteDeadline, Start: s.start, Now: now,
		Uptime: myUptime(now.Sub(s.start)), Mem: int64(ms.Sys), Cores: runtime.NumCPU(),
		MaxProcs: runtime.GOMAXPROCS(0), Connections: s.NumClients(),
		TotalConnections: uint64(s.stats.totalConns.Load()),
		InMsgs:           s.stats.inMsgs.Load(), OutMsgs: s.stats.outMsgs.Load(),
		InBytes: s.stats.inBytes.Load(), OutBytes: s.stats.outBytes.Load(),
		SlowConsumers: s.stats.slowConsumers.Load(), StaleConnections: s.stats.staleConnections.Load(),
		Subscriptions: s.numSubs(), HTTPReqStats: map[string]uint64{}, ConfigLoadTime: time.Unix(0, s.configTime.Load()).UTC(),
		Tags:    o.Tags,
		Cluster: ClusterOptsVarz{Name: o.Cluster.Name, Host: o.Cluster.Host, Port: o.Cluster.Port},
	}
	setVarzTLS(v, o)
	if sa := s.SystemAccount(); sa != nil {
		v.SystemAccount = sa.Name
	}
	if s.js.Load() != nil {
		jsz := s.jsz()
		v.JetStream = JetStreamVarz{Config: &jsz.Config, Stats: &jsz.JetStreamStats, Meta: jsz.Meta}
	}
	v.Routes = s.NumRoutes()
	if a := s.ClusterAddr(); a != nil {
		v.Cluster.Port = a.Port
		for _, r := range s.routeList() {
			v.Cluster.URLs = append(v.Cluster.URLs, strings.TrimPrefix(r.remote.RouteURL, "nats-route://"))
		}
	}
	return v
}

// myUptime formats a duration as nats-server does ("1d2h3m4s").
func myUptime(d time.Duration) string {
	tsecs := int64(d.Seconds())
	tmins, thrs := tsecs/60, tsecs/3600
	tdays, tyrs := thrs/24, thrs/(24*365)
	secs, mins, hrs, days := tsecs%60, tmins%60, thrs%24, tdays%365
	switch {
	case tyrs > 0:
		return itoa64(tyrs) + "y" + itoa64(days) + "d" + itoa64(hrs) + "h" + itoa64(mins) + "m" + itoa64(secs) + "s"
	case tdays > 0:
		return itoa64(tdays) + "d" + itoa64(hrs) + "h" + itoa64(mins) + "m" + itoa64(secs) + "s"
	case thrs > 0:
		return itoa64(thrs) + "h" + itoa64(mins) + "m" + itoa64(secs) + "s"
	case tmins > 0:
		return itoa64(tmins) + "m" + itoa64(secs) + "s"
	}
	return itoa64(tsecs) + "s"
}

func itoa64(n int64) string { return itoa(int(n)) }
