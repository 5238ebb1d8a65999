package server

import (
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Node liveness for quiescent raft groups (internal/raft/quiesce.go). An
// idle group stops ticking and heartbeating; whether the servers of its
// members are alive is then known once per pair of servers, not per
// group: every raftLivePingEvery the raft clock PINGs each route, and a
// peer is live while its route is up and anything came from it within
// raftLiveTimeout (its PONGs when idle; when busy its PONGs queue behind
// its raft traffic, which shows it alive as well: route_proto.go), not
// counting this server's own lag meanwhile (raft_live_lag.go).
// When the view changes (a route went or came, pings stopped or resumed,
// a peer reconnected), every group is told (Node.LivenessChanged): quiet
// followers whose leader's server died elect, quiet leaders reach a peer
// that came back.

// routeProtoQuiesce is the route protocol of servers that know the
// Quiesce mark of raft heartbeats (a leader goes quiet only when every
// live member speaks it).
const routeProtoQuiesce = 6

// raftLiveTimeout is how long a peer may stay silent before it is
// deemed down: two election timeouts at most (raftTick × 20), so that a
// loaded machine's late PONG does not wake every group.
var raftLiveTimeout = 20 * raftTick

// raftLiveness is one view of the peers' health, replaced whole.
type raftLiveness map[raft.ID]raft.PeerHealth

// raftPeerHealth is Config.PeerHealth for this server's groups.
func (s *Server) raftPeerHealth(id raft.ID) raft.PeerHealth {
	if v := s.raftLive.Load(); v != nil {
		return (*v)[id]
	}
	return raft.PeerHealth{}
}

// raftQuiesces reports whether this server's groups may quiesce: a test
// that makes it look older (Options.routeProto) turns it off. It is read
// on every tick of the raft clock, so NewServer decides it once: the
// route protocol a server speaks is not a config file option and a
// reload keeps it (ReloadOptions).
func (s *Server) raftQuiesces() bool { return s.quiesces }

var pingLine = []byte("PING\r\n")

// checkLiveness runs on every tick of the raft clock: it pings the
// routes (ping: raftLivePingEvery passed) and, when the view changed,
// publishes it and wakes every group to look at it. Route reads stamp
// route.heard with the wall clock, so this compares with it too. late
// is how late this tick came (raft_live_lag.go).
func (s *Server) checkLiveness(ping bool, late int64) {
	now := time.Now().UnixNano()
	lag := &s.raftClock.lag
	lag.note(now, late)
	var routes map[raft.ID]*route
	if m := s.routes.byPeer.Load(); m != nil {
		routes = *m
	}
	old := s.raftLive.Load()
	changed := old == nil || len(*old) != len(routes)
	// Every peer is pinged, older ones too (they answer PONG like any
	// server): a member that does not know quiescence must look live, or
	// a leader would quiesce without it. A server made to look older
	// (Options.routeProto) does not ping, as an older one would not.
	ping = ping && s.raftQuiesces()
	for id, r := range routes {
		if ping {
			r.c.queueProto(pingLine)
		}
		if !changed {
			changed = (*old)[id] != peerHealthOf(r, now, lag)
		}
	}
	if !changed {
		return
	}
	v := make(raftLiveness, len(routes))
	for id, r := range routes {
		v[id] = peerHealthOf(r, now, lag)
		if old != nil && (*old)[id].Live && !v[id].Live {
			heard := r.heard.Load()
			s.notePeerDown(r.remote.Name, now-heard)
			s.Noticef("Raft liveness: %s deemed down after %v silent (raft clock %v late meanwhile)",
				r.remote.Name, time.Duration(now-heard), time.Duration(lag.since(heard)))
		}
	}
	s.raftLive.Store(&v)
	s.wakeRaftGroups()
	s.livenessChanged() // held meta requests (jetstream_meta_hold_wake.go)
}

// peerHealthOf is the health of the server at the end of route r: live
// while it was silent no longer than raftLiveTimeout, not counting this
// server's own lag meanwhile, or while its reader chews what it sent
// (raft_live_lag.go).
func peerHealthOf(r *route, now int64, lag *raftLag) raft.PeerHealth {
	return raft.PeerHealth{
		Live:     peerSpoke(r, now, lag),
		Quiesces: r.remote.Proto >= routeProtoQuiesce,
		Epoch:    r.rid,
	}
}

// wakeRaftGroups tells every group run by its own goroutine that the
// liveness view changed (a host tells its groups itself).
func (s *Server) wakeRaftGroups() {
	s.raft.mu.Lock()
	defer s.raft.mu.Unlock()
	for _, g := range s.raft.groups {
		if !g.host {
			g.nudge()
		}
	}
}

// nudge makes the group look at the liveness view (never blocks: one
// pending nudge is enough).
func (g *raftGroup) nudge() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// onLiveness hands the node the new liveness view.
func (g *raftGroup) onLiveness() { g.drv.Node.LivenessChanged() }

// releaseFiles closes the log's files as the group falls asleep (asleep
// made its log durable): thousands of idle streams would otherwise hold a
// descriptor each, and a server with 10,000 of them ran out (EMFILE) when
// they were published to. The next write or read opens the file again.
func (g *raftGroup) releaseFiles() {
	if l, ok := g.log.(*walLog); ok {
		l.w.Release()
	}
}

// asleep reports whether the group has nothing to do until something
// wakes it: its node is quiescent and no duty of its own needs ticks
// (an early campaign, reads under way, unsynced log writes).
func (g *raftGroup) asleep() bool {
	if !g.drv.Node.Quiescent() || g.eager > 0 || g.rd.held > 0 || g.snapshotting || g.drv.SyncPending() {
		return false
	}
	if d, ok := g.log.(interface{ syncIdle() error }); ok {
		if err := d.syncIdle(); err != nil {
			return false // the next tick's periodic sync reports it
		}
	}
	return true
}

// raftGroupsAsleep counts the server's raft groups and those asleep
// (monitoring: /jsz).
func (s *Server) raftGroupsAsleep() (groups, asleep int) {
	s.raft.mu.Lock()
	defer s.raft.mu.Unlock()
	for _, g := range s.raft.groups {
		groups++
		if g.sleeping.Load() {
			asleep++
		}
	}
	return groups, asleep
}
