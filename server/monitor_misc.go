package server

import (
	"github.com/nats-io/nats-server/v2/internal/sublist"
	"net/http"
	"sort"
	"time"
)

// Subsz is /subsz.
type Subsz struct {
	ID           string      `json:"server_id"`
	Now          time.Time   `json:"now"`
	NumSubs      uint32      `json:"num_subscriptions"`
	NumCache     uint32      `json:"num_cache"`
	NumInserts   uint64      `json:"num_inserts"`
	NumRemoves   uint64      `json:"num_removes"`
	NumMatches   uint64      `json:"num_matches"`
	CacheHitRate float64     `json:"cache_hit_rate"`
	MaxFanout    uint32      `json:"max_fanout"`
	AvgFanout    float64     `json:"avg_fanout"`
	Total        int         `json:"total"`
	Subs         []SubDetail `json:"subscriptions_list,omitempty"`
}

// SubDetail describes one subscription.
type SubDetail struct {
	Account string `json:"account,omitempty"`
	Subject string `json:"subject"`
	Queue   string `json:"qgroup,omitempty"`
	Sid     string `json:"sid"`
	Msgs    int64  `json:"msgs"`
	Cid     uint64 `json:"cid"`
}

func (s *Server) subsz(detail bool, test string) *Subsz {
	sz := &Subsz{ID: s.id, Now: time.Now().UTC()}
	for _, a := range s.accs.all() {
		st := a.sl.Stats()
		sz.NumSubs += st.NumSubs
		sz.NumCache += st.NumCache
		sz.NumInserts += st.NumInserts
		sz.NumRemoves += st.NumRemoves
		sz.NumMatches += st.NumMatches
		sz.MaxFanout = max(sz.MaxFanout, st.MaxFanout)
		sz.CacheHitRate = max(sz.CacheHitRate, st.CacheHitRate)
		sz.AvgFanout = max(sz.AvgFanout, st.AvgFanout)
		if !detail {
			continue
		}
		for _, e := range a.sl.All() {
			sub := e.Value
			if sub.client == nil || (test != "" && !sublist.MatchLiteral(test, e.Subject)) {
				continue
			}
			sz.Subs = append(sz.Subs, SubDetail{Account: a.Name, Subject: e.Subject, Queue: e.Queue,
				Sid: sub.sid, Msgs: sub.nm.Load(), Cid: sub.client.cid})
		}
	}
	sort.Slice(sz.Subs, func(i, j int) bool { return sz.Subs[i].Subject < sz.Subs[j].Subject })
	sz.Total = len(sz.Subs)
	return sz
}

func (s *Server) handleSubsz(r *http.Request) (any, int) {
	q := r.URL.Query()
	detail := q.Get("subs") == "true" || q.Get("subs") == "1" || q.Get("subs") == "detail"
	return s.subsz(detail, q.Get("test")), http.StatusOK
}

// Accountz is /accountz.
type Accountz struct {
	ID            string    `json:"server_id"`
	Now           time.Time `json:"now"`
	SystemAccount string    `json:"system_account,omitempty"`
	Accounts      []string  `json:"accounts,omitempty"`
}

func (s *Server) accountz() *Accountz {
	az := &Accountz{ID: s.id, Now: time.Now().UTC()}
	if sa := s.SystemAccount(); sa != nil {
		az.SystemAccount = sa.Name
	}
	for _, a := range s.accs.all() {
		az.Accounts = append(az.Accounts, a.Name)
	}
	sort.Strings(az.Accounts)
	return az
}

// Routez is /routez.
type Routez struct {
	ID        string       `json:"server_id"`
	Name      string       `json:"server_name"`
	Now       time.Time    `json:"now"`
	NumRoutes int          `json:"num_routes"`
	Routes    []*RouteInfo `json:"routes"`
}

// RouteInfo describes one route.
type RouteInfo struct {
	Rid        uint64 `json:"rid"`
	RemoteID   string `json:"remote_id"`
	RemoteName string `json:"remote_name"`
	DidSolicit bool   `json:"did_solicit"`
	IP         string `json:"ip"`
	Port       int    `json:"port"`
	Pending    int    `json:"pending_size"`
	InMsgs     int64  `json:"in_msgs"`
	OutMsgs    int64  `json:"out_msgs"`
	InBytes    int64  `json:"in_bytes"`
	OutBytes   int64  `json:"out_bytes"`
	// Writes counts the route's socket writes; RaftFramesOut the raft
	// frames (RAFT, RAFTB) and RaftRecordsOut the raft messages queued
	// on it (raft_batch.go): records per frame is how well the raft
	// traffic of many groups is coalesced.
	Writes         int64  `json:"writes"`
	RaftFramesOut  uint64 `json:"raft_frames_out"`
	RaftRecordsOut uint64 `json:"raft_records_out"`
}

func (s *Server) routez() *Routez {
	rz := &Routez{ID: s.id, Name: s.name, Now: time.Now().UTC(), Routes: []*RouteInfo{}}
	for _, r := range s.routeList() {
		ri := &RouteInfo{Rid: r.c.cid, RemoteID: r.remote.ID, RemoteName: r.remote.Name, DidSolicit: r.solicited,
			IP: r.c.host, Port: r.c.port, InMsgs: r.c.stats.inMsgs.Load(), OutMsgs: r.c.stats.outMsgs.Load(),
			InBytes: r.c.stats.inBytes.Load(), OutBytes: r.c.stats.outBytes.Load(), Writes: r.c.out.writes.Load(),
			RaftFramesOut: r.raftOut.frames.Load(), RaftRecordsOut: r.raftOut.records.Load()}
		r.c.mu.Lock()
		ri.Pending = r.c.out.pending
		r.c.mu.Unlock()
		rz.Routes = append(rz.Routes, ri)
	}
	sort.Slice(rz.Routes, func(i, j int) bool { return rz.Routes[i].RemoteName < rz.Routes[j].RemoteName })
	rz.NumRoutes = len(rz.Routes)
	return rz
}
