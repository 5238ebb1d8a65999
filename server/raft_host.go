package server

import "github.com/nats-io/nats-server/v2/internal/raft"

// raftHost runs a server's raft groups in place of their goroutines and
// carries their messages in place of routes. The deterministic simulator
// (sim_*_test.go) is the one host: it calls each group's event methods
// (onTick, step, propose, settle; raft.go) on its own goroutine in the
// order its seed chooses, so a run can be replayed exactly. The periodic
// duties that touch raft state are the host's to call too, on its
// goroutine: leader announcements and membership reconciliation
// (jsCluster.reannounce), usage reports (reportUsage), replicas leaving
// a stream's placement (stepLeavers) and the periodic sync of replicated
// file stores. A hosted group's status is made on the caller's goroutine
// (statusSnapshot), which must be the host's. Production servers have no host
// (Options.raftHost nil).
type raftHost interface {
	// hostGroup is told of a group that started: from now on the host
	// drives it. It is called from the goroutine that started the group.
	hostGroup(s *Server, g *raftGroup)
	// transport carries the group's messages to the peers.
	transport(s *Server, group string) raft.Transport
	// peerHealth is the node liveness its groups see (raft_live.go); the
	// host calls a group's onLiveness when it changes.
	peerHealth(s *Server, id raft.ID) raft.PeerHealth
}

// hosted reports whether the group is driven by a raftHost.
func (g *raftGroup) hosted() bool { return g.host }

// runControls runs the control functions queued for a hosted group, then
// returns a halt asked of it (raft_halt.go) as an event's error would be:
// the host halts the group with it (raftGroup.fail). The order is fixed
// (no select between the two), so a seed replays alike.
func (g *raftGroup) runControls() error {
	for {
		select {
		case f := <-g.ctrl:
			f(g.drv.Node)
			continue
		default:
		}
		select {
		case h := <-g.halts:
			return h.err
		default:
			return nil
		}
	}
}

// snapshotNow encodes a snapshot on the caller's goroutine (a hosted
// group: the simulator's order decides when it is taken) and compacts.
func (g *raftGroup) snapshotNow(index uint64, encode func() (snapPayload, error)) {
	t0 := g.srv.clock.Now()
	p, err := encode()
	g.compact(index, p, err, g.srv.clock.Since(t0))
}
