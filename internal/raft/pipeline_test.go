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
