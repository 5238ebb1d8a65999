package store

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// storeFactory makes an empty store with the given limits for one test.
type storeFactory func(t *testing.T, l StoreLimits) StreamStore

// storeFactories lists every StreamStore implementation; each file adding a
// store registers itself here in an init function.
var storeFactories = map[string]storeFactory{
	"memory": func(t *testing.T, l StoreLimits) StreamStore { return newMemStore(l) },
}

func forEachStore(t *testing.T, f func(t *testing.T, mk storeFactory)) {
	names := make([]string, 0, len(storeFactories))
	for n := range storeFactories {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Run(n, func(t *testing.T) { f(t, storeFactories[n]) })
	}
}

func mustStore(t *testing.T, s StreamStore, subj, payload string, ts int64) uint64 {
	t.Helper()
	seq, err := s.StoreMsg(subj, nil, []byte(payload), ts)
	if err != nil {
		t.Fatalf("store %s: %v", subj, err)
	}
	return seq
}

func TestStoreBasics(t *testing.T) {
	forEachStore(t, func(t *testing.T, mk storeFactory) {
		s := mk(t, StoreLimits{})
		defer s.Stop()
		for i := 1; i <= 10; i++ {
			subj := fmt.Sprintf("foo.%d", i%3)
			if seq := mustStore(t, s, subj, fmt.Sprint(i), int64(i)); seq != uint64(i) {
				t.Fatalf("seq %d want %d", seq, i)
			}
		}
		hdr := []byte("NATS/1.0\r\nA: b\r\n\r\n")
		if seq, err := s.StoreMsg("bar", hdr, []byte("with hdr"), 11); err != nil || seq != 11 {
			t.Fatal(seq, err)
		}
		sm, err := s.LoadMsg(11, nil)
		if err != nil || sm.Subj != "bar" || string(sm.Hdr) != string(hdr) || string(sm.Msg) != "with hdr" || sm.TS != 11 {
			t.Fatalf("load 11: %+v %v", sm, err)
		}
		if _, err := s.LoadMsg(12, nil); err != ErrStoreEOF {
			t.Fatalf("beyond last: %v", err)
		}
		if got := s.LastSeqForSubject("foo.1"); got != 10 {
			t.Fatalf("last foo.1 = %d", got)
		}
		if got := s.LastSeqForSubject("foo.*"); got != 10 {
			t.Fatalf("last foo.* = %d", got)
		}
		if got := s.LastSeqForSubject("nope"); got != 0 {
			t.Fatalf("last nope = %d", got)
		}
		if sm, err := s.LoadLastMsg("foo.0", nil); err != nil || sm.Seq != 9 {
			t.Fatalf("last foo.0: %v %v", sm, err)
		}
		if sm, err := s.LoadNextMsg("foo.2", 3, nil); err != nil || sm.Seq != 5 {
			t.Fatalf("next foo.2 from 3: %v %v", sm, err)
		}
		ss := s.SubjectsState("foo.*")
		want := map[string]SimpleState{"foo.0": {3, 3, 9}, "foo.1": {4, 1, 10}, "foo.2": {3, 2, 8}}
		if !reflect.DeepEqual(ss, want) {
			t.Fatalf("subjects state %v", ss)
		}
		if fs := s.FilteredState(4, "foo.1"); fs != (SimpleState{3, 4, 10}) {
			t.Fatalf("filtered %v", fs)
		}
		st := s.State()
		if st.Msgs != 11 || st.FirstSeq != 1 || st.LastSeq != 11 || st.NumSubjects != 4 || st.NumDeleted != 0 {
			t.Fatalf("state %+v", st)
		}
	})
}

func TestStoreRemovePurgeCompact(t *testing.T) {
	forEachStore(t, func(t *testing.T, mk storeFactory) {
		s := mk(t, StoreLimits{})
		defer s.Stop()
		for i := 1; i <= 20; i++ {
			mustStore(t, s, fmt.Sprintf("s.%d", i%2), "x", int64(i))
		}
		if ok, _ := s.RemoveMsg(5); !ok {
			t.Fatal("remove 5")
		}
		if ok, _ := s.RemoveMsg(5); ok {
			t.Fatal("remove 5 twice")
		}
		if ok, _ := s.EraseMsg(6); !ok {
			t.Fatal("erase 6")
		}
		st := s.State()
		if st.Msgs != 18 || st.NumDeleted != 2 || !reflect.DeepEqual(st.Deleted, []uint64{5, 6}) {
			t.Fatalf("after removes %+v", st)
		}
		if _, err := s.LoadMsg(5, nil); err != ErrStoreMsgNotFound {
			t.Fatalf("load removed: %v", err)
		}
		// keep the newest 2 of s.1 (odd seqs 1..19 minus 5)
		if n, _ := s.PurgeEx("s.1", 0, 2); n != 7 {
			t.Fatalf("purge keep: %d", n)
		}
		if ss := s.SubjectsState("s.1")["s.1"]; ss != (SimpleState{2, 17, 19}) {
			t.Fatalf("s.1 after keep %v", ss)
		}
		if n, _ := s.PurgeEx("", 10, 0); n != 3 { // s.0 at 2,4,8
			t.Fatalf("purge below 10: %d", n)
		}
		if n, _ := s.Compact(15); n != 3 { // 10,12,14
			t.Fatalf("compact: %d", n)
		}
		st = s.State()
		if st.FirstSeq != 16 || st.Msgs != 5 {
			t.Fatalf("after compact %+v", st)
		}
		if n, _ := s.Purge(); n != 5 {
			t.Fatalf("purge: %d", n)
		}
		st = s.State()
		if st.Msgs != 0 || st.FirstSeq != 21 || st.LastSeq != 20 {
			t.Fatalf("after purge %+v", st)
		}
		if seq := mustStore(t, s, "after", "x", 30); seq != 21 {
			t.Fatalf("seq after purge %d", seq)
		}
		if err := s.SkipMsgs(4); err != nil {
			t.Fatal(err)
		}
		if seq := mustStore(t, s, "after", "y", 31); seq != 26 {
			t.Fatalf("seq after skip %d", seq)
		}
	})
}

func TestStoreLimits(t *testing.T) {
	forEachStore(t, func(t *testing.T, mk storeFactory) {
		s := mk(t, StoreLimits{MaxMsgs: 5})
		for i := 1; i <= 12; i++ {
			mustStore(t, s, "a", "x", int64(i))
		}
		if st := s.State(); st.Msgs != 5 || st.FirstSeq != 8 {
			t.Fatalf("max msgs %+v", st)
		}
		s.Stop()
		s = mk(t, StoreLimits{MaxMsgsPerSubject: 1})
		for i := 1; i <= 10; i++ {
			mustStore(t, s, fmt.Sprintf("k.%d", i%3), "x", int64(i))
		}
		if st := s.State(); st.Msgs != 3 || st.FirstSeq != 8 {
			t.Fatalf("per subject %+v", st)
		}
		s.Stop()
		size := StoredMsgSize("b", nil, []byte("0123456789"))
		s = mk(t, StoreLimits{MaxBytes: int64(3 * size)})
		for i := 1; i <= 10; i++ {
			s.StoreMsg("b", nil, []byte("0123456789"), int64(i))
		}
		if st := s.State(); st.Msgs != 3 || st.Bytes != 3*size {
			t.Fatalf("max bytes %+v", st)
		}
		if n, _ := s.ExpireBefore(9); n != 1 {
			t.Fatalf("expire: %d", n)
		}
		if st := s.State(); st.Msgs != 2 || st.FirstSeq != 9 {
			t.Fatalf("after expire %+v", st)
		}
		s.Stop()
	})
}

// modelStore is the obvious, slow reference the stores are compared with.
type modelStore struct {
	msgs []StoreMsg
	last uint64
	lim  StoreLimits
}

func (m *modelStore) store(subj string, msg []byte, ts int64) uint64 {
	m.last++
	m.msgs = append(m.msgs, StoreMsg{Subj: subj, Msg: append([]byte(nil), msg...), Seq: m.last, TS: ts})
	if max := m.lim.MaxMsgsPerSubject; max > 0 {
		for cnt := m.count(subj); cnt > int(max); cnt-- {
			m.removeFirstOf(subj)
		}
	}
	if max := m.lim.MaxMsgs; max > 0 {
		for len(m.msgs) > int(max) {
			m.msgs = m.msgs[1:]
		}
	}
	return m.last
}

func (m *modelStore) count(subj string) int {
	n := 0
	for _, x := range m.msgs {
		if x.Subj == subj {
			n++
		}
	}
	return n
}

func (m *modelStore) removeFirstOf(subj string) {
	for i, x := range m.msgs {
		if x.Subj == subj {
			m.msgs = append(m.msgs[:i], m.msgs[i+1:]...)
			return
		}
	}
}

func (m *modelStore) remove(seq uint64) bool {
	for i, x := range m.msgs {
		if x.Seq == seq {
			m.msgs = append(m.msgs[:i], m.msgs[i+1:]...)
			return true
		}
	}
	return false
}

// filtered is the state of the messages at or after start under filter.
func (m *modelStore) filtered(filter string, start uint64) SimpleState {
	var st SimpleState
	for _, x := range m.msgs {
		if x.Seq >= start && sublist.MatchLiteral(x.Subj, filter) {
			if st.Msgs == 0 {
				st.First = x.Seq
			}
			st.Msgs++
			st.Last = x.Seq
		}
	}
	return st
}

// nextFor is the first message at or after start under filter, or 0.
func (m *modelStore) nextFor(filter string, start uint64) uint64 {
	for _, x := range m.msgs {
		if x.Seq >= start && sublist.MatchLiteral(x.Subj, filter) {
			return x.Seq
		}
	}
	return 0
}

func (m *modelStore) lastFor(filter string) uint64 {
	for i := len(m.msgs) - 1; i >= 0; i-- {
		if sublist.MatchLiteral(m.msgs[i].Subj, filter) {
			return m.msgs[i].Seq
		}
	}
	return 0
}

// TestStoreModel drives each store and the model with the same seeded random
// operations and compares what they report after every step.
func TestStoreModel(t *testing.T) {
	forEachStore(t, func(t *testing.T, mk storeFactory) {
		for seed := uint64(1); seed <= 20; seed++ {
			rng := rand.New(rand.NewPCG(seed, seed))
			lim := StoreLimits{MaxMsgs: int64(rng.IntN(3) * 20), MaxMsgsPerSubject: int64(rng.IntN(3) * 2)}
			s := mk(t, lim)
			m := &modelStore{lim: lim}
			for step := 0; step < 300; step++ {
				subj := fmt.Sprintf("m.%d.%d", rng.IntN(3), rng.IntN(4))
				switch op := rng.IntN(10); {
				case op < 7:
					seq, err := s.StoreMsg(subj, nil, []byte{byte(step)}, int64(step))
					if want := m.store(subj, []byte{byte(step)}, int64(step)); err != nil || seq != want {
						t.Fatalf("seed %d step %d: store seq %d want %d (%v)", seed, step, seq, want, err)
					}
				case op < 9 && m.last > 0:
					seq := uint64(rng.IntN(int(m.last))) + 1
					got, _ := s.RemoveMsg(seq)
					if want := m.remove(seq); got != want {
						t.Fatalf("seed %d step %d: remove %d = %v want %v", seed, step, seq, got, want)
					}
				default:
					filter := []string{subj, "m.*.1", "m.>", "m.1.*"}[rng.IntN(4)]
					if got, want := s.LastSeqForSubject(filter), m.lastFor(filter); got != want {
						t.Fatalf("seed %d step %d: last(%s) = %d want %d", seed, step, filter, got, want)
					}
					// Starting just after a message of the subject, as a
					// reader going through it does, or anywhere.
					start := uint64(rng.IntN(int(m.last) + 2))
					if x := m.nextFor(subj, 0); x != 0 && rng.IntN(2) == 0 {
						start = x + 1
					}
					var got uint64
					if sm, err := s.LoadNextMsg(filter, start, nil); err == nil {
						got = sm.Seq
					}
					if want := m.nextFor(filter, start); got != want {
						t.Fatalf("seed %d step %d: next(%s, %d) = %d want %d", seed, step, filter, start, got, want)
					}
					if got, want := s.FilteredState(start, filter), m.filtered(filter, start); got != want {
						t.Fatalf("seed %d step %d: filtered(%d, %s) = %+v want %+v", seed, step, start, filter, got, want)
					}
				}
				compareWithModel(t, s, m, seed, step)
			}
			s.Stop()
		}
	})
}

func compareWithModel(t *testing.T, s StreamStore, m *modelStore, seed uint64, step int) {
	t.Helper()
	var st StreamState
	s.FastState(&st)
	if st.Msgs != uint64(len(m.msgs)) || st.LastSeq != m.last {
		t.Fatalf("seed %d step %d: state %+v, model msgs %d last %d", seed, step, st, len(m.msgs), m.last)
	}
	if len(m.msgs) > 0 && st.FirstSeq != m.msgs[0].Seq {
		t.Fatalf("seed %d step %d: first %d want %d", seed, step, st.FirstSeq, m.msgs[0].Seq)
	}
	if step%25 != 0 {
		return
	}
	for _, x := range m.msgs {
		sm, err := s.LoadMsg(x.Seq, nil)
		if err != nil || sm.Subj != x.Subj || string(sm.Msg) != string(x.Msg) || sm.TS != x.TS {
			t.Fatalf("seed %d step %d: load %d: %+v %v", seed, step, x.Seq, sm, err)
		}
	}
	want := map[string]SimpleState{}
	for _, x := range m.msgs {
		ss := want[x.Subj]
		if ss.Msgs == 0 {
			ss.First = x.Seq
		}
		ss.Msgs++
		ss.Last = x.Seq
		want[x.Subj] = ss
	}
	if got := s.SubjectsState(">"); !reflect.DeepEqual(got, want) {
		t.Fatalf("seed %d step %d: subjects %v want %v", seed, step, got, want)
	}
	if ms, ok := s.(*memStore); ok {
		checkMemLinks(t, ms, want, seed, step)
	}
}

// checkMemLinks walks each subject's chain of messages in a memory store:
// from its first to its last message, both ways, exactly its messages.
func checkMemLinks(t *testing.T, ms *memStore, want map[string]SimpleState, seed uint64, step int) {
	t.Helper()
	ms.mu.RLock()
	defer ms.mu.RUnlock()
	for subj, ss := range want {
		var n uint64
		prev := uint64(0)
		for seq := ss.First; seq != 0; seq = ms.msgs[seq].next {
			m := ms.msgs[seq]
			if m == nil || m.subj != subj || m.prev != prev || n > ss.Msgs {
				t.Fatalf("seed %d step %d: %s's chain breaks at %d (after %d)", seed, step, subj, seq, prev)
			}
			prev = seq
			n++
		}
		if n != ss.Msgs || prev != ss.Last {
			t.Fatalf("seed %d step %d: %s's chain has %d messages ending at %d, want %d ending at %d",
				seed, step, subj, n, prev, ss.Msgs, ss.Last)
		}
	}
}
