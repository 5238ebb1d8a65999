package subjects

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
)

// check compares t with the model m and verifies t's internal invariants.
func check(t *testing.T, tb *Table, m map[string]State) {
	t.Helper()
	if tb.Len() != len(m) {
		t.Fatalf("Len %d, want %d", tb.Len(), len(m))
	}
	for k, want := range m {
		if got, ok := tb.Get(k); !ok || got != want {
			t.Fatalf("Get(%q) = %v %v, want %v", k, got, ok, want)
		}
	}
	seen := map[string]bool{}
	for k, st := range tb.All() {
		if seen[k] {
			t.Fatalf("All yields %q twice", k)
		}
		seen[k] = true
		if want, ok := m[k]; !ok || want != st {
			t.Fatalf("All yields %q %v, model has %v %v", k, st, want, ok)
		}
	}
	if len(seen) != len(m) {
		t.Fatalf("All yields %d subjects, want %d", len(seen), len(m))
	}
	used := 0
	for i, e := range tb.dir {
		p := e.p
		if len(e.slots) != len(p.slots) || &e.slots[0] != &p.slots[0] || &e.tags[0] != &p.tags[0] || len(p.tags) != len(p.slots) {
			t.Fatalf("dir[%d] has stale slots", i)
		}
		if p.depth > tb.depth || uint64(i)>>(tb.depth-p.depth) != p.prefix {
			t.Fatalf("dir[%d] holds a part of prefix %x depth %d (table depth %d)", i, p.prefix, p.depth, tb.depth)
		}
		if uint64(i)&(1<<(tb.depth-p.depth)-1) != 0 {
			continue // count each part once
		}
		n, dead := 0, len(p.keys)
		for k := range p.slots {
			s := &p.slots[k]
			if p.tags[k] == 0 {
				if *s != (slot{}) {
					t.Fatalf("empty slot %d holds %+v", k, *s)
				}
				continue
			}
			if p.tags[k] != tagOf(s.hash) {
				t.Fatalf("slot %d: tag %x for hash %x", k, p.tags[k], s.hash)
			}
			n++
			dead -= int(s.klen)
			if p.depth > 0 && s.hash>>(64-p.depth) != p.prefix {
				t.Fatalf("subject %q in a part of prefix %x", p.key(s), p.prefix)
			}
			if s.hash != tb.hash(p.key(s)) {
				t.Fatalf("subject %q has a stale hash", p.key(s))
			}
		}
		if n != p.used || dead != p.dead {
			t.Fatalf("part used %d dead %d, counted %d %d", p.used, p.dead, n, dead)
		}
		if p.used*loadDen > len(p.slots)*loadNum {
			t.Fatalf("part over its load: %d of %d", p.used, len(p.slots))
		}
		used += n
	}
	if used != tb.Len() {
		t.Fatalf("parts hold %d subjects, Len %d", used, tb.Len())
	}
}

// TestTableModel runs random operations against a map.
func TestTableModel(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tb, m := New(), map[string]State{}
		keys := 50 + rng.IntN(20000)
		key := func() string {
			k := rng.IntN(keys)
			switch k % 7 {
			case 0:
				return strings.Repeat("x", k%300) // long and empty subjects
			default:
				return fmt.Sprintf("kv.b.%d", k)
			}
		}
		for op := range 30000 {
			k := key()
			switch r := rng.IntN(10); {
			case r < 4:
				seq := uint64(op + 1)
				st, ok := m[k]
				if !ok {
					st.First = seq
				}
				st.Msgs++
				st.Last = seq
				m[k] = st
				tb.Add(k, seq)
			case r < 6:
				st := State{Msgs: rng.Uint64(), First: rng.Uint64(), Last: rng.Uint64()}
				m[k] = st
				tb.Put(k, st)
			case r < 9:
				delete(m, k)
				tb.Delete(k)
			default:
				want, wok := m[k]
				if got, ok := tb.Get(k); got != want || ok != wok {
					t.Fatalf("seed %d op %d: Get(%q) = %v %v, want %v %v", seed, op, k, got, ok, want, wok)
				}
			}
			if op%5000 == 0 {
				check(t, tb, m)
			}
		}
		check(t, tb, m)
		for k := range maps.Keys(maps.Clone(m)) { // empty it: parts compact
			delete(m, k)
			tb.Delete(k)
		}
		check(t, tb, m)
	}
}

// TestTableGrowth fills a table far past one part and empties it again.
func TestTableGrowth(t *testing.T) {
	tb, m := New(), map[string]State{}
	const n = 200000
	for i := range n {
		k := fmt.Sprintf("cas.%d", i)
		tb.Add(k, uint64(i+1))
		m[k] = State{Msgs: 1, First: uint64(i + 1), Last: uint64(i + 1)}
	}
	check(t, tb, m)
	if tb.depth == 0 {
		t.Fatalf("%d subjects in one part", n)
	}
	for i := 0; i < n; i += 2 {
		k := fmt.Sprintf("cas.%d", i)
		tb.Delete(k)
		delete(m, k)
	}
	check(t, tb, m)
}

// TestTableKeysOutliveChanges: subjects handed out by All stay intact
// after the table compacts, splits and forgets them.
func TestTableKeysOutliveChanges(t *testing.T) {
	tb := New()
	for i := range 1000 {
		tb.Add(fmt.Sprintf("a.%d", i), 1)
	}
	var kept []string
	for k := range tb.All() {
		kept = append(kept, k)
	}
	for i := range 1000 {
		tb.Delete(fmt.Sprintf("a.%d", i))
		tb.Add(fmt.Sprintf("b.%d", i), 2)
	}
	for i := range 50000 {
		tb.Add(fmt.Sprintf("c.%d", i), 3)
	}
	if len(kept) != 1000 {
		t.Fatalf("kept %d subjects", len(kept))
	}
	for _, k := range kept {
		if !strings.HasPrefix(k, "a.") {
			t.Fatalf("a kept subject changed to %q", k)
		}
	}
}

// TestTableLookupAllocs: lookups and updates of known subjects allocate
// nothing.
func TestTableLookupAllocs(t *testing.T) {
	tb := New()
	for i := range 10000 {
		tb.Add(fmt.Sprintf("s.%d", i), uint64(i))
	}
	if n := testing.AllocsPerRun(100, func() {
		tb.Add("s.77", 5)
		tb.Get("s.78")
		tb.Get("none")
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func FuzzTable(f *testing.F) {
	f.Add([]byte("\x00a\x01b\x02a\x00\x00\x03c"))
	f.Fuzz(func(t *testing.T, ops []byte) {
		tb, m := New(), map[string]State{}
		for i := 0; i+1 < len(ops); i += 2 {
			k := fmt.Sprintf("k%d", ops[i+1]%64)
			switch ops[i] % 3 {
			case 0:
				st, ok := m[k]
				if !ok {
					st.First = uint64(i)
				}
				st.Msgs++
				st.Last = uint64(i)
				m[k] = st
				tb.Add(k, uint64(i))
			case 1:
				delete(m, k)
				tb.Delete(k)
			case 2:
				m[k] = State{Msgs: uint64(i)}
				tb.Put(k, State{Msgs: uint64(i)})
			}
		}
		check(t, tb, m)
	})
}

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("$KV.bench.key.%d", i)
	}
	return keys
}

// BenchmarkTableFresh: a miss then an insert per subject, as a store of
// fresh subjects does.
func BenchmarkTableFresh(b *testing.B) {
	keys := benchKeys(1 << 20)
	b.ResetTimer()
	tb := New()
	for i := range b.N {
		k := keys[i&(1<<20-1)]
		if i&(1<<20-1) == 0 {
			tb = New()
		}
		tb.Get(k)
		tb.Add(k, uint64(i))
	}
}

func BenchmarkMapFresh(b *testing.B) {
	keys := benchKeys(1 << 20)
	b.ResetTimer()
	m := map[string]*State{}
	for i := range b.N {
		k := keys[i&(1<<20-1)]
		if i&(1<<20-1) == 0 {
			m = map[string]*State{}
		}
		ss := m[k]
		if ss == nil {
			ss = &State{First: uint64(i)}
			m[k] = ss
		}
		ss.Msgs++
		ss.Last = uint64(i)
	}
}
