package raft

import (
	"testing"
)

func TestSingleNodeElectsItself(t *testing.T) {
	n := newTestNet(t, nil, 1)
	n.tick(25)
	if n.leader() != 1 {
		t.Fatalf("single node did not become leader")
	}
	if ss := n.node(1).SoftState(); !ss.LeaderReady {
		t.Fatalf("leader not ready after applying its no-op: %+v", ss)
	}
	n.propose(1, "a")
	if got := n.sm[1].data(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("applied %v", got)
	}
}

func TestElectionByTimeout(t *testing.T) {
	for _, size := range []int{3, 5} {
		ids := make([]ID, size)
		for i := range ids {
			ids[i] = ID(i + 1)
		}
		n := newTestNet(t, nil, ids...)
		n.tick(30)
		lead := n.leader()
		if lead == None {
			t.Fatalf("size %d: no leader", size)
		}
		leaders := 0
		for _, id := range ids {
			r := n.raft(id)
			if r.role == Leader {
				leaders++
			}
			if r.lead != lead {
				t.Errorf("size %d: node %d follows %d, leader is %d", size, id, r.lead, lead)
			}
		}
		if leaders != 1 {
			t.Fatalf("size %d: %d leaders", size, leaders)
		}
	}
}

func TestVoteRules(t *testing.T) {
	// The voter's log is [1, 2] (index 2, term 2), at term 2.
	tests := []struct {
		name      string
		vote      ID
		lead      ID
		msg       Message
		wantGrant bool
	}{
		{"fresh voter, up-to-date candidate", None, None, Message{Type: MsgVote, From: 2, Term: 3, Index: 2, LogTerm: 2}, true},
		{"longer log same term", None, None, Message{Type: MsgVote, From: 2, Term: 3, Index: 5, LogTerm: 2}, true},
		{"shorter log", None, None, Message{Type: MsgVote, From: 2, Term: 3, Index: 1, LogTerm: 2}, false},
		{"older last term", None, None, Message{Type: MsgVote, From: 2, Term: 3, Index: 9, LogTerm: 1}, false},
		{"newer last term, shorter", None, None, Message{Type: MsgVote, From: 2, Term: 3, Index: 1, LogTerm: 3}, true},
		{"already voted for other, same term", 3, None, Message{Type: MsgVote, From: 2, Term: 2, Index: 2, LogTerm: 2}, false},
		{"already voted for candidate", 2, None, Message{Type: MsgVote, From: 2, Term: 2, Index: 2, LogTerm: 2}, true},
		{"has a leader this term", None, 3, Message{Type: MsgVote, From: 2, Term: 2, Index: 2, LogTerm: 2}, false},
		{"pre-vote for next term despite vote", 3, None, Message{Type: MsgPreVote, From: 2, Term: 3, Index: 2, LogTerm: 2}, true},
		{"pre-vote with stale log", None, None, Message{Type: MsgPreVote, From: 2, Term: 3, Index: 1, LogTerm: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(1, []ID{1, 2, 3})
			cfg.CheckQuorum = false
			r, err := newRaft(cfg, storageWith(1, 2))
			if err != nil {
				t.Fatal(err)
			}
			r.term, r.vote, r.lead = 2, tt.vote, tt.lead
			tt.msg.To = 1
			r.step(tt.msg)
			if len(r.msgs) != 1 {
				t.Fatalf("got %d messages", len(r.msgs))
			}
			resp := r.msgs[0]
			if resp.Reject == tt.wantGrant {
				t.Fatalf("grant = %v, want %v (%s)", !resp.Reject, tt.wantGrant, resp)
			}
			if tt.msg.Type == MsgPreVote && r.term != 2 {
				t.Fatalf("pre-vote changed the term to %d", r.term)
			}
			if tt.msg.Type == MsgVote && tt.wantGrant && r.vote != 2 {
				t.Fatalf("vote not recorded: %d", r.vote)
			}
		})
	}
}

func TestCandidateWithStaleLogLoses(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.isolate(3)
	n.propose(1, "a", "b")
	n.heal()
	// 3 misses the entries: it cannot win, even after raising its term.
	n.node(3).Campaign()
	n.settle()
	if n.raft(3).role == Leader {
		t.Fatal("node with a stale log won")
	}
	if n.leader() != 1 {
		t.Fatalf("leader changed to %d", n.leader())
	}
}

func TestPreVoteKeepsPartitionedNodeFromRaisingTerm(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	term := n.raft(1).term
	n.isolate(3)
	n.tick(100) // 3 keeps timing out alone
	if got := n.raft(3).term; got != term {
		t.Fatalf("isolated node raised its term to %d (was %d)", got, term)
	}
	if n.raft(3).role != PreCandidate {
		t.Fatalf("isolated node is %s", n.raft(3).role)
	}
	n.heal()
	n.tick(5)
	if n.leader() != 1 || n.raft(1).term != term {
		t.Fatalf("rejoining node disrupted the leader: leader %d term %d", n.leader(), n.raft(1).term)
	}
	if n.raft(3).role != Follower || n.raft(3).lead != 1 {
		t.Fatalf("node 3 is %s following %d", n.raft(3).role, n.raft(3).lead)
	}
}

func TestWithoutPreVoteAPartitionedNodeDisrupts(t *testing.T) {
	n := newTestNet(t, func(c *Config) { c.PreVote, c.CheckQuorum = false, false }, 1, 2, 3)
	n.elect(1)
	term := n.raft(1).term
	n.isolate(3)
	n.tick(50)
	if n.raft(3).term <= term {
		t.Fatalf("without pre-vote the isolated node should raise its term")
	}
	n.heal()
	n.tick(25)
	if n.raft(1).term == term {
		t.Fatalf("expected the higher term to depose the leader")
	}
}

func TestCheckQuorumLeaderStepsDown(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.isolate(1)
	cfg := n.cfgs[1]
	n.tick(2*cfg.ElectionTicks + 1)
	if n.raft(1).role == Leader {
		t.Fatal("isolated leader did not step down")
	}
	lead := n.leader()
	if lead == None || lead == 1 {
		t.Fatalf("majority did not elect a new leader: %d", lead)
	}
	n.heal()
	n.tick(5)
	if n.raft(1).lead != lead {
		t.Fatalf("old leader follows %d, want %d", n.raft(1).lead, lead)
	}
}

func TestLeaseIgnoresVoteRequests(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	r2 := n.raft(2)
	term := r2.term
	// A vote request for a higher term while 2 hears from its leader.
	r2.step(Message{Type: MsgVote, From: 3, To: 2, Term: term + 5, Index: 100, LogTerm: term})
	if r2.term != term || len(r2.msgs) != 0 {
		t.Fatalf("follower in lease reacted: term %d msgs %v", r2.term, r2.msgs)
	}
	// A transfer vote bypasses the lease.
	r2.step(Message{Type: MsgVote, From: 3, To: 2, Term: term + 5, Index: 100, LogTerm: term, Transfer: true})
	if r2.term != term+5 || r2.vote != 3 {
		t.Fatalf("transfer vote not granted: term %d vote %d", r2.term, r2.vote)
	}
}

func TestRandomizedElectionTimeoutUsesRand(t *testing.T) {
	calls := 0
	cfg := DefaultConfig(1, []ID{1, 2, 3})
	cfg.Rand = func(n int) int { calls++; return n - 1 }
	r, err := newRaft(cfg, NewMemoryStorage())
	if err != nil {
		t.Fatal(err)
	}
	if calls == 0 || r.t.randomizedTimeout != 2*cfg.ElectionTicks-1 {
		t.Fatalf("timeout %d after %d calls", r.t.randomizedTimeout, calls)
	}
	for range 2*cfg.ElectionTicks - 2 {
		r.tick()
	}
	if r.role != Follower {
		t.Fatal("campaigned before the timeout")
	}
	r.tick()
	if r.role != PreCandidate {
		t.Fatalf("role %s after the timeout", r.role)
	}
}

func TestStaleLeaderLearnsNewTerm(t *testing.T) {
	// Without check-quorum the isolated leader keeps believing it leads.
	n := newTestNet(t, func(c *Config) { c.CheckQuorum = false }, 1, 2, 3)
	n.elect(1)
	old := n.raft(1).term
	n.isolate(1)
	n.elect(2)
	n.heal()
	// Old leader's heartbeat reaches a node with a higher term: the answer
	// carries that term and deposes it.
	n.raft(1).bcastHeartbeat()
	n.settle()
	if r := n.raft(1); r.role == Leader || r.term <= old {
		t.Fatalf("old leader still %s at term %d", r.role, r.term)
	}
}

func TestNonMemberDoesNotCampaign(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.add(4, nil, nil) // a joining node knows no members yet
	n.tick(50)
	if n.raft(4).role != Follower || n.raft(4).term != n.raft(n.leader()).term && n.raft(4).term != 0 {
		t.Fatalf("non-member is %s at term %d", n.raft(4).role, n.raft(4).term)
	}
}

func TestStepTermRules(t *testing.T) {
	tests := []struct {
		name     string
		msg      Message
		lease    bool // the node follows a live leader (2)
		wantTerm uint64
		wantRole Role
		wantLead ID
		wantResp MessageType // 0: no response
	}{
		{"higher-term append: follow its sender", Message{Type: MsgApp, From: 3, Term: 7}, false, 7, Follower, 3, MsgAppResp},
		{"higher-term heartbeat", Message{Type: MsgHeartbeat, From: 3, Term: 7}, false, 7, Follower, 3, MsgHeartbeatResp},
		{"higher-term vote without lease", Message{Type: MsgVote, From: 3, Term: 7, Index: 9, LogTerm: 5}, false, 7, Follower, None, MsgVoteResp},
		{"higher-term vote in lease: ignored", Message{Type: MsgVote, From: 3, Term: 7, Index: 9, LogTerm: 5}, true, 5, Follower, 2, 0},
		{"higher-term pre-vote: term unchanged", Message{Type: MsgPreVote, From: 3, Term: 7, Index: 9, LogTerm: 5}, false, 5, Follower, None, MsgPreVoteResp},
		{"rejected pre-vote response with higher term", Message{Type: MsgPreVoteResp, From: 3, Term: 7, Reject: true}, false, 7, Follower, None, 0},
		{"granted pre-vote response: term unchanged", Message{Type: MsgPreVoteResp, From: 3, Term: 6}, false, 5, Follower, None, 0},
		{"lower-term append: answer with our term", Message{Type: MsgApp, From: 3, Term: 4}, true, 5, Follower, 2, MsgAppResp},
		{"lower-term pre-vote: reject", Message{Type: MsgPreVote, From: 3, Term: 4}, false, 5, Follower, None, MsgPreVoteResp},
		{"lower-term vote: ignored", Message{Type: MsgVote, From: 3, Term: 4}, false, 5, Follower, None, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := newRaft(testConfig(1, []ID{1, 2, 3}), storageWith(1, 2, 5))
			if err != nil {
				t.Fatal(err)
			}
			r.becomeFollower(5, None)
			if tt.lease {
				r.lead = 2
			}
			tt.msg.To = 1
			r.step(tt.msg)
			if r.term != tt.wantTerm || r.role != tt.wantRole || r.lead != tt.wantLead {
				t.Fatalf("term %d role %s lead %d", r.term, r.role, r.lead)
			}
			switch {
			case tt.wantResp == 0 && len(r.msgs) != 0:
				t.Fatalf("unexpected response %s", r.msgs[0])
			case tt.wantResp != 0 && (len(r.msgs) != 1 || r.msgs[0].Type != tt.wantResp):
				t.Fatalf("responses %v, want one %s", r.msgs, tt.wantResp)
			case tt.wantResp != 0 && r.msgs[0].Term < r.term:
				t.Fatalf("response carries term %d < %d", r.msgs[0].Term, r.term)
			}
		})
	}
}
