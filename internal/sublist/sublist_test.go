package sublist

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"unsafe"
)

type sub struct {
	subj, queue string
	v           int
}

// canon renders a Result as a sorted multiset: "v" for plain entries and
// "queue:v" for queue members.
func canon(r *Result[int]) []string {
	out := []string{}
	for _, v := range r.Plain {
		out = append(out, strconv.Itoa(v))
	}
	seen := map[string]bool{}
	for _, q := range r.Queues {
		if seen[q.Name] {
			out = append(out, "DUPLICATE-QUEUE:"+q.Name)
		}
		seen[q.Name] = true
		if len(q.Members) == 0 {
			out = append(out, "EMPTY-QUEUE:"+q.Name)
		}
		for _, v := range q.Members {
			out = append(out, q.Name+":"+strconv.Itoa(v))
		}
	}
	slices.Sort(out)
	return out
}

func sorted(xs ...string) []string {
	out := append([]string{}, xs...)
	slices.Sort(out)
	return out
}

func mustInsert(t testing.TB, s *Sublist[int], subs ...sub) {
	t.Helper()
	for _, x := range subs {
		if err := s.Insert(x.subj, x.queue, x.v); err != nil {
			t.Fatalf("Insert(%q, %q, %d): %v", x.subj, x.queue, x.v, err)
		}
	}
}

func checkMatch(t *testing.T, s *Sublist[int], subject string, want ...string) {
	t.Helper()
	got := canon(s.Match(subject))
	if w := sorted(want...); !slices.Equal(got, w) {
		t.Errorf("Match(%q) = %v, want %v", subject, got, w)
	}
}

func TestMatchTable(t *testing.T) {
	tests := []struct {
		name    string
		subs    []sub
		subject string
		want    []string
	}{
		{"literal", []sub{{"foo.bar", "", 1}, {"foo.baz", "", 2}, {"foo", "", 3}}, "foo.bar", []string{"1"}},
		{"literal miss", []sub{{"foo.bar", "", 1}}, "foo.bar.baz", nil},
		{"prefix only", []sub{{"foo.bar.baz", "", 1}}, "foo.bar", nil},
		{"pwc", []sub{{"foo.*", "", 1}, {"*.bar", "", 2}, {"*.*", "", 3}, {"foo.bar.*", "", 4}, {"*", "", 5}}, "foo.bar", []string{"1", "2", "3"}},
		{"pwc single", []sub{{"*", "", 1}, {"*.*", "", 2}}, "foo", []string{"1"}},
		{"fwc", []sub{{"foo.>", "", 1}, {">", "", 2}, {"foo.bar.>", "", 3}}, "foo.bar", []string{"1", "2"}},
		{"fwc needs a token", []sub{{"foo.>", "", 1}, {">", "", 2}}, "foo", []string{"2"}},
		{"fwc deep", []sub{{"foo.>", "", 1}, {">", "", 2}, {"foo.bar.>", "", 3}}, "foo.bar.baz.qux", []string{"1", "2", "3"}},
		{"mixed", []sub{{"*.bar.>", "", 1}, {"foo.*.>", "", 2}, {"foo.bar.baz", "", 3}, {"*.*.*", "", 4}, {"*.*", "", 5}, {"foo.*.baz.>", "", 6}}, "foo.bar.baz", []string{"1", "2", "3", "4"}},
		{"embedded wildcard chars are literal", []sub{{"foo*", "", 1}, {"foo>.bar", "", 2}}, "foo*", []string{"1"}},
		{"embedded wildcard no glob", []sub{{"foo*", "", 1}}, "foox", nil},
		{"queue grouping", []sub{{"foo.bar", "q1", 1}, {"foo.*", "q1", 2}, {"foo.bar", "q2", 3}, {"foo.bar", "", 4}, {"foo.>", "q1", 5}}, "foo.bar", []string{"4", "q1:1", "q1:2", "q1:5", "q2:3"}},
		{"same value many patterns", []sub{{"foo.bar", "", 1}, {"foo.*", "", 1}, {">", "", 1}, {"foo.bar", "q", 1}}, "foo.bar", []string{"1", "1", "1", "q:1"}},
		{"wildcard tokens in a published subject are literal", []sub{{"foo.*", "", 1}, {">", "", 2}, {"foo.bar", "", 3}}, "foo.*", []string{"1", "2"}},
		{"invalid subject matches nothing", []sub{{">", "", 1}}, "foo..bar", nil},
		{"empty subject matches nothing", []sub{{">", "", 1}}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New[int]()
			mustInsert(t, s, tt.subs...)
			for range 3 { // trie walks (the second admits it to the cache), then the cached path
				if got := s.HasInterest(tt.subject); got != (len(tt.want) > 0) {
					t.Errorf("HasInterest(%q) = %v", tt.subject, got)
				}
				checkMatch(t, s, tt.subject, tt.want...)
			}
		})
	}
}

func TestQueueGroupsMerged(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"a.b", "q", 1}, sub{"a.*", "q", 2}, sub{"*.b", "q", 3}, sub{">", "q", 4}, sub{"a.b", "r", 5})
	r := s.Match("a.b")
	if len(r.Queues) != 2 || len(r.Plain) != 0 {
		t.Fatalf("want 2 queue groups and no plain entries, got %+v", r)
	}
	for _, q := range r.Queues {
		if q.Name == "q" && len(q.Members) != 4 || q.Name == "r" && len(q.Members) != 1 {
			t.Errorf("queue %q has members %v", q.Name, q.Members)
		}
	}
}

func TestInsertRemoveErrors(t *testing.T) {
	s := New[int]()
	for _, subj := range []string{"", "foo.", ".foo", "foo..bar", "foo. bar", "foo.>.bar"} {
		if err := s.Insert(subj, "", 1); !errors.Is(err, ErrInvalidSubject) {
			t.Errorf("Insert(%q) = %v, want ErrInvalidSubject", subj, err)
		}
		if err := s.Remove(subj, "", 1); !errors.Is(err, ErrInvalidSubject) {
			t.Errorf("Remove(%q) = %v, want ErrInvalidSubject", subj, err)
		}
	}
	if err := s.Insert("foo", "bad queue", 1); !errors.Is(err, ErrInvalidQueue) {
		t.Errorf("Insert with bad queue = %v", err)
	}
	mustInsert(t, s, sub{"foo.bar", "q", 1})
	notFound := []sub{{"foo.bar", "", 1}, {"foo.bar", "q", 2}, {"foo.bar", "r", 1}, {"foo", "q", 1}, {"foo.bar.baz", "q", 1}, {"foo.*", "q", 1}, {"x", "", 1}}
	for _, x := range notFound {
		if err := s.Remove(x.subj, x.queue, x.v); !errors.Is(err, ErrNotFound) {
			t.Errorf("Remove(%+v) = %v, want ErrNotFound", x, err)
		}
	}
	if s.Count() != 1 {
		t.Fatalf("Count = %d, want 1", s.Count())
	}
}

func TestDuplicateInsertIsIdempotent(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"foo", "", 1}, sub{"foo", "", 1}, sub{"foo", "q", 1}, sub{"foo", "q", 1})
	if s.Count() != 2 {
		t.Fatalf("Count = %d, want 2", s.Count())
	}
	checkMatch(t, s, "foo", "1", "q:1")
	if err := s.Remove("foo", "", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("foo", "", 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Remove = %v, want ErrNotFound", err)
	}
	checkMatch(t, s, "foo", "q:1")
}

func TestRemoveAndPrune(t *testing.T) {
	s := New[int]()
	subs := []sub{
		{"foo.bar.baz", "", 1}, {"foo.bar", "", 2}, {"foo.*.baz", "q", 3},
		{"foo.>", "", 4}, {">", "q", 5}, {"*.*.*", "", 6}, {"foo.bar.baz", "", 7},
	}
	mustInsert(t, s, subs...)
	checkMatch(t, s, "foo.bar.baz", "1", "q:3", "4", "q:5", "6", "7")
	mustRemove(t, s, subs[0], subs[2])
	checkMatch(t, s, "foo.bar.baz", "4", "q:5", "6", "7")
	checkMatch(t, s, "foo.bar", "2", "4", "q:5")
	mustRemove(t, s, subs[1:2]...)
	mustRemove(t, s, subs[3:]...)
	if s.Count() != 0 {
		t.Fatalf("Count = %d after removing all", s.Count())
	}
	if !s.root.isEmpty() {
		t.Fatalf("trie not pruned: %+v", s.root)
	}
	checkMatch(t, s, "foo.bar.baz")
}

func mustRemove(t *testing.T, s *Sublist[int], subs ...sub) {
	t.Helper()
	for _, x := range subs {
		if err := s.Remove(x.subj, x.queue, x.v); err != nil {
			t.Fatalf("Remove(%+v): %v", x, err)
		}
	}
}

func TestPruneKeepsSiblings(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"a.b.c", "", 1}, sub{"a.b", "", 2}, sub{"a.x.c", "", 3})
	mustRemove(t, s, sub{"a.b.c", "", 1})
	b := s.root.nodes["a"].next.nodes["b"]
	if b == nil || b.next != nil {
		t.Fatalf("node a.b should survive with no next level, got %+v", b)
	}
	mustRemove(t, s, sub{"a.b", "", 2})
	if a := s.root.nodes["a"]; a == nil || a.next.nodes["b"] != nil || a.next.nodes["x"] == nil {
		t.Fatalf("unexpected trie after pruning a.b")
	}
	checkMatch(t, s, "a.x.c", "3")
}

func TestChurnDoesNotGrow(t *testing.T) {
	s := New[int]()
	for i := range 5000 {
		subj := fmt.Sprintf("inbox.%d.reply.%d", i, i%7)
		mustInsert(t, s, sub{subj, "", i})
		s.Match(subj)
		if err := s.Remove(subj, "", i); err != nil {
			t.Fatal(err)
		}
	}
	if !s.root.isEmpty() || s.Count() != 0 {
		t.Fatalf("trie still holds nodes after churn")
	}
}

func TestCacheInvalidation(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"foo.bar", "", 1})
	before := s.Match("foo.bar")
	checkMatch(t, s, "foo.baz")
	mustInsert(t, s, sub{"foo.*", "", 2}, sub{"foo.bar", "q", 3}, sub{"foo.>", "q", 4}, sub{"foo.baz", "", 5})
	checkMatch(t, s, "foo.bar", "1", "2", "q:3", "q:4")
	checkMatch(t, s, "foo.baz", "2", "q:4", "5")
	if got := canon(before); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("previously returned Result was mutated: %v", got)
	}
	held := s.Match("foo.bar")
	mustRemove(t, s, sub{"foo.*", "", 2}, sub{"foo.bar", "q", 3})
	checkMatch(t, s, "foo.bar", "1", "q:4")
	if got := canon(held); len(got) != 4 {
		t.Fatalf("held Result was mutated: %v", got)
	}
	mustRemove(t, s, sub{"foo.bar", "", 1}, sub{"foo.>", "q", 4})
	checkMatch(t, s, "foo.bar")
	if s.HasInterest("foo.bar") {
		t.Fatal("HasInterest true after removing everything")
	}
	mustInsert(t, s, sub{">", "", 9})
	checkMatch(t, s, "foo.bar", "9")
	if !s.HasInterest("foo.bar") {
		t.Fatal("HasInterest false after insert")
	}
}

func TestCacheBigResultDropped(t *testing.T) {
	s := New[int]()
	for i := range maxPatch + 10 {
		mustInsert(t, s, sub{"big", "", i})
	}
	if got := len(s.Match("big").Plain); got != maxPatch+10 {
		t.Fatalf("got %d", got)
	}
	mustInsert(t, s, sub{"big", "", -1})
	mustInsert(t, s, sub{">", "", -2})
	if got := len(s.Match("big").Plain); got != maxPatch+12 {
		t.Fatalf("got %d after insert", got)
	}
	mustRemove(t, s, sub{"big", "", 0})
	if got := len(s.Match("big").Plain); got != maxPatch+11 {
		t.Fatalf("got %d after remove", got)
	}
}

func TestCacheBounded(t *testing.T) {
	s := New[int]()
	// x.lit makes every x.<n> depend on its last token: the subject
	// cache, not the prefix cache (prefix.go), serves them.
	mustInsert(t, s, sub{"x.*", "", 1}, sub{"x.lit", "", 2})
	for i := range 5 * maxCache {
		subj := "x." + strconv.Itoa(i)
		checkMatch(t, s, subj, "1")
		checkMatch(t, s, subj, "1") // a second miss caches it
		if n := len(s.cache); n > maxCache {
			t.Fatalf("cache grew to %d", n)
		}
	}
	st := s.Stats()
	if st.NumCache == 0 || st.NumCache > maxCache {
		t.Fatalf("NumCache = %d", st.NumCache)
	}
}

func TestStats(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"a", "", 1}, sub{"a", "", 2}, sub{"*", "q", 3}, sub{"*", "q", 4}, sub{"b", "", 5})
	mustRemove(t, s, sub{"b", "", 5})
	s.seen.lottery = 0
	s.Match("a")
	s.Match("a")
	s.Match("a")
	s.Match("c")
	st := s.Stats()
	// "a" misses twice (the second miss caches it) and then hits; "c" is
	// seen once, so it is not cached.
	want := Stats{NumSubs: 4, NumCache: 1, NumInserts: 5, NumRemoves: 1, NumMatches: 4,
		CacheHitRate: 0.25, MaxFanout: 3, AvgFanout: 3}
	if st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
}

func TestAll(t *testing.T) {
	s := New[int]()
	subs := []sub{{"a", "", 1}, {"a.b", "q", 2}, {"a.*", "", 3}, {"a.>", "r", 4}, {">", "", 5}, {"*.b.c", "", 6}}
	mustInsert(t, s, subs...)
	var got, want []string
	for _, e := range s.All() {
		got = append(got, fmt.Sprintf("%s|%s|%d", e.Subject, e.Queue, e.Value))
	}
	for _, x := range subs {
		want = append(want, fmt.Sprintf("%s|%s|%d", x.subj, x.queue, x.v))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("All = %v, want %v", got, want)
	}
}

func TestMatchBytes(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"foo.*", "", 1})
	buf := []byte("foo.bar")
	if got := canon(s.MatchBytes(buf)); !slices.Equal(got, []string{"1"}) {
		t.Fatalf("MatchBytes = %v", got)
	}
	copy(buf, "xxx.yyy") // the cache must not alias the caller's buffer
	checkMatch(t, s, "foo.bar", "1")
	checkMatch(t, s, "xxx.yyy")
}

func TestCacheAdmitsOnSecondMiss(t *testing.T) {
	s := New[int]()
	s.seen.lottery = 0
	// _INBOX.x.lit: the results depend on the last token (see prefix.go).
	mustInsert(t, s, sub{"_INBOX.x.*", "", 1}, sub{"_INBOX.x.lit", "", 2})
	for i := range 4 * maxCache {
		checkMatch(t, s, "_INBOX.x."+strconv.Itoa(i), "1")
	}
	if n := s.Stats().NumCache; n != 0 {
		t.Fatalf("%d subjects matched once were cached", n)
	}
	checkMatch(t, s, "_INBOX.x.repeat", "1")
	checkMatch(t, s, "_INBOX.x.repeat", "1")
	if _, ok := s.cache["_INBOX.x.repeat"]; !ok {
		t.Fatal("a subject matched twice in a row is not cached")
	}
	// A fixed cycle of subjects that evict each other from the filter is
	// still cached, by lottery.
	s.seen.lottery = missLottery
	subjects := make([]string, 512)
	for i := range subjects {
		subjects[i] = "_INBOX.x.y" + strconv.Itoa(i)
	}
	for range 100 {
		for _, subj := range subjects {
			s.Match(subj)
		}
	}
	for _, subj := range subjects {
		if _, ok := s.cache[subj]; !ok {
			t.Fatalf("%s not cached after 100 cycles", subj)
		}
	}
	before := s.hits.Load()
	checkMatch(t, s, "_INBOX.x.repeat", "1")
	if s.hits.Load() != before+1 {
		t.Fatal("the third match missed the cache")
	}
}

func TestCachedMatchDoesNotAllocate(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"foo.bar", "", 1}, sub{"foo.*", "q", 2}, sub{">", "", 3})
	s.Match("foo.bar")
	s.Match("nobody.home")
	buf := []byte("foo.bar")
	checks := map[string]func(){
		"Match":       func() { s.Match("foo.bar") },
		"MatchEmpty":  func() { s.Match("nobody.home") },
		"MatchBytes":  func() { s.MatchBytes(buf) },
		"HasInterest": func() { s.HasInterest("foo.baz.qux") },
	}
	for name, f := range checks {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s allocates %.1f times per call", name, n)
		}
	}
}

// TestConcurrent hammers a Sublist from several goroutines. Entries in
// the stable set are never removed, so every Match must include them.
func TestConcurrent(t *testing.T) {
	s := New[int]()
	stable := []sub{{"a.>", "", -1}, {"*.b.*", "q", -2}, {"a.b.c", "", -3}}
	mustInsert(t, s, stable...)
	subjects := []string{"a.b.c", "a.b.d", "x.b.c", "a.x", "a.b.c.d"}
	stableWant := map[string]int{"a.b.c": 3, "a.b.d": 2, "x.b.c": 1, "a.x": 1, "a.b.c.d": 1}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() { churn(t, s, w) })
	}
	for range 4 {
		wg.Go(func() {
			for i := range 3000 {
				subj := subjects[i%len(subjects)]
				if n := countStable(s.Match(subj)); n != stableWant[subj] {
					t.Errorf("Match(%q) saw %d stable entries, want %d", subj, n, stableWant[subj])
					return
				}
				s.HasInterest(subj)
				if i%500 == 0 {
					s.Stats()
					s.All()
				}
			}
		})
	}
	wg.Wait()
	if s.Count() != uint32(len(stable)) {
		t.Fatalf("Count = %d after churn", s.Count())
	}
	for _, subj := range subjects {
		if n := s.Match(subj).Len(); n != stableWant[subj] {
			t.Errorf("final Match(%q) has %d entries, want %d", subj, n, stableWant[subj])
		}
	}
}

func churn(t *testing.T, s *Sublist[int], w int) {
	r := rand.New(rand.NewPCG(uint64(w), 1))
	pats := []string{"a.*.c", "a.b.c", "a.>", "*.*.*", ">", "a.x", "*.b.>"}
	queues := []string{"", "q", "r"}
	for i := range 2000 {
		x := sub{pats[r.IntN(len(pats))], queues[r.IntN(len(queues))], w*100000 + i}
		if err := s.Insert(x.subj, x.queue, x.v); err != nil {
			t.Error(err)
			return
		}
		if err := s.Remove(x.subj, x.queue, x.v); err != nil {
			t.Error(err)
			return
		}
	}
}

func countStable(r *Result[int]) int {
	n := 0
	for _, v := range r.Plain {
		if v < 0 {
			n++
		}
	}
	for _, q := range r.Queues {
		for _, v := range q.Members {
			if v < 0 {
				n++
			}
		}
	}
	return n
}

func TestSetIndexTransitions(t *testing.T) {
	var st set[int]
	for i := range 100 {
		if !st.add(i) || st.add(i) {
			t.Fatalf("add(%d) misbehaved", i)
		}
	}
	if st.idx == nil {
		t.Fatal("large set has no index")
	}
	for i := 0; i < 100; i += 2 {
		if !st.remove(i) || st.remove(i) {
			t.Fatalf("remove(%d) misbehaved", i)
		}
	}
	for i := range 100 {
		if got := st.find(i) >= 0; got != (i%2 == 1) {
			t.Fatalf("find(%d) = %v", i, got)
		}
	}
	for i := 1; i < 100; i += 2 {
		st.remove(i)
	}
	if st.len() != 0 || st.idx != nil || st.items != nil {
		t.Fatalf("emptied set not reset: %+v", st)
	}
}

func TestSublistLayout(t *testing.T) {
	var s Sublist[int]
	if size := unsafe.Sizeof(s); size != 128 {
		t.Errorf("Sublist is %d bytes, want 128 (see the padding comment)", size)
	}
	if end := unsafe.Offsetof(s.cache) + unsafe.Sizeof(s.cache); end > 64 {
		t.Errorf("hot fields end at byte %d, beyond the first cache line", end)
	}
}

// TestManyQueueGroups pushes nodes past the set index thresholds (many
// groups per node, many members per group) and checks against the model.
func TestManyQueueGroups(t *testing.T) {
	s, m := New[int](), model{}
	pats := []string{"a.b", "a.*", ">"}
	for g := range 40 {
		for v := range 20 {
			e := sub{pats[(g+v)%len(pats)], "g" + strconv.Itoa(g), v}
			mustInsert(t, s, e)
			m[e] = true
		}
	}
	m.check(t, s, "a.b")
	for i, e := range m.sortedKeys() {
		if i%3 != 0 {
			mustRemove(t, s, e)
			delete(m, e)
		}
		if i%97 == 0 {
			m.check(t, s, "a.b")
		}
	}
	m.check(t, s, "a.b")
	m.check(t, s, "a.c")
	for e := range m {
		mustRemove(t, s, e)
	}
	if !s.root.isEmpty() {
		t.Fatal("trie not empty")
	}
}

func TestMatchWildcardTokensAsLiterals(t *testing.T) {
	s := New[int]()
	for i, p := range []string{"a.>", "a.*.c", "a.>.c", "a.b", "x.*"} {
		_ = s.Insert(p, "", i)
	}
	cases := map[string][]int{
		"a.>":   {0},    // literal ">" token: matched by a.> only
		"a.*.c": {0, 1}, // literal "*" token matched by a.> and a.*.c
		"x.>":   {4},
		"a..b":  nil,
		"a. b":  nil,
	}
	for subj, want := range cases {
		got := append([]int(nil), s.Match(subj).Plain...)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%q: got %v want %v", subj, got, want)
		}
	}
	if !ValidPublishSubject("a.>.b") || ValidPublishSubject("a..b") || ValidPublishSubject("") || ValidPublishSubject("a b") {
		t.Fatal("ValidPublishSubject")
	}
}

// TestSoloResultShared: subjects matched once under a single matching
// node (reply inboxes) share that node's Result instead of allocating,
// and the shared Result follows every change of the node's entries.
func TestSoloResultShared(t *testing.T) {
	s := New[int]()
	s.seen.lottery = 0
	mustInsert(t, s, sub{"_INBOX.x.*", "", 1}, sub{"other.>", "", 9})
	checkMatch(t, s, "_INBOX.x.first", "1")
	i := 0
	if n := testing.AllocsPerRun(1000, func() { i++; s.Match("_INBOX.x." + strconv.Itoa(i)) }); n > 1 {
		t.Errorf("a once-seen subject under one wildcard allocates %.1f times per match (the subject string is one)", n)
	}
	mustInsert(t, s, sub{"_INBOX.x.*", "", 2})
	checkMatch(t, s, "_INBOX.x.a", "1", "2")
	mustInsert(t, s, sub{"_INBOX.x.*", "g", 3})
	checkMatch(t, s, "_INBOX.x.b", "1", "2", "g:3")
	if err := s.Remove("_INBOX.x.*", "", 1); err != nil {
		t.Fatal(err)
	}
	checkMatch(t, s, "_INBOX.x.c", "2", "g:3")
	// Two matching nodes get a Result of their own, not either node's.
	mustInsert(t, s, sub{"_INBOX.>", "", 4})
	checkMatch(t, s, "_INBOX.x.d", "2", "4", "g:3")
	if err := s.Remove("_INBOX.>", "", 4); err != nil {
		t.Fatal(err)
	}
	checkMatch(t, s, "_INBOX.x.e", "2", "g:3")
}

// TestMatchBytesMissBorrows: a miss the cache does not keep reads the
// caller's bytes in place (fresh subjects, as every compare-and-set
// publish and pub-ack inbox are, allocate nothing); a miss it keeps is
// keyed by a copy, which the caller's later writes cannot change.
func TestMatchBytesMissBorrows(t *testing.T) {
	s := New[int]()
	if err := s.Insert("cas.>", "", 1); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 32)
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		n++
		buf = strconv.AppendInt(append(buf[:0], "cas."...), int64(n), 10)
		if r := s.MatchBytes(buf); len(r.Plain) != 1 {
			t.Fatalf("cas.%d: %v", n, r.Plain)
		}
	})
	if allocs > 0.5 { // the admission lottery keeps about 1 in 16, copied
		t.Fatalf("%.2f allocations per fresh-subject miss", allocs)
	}
	key := []byte("cas.kept")
	s.MatchBytes(key)
	s.MatchBytes(key) // the prefix missed twice in a row: admitted (prefix.go)
	copy(key, "xyz.zzzz")
	s.mu.RLock()
	_, kept := s.prefix["cas"]
	_, aliased := s.prefix["xyz"]
	s.mu.RUnlock()
	if !kept || aliased {
		t.Fatalf("cache keyed by the caller's bytes: kept %v, aliased %v", kept, aliased)
	}
}
