package raft

import (
	"slices"
	"testing"
)

// pipeLog and pipeNet record, in order, a driver's syncs and sends.
type pipeLog struct {
	LogStore
	ev *[]string
}

func (l pipeLog) Sync() error {
	*l.ev = append(*l.ev, "sync")
	return l.LogStore.Sync()
}

type pipeNet struct {
	Transport
	ev *[]string
}

func (n pipeNet) Send(msgs []Message) {
	for _, m := range msgs {
		*n.ev = append(*n.ev, "send "+m.Type.String())
	}
	n.Transport.Send(msgs)
}

// A leader's appends leave before its own log is synced (its fsync
// overlaps the followers'); a follower answers an append only after its
// sync.
func TestDriverLeaderPipelinesAppends(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	var ev []string
	record := func(id ID) {
		d := n.drv[id]
		d.Log, d.Net = pipeLog{d.Log, &ev}, pipeNet{d.Net, &ev}
	}
	record(1)
	if err := n.node(1).Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := n.drv[1].Process(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"send App", "send App", "sync"}; !slices.Equal(ev, want) {
		t.Fatalf("leader: %v, want %v", ev, want)
	}
	ev = nil
	record(2)
	msgs := n.q
	n.q = nil
	for _, m := range msgs {
		if m.To == 2 {
			if err := n.node(2).Step(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := n.drv[2].Process(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sync", "send AppResp"}; !slices.Equal(ev, want) {
		t.Fatalf("follower: %v, want %v", ev, want)
	}
}

// pipeSM records, in the same order, the entries a driver applies.
type pipeSM struct {
	StateMachine
	ev *[]string
}

func (s pipeSM) Apply(ents []Entry) error {
	for _, e := range ents {
		if e.Type == EntryNormal && len(e.Data) > 0 {
			*s.ev = append(*s.ev, "apply "+string(e.Data))
		}
	}
	return s.StateMachine.Apply(ents)
}

// A leader applies the entries committed before a batch while (here:
// before) that batch's entries sync, so a commit is not held up by the
// next fsync; a follower applies only after its sync, as the entries it
// applies may be in the batch itself. With SyncAside, sync and apply are
// handed over together.
func TestDriverLeaderAppliesDuringSync(t *testing.T) {
	n := newTestNet(t, nil, 1, 2, 3)
	n.elect(1)
	if err := n.node(1).Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	n.settle() // x committed and applied everywhere
	var ev []string
	for _, id := range []ID{1, 2} {
		d := n.drv[id]
		d.Log, d.Net, d.SM = pipeLog{d.Log, &ev}, pipeNet{d.Net, &ev}, pipeSM{d.SM, &ev}
	}
	aside := 0
	n.drv[1].SyncAside = func(sync, apply func() error) (error, error) {
		aside++
		ev = append(ev, "aside")
		a := apply()
		return sync(), a
	}
	if err := n.node(1).Propose([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if err := n.drv[1].ProcessAll(); err != nil {
		t.Fatal(err)
	}
	// y travels to the followers; their answers commit it on the leader.
	for range 2 {
		msgs := n.q
		n.q = nil
		for _, m := range msgs {
			if err := n.node(m.To).Step(m); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range []ID{2, 3} {
			if err := n.drv[id].ProcessAll(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := n.node(1).Propose([]byte("z")); err != nil {
		t.Fatal(err)
	}
	ev = nil
	if _, err := n.drv[1].Process(); err != nil { // commits y, appends z
		t.Fatal(err)
	}
	if want := []string{"send App", "send App", "aside", "apply y", "sync"}; !slices.Equal(ev, want) {
		t.Fatalf("leader: %v, want %v", ev, want)
	}
	if aside != 1 {
		t.Fatalf("SyncAside called %d times", aside)
	}
	// The follower gets z with y's commit: sync, answer, then apply.
	ev = nil
	msgs := n.q
	n.q = nil
	for _, m := range msgs {
		if m.To == 2 {
			if err := n.node(2).Step(m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := n.drv[2].Process(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"sync", "send AppResp", "apply y"}; !slices.Equal(ev, want) {
		t.Fatalf("follower: %v, want %v", ev, want)
	}
}

// A leader's answer to a follower's read index leaves with its appends,
// before its own log is synced: the index it names was committed (durable
// on a quorum) already, so it promises nothing about the unsynced
// entries. Before, such a batch waited for the leader's fsync, which a
// read through a follower then paid while writes were going on.
func TestDriverLeaderPipelinesReadAnswers(t *testing.T) {
	n, _, _ := newLeaseNet(t, nil)
	n.settle()
	var ev []string
	d := n.drv[1]
	d.Log, d.Net = pipeLog{d.Log, &ev}, pipeNet{d.Net, &ev}
	if err := n.node(1).Propose([]byte("x")); err != nil {
		t.Fatal(err)
	}
	commit := n.raft(1).log.committed
	if err := n.node(1).Step(Message{Type: MsgReadIndex, From: 2, To: 1, Term: n.raft(1).term, Entries: []Entry{{Data: []byte("r")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Process(); err != nil {
		t.Fatal(err)
	}
	sends := slices.Sorted(slices.Values(ev[:max(len(ev)-1, 0)]))
	if want := []string{"send App", "send App", "send ReadIndexResp"}; len(ev) == 0 || ev[len(ev)-1] != "sync" || !slices.Equal(sends, want) {
		t.Fatalf("leader: %v, want %v in any order, then sync", ev, want)
	}
	var resp *Message
	for i := range n.q {
		if n.q[i].Type == MsgReadIndexResp {
			resp = &n.q[i]
		}
	}
	if resp == nil || resp.Index != commit {
		t.Fatalf("read answer %+v, want index %d (the commit index before the new entry)", resp, commit)
	}
}
