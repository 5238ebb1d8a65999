package raft

// Why a follower campaigned (Config.OnCampaign): the counts tell an
// election storm's cause apart (issue 20). A storm of CampaignLiveLeader
// means heartbeats of leaders whose servers were live came too late even
// for the wait (live_leader.go); of CampaignLeaderDown, that liveness
// called a leader's server dead (ranked.go); of CampaignNoLeader, that
// the groups knew no leader at all.
type CampaignReason uint8

const (
	// CampaignNoLeader: its election timeout ran out and it knew no leader.
	CampaignNoLeader CampaignReason = iota
	// CampaignLeaderDown: liveness said its leader's server is down
	// (its turn came, ranked.go, or the timeout ran out).
	CampaignLeaderDown
	// CampaignLeaderStopped: its leader said it stopped.
	CampaignLeaderStopped
	// CampaignLiveLeader: its leader's server was live, and the
	// timeout and the wait (if any) ran out.
	CampaignLiveLeader
	campaignReasons
)

var campaignReasonNames = [campaignReasons]string{"no_leader", "leader_down", "leader_stopped", "live_leader"}

func (c CampaignReason) String() string {
	if c < campaignReasons {
		return campaignReasonNames[c]
	}
	return "unknown"
}

// noteCampaign tells Config.OnCampaign why this follower campaigns as
// its election timeout ran out.
func (r *raft) noteCampaign() {
	if r.onCampaign == nil {
		return
	}
	reason := CampaignLiveLeader
	switch {
	case r.lead == None:
		reason = CampaignNoLeader
	case r.leadStopped:
		reason = CampaignLeaderStopped
	case r.t.ranked || !r.health(r.lead).Live:
		reason = CampaignLeaderDown
	}
	r.onCampaign(reason, r.lead)
}
