package server

import (
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// The stepdown's pick of the member to lead (bestTransferee). The
// leader's progress map is iterated in random order, so each case is
// asked many times: a pick that depends on the order fails at once.
func TestStepdownPicksLiveMember(t *testing.T) {
	const self, dead, live = raft.ID(1), raft.ID(2), raft.ID(3)
	cases := []struct {
		name  string
		prs   map[raft.ID]raft.PeerStatus
		avoid raft.ID
		want  raft.ID
	}{
		{
			// A member's server just stopped: every member still looks
			// active to the leader's ticks, its liveness says otherwise.
			name: "dead server, all active, equal match",
			prs: map[raft.ID]raft.PeerStatus{
				dead: {Match: 8, RecentActive: true, IdleTicks: 1},
				live: {Match: 8, RecentActive: true, Live: true, IdleTicks: 1},
			},
			want: live,
		},
		{
			// The round that abandoned the transfer cleared every
			// member's activity; the live one was heard from since.
			name: "none active after the abandon, live heard from recently",
			prs: map[raft.ID]raft.PeerStatus{
				dead: {Match: 8, IdleTicks: 11},
				live: {Match: 8, IdleTicks: 1},
			},
			want: live,
		},
		{
			name: "the member the transfer was abandoned for is avoided",
			prs: map[raft.ID]raft.PeerStatus{
				dead: {Match: 8, RecentActive: true, Live: true, IdleTicks: 1},
				live: {Match: 8, RecentActive: true, Live: true, IdleTicks: 1},
			},
			avoid: dead,
			want:  live,
		},
		{
			name: "avoided only when others are as active",
			prs: map[raft.ID]raft.PeerStatus{
				dead: {Match: 8, IdleTicks: 1},
				live: {Match: 8, RecentActive: true, Live: true, IdleTicks: 1},
			},
			avoid: live,
			want:  live,
		},
		{
			name: "most caught up among live ones",
			prs: map[raft.ID]raft.PeerStatus{
				dead: {Match: 7, RecentActive: true, Live: true},
				live: {Match: 8, RecentActive: true, Live: true},
			},
			want: live,
		},
	}
	for _, c := range cases {
		st := raft.Status{ID: self, Progress: map[raft.ID]raft.PeerStatus{self: {Match: 8, Live: true, RecentActive: true}}}
		for id, pr := range c.prs {
			st.Progress[id] = pr
		}
		for range 50 {
			if got := bestTransferee(st, c.avoid); got != c.want {
				t.Fatalf("%s: picked %d, want %d", c.name, got, c.want)
			}
		}
	}
	if got := bestTransferee(raft.Status{ID: self, Progress: map[raft.ID]raft.PeerStatus{self: {}}}, raft.None); got != raft.None {
		t.Fatalf("a group of one picked %d", got)
	}
}

// Members equal in every respect are picked at random: with a fixed
// tie-break two members handed the leadership back and forth and the
// third never led (TestPowerLossCluster failed so in CI). Equal live
// members heard from a tick apart count as equal.
func TestStepdownSpreadsOverEqualMembers(t *testing.T) {
	const self = raft.ID(1)
	st := raft.Status{ID: self, Progress: map[raft.ID]raft.PeerStatus{
		self: {Match: 8, Live: true, RecentActive: true},
		2:    {Match: 8, Live: true, RecentActive: true, IdleTicks: 0},
		3:    {Match: 8, Live: true, RecentActive: true, IdleTicks: 1},
		4:    {Match: 8, Live: true, RecentActive: true, IdleTicks: 2},
	}}
	picked := map[raft.ID]int{}
	for range 600 {
		picked[bestTransferee(st, raft.None)]++
	}
	for _, id := range []raft.ID{2, 3, 4} {
		// Each is expected 200 times; under 100 has odds below 1e-12.
		if picked[id] < 100 {
			t.Fatalf("member %d picked %d times of 600: %v", id, picked[id], picked)
		}
	}
	if picked[self] != 0 {
		t.Fatalf("the leader picked itself: %v", picked)
	}
}
