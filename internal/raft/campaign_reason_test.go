package raft

import "testing"

// campaignReasonNet is liveLeaderNet whose nodes tell why they campaign.
func campaignReasonNet(t *testing.T, wait int) (*testNet, map[ID]bool, map[CampaignReason]int) {
	live := map[ID]bool{1: true, 2: true, 3: true}
	got := map[CampaignReason]int{}
	n := newTestNet(t, func(c *Config) {
		c.LiveLeaderWait = wait
		c.PeerHealth = func(id ID) PeerHealth { return PeerHealth{Live: live[id], Quiesces: true} }
		c.OnCampaign = func(r CampaignReason, lead ID) {
			if lead != 1 && r != CampaignNoLeader {
				t.Errorf("campaign %s told leader %d, not 1", r, lead)
			}
			got[r]++
		}
	}, 1, 2, 3)
	n.elect(1)
	n.propose(1, "a")
	clear(got) // the first election
	return n, live, got
}

// A follower that campaigns after its live leader's heartbeats stopped
// for the election timeout and the wait says so (live_leader); one whose
// leader's server liveness called down says leader_down.
func TestCampaignReasons(t *testing.T) {
	n, _, got := campaignReasonNet(t, 20)
	tickOnly(n, 2, 4*n.raft(2).t.electionTimeout)
	if got[CampaignLiveLeader] == 0 || got[CampaignLeaderDown] != 0 {
		t.Fatalf("silent live leader: reasons %v, want live_leader", got)
	}
	n, live, got := campaignReasonNet(t, 20)
	live[1] = false
	tickOnly(n, 3, 2*n.raft(3).t.electionTimeout)
	if got[CampaignLeaderDown] == 0 || got[CampaignLiveLeader] != 0 {
		t.Fatalf("leader's server down: reasons %v, want leader_down", got)
	}
}
