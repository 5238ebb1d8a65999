package raft

// What a leader's check-quorum found (Config.OnCheckQuorum): a leader
// that heard from no quorum within an election timeout steps down, and
// every group it led elects again. On a saturated machine that is a
// trigger of election storms (issue 20) besides the followers' own
// campaigns (campaign_reason.go); the counts tell the two apart.
type CheckQuorumOutcome uint8

const (
	// CheckQuorumStepDown: it stepped down, and node liveness said no
	// quorum of the members' servers is live.
	CheckQuorumStepDown CheckQuorumOutcome = iota
	// CheckQuorumStepDownLive: it stepped down although node liveness
	// said a quorum of the members' servers is live (their acks were
	// late only, or the leader read them late).
	CheckQuorumStepDownLive
	checkQuorumOutcomes
)

var checkQuorumNames = [checkQuorumOutcomes]string{"step_down", "step_down_live"}

func (c CheckQuorumOutcome) String() string {
	if c < checkQuorumOutcomes {
		return checkQuorumNames[c]
	}
	return "unknown"
}

// quorumLive reports whether node liveness says a quorum of the members'
// servers is live (this node's own counts).
func (r *raft) quorumLive() bool {
	members := r.conf.current()
	live := 0
	for _, id := range members {
		if id == r.id || r.health(id).Live {
			live++
		}
	}
	return live >= quorum(len(members))
}

// noteCheckQuorum tells Config.OnCheckQuorum what the check found.
func (r *raft) noteCheckQuorum(c CheckQuorumOutcome) {
	if r.onCheckQuorum != nil {
		r.onCheckQuorum(c)
	}
}
