package server

import (
	"net/http"
	"time"
)

// JSInfo is /jsz.
type JSInfo struct {
	JetStreamStats
	ID       string          `json:"server_id"`
	Now      time.Time       `json:"now"`
	Disabled bool            `json:"disabled,omitempty"`
	Config   JetStreamConfig `json:"config,omitempty"`
	Streams  int             `json:"streams"`
	// StreamsLeader counts the streams whose group this server leads (a
	// stream without a group counts), with ?raft=true only, as in
	// nats-server: each survivor's count, summed, says whether every
	// stream has a leader again after a server died (scripts/stream-scale).
	StreamsLeader int              `json:"streams_leader,omitempty"`
	Consumers     int              `json:"consumers"`
	Messages      uint64           `json:"messages"`
	Bytes         uint64           `json:"bytes"`
	Meta          *MetaClusterInfo `json:"meta_cluster,omitempty"`
	// RaftGroups counts the server's raft groups and, of them, those
	// asleep (quiescent: no ticks, no heartbeats); Tern only.
	RaftGroups      int `json:"raft_groups,omitempty"`
	RaftGroupsQuiet int `json:"raft_groups_quiescent,omitempty"`
	// RaftSent and RaftReceived count the raft messages sent and received
	// over routes since the start, by type, with ?raft=true only; Tern
	// only (raft_msgcount.go).
	RaftSent     map[string]uint64 `json:"raft_sent,omitempty"`
	RaftReceived map[string]uint64 `json:"raft_received,omitempty"`
	// RaftFramesSent and RaftFramesReceived count the route frames those
	// messages travelled in, by kind: RAFT (one message) and RAFTB (the
	// messages queued for a peer between two writes, raft_batch.go).
	RaftFramesSent     map[string]uint64 `json:"raft_frames_sent,omitempty"`
	RaftFramesReceived map[string]uint64 `json:"raft_frames_received,omitempty"`
	// RaftCampaigns counts why this server's followers campaigned as
	// their election timeout ran out (reason, and reason@leader's server),
	// RaftPeersDown how often node liveness deemed each peer down,
	// RaftSilenceMaxMs the longest silence it saw then, RaftClockLateMaxMs
	// how late the raft clock ticked at the most (raft_campaigns.go).
	RaftCampaigns      map[string]uint64 `json:"raft_campaigns,omitempty"`
	RaftPeersDown      map[string]uint64 `json:"raft_peers_down,omitempty"`
	RaftSilenceMaxMs   float64           `json:"raft_silence_max_ms,omitempty"`
	RaftClockLateMaxMs float64           `json:"raft_clock_late_max_ms,omitempty"`
	// RaftDeposed counts the leaderships this server deposed as their
	// group wedged, RaftResigned those its groups resigned once back
	// (raft_wedge.go).
	RaftDeposed  uint64 `json:"raft_deposed,omitempty"`
	RaftResigned uint64 `json:"raft_resigned,omitempty"`
	// RaftCheckQuorum counts this server's leaders that stepped down as
	// their check-quorum heard from no quorum, by whether node liveness
	// said a quorum was live then (step_down_live) or not (step_down),
	// and the election timeouts they led on meanwhile as liveness said a
	// quorum was live (wait): internal/raft check_quorum.go.
	RaftCheckQuorum map[string]uint64 `json:"raft_check_quorum,omitempty"`
	// MaxOpenFiles is the stores' open-file budget (jetstream {
	// max_open_files }), OpenFiles the files open under it and
	// FileReopens how often a file it closed was opened again; Tern only.
	MaxOpenFiles int    `json:"max_open_files,omitempty"`
	OpenFiles    int    `json:"open_files,omitempty"`
	FileReopens  uint64 `json:"file_reopens,omitempty"`
	// What is broken now (Tern only; /healthz answers 503 while any is):
	// StoresBroken counts the running streams whose store refuses
	// writes (a panic or a write error: jetStream.brokenStores),
	// RaftGroupsHalted the halted raft groups (a replica waiting for its
	// restart, or given up: stream_halt_restart.go), RestartsFailed the
	// replicas whose restart could not start them and whose stream is
	// still placed here.
	StoresBroken     int `json:"stores_broken,omitempty"`
	RaftGroupsHalted int `json:"raft_groups_halted,omitempty"`
	RestartsFailed   int `json:"replica_restarts_failed,omitempty"`
}

// JetStreamStats is what the server's streams hold, and its API counts.
type JetStreamStats struct {
	Memory         uint64            `json:"memory"`
	Store          uint64            `json:"storage"`
	ReservedMemory uint64            `json:"reserved_memory"`
	ReservedStore  uint64            `json:"reserved_storage"`
	Accounts       int               `json:"accounts"`
	HAAssets       int               `json:"ha_assets"`
	API            JetStreamAPIStats `json:"api"`
}

// JetStreamConfig is the server's JetStream configuration. StoreDir is the
// "jetstream" directory inside the configured store directory, as in
// nats-server.
type JetStreamConfig struct {
	MaxMemory    int64         `json:"max_memory"`
	MaxStore     int64         `json:"max_storage"`
	StoreDir     string        `json:"store_dir,omitempty"`
	SyncInterval time.Duration `json:"sync_interval,omitempty"`
	SyncAlways   bool          `json:"sync_always,omitempty"`
	Domain       string        `json:"domain,omitempty"`
	CompressOK   bool          `json:"compress_ok,omitempty"`
	UniqueTag    string        `json:"unique_tag,omitempty"`
	Strict       bool          `json:"strict,omitempty"`
}

// jsConfig is the running JetStream's configuration.
func (js *jetStream) jsConfig() JetStreamConfig {
	o := js.srv.getOpts()
	return JetStreamConfig{MaxMemory: o.JetStreamMaxMemory, MaxStore: o.JetStreamMaxStore,
		StoreDir: js.storeDir, SyncInterval: o.backgroundSync(), SyncAlways: o.syncEachWrite(),
		Domain: o.JetStreamDomain, CompressOK: true, Strict: true}
}

// MetaClusterInfo describes the meta group.
type MetaClusterInfo struct {
	Name        string `json:"name,omitempty"`
	Leader      string `json:"leader,omitempty"`
	ClusterSize int    `json:"cluster_size"`
}

func (s *Server) jsz() *JSInfo { return s.jszWith(false) }

// handleJsz is /jsz; ?raft=true adds the count of streams led here.
func (s *Server) handleJsz(r *http.Request) (any, int) {
	return s.jszWith(r.URL.Query().Get("raft") == "true"), 200
}

func (s *Server) jszWith(raft bool) *JSInfo {
	o := s.getOpts()
	info := &JSInfo{ID: s.id, Now: time.Now().UTC()}
	js := s.js.Load()
	if js == nil {
		info.Disabled = true
		return info
	}
	info.Config = js.jsConfig()
	info.API = js.apiStats()
	for _, jsa := range js.accountList() {
		info.Accounts++
		for _, mset := range jsa.streamList() {
			var st StreamState
			mset.st().FastState(&st)
			info.Streams++
			if raft && mset.groupLeads() {
				info.StreamsLeader++
			}
			info.Messages += st.Msgs
			info.Bytes += st.Bytes
			if mset.config().Storage == MemoryStorage {
				info.Memory += st.Bytes
			} else {
				info.Store += st.Bytes
			}
		}
	}
	info.RaftGroups, info.RaftGroupsQuiet = s.raftGroupsAsleep()
	if raft {
		info.RaftSent, info.RaftReceived = byName(&s.raft.msgs.sent), byName(&s.raft.msgs.recv)
		info.RaftFramesSent, info.RaftFramesReceived = framesByName(&s.raft.msgs.framesSent), framesByName(&s.raft.msgs.framesRecv)
		info.RaftCampaigns, info.RaftPeersDown = s.campaignsByName(), s.downsByName()
		info.RaftSilenceMaxMs = float64(s.raft.elections.silenceMax.Load()) / 1e6
		info.RaftClockLateMaxMs = float64(s.raft.elections.lateMax.Load()) / 1e6
		info.RaftDeposed = s.raft.elections.deposed.Load()
		info.RaftResigned = s.raft.elections.resigned.Load()
		info.RaftCheckQuorum = s.checkQuorumByName()
	}
	info.StoresBroken = int(js.brokenStores.Load())
	info.RaftGroupsHalted = s.haltedGroups()
	info.RestartsFailed = js.restartsFailedNow()
	js.openFilesStats(info)
	if jc := js.cluster; jc != nil {
		info.Meta = &MetaClusterInfo{Name: o.Cluster.Name, Leader: jc.metaLeaderName()}
		_, info.Meta.ClusterSize = jc.metaGroup()
	}
	return info
}

// jsHealth answers the JetStream variants of /healthz: js-enabled-only
// (JetStream requested and running) and js-server-only (also, in a
// cluster, the meta group has a leader).
func (s *Server) jsHealth(r *http.Request) *HealthStatus {
	q := r.URL.Query()
	enabledOnly, serverOnly := q.Get("js-enabled-only") == "true", q.Get("js-server-only") == "true"
	if !enabledOnly && !serverOnly && !s.getOpts().JetStream {
		return nil
	}
	js := s.js.Load()
	if s.getOpts().JetStream && js == nil {
		return &HealthStatus{Status: "unavailable", StatusCode: 503, Error: "JetStream not enabled"}
	}
	if enabledOnly || js == nil {
		return nil
	}
	if d := js.scrubDamage(); d != "" && !serverOnly {
		return &HealthStatus{Status: "unavailable", StatusCode: 503, Error: d}
	}
	if d := js.storeFailed(); d != "" && !serverOnly {
		return &HealthStatus{Status: "unavailable", StatusCode: 503, Error: d}
	}
	if js.cluster == nil {
		return nil
	}
	meta, _ := js.cluster.metaGroup()
	if meta != nil && meta.healthy() != nil {
		return &HealthStatus{Status: "unavailable", StatusCode: 503, Error: "JetStream meta group halted: " + meta.healthy().Error()}
	}
	if h := s.haltedGroup(); h != "" && !serverOnly {
		return &HealthStatus{Status: "unavailable", StatusCode: 503, Error: h}
	}
	if h := js.haltRestartFailed(); h != "" && !serverOnly {
		return &HealthStatus{Status: "unavailable", StatusCode: 503, Error: h}
	}
	if js.cluster.metaLeaderName() == "" {
		return &HealthStatus{Status: "unavailable", StatusCode: 503, Error: "JetStream has not established contact with a meta leader"}
	}
	return nil
}
