package server

import (
	"testing"
	"time"
)

// A peer silent for longer than raftLiveTimeout while this server's own
// raft clock ticked late stays live, as long as the silence less the lag
// is within the timeout; a peer silent as long while the clock ticked on
// time is down (issue 20: starved servers deemed each other down after
// 1-2 s of silence while their clocks were 0.5-2 s late, and thousands
// of groups campaigned). Without raft_live_lag.go the first case is down.
func TestRaftLivenessDiscountsOwnLag(t *testing.T) {
	tick := int64(raftTick)
	heard := int64(1_000_000_000_000)
	r := &route{}
	r.heard.Store(heard)
	silence := int64(raftLiveTimeout) + 10*tick // 1.5 s
	now := heard + silence

	var late raftLag
	late.note(heard-tick, 0) // before the peer was heard: not counted
	for k := int64(1); k <= 10; k++ {
		late.note(heard+k*tick*2, tick) // every tick after it a tick late
	}
	if got := late.since(heard); got != 10*tick {
		t.Fatalf("lag since heard %v, want %v", time.Duration(got), time.Duration(10*tick))
	}
	if !peerSpoke(r, now, &late) {
		t.Fatalf("peer deemed down after %v silent while this server ticked %v late", time.Duration(silence), time.Duration(late.since(heard)))
	}

	// However late this server was, a peer silent past the timeout and
	// the credit's bound is down (a manual clock may jump by an hour).
	var jumped raftLag
	jumped.note(heard+tick, int64(time.Hour))
	if peerSpoke(r, heard+int64(raftLiveTimeout+raftLagCreditMax)+tick, &jumped) {
		t.Fatal("an hour's lateness excused a peer's silence past raftLagCreditMax")
	}

	var onTime raftLag
	for k := int64(1); k <= 30; k++ {
		onTime.note(heard+k*tick, 0)
	}
	if peerSpoke(r, now, &onTime) {
		t.Fatalf("peer silent %v while this server ticked on time still live", time.Duration(silence))
	}
	// A reader busy with what the peer sent keeps it live, for a while.
	r.busy.Store(true)
	if !peerSpoke(r, now, &onTime) {
		t.Fatal("peer whose frame the reader works on deemed down")
	}
	if peerSpoke(r, heard+int64(raftBusyReadMax)+tick, &onTime) {
		t.Fatal("a reader busy past raftBusyReadMax keeps its peer live")
	}
}

// The ring forgets old ticks: lag since a moment older than every tick
// remembered sums the ticks remembered (never more than what happened).
func TestRaftLagRingWraps(t *testing.T) {
	var l raftLag
	for k := int64(1); k <= 3*raftLagRing; k++ {
		l.note(k*100, 1)
	}
	if got := l.since(0); got != raftLagRing {
		t.Fatalf("lag over the whole ring %d, want %d", got, raftLagRing)
	}
	if got := l.since(int64(3*raftLagRing-5) * 100); got != 5 {
		t.Fatalf("lag over the last 5 ticks %d, want 5", got)
	}
}
