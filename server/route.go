package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"net"
	"net/url"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Tern's route protocol (server to server, cluster port). It is Tern's
// own, line-based like the client protocol:
//
//	INFO <json>                          identity, cluster, known peers (gossip)
//	RS+ <account> <subject> [<queue>]    interest appeared on the sender
//	RS- <account> <subject> [<queue>]    interest went away
//	RMSG <account> <subject> <reply|-> <mode 0-3> <queues|-> <hdr> <size>
//	                                     a message for the receiver's local
//	                                     subscribers: plain ones in modes 1
//	                                     and 2, one member of each listed
//	                                     queue group; 2 and 3 are re-routed
//	                                     copies (route_deliver.go)
//	RAFT <size>                          a raft message (raft.go), up to 1 GiB
//	RAFTF <id> <total> <offset> <size>   a piece of a raft message larger than
//	                                     raftFragSize (raft_frag.go); proto >= 2
//	RAFTB <size>                         raft messages of several groups from
//	                                     one peer to another (raft_batch.go);
//	                                     proto >= 11
//	PING / PONG
//
// routeProto is its version. Servers refuse a peer with a different major
// version (routeProto/100) and ignore operations they do not know, so a
// rolling upgrade can add operations without breaking older peers; an
// operation with a payload goes only to peers whose version knows it.
// Version 3 adds no operation: it tells that the server applies meta
// entries that change a stream's replica count (scaling needs every
// server to). Version 4 adds none either: the server answers stream info
// questions on $JSC.SI (jetstream_cluster_list.go). Version 5 adds none:
// the server applies OpAcks consumer entries (batched acks,
// consumer_cluster_acks.go), which a leader proposes only when every
// replica of the stream speaks 5. Version 6 adds none: the server knows
// quiescent raft groups (the Quiesce mark of a heartbeat, raft_live.go)
// and PINGs its peers every raft heartbeat period for node liveness; a
// group quiesces only when every live member speaks 6. Version 7 adds
// delivery mode 3 (a queue group's copy re-routed once, route_deliver.go),
// sent only to peers that speak 7, and stream leaders subscribe their
// subjects as a queue group (streamIngestQueue), so a routing server sends
// a publish to one of them even while it knows two; servers of 7 no longer
// send mode 2. It also refreshes its stream leaderships with one leader
// list ($JSC.LEADERS, jetstream_leader_list.go) instead of one
// announcement per stream every second, and keeps the leaderships of peers
// that speak 7 without refreshes; while any peer is older, it refreshes
// per stream. Version 8 adds none: the server names the raft group of a
// stream of an account with '-' S<length>-<account>-<stream>
// (jetstream_group_name.go); it neither sends to nor takes from an older
// peer a raft message under an old-form name that two streams of the
// cluster share (routeProtoGroupNames). Version 9 adds none: the server
// skips a meta entry whose request id it applied already and runs copies
// of held stream writes sent on $JSC.MCOPY (routeProtoMetaIDs,
// jetstream_meta_reqid.go). Version 10 adds none: the server keeps its
// clients (and imports) off the cluster-only subject $JSC.MCOPY, so a
// copy routed from it is its own; a copy routed from an older peer is
// dropped (routeProtoClusterOnly, cluster_only.go). Version 11 adds
// RAFTB: the raft messages queued for a peer between two writes of its
// route leave in one frame (routeProtoRaftBatch, raft_batch.go); a peer
// before 11 gets RAFT frames. The server also keeps its clients off
// $JSC.CATCHUP (jetstream_balance_hold.go), so a server of 11 or later
// speaks there only for itself (routeProtoCatchUp).
const routeProto = 11

// routeProtoCatchUp is the first version whose word on $JSC.CATCHUP is
// its own (an older server relays its clients' publishes there).
const routeProtoCatchUp = 11

// routeProtoClusterOnly is the first version that keeps clients off the
// cluster-only subjects.
const routeProtoClusterOnly = 10

// routeProtoGroupNames is the first version with unambiguous group names.
const routeProtoGroupNames = 8

// routeInfo is what a server tells a peer about itself.
type routeInfo struct {
	ID        string   `json:"server_id"`
	Name      string   `json:"server_name"`
	Cluster   string   `json:"cluster"`
	Version   string   `json:"version"`
	Proto     int      `json:"tern_route_proto"`
	RouteURL  string   `json:"route_url"`
	Peers     []string `json:"peers,omitempty"` // route URLs of connected peers
	ClientURL string   `json:"client_url,omitempty"`
	Tags      []string `json:"tags,omitempty"` // server_tags, for placement
	// AuthRequired tells a dialling peer to send CONNECT (route_auth.go).
	AuthRequired bool `json:"auth_required,omitempty"`
	// MetaState: the server holds meta group state (Server.metaHeld); a
	// peer that starts without a meta log learns from it that it lost its
	// storage (jetstream_meta_wiped.go).
	MetaState bool `json:"tern_meta_state,omitempty"`
}

// route is a connection to a peer server; it reuses client's output path.
type route struct {
	c         *client
	remote    routeInfo
	solicited bool
	url       *url.URL // set when we dial it
	br        *bufio.Reader
	frags     raftFrags    // raft messages being reassembled (read loop only)
	rid       uint64       // registration order (routes.rid when registered)
	heard     atomic.Int64 // wall clock (ns) of the last line read (raft_live.go)
	busy      atomic.Bool  // the reader works on what it read, not waiting for more (raft_live_lag.go)
	// raftOut counts the raft frames and records queued on this route
	// (/routez raft_frames_out, raft_records_out: raft_batch.go).
	raftOut routeRaftCounts
	// subs are the peer's interests inserted in the accounts' sublists,
	// by interestKey (routeSub, on the read loop only).
	subs map[string][]*subscription
}

type routeTable struct {
	mu       lockorder.Mutex[lockorder.Routes]
	byID     map[string]*route
	interest map[string]int // "acc subject queue" → local subscriptions
	dialing  map[string]bool
	// protoSeen is the route protocol each peer (by name) advertised
	// last, kept after its route goes (jetstream_meta_reqid.go).
	protoSeen map[string]int
	removed   chan struct{} // closed and replaced whenever a route is removed
	attempts  atomic.Int64  // route handshakes begun, both directions
	listener  net.Listener
	rid       uint64
	// byPeer maps raft peer ids to routes, for raft's sends: an immutable
	// map replaced (under mu) whenever byID changes, read without a lock.
	byPeer atomic.Pointer[map[raft.ID]*route]
}

// initRouteTable readies the route table. Start calls it before any
// subscription exists (the system account's request handlers come first),
// so that interest counts include every subscription and a peer that
// connects later learns all of it.
func (s *Server) initRouteTable() {
	s.routes.byID = map[string]*route{}
	s.routes.interest = map[string]int{}
	s.routes.dialing = map[string]bool{}
	s.routes.protoSeen = map[string]int{}
	s.routes.removed = make(chan struct{})
}

// startCluster listens on the cluster port and dials the configured routes.
func (s *Server) startCluster() error {
	o := s.getOpts()
	host := o.Cluster.Host
	if host == "" {
		host = o.Host
	}
	port := o.Cluster.Port
	if port == RANDOM_PORT {
		port = 0
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	s.routes.mu.Lock()
	s.routes.listener = l
	s.routes.mu.Unlock()
	s.Noticef("Cluster name is %s", o.Cluster.Name)
	s.Noticef("Listening for route connections on %s", l.Addr())
	s.wg.Add(1)
	go s.acceptRoutes(l)
	for _, u := range o.Routes {
		s.dialRoute(u, true)
	}
	return nil
}

// ClusterAddr returns the route listener address, nil without a cluster.
func (s *Server) ClusterAddr() *net.TCPAddr {
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	if s.routes.listener == nil {
		return nil
	}
	a, _ := s.routes.listener.Addr().(*net.TCPAddr)
	return a
}

func (s *Server) routeURL() string {
	o := s.getOpts()
	if o.Cluster.Advertise != "" {
		return "nats-route://" + o.Cluster.Advertise
	}
	a := s.ClusterAddr()
	if a == nil {
		return ""
	}
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "nats-route://" + net.JoinHostPort(host, strconv.Itoa(a.Port))
}

func (s *Server) acceptRoutes(l net.Listener) {
	defer s.wg.Done()
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.shutdown.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if nc, err := s.routeTLS(nc, false, nil); err == nil {
				s.runRoute(nc, false, nil)
			}
		}()
	}
}

// dialRoute keeps a route to u: it dials with backoff until connected,
// and again whenever the route drops, until shutdown. Configured routes
// retry forever; discovered ones give up after connect_retries failures.
func (s *Server) dialRoute(u *url.URL, configured bool) {
	key := u.Host
	s.routes.mu.Lock()
	if s.routes.dialing[key] {
		s.routes.mu.Unlock()
		return
	}
	if !configured && len(s.routes.dialing) >= maxRouteDials {
		s.routes.mu.Unlock()
		s.Warnf("Not dialling gossiped route %s: already dialling %d routes", u.Host, maxRouteDials)
		return
	}
	s.routes.dialing[key] = true
	s.routes.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer func() {
			s.routes.mu.Lock()
			delete(s.routes.dialing, key)
			s.routes.mu.Unlock()
		}()
		s.dialLoop(u, configured)
	}()
}

func (s *Server) dialLoop(u *url.URL, configured bool) {
	delay, failures := 50*time.Millisecond, 0
	retries := s.getOpts().Cluster.ConnectRetries
	for !s.shutdown.Load() {
		nc, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
		if err == nil {
			nc, err = s.routeTLS(nc, true, u)
		}
		if err == nil {
			start := time.Now() // network state, not JetStream time (s.clock may be a manual clock in tests)
			switch id, err := s.runRoute(nc, true, u); {
			case err == errSelfRoute:
				return
			case err == errDuplicateRoute:
				// The peer's own connection serves the pair: dial again
				// only once it is gone, not in a loop while it lives.
				s.awaitRouteGone(id)
				failures, delay = 0, 50*time.Millisecond
			case time.Since(start) >= routeStableAfter:
				failures, delay = 0, 50*time.Millisecond
			default:
				// Accepted, then dropped at once: backed off like a
				// refused dial (and counted for a discovered route).
				failures++
			}
		} else {
			failures++
		}
		if !configured && failures > max(retries, 3) {
			return
		}
		if !s.sleepOrShutdown(delay) {
			delay = min(delay*2, 2*time.Second)
			continue
		}
		return
	}
}

// routeStableAfter is how long a dialled route must last for the next
// dial, once it drops, to start again from the shortest delay.
const routeStableAfter = time.Second

// maxRouteDials bounds the routes a server dials at once, so that peers'
// gossip cannot make it open connections without limit.
const maxRouteDials = 256

var (
	errSelfRoute      = errors.New("route to self")
	errDuplicateRoute = errors.New("duplicate route")
)

// awaitRouteGone returns once no route to the server id is registered,
// or the server is shutting down. It wakes only when a route is removed
// (an idle server's dial loops used to look every second).
func (s *Server) awaitRouteGone(id string) {
	for !s.shutdown.Load() {
		s.routes.mu.Lock()
		_, ok := s.routes.byID[id]
		removed := s.routes.removed
		s.routes.mu.Unlock()
		if !ok {
			return
		}
		select {
		case <-removed:
		case <-s.quit:
			return
		}
	}
}

// runRoute performs the handshake and serves the route until it closes;
// it returns the remote server's id and why the handshake failed, if it did.
func (s *Server) runRoute(nc net.Conn, solicited bool, u *url.URL) (string, error) {
	r := &route{solicited: solicited, url: u, br: bufio.NewReaderSize(nc, 64*1024)}
	r.c = newClient(s, nc, s.cidGen.Add(1))
	r.c.route = r
	s.routes.attempts.Add(1)
	if err := s.routeHandshake(r); err != nil {
		nc.Close()
		if err != errSelfRoute && err != errDuplicateRoute {
			s.Debugf("Route handshake with %s failed: %v", nc.RemoteAddr(), err)
		}
		return r.remote.ID, err
	}
	if h := s.routeHooks.Load(); h != nil && h.peerProto != nil {
		h.peerProto(r.remote.Name, r.remote.Proto)
	}
	s.wg.Add(2)
	go r.c.writeLoop()
	go func() { defer s.wg.Done(); s.pingRoute(r) }()
	s.Noticef("Route connection created to %s (%s)", r.remote.Name, nc.RemoteAddr())
	s.sendAllInterest(r)
	s.gossip()
	err := s.routeReadLoop(r)
	s.removeRoute(r)
	s.Noticef("Route connection to %s closed: %v", r.remote.Name, err)
	return r.remote.ID, nil
}

func (s *Server) myRouteInfo() routeInfo {
	o := s.getOpts()
	ri := routeInfo{ID: s.id, Name: s.name, Cluster: o.Cluster.Name, Version: VERSION, Proto: routeProto,
		RouteURL: s.routeURL(), ClientURL: s.ClientURL(), Tags: o.Tags, MetaState: s.metaHeld.Load()}
	if o.routeProto != 0 {
		ri.Proto = o.routeProto
	}
	s.routes.mu.Lock()
	for _, r := range s.routes.byID {
		ri.Peers = append(ri.Peers, r.remote.RouteURL)
	}
	s.routes.mu.Unlock()
	return ri
}

func (s *Server) routeHandshake(r *route) error {
	nc := r.c.nc
	// The handshake INFO names no peers: the peer is not authenticated
	// yet, and peers are gossiped once the route is registered.
	ri := s.myRouteInfo()
	ri.Peers, ri.AuthRequired = nil, routeAuthRequired(s.getOpts())
	b, _ := json.Marshal(ri)
	hello := append(append([]byte("INFO "), b...), "\r\n"...)
	if r.solicited {
		hello = append(hello, s.routeConnectLine(r)...)
	}
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write(hello); err != nil {
		return err
	}
	line, err := r.br.ReadSlice('\n')
	if err != nil {
		return err
	}
	_ = nc.SetDeadline(time.Time{})
	if len(line) < 6 || string(line[:5]) != "INFO " {
		return fmt.Errorf("expected INFO, got %q", line)
	}
	if err := json.Unmarshal(line[5:], &r.remote); err != nil {
		return err
	}
	if !r.solicited && routeAuthRequired(s.getOpts()) {
		if err := s.authenticateRoute(r); err != nil {
			return err
		}
	}
	return s.registerRoute(r)
}

// registerRoute checks the peer and adds the route; of two routes between
// the same pair of servers, the one dialled by the server with the smaller
// id wins, so both sides keep the same connection.
func (s *Server) registerRoute(r *route) error {
	o := s.getOpts()
	switch {
	case r.remote.ID == s.id:
		return errSelfRoute
	case r.remote.Proto/100 != routeProto/100:
		return fmt.Errorf("route protocol %d not supported", r.remote.Proto)
	case s.routeBlocked(r.remote.Name):
		return errors.New("route blocked (partition test)")
	case o.Cluster.Name != "" && r.remote.Cluster != o.Cluster.Name:
		s.Errorf("Rejecting route from %q: cluster name %q does not match %q", r.remote.Name, r.remote.Cluster, o.Cluster.Name)
		return fmt.Errorf("cluster name conflict")
	}
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	if s.shutdown.Load() {
		return errors.New("server shutting down")
	}
	if old, ok := s.routes.byID[r.remote.ID]; ok {
		keepNew := r.solicited == (s.id < r.remote.ID)
		if !keepNew {
			return errDuplicateRoute
		}
		old.c.closeNow(DuplicateRoute)
		if r.remote.ClientURL == "" {
			r.remote.ClientURL = old.remote.ClientURL
		}
	}
	s.routes.protoSeen[r.remote.Name] = r.remote.Proto
	s.routes.rid++
	r.rid = s.routes.rid
	r.heard.Store(time.Now().UnixNano())
	s.routes.byID[r.remote.ID] = r
	s.publishPeers()
	return nil
}

// routeBlocked is a fault-injection seam for partition tests: routes to
// the named servers are refused (see partitionFrom in the tests).
func (s *Server) routeBlocked(name string) bool {
	b := s.blockedRoutes.Load()
	return b != nil && (*b)[name]
}

func (s *Server) removeRoute(r *route) {
	r.c.closeNow(RouteRemoved)
	s.routes.mu.Lock()
	registered := s.routes.byID[r.remote.ID] == r
	if registered {
		delete(s.routes.byID, r.remote.ID)
		s.publishPeers()
		close(s.routes.removed)
		s.routes.removed = make(chan struct{})
	}
	s.routes.mu.Unlock()
	if registered {
		s.raftPeersChanged() // quiet groups hear of it now, on every survivor alike
	}
	// The layer above hears of a server gone only when its last route goes
	// (not when a losing duplicate route or a stale one from before a
	// restart does).
	if h := s.routeHooks.Load(); registered && h != nil && s.routeFor(r.remote.ID) == nil {
		h.serverGone(r.remote.Name)
	}
	for _, acc := range s.accs.all() {
		for _, e := range acc.sl.All() {
			if e.Value.route == r.c {
				_ = acc.sl.Remove(e.Subject, e.Queue, e.Value)
				acc.deliverInterestChanged(e.Subject)
			}
		}
	}
	<-r.c.out.done
}

// gossip tells every peer about every other one.
func (s *Server) gossip() {
	b, _ := json.Marshal(s.myRouteInfo())
	line := append(append([]byte("INFO "), b...), "\r\n"...)
	for _, r := range s.routeList() {
		r.c.queueProto(line)
	}
}

// publishPeers rebuilds the raft peer → route map (routes.mu held). Of
// two routes to servers of the same name (one from before the peer
// restarted), the one registered last wins.
func (s *Server) publishPeers() {
	m := make(map[raft.ID]*route, len(s.routes.byID))
	for _, r := range s.routes.byID {
		id := raftID(r.remote.Name)
		s.raft.elections.names.Store(id, r.remote.Name) // a dead peer keeps its name (raft_campaigns.go)
		if cur := m[id]; cur == nil || cur.rid < r.rid {
			m[id] = r
		}
	}
	s.routes.byPeer.Store(&m)
}

// routeForPeer returns the route to the server that is raft peer id,
// without a lock or an allocation (raft calls it for every message).
func (s *Server) routeForPeer(id raft.ID) *route {
	if m := s.routes.byPeer.Load(); m != nil {
		return (*m)[id]
	}
	return nil
}

func (s *Server) routeList() []*route {
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	out := make([]*route, 0, len(s.routes.byID))
	for _, r := range s.routes.byID {
		out = append(out, r)
	}
	return out
}

// queueProto queues a protocol line for the connection and wakes its writer.
func (c *client) queueProto(b []byte) {
	c.mu.Lock()
	if !c.closing {
		c.out.write(b)
	}
	c.mu.Unlock()
	c.out.signal()
}

// routeFor returns the route to the server with that id, if connected.
func (s *Server) routeFor(id string) *route {
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	return s.routes.byID[id]
}

// NumRoutes returns the number of connected routes.
func (s *Server) NumRoutes() int {
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	return len(s.routes.byID)
}

func (s *Server) stopCluster() {
	s.routes.mu.Lock()
	l := s.routes.listener
	routes := make([]*route, 0, len(s.routes.byID))
	for _, r := range s.routes.byID {
		routes = append(routes, r)
	}
	s.routes.mu.Unlock()
	if l != nil {
		l.Close()
	}
	for _, r := range routes {
		r.c.closeNow(ServerShutdown)
	}
}
