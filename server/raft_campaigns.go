package server

import (
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// raftElectionCounts tells an election storm's cause (issue 20;
// /jsz?raft=true raft_campaigns, raft_peers_down, raft_clock_late_max_ms):
// why this server's followers campaigned, by reason and by the server of
// the leader they knew (internal/raft campaign_reason.go); how often
// node liveness deemed each peer down, and the longest silence it saw
// then; how late the raft clock's ticks came at the most (this server's
// own lag: a starved process reads its routes late as well).
type raftElectionCounts struct {
	campaigns sync.Map // campaignKey → *atomic.Uint64
	downs     sync.Map // peer name → *atomic.Uint64
	names     sync.Map // raft.ID → server name of every peer routed to (publishPeers)
	// silenceMax is the longest silence (ns) of a peer deemed down,
	// lateMax the latest tick (ns past its due time).
	silenceMax, lateMax atomic.Int64
	// deposed counts the leaderships this server deposed as their group
	// wedged, resigned those its groups resigned once back (raft_wedge.go).
	deposed, resigned atomic.Uint64
	// checkQuorum counts this server's leaders' check-quorum step-downs
	// by raft.CheckQuorumOutcome (/jsz?raft=true raft_check_quorum).
	checkQuorum [3]atomic.Uint64
}

type campaignKey struct {
	reason raft.CampaignReason
	lead   raft.ID
}

func countIn(m *sync.Map, k any) {
	v, ok := m.Load(k)
	if !ok {
		v, _ = m.LoadOrStore(k, new(atomic.Uint64))
	}
	v.(*atomic.Uint64).Add(1)
}

func storeMax(a *atomic.Int64, v int64) {
	for old := a.Load(); v > old && !a.CompareAndSwap(old, v); old = a.Load() {
	}
}

// noteCampaign is Config.OnCampaign.
func (s *Server) noteCampaign(reason raft.CampaignReason, lead raft.ID) {
	countIn(&s.raft.elections.campaigns, campaignKey{reason, lead})
}

// noteCheckQuorum is Config.OnCheckQuorum.
func (s *Server) noteCheckQuorum(c raft.CheckQuorumOutcome) {
	if int(c) < len(s.raft.elections.checkQuorum) {
		s.raft.elections.checkQuorum[c].Add(1)
	}
}

// checkQuorumByName is the check-quorum counts by outcome (none: nil).
func (s *Server) checkQuorumByName() map[string]uint64 {
	var out map[string]uint64
	for i := range s.raft.elections.checkQuorum {
		if n := s.raft.elections.checkQuorum[i].Load(); n > 0 {
			if out == nil {
				out = map[string]uint64{}
			}
			out[raft.CheckQuorumOutcome(i).String()] = n
		}
	}
	return out
}

// notePeerDown counts liveness deeming peer down after silence ns.
func (s *Server) notePeerDown(peer string, silence int64) {
	countIn(&s.raft.elections.downs, peer)
	storeMax(&s.raft.elections.silenceMax, silence)
}

// campaignsByName is the campaign counts as "reason" (all leaders) and
// "reason@server" (leader's server, by name where a route to it is known).
func (s *Server) campaignsByName() map[string]uint64 {
	names := map[raft.ID]string{raftID(s.name): s.name}
	s.raft.elections.names.Range(func(k, v any) bool {
		names[k.(raft.ID)] = v.(string)
		return true
	})
	out := map[string]uint64{}
	s.raft.elections.campaigns.Range(func(k, v any) bool {
		ck, n := k.(campaignKey), v.(*atomic.Uint64).Load()
		out[ck.reason.String()] += n
		if ck.lead != raft.None {
			name, ok := names[ck.lead]
			if !ok {
				name = "?"
			}
			out[ck.reason.String()+"@"+name] += n
		}
		return true
	})
	return out
}

// downsByName is how often each peer was deemed down.
func (s *Server) downsByName() map[string]uint64 {
	out := map[string]uint64{}
	s.raft.elections.downs.Range(func(k, v any) bool {
		out[k.(string)] = v.(*atomic.Uint64).Load()
		return true
	})
	return out
}
