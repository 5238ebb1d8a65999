package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/store"
)

// clockReplica is a follower replica of a memory stream on a server whose
// clock is m, applying entries through the real raft apply path.
func clockReplica(t *testing.T, m *clock.Manual) (*streamSM, *stream) {
	t.Helper()
	s := &Server{name: "F", clock: m}
	cfg := StreamConfig{Name: "D", Subjects: []string{"d.>"}, Storage: MemoryStorage,
		Duplicates: 30 * time.Second, MaxAge: time.Hour, AllowRollup: true, Replicas: 3}
	cfg.normalize()
	if e := cfg.check(); e != nil {
		t.Fatal(e)
	}
	mset := &stream{jsa: &jsAccount{js: &jetStream{srv: s}, acc: NewAccount("A")}, name: cfg.Name, cfg: cfg,
		ddmap: map[string]*dedupeEntry{}, replicated: true}
	mset.setStore(store.NewMemStore(limitsOf(&cfg)))
	return &streamSM{mset: mset}, mset
}

// clockTestEntries are committed entries stamped by a leader at t0 + 10s
// per entry: message ids that repeat inside and outside the duplicate
// window (by the entries' stamps), an expectation on the last id, a
// rollup and a max_age expiry with its cut-off.
func clockTestEntries(t0 time.Time) []raft.Entry {
	type pub struct {
		subj   string
		hdr    []string
		expire bool
	}
	pubs := []pub{
		{subj: "d.a", hdr: []string{JSMsgId, "a"}},
		{subj: "d.b", hdr: []string{JSMsgId, "b"}},
		{subj: "d.a", hdr: []string{JSMsgId, "a"}}, // 20s after the first: a duplicate
		{subj: "d.c"},
		{subj: "d.a", hdr: []string{JSMsgId, "a"}}, // 40s after: stored again
		{subj: "d.b", hdr: []string{"Nats-Expected-Last-Msg-Id", "a"}},
		{expire: true}, // the leader's cut-off: 25s after t0
		{subj: "d.c", hdr: []string{JSMsgRollup, JSMsgRollupSubject}},
		{subj: "d.b", hdr: []string{JSMsgId, "b"}},
	}
	var ents []raft.Entry
	for i, p := range pubs {
		ts := t0.Add(time.Duration(i) * 10 * time.Second)
		e := &streamEntry{op: streamOpMsg, origin: "L"}
		if p.expire {
			e = &streamEntry{op: streamOpExpire, origin: "L", cutoff: t0.Add(25 * time.Second).UnixNano()}
		} else {
			var hdr []byte
			if len(p.hdr) > 0 {
				hdr = fmt.Appendf(nil, "NATS/1.0\r\n%s: %s\r\n\r\n", p.hdr[0], p.hdr[1])
			}
			e.m = inMsg{subj: p.subj, hdr: hdr, msg: []byte("x"), ts: ts.UnixNano()}
		}
		ents = append(ents, raft.Entry{Index: uint64(i + 1), Term: 1, Type: raft.EntryNormal, Data: encodeStreamEntry(e)})
	}
	return ents
}

// replicaView is everything of a replica's state that the entries decide.
func replicaView(t *testing.T, mset *stream) string {
	t.Helper()
	mset.mu.Lock()
	defer mset.mu.Unlock()
	st := mset.st().State()
	out := fmt.Sprintf("applied %d first %d last %d msgs %d lastID %q",
		mset.applied, st.FirstSeq, st.LastSeq, st.Msgs, mset.lmsgID)
	var sm StoreMsg
	for seq := st.FirstSeq; seq <= st.LastSeq && seq > 0; seq++ {
		if m, err := mset.st().LoadMsg(seq, &sm); err == nil {
			out += fmt.Sprintf("\n  %d %s %d", m.Seq, m.Subj, m.TS)
		}
	}
	var ids []string
	for id, dde := range mset.ddmap {
		ids = append(ids, fmt.Sprintf("%s=%d@%d", id, dde.seq, dde.ts))
	}
	slices.Sort(ids)
	return out + fmt.Sprintf("\n  ids %v\n  digest %x", ids, mset.digest)
}

// Applying committed entries reads no clock: replicas whose clocks read
// the leader's time, two hours later (a replica catching up from its log)
// and an hour earlier (a skewed one) end in the same state, and that state
// is the one the entries' own stamps give.
func TestStreamApplyReadsNoClock(t *testing.T) {
	t0 := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	ents := clockTestEntries(t0)
	var views []string
	for _, skew := range []time.Duration{0, 2 * time.Hour, -time.Hour} {
		m := clock.NewManual(t0.Add(skew))
		sm, mset := clockReplica(t, m)
		for i := range ents { // one entry per 10s of this replica's clock
			if err := sm.Apply(ents[i : i+1]); err != nil {
				t.Fatal(err)
			}
			m.Advance(10 * time.Second)
		}
		views = append(views, replicaView(t, mset))
	}
	for i, v := range views[1:] {
		if v != views[0] {
			t.Fatalf("replica %d differs from the leader's clock's:\n%s\nvs\n%s", i+1, v, views[0])
		}
	}
	// By the stamps: seq 1 a, 2 b, (a dup), 3 c, 4 a, 5 b; the expiry at
	// t0+25s removes 1..3; the rollup of d.c (6) has nothing left to
	// remove; "b" at t0+80s is outside b's window (t0+10s): stored, 7,
	// and a (t0+40s) has left the window.
	ts := func(i int) int64 { return t0.Add(time.Duration(i) * 10 * time.Second).UnixNano() }
	want := fmt.Sprintf("applied 8 first 4 last 7 msgs 4 lastID %q\n  4 d.a %d\n  5 d.b %d\n  6 d.c %d\n  7 d.b %d\n  ids [b=7@%d]",
		"b", ts(4), ts(5), ts(7), ts(8), ts(8))
	if !strings.HasPrefix(views[0], want+"\n") {
		t.Fatalf("state\n%s\nwant\n%s", views[0], want)
	}
}
