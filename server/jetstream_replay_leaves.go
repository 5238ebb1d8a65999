package server

import (
	"math"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Removals deferred while the meta log replays (ARCHITECTURE.md "Meta
// replay"). A server replaying its own meta log at start applies every
// placement the log went through, also old ones that a later entry of the
// same log reverses: a stream moved onto this server was first placed
// without it. Acting on such an old placement stopped the replica and
// removed its group directory, acknowledged entries and all; the later
// placement then added the server back as an empty member that votes as
// if it never acknowledged anything (a Raft safety violation: the stream
// simulator, seed 659998598, elected a leader missing committed entries).
// So while it replays, a placement leaving this server out only records
// the stream; once the replay is over, the streams whose final assignment
// still leaves this server out are acted on as any placement is
// (applyPlacement), and the others keep their replica and directory.
// A deletion is final for its incarnation and acts at once.

// replayLeaves is the meta group's deferral state (under jsCluster.mu).
type replayLeaves struct {
	active bool
	out    map[string]*streamAssignment // by leaderKey
}

// deferLeave records sa, a placement leaving this server out, while the
// meta log replays; false when it is not replaying (act now).
func (jc *jsCluster) deferLeave(sa *streamAssignment) bool {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	if !jc.replayOut.active {
		return false
	}
	if jc.replayOut.out == nil {
		jc.replayOut.out = map[string]*streamAssignment{}
	}
	jc.replayOut.out[leaderKey(sa.Account, sa.Config.Name)] = sa
	return true
}

// takeDeferredLeave forgets a deferred leave of sa's stream, reporting
// whether there was one (its deletion stops the replica).
func (jc *jsCluster) takeDeferredLeave(sa *streamAssignment) bool {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	k := leaderKey(sa.Account, sa.Config.Name)
	_, ok := jc.replayOut.out[k]
	delete(jc.replayOut.out, k)
	return ok
}

// leftBehind says whether this server, outside sa's placement, still runs
// a replica of the stream or holds its group directory (a replica that
// left keeps its log: stopReplicaIf), forgetting a deferred leave.
func (jc *jsCluster) leftBehind(jsa *jsAccount, sa *streamAssignment) bool {
	deferred := jc.takeDeferredLeave(sa)
	return deferred || jsa.lookup(sa.Config.Name) != nil || jc.js.exists(jc.js.groupDir(sa))
}

// setReplaying says whether the meta entry about to be applied is replayed.
func (jc *jsCluster) setReplaying(on bool) {
	jc.mu.Lock()
	jc.replayOut.active = on
	jc.mu.Unlock()
}

// deferLeaves sets whether placements leaving this server out are
// deferred, taking jsCluster.mu only when that changes (once or twice per
// replay, not for every applied entry).
func (m *metaSM) deferLeaves(on bool) {
	if on != m.deferring {
		m.deferring = on
		m.jc.setReplaying(on)
	}
}

// endReplayLeaves ends the deferral: the streams whose final assignment
// leaves this server out (or that are gone) drop their replica now.
func (jc *jsCluster) endReplayLeaves() {
	jc.mu.Lock()
	out := jc.replayOut.out
	jc.replayOut = replayLeaves{}
	var act []*streamAssignment
	for _, sa := range out {
		cur := jc.streams[sa.Account][sa.Config.Name]
		switch {
		case cur == nil:
			act = append(act, sa)
		case !jc.isPeer(cur):
			act = append(act, cur)
		}
	}
	jc.mu.Unlock()
	for _, sa := range act {
		if jsa := jc.js.account(sa.Account); jsa != nil {
			jc.applyPlacement(jsa, sa)
		}
	}
}

// replaying says whether entry e is applied replaying this server's own
// meta log (or catching up after losing it): up to the log's last index at
// open, unless an entry of a later term than the log's last shows that the
// rest of it was not committed (the leader replaced it).
func (m *metaSM) replaying(e raft.Entry) bool {
	if m.rec.active {
		return true
	}
	if m.replayOver || e.Index > m.caughtUp || e.Term > m.openTerm {
		m.replayOver = true
		return false
	}
	return true
}

// endReplayIfDone ends the deferral once the replay is over.
func (m *metaSM) endReplayIfDone() {
	if m.rec.active || !m.replayOver && m.applied < m.caughtUp {
		return
	}
	m.replayOver, m.deferring = true, false
	m.jc.endReplayLeaves()
}

// noTermLimit: the replay of entries caught up from a leader (recovered)
// ends by index only; they are all committed.
const noTermLimit = math.MaxUint64
