package sublist

import (
	"hash/maphash"
	"strconv"
	"sync/atomic"
	"testing"
)

// cachePrefix matches two subjects under prefix so that its second miss
// admits it (the filter), and fails unless a third is then a cache hit.
// The two subjects are picked so that the filter's slots of the prefix
// and of both differ: a subject's own miss taking the prefix's slot would
// delay the prefix's admission, as the filter means to (it failed about 2
// runs in 500 on such a collision with fixed names).
func cachePrefix(t *testing.T, s *Sublist[int], prefix string, want ...string) {
	t.Helper()
	p1, p2 := apartInFilter(s, prefix)
	checkMatch(t, s, p1, want...)
	checkMatch(t, s, p2, want...)
	before := s.hits.Load()
	checkMatch(t, s, prefix+".p3", want...)
	if s.hits.Load() != before+1 {
		t.Fatalf("%s.p3 missed: the prefix %q was not cached", prefix, prefix)
	}
}

// fresh numbers the subjects apartInFilter picks.
var fresh atomic.Uint32

// apartInFilter is two subjects under prefix, never matched before, whose
// miss-filter slots differ from each other's and from the prefix's.
func apartInFilter(s *Sublist[int], prefix string) (string, string) {
	slot := func(x string) uint64 { return maphash.String(s.seen.seed, x) % missSlots }
	var picked []string
	taken := map[uint64]bool{slot(prefix): true}
	for len(picked) < 2 {
		subj := prefix + ".p" + strconv.FormatUint(uint64(fresh.Add(1)), 10) + "x"
		if !taken[slot(subj)] {
			taken[slot(subj)] = true
			picked = append(picked, subj)
		}
	}
	return picked[0], picked[1]
}

// TestPrefixCacheServesInboxes: the reply inboxes of one connection, each
// used once, share one cached Result through their prefix.
func TestPrefixCacheServesInboxes(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"_INBOX.x.*", "", 1}, sub{"cas.>", "", 2})
	cachePrefix(t, s, "_INBOX.x", "1")
	cachePrefix(t, s, "cas.c0", "2")
	for i := range 100 {
		before := s.hits.Load()
		checkMatch(t, s, "_INBOX.x."+strconv.Itoa(i), "1")
		checkMatch(t, s, "cas.c0."+strconv.Itoa(i), "2")
		if s.hits.Load() != before+2 {
			t.Fatalf("message %d missed the prefix cache", i)
		}
	}
	// Only the misses before each prefix was cached (p1, p2) may have
	// reached the subject cache (its admission admits some at random).
	if n := len(s.cache); n > 4 {
		t.Fatalf("%d subjects of a cached prefix went to the subject cache", n)
	}
}

// TestPrefixCacheFollowsChanges: an Insert or Remove after a prefix was
// cached is seen by the next match of any subject under it, whether the
// change is a literal subscription to one of its subjects (the
// publisher's own inbox subscribed after its first requests) or a
// wildcard above it.
func TestPrefixCacheFollowsChanges(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"_INBOX.x.*", "", 1})
	cachePrefix(t, s, "_INBOX.x", "1")
	mustInsert(t, s, sub{"_INBOX.x.5", "", 2})
	checkMatch(t, s, "_INBOX.x.5", "1", "2")
	checkMatch(t, s, "_INBOX.x.6", "1")
	checkMatch(t, s, "_INBOX.x.5", "1", "2")
	mustRemove(t, s, sub{"_INBOX.x.5", "", 2})
	cachePrefix(t, s, "_INBOX.x", "1")
	mustInsert(t, s, sub{"_INBOX.>", "q", 3})
	checkMatch(t, s, "_INBOX.x.7", "1", "q:3")
	mustRemove(t, s, sub{"_INBOX.x.*", "", 1})
	checkMatch(t, s, "_INBOX.x.8", "q:3")
	mustRemove(t, s, sub{"_INBOX.>", "q", 3})
	checkMatch(t, s, "_INBOX.x.9")
}

// TestPrefixCacheRejectsBadLastToken: a cached prefix does not make an
// invalid subject under it match.
func TestPrefixCacheRejectsBadLastToken(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"a.>", "", 1})
	cachePrefix(t, s, "a.b", "1")
	for _, subj := range []string{"a.b.", "a.b.c d", "a.b.\t", "a.b.x\r\n"} {
		if r := s.Match(subj); !r.Empty() {
			t.Errorf("Match(%q) = %v, want nothing", subj, canon(r))
		}
		if r := s.MatchBytes([]byte(subj)); !r.Empty() {
			t.Errorf("MatchBytes(%q) = %v, want nothing", subj, canon(r))
		}
	}
	checkMatch(t, s, "a.b.*", "1") // a publish to a "*" token is routed as a literal
}

// TestPrefixCacheBounded: many prefixes keep the cache within its bound.
func TestPrefixCacheBounded(t *testing.T) {
	s := New[int]()
	mustInsert(t, s, sub{"_INBOX.*.*", "", 1})
	for i := range 4 * maxPrefix {
		p := "_INBOX." + strconv.Itoa(i)
		checkMatch(t, s, p+".a", "1")
		checkMatch(t, s, p+".b", "1")
		if n := len(s.prefix); n > maxPrefix {
			t.Fatalf("prefix cache grew to %d", n)
		}
	}
	if len(s.prefix) == 0 {
		t.Fatal("nothing cached")
	}
}

// BenchmarkMatchBytesFreshInbox: a reply inbox used once, as every
// pub ack's is.
func BenchmarkMatchBytesFreshInbox(b *testing.B) {
	s := benchSublist(b)
	if err := s.Insert("_INBOX.abcdefghijklmnopqrstuv.*", "", -1); err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 64)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		buf = strconv.AppendInt(append(buf[:0], "_INBOX.abcdefghijklmnopqrstuv."...), int64(n), 10)
		if s.MatchBytes(buf).Empty() {
			b.Fatal("no match")
		}
	}
}
