package raft

import "testing"

// A leader that says it stopped in a later term than it led was made to
// step down by a candidate (a leadership transfer): its followers wait for
// the candidate as for a live leader instead of campaigning at their
// election timeout (issue 20: the third member of a group handed to a busy
// restarted server contended with it). Without the term check in
// leaderStopped, follower 2 campaigned within 2 election timeouts.
func TestLiveLeaderStoppedInLaterTermWaits(t *testing.T) {
	n, _ := liveLeaderNet(t, 20)
	et := n.raft(2).t.electionTimeout
	n.node(2).LeaderStopped(1, n.raft(2).term+1)
	tickOnly(n, 2, 2*et)
	if c := campaignsOf(n, 2); c != 0 {
		t.Fatalf("follower told its leader stepped down for a later term campaigned (%d requests) within its wait", c)
	}
	tickOnly(n, 2, 4*et)
	if campaignsOf(n, 2) == 0 {
		t.Fatal("the wait did not end: a follower must campaign once it ran out")
	}
}

// transferStalled hands 1's leadership to 3, whose vote answers never
// reach it (its server is saturated): 1 and 2 voted for 3 and know no
// leader.
func transferStalled(t *testing.T) (*testNet, map[ID]bool) {
	n, live := liveLeaderNet(t, 20)
	n.drop = func(m Message) bool { return m.To == 3 && m.Type == MsgVoteResp }
	if err := n.node(1).TransferLeadership(3); err != nil {
		t.Fatal(err)
	}
	n.settle()
	for _, id := range []ID{1, 2} {
		if r := n.raft(id); r.role != Follower || r.lead != None || r.vote != 3 {
			t.Fatalf("node %d: %s lead %d vote %d", id, r.role, r.lead, r.vote)
		}
	}
	return n, live
}

// A follower that voted for a transfer's candidate whose server is live
// waits LiveLeaderWait ticks more for it before campaigning; without the
// wait (voteTransfer in liveLeaderWaits) it campaigned at its election
// timeout, with no leader known.
func TestLiveLeaderWaitsForTransferCandidate(t *testing.T) {
	n, _ := transferStalled(t)
	et := n.raft(2).t.electionTimeout
	before := campaignsOf(n, 2)
	tickOnly(n, 2, 2*et)
	if c := campaignsOf(n, 2) - before; c != 0 {
		t.Fatalf("voter of a live transfer candidate campaigned (%d requests) within its wait", c)
	}
	tickOnly(n, 2, 4*et)
	if campaignsOf(n, 2) == before {
		t.Fatal("the wait did not end: a stuck candidate must be replaced")
	}
}

// A transfer candidate whose server is down is not waited for.
func TestLiveLeaderTransferCandidateDownNoWait(t *testing.T) {
	n, live := transferStalled(t)
	live[3] = false
	before := campaignsOf(n, 2)
	tickOnly(n, 2, 2*n.raft(2).t.electionTimeout)
	if campaignsOf(n, 2) == before {
		t.Fatal("voter of a dead transfer candidate waited past its election timeout")
	}
}

// Granting another member's pre-vote does not end the wait for a live
// transfer candidate (a pre-vote changes neither term nor vote), and
// neither does the candidate's request heard again in the same term.
func TestLiveLeaderTransferWaitSurvivesPreVote(t *testing.T) {
	n, _ := transferStalled(t)
	r := n.raft(2)
	last, lastTerm := r.log.lastIndex(), r.log.lastTerm()
	r.step(Message{Type: MsgVote, From: 3, To: 2, Term: r.term, Index: last, LogTerm: lastTerm, Transfer: true})
	r.step(Message{Type: MsgPreVote, From: 1, To: 2, Term: r.term + 1, Index: last, LogTerm: lastTerm})
	if !r.voteTransfer || r.vote != 3 {
		t.Fatalf("after a pre-vote and a repeated request: vote %d, transfer %v", r.vote, r.voteTransfer)
	}
	n.settle()
	before := campaignsOf(n, 2)
	tickOnly(n, 2, 2*r.t.electionTimeout)
	if c := campaignsOf(n, 2) - before; c != 0 {
		t.Fatalf("voter of a live transfer candidate campaigned (%d requests) within its wait after granting a pre-vote", c)
	}
}
