package raft

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestBootstrapWritesMembershipToLog(t *testing.T) {
	st := NewMemoryStorage()
	n, err := NewNode(testConfig(1, []ID{3, 1, 2}), st)
	if err != nil {
		t.Fatal(err)
	}
	rd := n.Ready()
	if rd.HardState == nil || *rd.HardState != (HardState{Term: 1, Commit: 3}) {
		t.Fatalf("hard state %+v", rd.HardState)
	}
	if len(rd.Entries) != 3 || len(rd.CommittedEntries) != 3 || !rd.MustSync {
		t.Fatalf("ready %+v", rd)
	}
	for i, e := range rd.Entries {
		cc, err := UnmarshalConfChange(e.Data)
		if err != nil || e.Type != EntryConfChange || cc != (ConfChange{AddPeer, ID(i + 1)}) {
			t.Fatalf("entry %d: %+v %v", i, e, err)
		}
	}
	if err := st.Save(rd.Snapshot, rd.Entries, rd.HardState); err != nil {
		t.Fatal(err)
	}
	n.Advance(rd)
	if n.HasReady() {
		t.Fatalf("ready after advance: %+v", n.Ready())
	}
	// A restart reads everything back and bootstraps nothing again.
	n2, err := NewNode(testConfig(1, []ID{1, 2, 3}), st)
	if err != nil {
		t.Fatal(err)
	}
	if s := n2.Status(); s.Term != 1 || s.Commit != 3 || s.LastIndex != 3 || !slices.Equal(s.Peers, []ID{1, 2, 3}) {
		t.Fatalf("status after restart %+v", s)
	}
	if rd := n2.Ready(); len(rd.Entries) != 0 || rd.HardState != nil || len(rd.CommittedEntries) != 3 {
		t.Fatalf("ready after restart %+v", rd)
	}
}

func TestReadyHardStateAndMustSync(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.tick(1)
	nd := n.node(2)
	if nd.HasReady() {
		t.Fatalf("idle follower has a ready: %+v", nd.Ready())
	}
	// New entries must be synced.
	_ = n.node(1).Propose([]byte("a"))
	n.process()
	for _, m := range n.q {
		if m.To == 2 {
			_ = nd.Step(m)
		}
	}
	n.q = nil
	rd := nd.Ready()
	if len(rd.Entries) != 1 || !rd.MustSync || rd.HardState != nil {
		t.Fatalf("append ready %+v", rd)
	}
	_ = n.st[2].Save(nil, rd.Entries, nil)
	nd.Advance(rd)
	// A commit-only change is written but need not be synced.
	last := n.raft(2).log.lastIndex()
	_ = nd.Step(Message{Type: MsgHeartbeat, From: 1, To: 2, Term: n.raft(1).term, Commit: last})
	rd = nd.Ready()
	if rd.HardState == nil || rd.HardState.Commit != last || rd.MustSync {
		t.Fatalf("commit ready %+v", rd)
	}
	if len(rd.CommittedEntries) != 1 {
		t.Fatalf("committed %v", rd.CommittedEntries)
	}
	nd.Advance(rd)
	// A vote changes the hard state and must be synced.
	_ = nd.Step(Message{Type: MsgVote, From: 3, To: 2, Term: n.raft(2).term + 1, Index: last, LogTerm: n.raft(2).log.lastTerm(), Transfer: true})
	rd = nd.Ready()
	if rd.HardState == nil || rd.HardState.Vote != 3 || !rd.MustSync {
		t.Fatalf("vote ready %+v", rd)
	}
}

func TestStepRejectsBadMessages(t *testing.T) {
	n := newTestNet(t, nil, 1)
	if err := n.node(1).Step(Message{Type: 99, From: 2}); err == nil {
		t.Fatal("unknown type accepted")
	}
	if err := n.node(1).Step(Message{Type: MsgApp, To: 1}); err == nil {
		t.Fatal("message without sender accepted")
	}
	if err := n.node(1).Step(Message{Type: MsgApp, From: 2, To: 3}); err == nil {
		t.Fatal("message for another node accepted")
	}
}

// orderLog records the order of the driver's calls.
type orderLog struct {
	*MemoryStorage
	calls *[]string
}

func (o orderLog) Save(s *Snapshot, e []Entry, h *HardState) error {
	*o.calls = append(*o.calls, "save")
	return o.MemoryStorage.Save(s, e, h)
}

func (o orderLog) Sync() error { *o.calls = append(*o.calls, "sync"); return nil }

type orderNet struct{ calls *[]string }

func (o orderNet) Send([]Message) { *o.calls = append(*o.calls, "send") }

type orderSM struct{ calls *[]string }

func (o orderSM) Restore(Snapshot) error { *o.calls = append(*o.calls, "restore"); return nil }
func (o orderSM) Apply([]Entry) error    { *o.calls = append(*o.calls, "apply"); return nil }

func TestDriverOrder(t *testing.T) {
	var calls []string
	d, err := NewDriver(testConfig(1, []ID{1, 2}), orderLog{NewMemoryStorage(), &calls}, orderNet{&calls}, orderSM{&calls})
	if err != nil {
		t.Fatal(err)
	}
	d.Node.Campaign() // sends a pre-vote
	var seen []Ready
	d.Observe = func(rd *Ready) { seen = append(seen, *rd) }
	if err := d.ProcessAll(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, ","); got != "save,sync,send,apply" {
		t.Fatalf("driver order %q", got)
	}
	if len(seen) != 1 {
		t.Fatalf("observed %d readies", len(seen))
	}
}

type failingLog struct{ *MemoryStorage }

func (failingLog) Sync() error { return errors.New("disk on fire") }

func TestDriverStopsOnStorageError(t *testing.T) {
	var calls []string
	d, err := NewDriver(testConfig(1, []ID{1, 2}), failingLog{NewMemoryStorage()}, orderNet{&calls}, orderSM{&calls})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ProcessAll(); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v", err)
	}
	if len(calls) != 0 {
		t.Fatalf("sent or applied after a failed sync: %v", calls)
	}
}

func TestStatusReportsProgress(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	n.down[3] = true
	n.propose(1, "a")
	n.tick(3)
	s := n.node(1).Status()
	if s.Role != Leader || !s.LeaderReady || len(s.Progress) != 3 {
		t.Fatalf("status %+v", s)
	}
	if p := s.Progress[2]; p.Match != s.LastIndex || p.State != "replicate" {
		t.Fatalf("peer 2: %+v", p)
	}
	if p := s.Progress[3]; p.Match >= s.LastIndex || p.IdleTicks < 3 {
		t.Fatalf("peer 3 (down): %+v", p)
	}
}
