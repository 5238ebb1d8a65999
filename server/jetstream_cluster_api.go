package server

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// In a cluster every server hears every API request; exactly one answers:
// the meta leader for account-wide calls, the stream leader for a stream's
// calls. While nobody can answer, the server the client is connected to
// answers "temporarily unavailable" (10008).

// clusteredDispatch answers r if this server is the one that should; it
// reports false when it stays silent.
func (r *apiRequest) clusteredDispatch() (string, any, bool) {
	jc := r.jsa.js.cluster
	local := r.c != nil && r.c.route == nil
	for _, route := range clusterRoutes {
		if !matchesRoute(r.subject, route.prefix) {
			continue
		}
		if route.meta {
			repeated := local && r.repeatedWrite(route.prefix) // jetstream_meta_repeat.go
			if jc.isMetaLeader() {
				if answersAside(route.prefix) { // a peer removal waits for its outcome
					return route.typ, r.answerAside(route.typ, route.handler), true
				}
				return route.typ, route.handler(r), true
			}
			lead := jc.metaLead()
			if local && lead == raft.None && jc.metaDeposed() {
				// A new leader, unknown here while this server's wedged
				// meta group stalls, may answer (jetstream_meta_wedge.go).
				if !metaReadOnly(route.prefix) {
					return "", nil, false
				}
				return route.typ, &unavailableLater{prefix: route.prefix, meta: true}, true
			}
			if local && lead == raft.None {
				return route.typ, &apiResponse{Error: errClusterNotAvail()}, true
			}
			if !local {
				return "", nil, false
			}
			if h := r.newMetaHold(route.prefix, lead); h != nil && !(h.write && repeated) {
				return route.typ, h, true // jetstream_meta_hold.go
			}
			return "", nil, false
		}
		name := r.routeStream(route.prefix)
		if route.prefix == "STREAM.LEADER.STEPDOWN." { // every server gets it
			r.jsa.js.reviveHalted(r.jsa.acc.Name, name) // stream_halt_revive.go
		}
		mset := r.jsa.lookup(name)
		if mset != nil && mset.isLeader() {
			if !readOnly(route.prefix) && !mset.groupLeads() {
				// Demoted, not yet processed: the new leader answers. A
				// client connected here gets 10008 if no answer passes
				// and no leader is known by then (partitioned away from
				// the new leader, it would otherwise hear nothing).
				if local {
					return route.typ, &unavailableLater{prefix: route.prefix, account: r.jsa.acc.Name, stream: name}, true
				}
				return "", nil, false
			}
			if mset.replicated && answersAfterRead(route.prefix) {
				r.answerAfterRead(mset, route.typ, route.handler) // jetstream_api_read.go
				return route.typ, nil, true
			}
			if answersAside(route.prefix) {
				return route.typ, r.answerAside(route.typ, route.handler), true // jetstream_stepdown.go
			}
			return route.typ, route.handler(r), true
		}
		if mset != nil && !local && readOnly(route.prefix) && mset.answersUnavailable() {
			return route.typ, routeErr(route.prefix, errClusterNotAvail()), true
		}
		if jc.assignment(r.jsa.acc.Name, name) == nil {
			// Unknown stream: the meta leader says so.
			if jc.isMetaLeader() {
				return route.typ, routeErr(route.prefix, errStreamNotFound()), true
			}
			if local && !jc.metaLeaderKnown() {
				if jc.metaDeposed() { // jetstream_meta_wedge.go
					return r.unknownStreamDeposed(route.typ, route.prefix, name)
				}
				return route.typ, routeErr(route.prefix, errClusterNotAvail()), true
			}
			return "", nil, false
		}
		if local && jc.streamLeader(r.jsa.acc.Name, name) == "" {
			return route.typ, &unavailableLater{prefix: route.prefix, account: r.jsa.acc.Name, stream: name}, true
		}
		return "", nil, false
	}
	if local {
		return "error_response", &apiResponse{Error: errNotImplemented("this API in clustered mode")}, true
	}
	return "", nil, false
}

// routeErr is a stream call's error answer in the call's response shape
// (a pause answer carries paused and pause_until even with an error).
func routeErr(prefix string, e *ApiError) any {
	if prefix == "CONSUMER.PAUSE." {
		return &JSApiConsumerPauseResponse{apiResponse: apiResponse{Error: e}}
	}
	return &apiResponse{Error: e}
}

func matchesRoute(subject, prefix string) bool {
	if strings.HasSuffix(prefix, ".") {
		return strings.HasPrefix(subject, prefix)
	}
	return subject == prefix
}

var clusterRoutes = []struct {
	prefix  string
	typ     string
	meta    bool
	handler apiHandler
}{
	{"INFO", "account_info_response", true, (*apiRequest).clusterAccountInfo},
	{"STREAM.CREATE.", "stream_create_response", true, (*apiRequest).clusterStreamCreate},
	{"STREAM.UPDATE.", "stream_update_response", true, (*apiRequest).clusterStreamUpdate},
	{"STREAM.DELETE.", "stream_delete_response", true, (*apiRequest).clusterStreamDelete},
	{"STREAM.NAMES", "stream_names_response", true, (*apiRequest).clusterStreamNames},
	{"STREAM.LIST", "stream_list_response", true, (*apiRequest).clusterStreamList},
	{"STREAM.INFO.", "stream_info_response", false, (*apiRequest).streamInfo},
	{"STREAM.MSG.GET.", "stream_msg_get_response", false, (*apiRequest).streamMsgGet},
	{"STREAM.PURGE.", "stream_purge_response", false, (*apiRequest).clusterStreamPurge},
	{"STREAM.MSG.DELETE.", "stream_msg_delete_response", false, (*apiRequest).clusterStreamMsgDelete},
	{"STREAM.LEADER.STEPDOWN.", "stream_leader_stepdown_response", false, (*apiRequest).streamStepdown},
	{"STREAM.PEER.REMOVE.", "stream_remove_peer_response", true, (*apiRequest).streamPeerRemove},
	{"CONSUMER.CREATE.", consumerCreateResponseType, false, (*apiRequest).consumerCreate},
	{"CONSUMER.DURABLE.CREATE.", consumerCreateResponseType, false, (*apiRequest).consumerCreate},
	{"CONSUMER.INFO.", consumerInfoResponseType, false, (*apiRequest).consumerInfo},
	{"CONSUMER.DELETE.", consumerDeleteResponseType, false, (*apiRequest).consumerDelete},
	{"CONSUMER.NAMES.", consumerNamesResponseType, false, (*apiRequest).consumerNames},
	{"CONSUMER.LIST.", consumerListResponseType, false, (*apiRequest).consumerList},
	{"CONSUMER.LEADER.STEPDOWN.", "consumer_leader_stepdown_response", false, (*apiRequest).consumerStepdown},
	{"CONSUMER.PAUSE.", consumerPauseResponseType, false, (*apiRequest).consumerPause},
	{"CONSUMER.UNPIN.", consumerUnpinResponseType, false, (*apiRequest).consumerUnpin},
}

// routeStream is the stream a routed call names: the token after the
// prefix (a consumer call's next token is the consumer).
func (r *apiRequest) routeStream(prefix string) string {
	name := r.streamName(prefix)
	if strings.HasPrefix(prefix, "CONSUMER.") {
		name, _, _ = strings.Cut(name, ".")
	}
	return name
}

func (r *apiRequest) clusterAccountInfo() any {
	resp := r.accountInfo().(*accountInfoResponse)
	jc := r.jsa.js.cluster
	resp.Streams = jc.streamCount(r.jsa.acc.Name)
	// The limits count every replica of every stream: so does the usage
	// shown beside them (jetstream_usage.go).
	if r.jsa.acc.jsLimits != nil {
		resp.Memory = r.jsa.clusterUsage(jc, MemoryStorage)
		resp.Store = r.jsa.clusterUsage(jc, FileStorage)
	}
	return resp
}

func (r *apiRequest) clusterStreamCreate() any {
	name := r.streamName("STREAM.CREATE.")
	cfg, e := r.createConfig(name)
	if e != nil {
		return streamErr(e)
	}
	jc := r.jsa.js.cluster
	if old := jc.assignment(r.jsa.acc.Name, name); old != nil {
		if !sameConfig(&old.Config, &cfg) {
			return streamErr(errStreamNameExist())
		}
	}
	if e := r.overlapsOtherStreams(&cfg); e != nil {
		return streamErr(e)
	}
	if max := r.jsa.limits().MaxStreams; max > 0 && jc.streamCount(r.jsa.acc.Name) >= max {
		if jc.assignment(r.jsa.acc.Name, name) == nil {
			return streamErr(errMaxStreams())
		}
	}
	peers, perr := jc.placePeers(cfg.Replicas, cfg.Placement)
	if perr != nil {
		return streamErr(perr)
	}
	sa := &streamAssignment{Account: r.jsa.acc.Name, Config: cfg, Peers: peers, Created: r.jsa.js.srv.clock.Now().UTC()}
	jc.spreadFirstLeader(sa) // jetstream_first_leader.go
	return r.proposeMeta("add", sa)
}

// proposeMeta proposes a meta entry that the apply answers.
func (r *apiRequest) proposeMeta(op string, sa *streamAssignment) any {
	jc := r.jsa.js.cluster
	me := r.newMetaEntry(op, sa) // jetstream_meta_reqid.go
	jc.proposeMeta(me, func(e *ApiError) { r.respondLater(e) })
	return nil
}

// respondLater answers the request from another goroutine.
func (r *apiRequest) respondLater(e *ApiError) {
	b, _ := json.Marshal(&apiResponse{Type: apiTypePrefix + "error_response", Error: e})
	r.jsa.js.srv.deliver(nil, r.jsa.acc, r.reply, "", nil, b)
}

// respondMeta answers a meta call once its entry is applied. A create is
// answered once the stream has a leader (or after a bounded wait).
func (jc *jsCluster) respondMeta(me *metaEntry, sa *streamAssignment, e *ApiError) {
	s := jc.js.srv
	jsa := jc.js.account(sa.Account)
	if jsa == nil {
		return
	}
	if me.Op == "del" && e == nil {
		jc.awaitLeaderStopped(me, sa) // jetstream_delete_answer.go
	}
	var resp any
	switch {
	case e != nil && me.Op == "del":
		resp = &successResponse{apiResponse: apiResponse{Type: apiTypePrefix + "stream_delete_response", Error: e}}
	case e != nil:
		resp = streamErrTyped(e, "stream_create_response")
	case me.Op == "del":
		resp = &successResponse{apiResponse: apiResponse{Type: apiTypePrefix + "stream_delete_response"}, Success: true}
	case me.Op == "upd" && !me.Scale:
		return // the stream's leader answers once it applied it (applyLocal)
	default:
		jc.leaders.wait(s.clock, leaderKey(sa.Account, sa.Config.Name), s.clock.Now().Add(5*time.Second), s.done)
		si := jc.streamInfoFromAssignment(sa)
		typ := "stream_create_response"
		if me.Op == "upd" { // a scale
			typ = "stream_update_response"
			// The replicas take the new configuration from the stream's
			// log a moment later; the answer shows what was accepted.
			si.Config = sa.Config
		}
		resp = &streamInfoResponse{apiResponse: apiResponse{Type: apiTypePrefix + typ}, StreamInfo: si, DidCreate: me.Op == "add"}
	}
	b, _ := json.Marshal(resp)
	s.deliver(nil, jsa.acc, me.Reply, "", nil, b)
}

func streamErrTyped(e *ApiError, typ string) *streamInfoResponse {
	return &streamInfoResponse{apiResponse: apiResponse{Type: apiTypePrefix + typ, Error: e}}
}

// streamInfoFromAssignment describes a stream from the meta view, with the
// local replica's state when there is one.
func (jc *jsCluster) streamInfoFromAssignment(sa *streamAssignment) *StreamInfo {
	if jsa := jc.js.account(sa.Account); jsa != nil {
		if mset := jsa.lookup(sa.Config.Name); mset != nil {
			si, _ := mset.info("", false, 0)
			return si
		}
	}
	return &StreamInfo{Config: sa.Config, Created: sa.Created, TimeStamp: jc.js.srv.clock.Now().UTC(),
		State: StreamState{FirstSeq: 1}, Cluster: jc.clusterInfo(sa)}
}

func (jc *jsCluster) clusterInfo(sa *streamAssignment) *ClusterInfo {
	ci := &ClusterInfo{Name: jc.js.srv.ClusterName(), Leader: jc.streamLeader(sa.Account, sa.Config.Name)}
	for _, p := range sa.Peers {
		if p != ci.Leader {
			ci.Replicas = append(ci.Replicas, &PeerInfo{Name: p})
		}
	}
	return ci
}

func (r *apiRequest) clusterStreamUpdate() any {
	name := r.streamName("STREAM.UPDATE.")
	cfg, e := r.requestConfig(name)
	if e != nil {
		return streamErr(e)
	}
	jc := r.jsa.js.cluster
	old := jc.assignment(r.jsa.acc.Name, name)
	if old == nil {
		return streamErr(errStreamNotFound())
	}
	cfg.normalize()
	if e := cfg.check(); e != nil {
		return streamErr(e)
	}
	if jc.allPeersOffline(old.Peers) {
		return streamErr(errStreamOffline())
	}
	if old.Config.Replicas != cfg.Replicas {
		return r.scaleStream(old, cfg)
	}
	if e := checkUpdate(&old.Config, &cfg); e != nil {
		return streamErr(e)
	}
	if e := r.overlapsOtherStreams(&cfg); e != nil {
		return streamErr(e)
	}
	sa := *old
	sa.Config = cfg
	return r.proposeMeta("upd", &sa)
}

// overlapsOtherStreams is 10065 when cfg's subjects overlap those of
// another stream of the account (as the meta view knows them), for a
// create or an update of cfg.Name.
func (r *apiRequest) overlapsOtherStreams(cfg *StreamConfig) *ApiError {
	return r.jsa.js.cluster.overlapsOtherStreams(r.jsa.acc.Name, cfg.Name, cfg.Subjects)
}

// scaleStream changes a stream's replica count (1 to 5; in a cluster an
// R1 stream has a raft group of one): one meta entry carries the new
// configuration and placement. Added servers start empty replicas that
// join and catch up, removed ones drop theirs, and the stream's leader
// brings the raft membership in line one change at a time.
func (r *apiRequest) scaleStream(old *streamAssignment, cfg StreamConfig) any {
	same := cfg
	same.Replicas = old.Config.Replicas
	if e := checkUpdate(&old.Config, &same); e != nil {
		return streamErr(e)
	}
	if e := r.overlapsOtherStreams(&cfg); e != nil {
		return streamErr(e)
	}
	jc := r.jsa.js.cluster
	if !jc.scalingSupported() {
		return streamErr(errClusterNotAvail())
	}
	peers, e := jc.scaledPeers(old, cfg.Replicas)
	if e != nil {
		return streamErr(e)
	}
	sa := *old
	sa.Config, sa.Peers = cfg, peers
	me := r.newMetaEntry("upd", &sa)
	me.Scale, me.From = true, slices.Clone(old.Peers)
	jc.proposeMeta(me, func(e *ApiError) { r.respondLater(e) })
	return nil
}

// scaledPeers is old's placement grown or shrunk to n servers: new ones
// picked as for a new stream, and the stream's leader kept when shrinking.
func (jc *jsCluster) scaledPeers(old *streamAssignment, n int) ([]string, *ApiError) {
	peers := slices.Clone(old.Peers)
	if n > len(peers) {
		cands := jc.candidates(old.Config.Placement, append(slices.Clone(peers), old.Removed...))
		if len(cands) < n-len(peers) {
			return nil, errInsufficientResources()
		}
		return append(peers, cands[:n-len(peers)]...), nil
	}
	// Keep the leader, then servers connected now.
	leader := jc.streamLeader(old.Account, old.Config.Name)
	up := func(p string) bool { return jc.routeProtoOf(p) > 0 }
	slices.SortStableFunc(peers, func(a, b string) int {
		if c := cmpBool(b == leader, a == leader); c != 0 {
			return c
		}
		return cmpBool(up(b), up(a))
	})
	return peers[:n], nil
}

// scalingSupported reports whether every server of the meta group is
// connected and knows scale entries (route protocol 3): an older one would
// apply the configuration without the placement.
func (jc *jsCluster) scalingSupported() bool {
	jc.mu.Lock()
	peers := slices.Clone(jc.peers)
	jc.mu.Unlock()
	for _, p := range peers {
		if jc.routeProtoOf(p) < 3 {
			return false
		}
	}
	return true
}

// routeProtoOf is the route protocol server name speaks: routeProto for
// this server, 0 for one not connected (or "").
func (jc *jsCluster) routeProtoOf(name string) int {
	s := jc.js.srv
	if name == s.Name() {
		return routeProto
	}
	for _, r := range s.routeList() {
		if r.remote.Name == name {
			return r.remote.Proto
		}
	}
	return 0
}

// routeProtoSeen is the route protocol the peer name advertised last,
// also while its route is down (0: never connected since this start).
func (s *Server) routeProtoSeen(name string) int {
	if name == s.Name() {
		return routeProto
	}
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	return s.routes.protoSeen[name]
}

// routeProtosSeen is routeProtoSeen for every peer heard since this start.
func (s *Server) routeProtosSeen() map[string]int {
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	return maps.Clone(s.routes.protoSeen)
}

func (r *apiRequest) clusterStreamDelete() any {
	name := r.streamName("STREAM.DELETE.")
	sa := r.jsa.js.cluster.assignment(r.jsa.acc.Name, name)
	if sa == nil {
		return &successResponse{apiResponse: apiResponse{Error: errStreamNotFound()}}
	}
	return r.proposeMeta("del", sa)
}

func (r *apiRequest) clusterStreamNames() any {
	var req streamListRequest
	if e := r.unmarshal(&req); e != nil {
		return &streamNamesResponse{apiResponse: apiResponse{Error: e}}
	}
	resp := &streamNamesResponse{}
	for _, sa := range r.jsa.js.cluster.assignments(r.jsa.acc.Name) {
		if req.Subject == "" || anyCollides(sa.Config.Subjects, req.Subject) {
			resp.Streams = append(resp.Streams, sa.Config.Name)
		}
	}
	// As nats-server: the offset is clamped to [0, total], and a page
	// holds at most jsNamesLimit names.
	offset := min(max(req.Offset, 0), len(resp.Streams))
	resp.apiPaged = apiPaged{Total: len(resp.Streams), Offset: offset, Limit: jsNamesLimit}
	resp.Streams = resp.Streams[offset:]
	resp.Streams = resp.Streams[:min(len(resp.Streams), jsNamesLimit)]
	if len(resp.Streams) == 0 {
		resp.Streams = nil
	}
	return resp
}

func (r *apiRequest) clusterStreamPurge() any {
	mset := r.jsa.lookup(r.streamName("STREAM.PURGE."))
	if mset == nil { // deleted since the dispatcher found it
		return &purgeResponse{apiResponse: apiResponse{Error: errStreamNotFound()}}
	}
	var req purgeRequest
	if e := r.unmarshal(&req); e != nil {
		return &purgeResponse{apiResponse: apiResponse{Error: e}}
	}
	if req.Sequence > 0 && req.Keep > 0 {
		return &purgeResponse{apiResponse: apiResponse{Error: errBadRequest()}}
	}
	mset.propose(&streamEntry{op: streamOpPurge, origin: r.jsa.js.srv.Name(), reply: r.reply, purge: req})
	return nil
}

func (r *apiRequest) clusterStreamMsgDelete() any {
	mset := r.jsa.lookup(r.streamName("STREAM.MSG.DELETE."))
	if mset == nil { // deleted since the dispatcher found it
		return &successResponse{apiResponse: apiResponse{Error: errStreamNotFound()}}
	}
	var req msgDeleteRequest
	if e := r.unmarshal(&req); e != nil {
		return &successResponse{apiResponse: apiResponse{Error: e}}
	}
	mset.propose(&streamEntry{op: streamOpDelete, origin: r.jsa.js.srv.Name(), reply: r.reply, seq: req.Seq, erase: !req.NoErase})
	return nil
}

// streamStepdown hands the stream's leadership to another replica.
func (r *apiRequest) streamStepdown() any {
	mset := r.jsa.lookup(r.streamName("STREAM.LEADER.STEPDOWN."))
	if mset == nil { // deleted since the dispatcher found it
		return &successResponse{apiResponse: apiResponse{Error: errStreamNotFound()}}
	}
	g := mset.groupNow()
	if g == nil {
		return &successResponse{apiResponse: apiResponse{Error: errNotImplemented("stepdown of a stream with one replica")}}
	}
	return stepdownAnswer(transferLeadership(g))
}
