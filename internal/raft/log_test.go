package raft

import (
	"errors"
	"slices"
	"testing"
)

func TestMemoryStorage(t *testing.T) {
	s := storageWith(1, 1, 2, 3, 3)
	if f, _ := s.FirstIndex(); f != 1 {
		t.Fatalf("first = %d", f)
	}
	if l, _ := s.LastIndex(); l != 5 {
		t.Fatalf("last = %d", l)
	}
	got, err := s.Entries(2, 5, 1<<20)
	if err != nil || len(got) != 3 || got[0].Index != 2 {
		t.Fatalf("entries = %v, %v", got, err)
	}
	got, _ = s.Entries(1, 6, 1) // size limit keeps at least one
	if len(got) != 1 {
		t.Fatalf("limited entries = %v", got)
	}
	// Overwrite a conflicting tail.
	if err := s.Append([]Entry{{Index: 4, Term: 4}}); err != nil {
		t.Fatal(err)
	}
	if l, _ := s.LastIndex(); l != 4 {
		t.Fatalf("last after truncation = %d", l)
	}
	if err := s.Append([]Entry{{Index: 9, Term: 4}}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("append with gap: %v", err)
	}
	// Compact keeps the entries after the snapshot.
	if err := s.Compact(Snapshot{Index: 3, Term: 2, Peers: []ID{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Entries(3, 4, 100); !errors.Is(err, ErrCompacted) {
		t.Fatalf("compacted entries: %v", err)
	}
	if tt, err := s.Term(3); err != nil || tt != 2 {
		t.Fatalf("term at snapshot = %d, %v", tt, err)
	}
	if _, err := s.Term(2); !errors.Is(err, ErrCompacted) {
		t.Fatalf("term before snapshot: %v", err)
	}
	if _, peers, _ := s.InitialState(); !slices.Equal(peers, []ID{1}) {
		t.Fatalf("peers = %v", peers)
	}
	if err := s.Compact(Snapshot{Index: 2}); !errors.Is(err, ErrSnapOutOfDate) {
		t.Fatalf("old compact: %v", err)
	}
	// ApplySnapshot replaces everything.
	if err := s.ApplySnapshot(Snapshot{Index: 10, Term: 5}); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.FirstIndex(); f != 11 {
		t.Fatalf("first after snapshot = %d", f)
	}
}

func TestUnstableTruncateAndAppend(t *testing.T) {
	tests := []struct {
		offset uint64
		have   []uint64 // terms of unstable entries from offset
		app    []Entry
		offOut uint64
		want   []uint64
	}{
		{5, []uint64{1}, []Entry{{Index: 6, Term: 1}, {Index: 7, Term: 1}}, 5, []uint64{1, 1, 1}},
		{5, []uint64{1}, []Entry{{Index: 5, Term: 2}, {Index: 6, Term: 2}}, 5, []uint64{2, 2}},
		{5, []uint64{1}, []Entry{{Index: 4, Term: 2}}, 4, []uint64{2}},
		{5, []uint64{1, 1, 1}, []Entry{{Index: 6, Term: 2}}, 5, []uint64{1, 2}},
	}
	for i, tt := range tests {
		u := unstable{offset: tt.offset}
		for k, term := range tt.have {
			u.ents = append(u.ents, Entry{Index: tt.offset + uint64(k), Term: term})
		}
		u.truncateAndAppend(tt.app)
		var got []uint64
		for _, e := range u.ents {
			got = append(got, e.Term)
		}
		if u.offset != tt.offOut || !slices.Equal(got, tt.want) {
			t.Errorf("#%d: offset %d terms %v, want %d %v", i, u.offset, got, tt.offOut, tt.want)
		}
	}
}

func TestLogFindConflict(t *testing.T) {
	l := newRaftLog(storageWith(1, 2, 3), 1<<20)
	tests := []struct {
		ents []Entry
		want uint64
	}{
		{nil, 0},
		{[]Entry{{Index: 1, Term: 1}, {Index: 2, Term: 2}}, 0},
		{[]Entry{{Index: 2, Term: 2}, {Index: 3, Term: 3}, {Index: 4, Term: 4}}, 4},
		{[]Entry{{Index: 2, Term: 2}, {Index: 3, Term: 4}}, 3},
		{[]Entry{{Index: 1, Term: 4}}, 1},
	}
	for i, tt := range tests {
		if got := l.findConflict(tt.ents); got != tt.want {
			t.Errorf("#%d: conflict at %d, want %d", i, got, tt.want)
		}
	}
}

func TestLogFindConflictByTerm(t *testing.T) {
	l := newRaftLog(storageWith(1, 1, 3, 3, 3, 5, 5), 1<<20)
	tests := []struct{ index, term, wantIndex, wantTerm uint64 }{
		{7, 5, 7, 5},
		{7, 4, 5, 3}, // skip the whole term 5
		{7, 2, 2, 1},
		{7, 0, 0, 0},
		{3, 3, 3, 3},
	}
	for i, tt := range tests {
		gi, gt := l.findConflictByTerm(tt.index, tt.term)
		if gi != tt.wantIndex || gt != tt.wantTerm {
			t.Errorf("#%d: (%d,%d), want (%d,%d)", i, gi, gt, tt.wantIndex, tt.wantTerm)
		}
	}
}

func TestLogIsUpToDate(t *testing.T) {
	l := newRaftLog(storageWith(1, 2, 2), 1<<20)
	tests := []struct {
		index, term uint64
		want        bool
	}{
		{3, 2, true}, {2, 2, false}, {4, 2, true}, {1, 3, true}, {5, 1, false},
	}
	for i, tt := range tests {
		if got := l.isUpToDate(tt.index, tt.term); got != tt.want {
			t.Errorf("#%d: isUpToDate(%d,%d) = %v", i, tt.index, tt.term, got)
		}
	}
}

func TestLogSliceAcrossStableAndUnstable(t *testing.T) {
	st := storageWith(1, 1, 1)
	if err := st.Compact(Snapshot{Index: 1, Term: 1}); err != nil {
		t.Fatal(err)
	}
	l := newRaftLog(st, 1<<20)
	l.append([]Entry{{Index: 4, Term: 2}, {Index: 5, Term: 2}})
	got, err := l.slice(2, 6, 1<<20)
	if err != nil || len(got) != 4 || got[0].Index != 2 || got[3].Index != 5 {
		t.Fatalf("slice = %v, %v", got, err)
	}
	if _, err := l.slice(1, 3, 100); !errors.Is(err, ErrCompacted) {
		t.Fatalf("compacted slice: %v", err)
	}
	if got, _ := l.slice(2, 6, 1); len(got) != 1 {
		t.Fatalf("size-limited slice = %v", got)
	}
	if tt, err := l.term(1); err != nil || tt != 1 {
		t.Fatalf("term(1) = %d %v", tt, err)
	}
	if _, err := l.term(0); !errors.Is(err, ErrCompacted) {
		t.Fatalf("term(0): %v", err)
	}
	if _, err := l.term(6); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("term(6): %v", err)
	}
	// Truncating into storage: the unstable tail replaces stored entries.
	l.append([]Entry{{Index: 3, Term: 3}})
	if l.lastIndex() != 3 || !l.matchTerm(3, 3) || !l.matchTerm(2, 1) {
		t.Fatalf("after truncation: %s last=%d", l, l.lastIndex())
	}
}

func TestLogCommitOnlyByTerm(t *testing.T) {
	l := newRaftLog(storageWith(1, 1, 2), 1<<20)
	if l.maybeCommit(3, 1) {
		t.Fatal("committed an entry whose term differs")
	}
	if !l.maybeCommit(3, 2) || l.committed != 3 {
		t.Fatal("did not commit an entry of the given term")
	}
	if l.maybeCommit(2, 1) {
		t.Fatal("commit moved backwards")
	}
}

func TestConfChangeEncoding(t *testing.T) {
	for _, cc := range []ConfChange{{AddPeer, 1}, {RemovePeer, 1 << 60}} {
		got, err := UnmarshalConfChange(cc.Marshal())
		if err != nil || got != cc {
			t.Fatalf("round trip %v: %v %v", cc, got, err)
		}
	}
	for _, b := range [][]byte{nil, {1}, {9, 1}, {1, 0}, {1, 1, 1}} {
		if _, err := UnmarshalConfChange(b); err == nil {
			t.Errorf("%v decoded", b)
		}
	}
	tests := []struct {
		peers []ID
		cc    ConfChange
		want  []ID
	}{
		{[]ID{1, 3}, ConfChange{AddPeer, 2}, []ID{1, 2, 3}},
		{[]ID{1, 2}, ConfChange{AddPeer, 2}, nil},
		{[]ID{1, 2}, ConfChange{RemovePeer, 1}, []ID{2}},
		{[]ID{1}, ConfChange{RemovePeer, 1}, nil},
		{[]ID{1, 2}, ConfChange{RemovePeer, 3}, nil},
	}
	for i, tt := range tests {
		got, err := tt.cc.applyTo(tt.peers)
		if !slices.Equal(got, tt.want) || (err != nil) != (tt.want == nil) {
			t.Errorf("#%d: %v, %v", i, got, err)
		}
	}
}

func TestConfTracker(t *testing.T) {
	var c confTracker
	c.reset(0, []ID{3, 1, 2})
	c.add(&Entry{Index: 5, Type: EntryConfChange, Data: ConfChange{AddPeer, 4}.Marshal()})
	c.add(&Entry{Index: 9, Type: EntryConfChange, Data: ConfChange{RemovePeer, 1}.Marshal()})
	if !slices.Equal(c.current(), []ID{2, 3, 4}) || !slices.Equal(c.at(7), []ID{1, 2, 3, 4}) ||
		!slices.Equal(c.at(4), []ID{1, 2, 3}) {
		t.Fatalf("current %v at7 %v at4 %v", c.current(), c.at(7), c.at(4))
	}
	if !c.truncateFrom(9) || !slices.Equal(c.current(), []ID{1, 2, 3, 4}) {
		t.Fatalf("after truncation: %v", c.current())
	}
	c.compact(6)
	if c.base.index != 6 || len(c.points) != 0 || !slices.Equal(c.current(), []ID{1, 2, 3, 4}) {
		t.Fatalf("after compaction: %+v", c)
	}
}

func TestInflights(t *testing.T) {
	in := newInflights(3, 0)
	in.add(2, 10)
	in.add(5, 10)
	in.add(9, 10)
	if !in.full() {
		t.Fatal("not full")
	}
	in.freeLE(5)
	if in.count != 1 || in.full() {
		t.Fatalf("count = %d", in.count)
	}
	in.add(12, 10)
	in.add(15, 10) // wraps around
	in.freeFirst()
	if in.count != 2 || in.buf[in.start] != 12 {
		t.Fatalf("after freeFirst: %+v", in)
	}
	in.freeLE(100)
	if in.count != 0 {
		t.Fatalf("count = %d", in.count)
	}
}

// Appends in flight are bounded by their bytes too: the one that crosses
// the mark goes, the next waits until enough are acknowledged.
func TestInflightsBytes(t *testing.T) {
	in := newInflights(8, 100)
	in.add(1, 60)
	if in.full() {
		t.Fatal("full at 60 of 100 bytes")
	}
	in.add(2, 60)
	if !in.full() {
		t.Fatal("not full at 120 of 100 bytes")
	}
	in.freeLE(1)
	if in.full() || in.bytes != 60 {
		t.Fatalf("after freeing the first: full=%v bytes=%d", in.full(), in.bytes)
	}
	in.freeLE(2)
	if in.bytes != 0 {
		t.Fatalf("empty with %d bytes", in.bytes)
	}
}

func TestProgressDecr(t *testing.T) {
	tests := []struct {
		state             progressState
		match, next       uint64
		rejected, hint    uint64
		wantOK            bool
		wantNext          uint64
		wantStateAfterDec progressState
	}{
		{stateReplicate, 5, 10, 5, 5, false, 10, stateReplicate}, // stale: rejected <= match
		{stateReplicate, 5, 10, 9, 9, true, 9, stateProbe},       // back to probing, just before the rejection
		{stateReplicate, 5, 10, 9, 7, true, 8, stateProbe},
		{stateProbe, 0, 10, 5, 5, false, 10, stateProbe}, // stale: not the probe in flight
		{stateProbe, 0, 10, 9, 3, true, 4, stateProbe},   // jump back to the hint
		{stateProbe, 2, 10, 9, 2, true, 3, stateProbe},   // never below match+1
		// A hint below match: the follower lost entries it acknowledged
		// (a crash before an fsync); probe from what it still has.
		{stateProbe, 2, 10, 9, 0, true, 1, stateProbe},
		{stateReplicate, 5, 10, 9, 3, true, 4, stateProbe},
		{stateProbe, 0, 10, 9, 20, true, 9, stateProbe}, // never above the rejected index
	}
	for i, tt := range tests {
		p := newProgress(tt.next, 4, 0)
		p.match, p.state = tt.match, tt.state
		p.probeSent = true
		ok := p.maybeDecrTo(tt.rejected, tt.hint)
		if ok && tt.hint < tt.match && p.match != tt.hint {
			t.Errorf("#%d: match %d kept above the follower's hint %d", i, p.match, tt.hint)
		}
		if ok != tt.wantOK || p.next != tt.wantNext || p.state != tt.wantStateAfterDec {
			t.Errorf("#%d: ok=%v next=%d state=%s", i, ok, p.next, p.state)
		}
		if ok && p.probeSent {
			t.Errorf("#%d: still paused after a rejection", i)
		}
	}
}
