package server

import (
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// TestNextPeerChange: a move adds the replacement before it removes a live
// member, so the group never has fewer members than its replica count; a
// member silent for an election timeout goes first, but only one short.
func TestNextPeerChange(t *testing.T) {
	const a, b, c, d, e raft.ID = 1, 2, 3, 4, 5
	live := raft.PeerStatus{IdleTicks: 1}
	dead := raft.PeerStatus{IdleTicks: raft.DefaultElectionTicks}
	st := func(lead raft.ID, peers []raft.ID, prs map[raft.ID]raft.PeerStatus) raft.Status {
		return raft.Status{ID: lead, Peers: peers, Progress: prs}
	}
	add := func(id raft.ID) raft.ConfChange { return raft.ConfChange{Type: raft.AddPeer, ID: id} }
	remove := func(id raft.ID) raft.ConfChange { return raft.ConfChange{Type: raft.RemovePeer, ID: id} }
	for _, tc := range []struct {
		name string
		st   raft.Status
		want []raft.ID
		cc   raft.ConfChange
		ok   bool
	}{
		{"in line", st(a, []raft.ID{a, b, c}, map[raft.ID]raft.PeerStatus{b: live, c: live}), []raft.ID{a, b, c}, raft.ConfChange{}, false},
		// The leader leaves: its replacement joins first (it was removed
		// first, leaving two members).
		{"leader moves", st(b, []raft.ID{a, b, c}, map[raft.ID]raft.PeerStatus{b: dead, a: live, c: live}), []raft.ID{a, c, d}, add(d), true},
		{"live follower moves", st(a, []raft.ID{a, b, c}, map[raft.ID]raft.PeerStatus{b: live, c: live}), []raft.ID{a, c, d}, add(d), true},
		{"then the leaver goes", st(a, []raft.ID{a, b, c, d}, map[raft.ID]raft.PeerStatus{b: live, c: live, d: live}), []raft.ID{a, c, d}, remove(b), true},
		{"dead member first", st(a, []raft.ID{a, b, c}, map[raft.ID]raft.PeerStatus{b: dead, c: live}), []raft.ID{a, c, d}, remove(b), true},
		{"never heard of", st(a, []raft.ID{a, b, c}, map[raft.ID]raft.PeerStatus{c: live}), []raft.ID{a, c, d}, remove(b), true},
		// Two members left of three and one of them dead: removing it
		// would leave the leader alone; the replacements come first.
		{"no dip below one short", st(c, []raft.ID{b, c}, map[raft.ID]raft.PeerStatus{b: dead}), []raft.ID{c, d, e}, add(d), true},
		{"scale down", st(a, []raft.ID{a, b, c, d, e}, map[raft.ID]raft.PeerStatus{b: live, c: live, d: dead, e: live}), []raft.ID{a, b, c}, remove(d), true},
	} {
		cc, ok := nextPeerChange(tc.st, tc.want)
		if cc != tc.cc || ok != tc.ok {
			t.Errorf("%s: got %+v %v, want %+v %v", tc.name, cc, ok, tc.cc, tc.ok)
		}
	}
}
