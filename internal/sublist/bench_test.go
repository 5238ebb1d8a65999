package sublist

import (
	"fmt"
	"strconv"
	"testing"
)

// benchSublist builds a table shaped like a busy server: many literal
// subscriptions, a layer of wildcards and a few queue groups.
func benchSublist(b *testing.B) *Sublist[int] {
	b.Helper()
	s := New[int]()
	v := 0
	add := func(subj, queue string) {
		v++
		if err := s.Insert(subj, queue, v); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 100 {
		for j := range 10 {
			add(fmt.Sprintf("orders.%d.item.%d", i, j), "")
		}
		add(fmt.Sprintf("orders.%d.>", i), "")
		add(fmt.Sprintf("orders.%d.*.*", i), "workers")
	}
	add("orders.*.item.*", "")
	add("orders.>", "audit")
	add(">", "")
	return s
}

func BenchmarkMatchCached(b *testing.B) {
	s := benchSublist(b)
	s.Match("orders.42.item.7")
	b.ReportAllocs()
	for b.Loop() {
		if s.Match("orders.42.item.7").Empty() {
			b.Fatal("no match")
		}
	}
}

func BenchmarkMatchCachedParallel(b *testing.B) {
	s := benchSublist(b)
	s.Match("orders.42.item.7")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Match("orders.42.item.7")
		}
	})
}

func BenchmarkMatchBytesCached(b *testing.B) {
	s := benchSublist(b)
	subj := []byte("orders.42.item.7")
	s.MatchBytes(subj)
	b.ReportAllocs()
	for b.Loop() {
		s.MatchBytes(subj)
	}
}

// BenchmarkMatchWildcards matches subjects that hit several wildcard
// patterns. "cached" cycles through 512 subjects (fits the cache);
// "uncached" cycles through 8192 so nearly every call is a miss that walks
// the trie, builds a Result and stores it (with eviction).
func BenchmarkMatchWildcards(b *testing.B) {
	for _, n := range []int{512, 8192} {
		name := "cached"
		if n > maxCache {
			name = "uncached"
		}
		b.Run(name, func(b *testing.B) {
			s := benchSublist(b)
			subjects := make([]string, n)
			for i := range subjects {
				subjects[i] = "orders." + strconv.Itoa(i%100) + ".item." + strconv.Itoa(i/100)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				s.Match(subjects[i%n])
				i++
			}
		})
	}
}

func BenchmarkHasInterestUncached(b *testing.B) {
	s := benchSublist(b)
	b.ReportAllocs()
	for b.Loop() {
		s.HasInterest("orders.42.item.7")
	}
}

// BenchmarkInsertRemove measures subscribe/unsubscribe churn, with an empty
// cache and with a full cache that the wildcard pattern must patch.
func BenchmarkInsertRemove(b *testing.B) {
	for _, warm := range []bool{false, true} {
		for _, subj := range []string{"orders.7.item.99", "orders.*.item.>"} {
			b.Run(fmt.Sprintf("%s/warm=%v", subj, warm), func(b *testing.B) {
				s := benchSublist(b)
				if warm {
					for i := range maxCache {
						s.Match("orders." + strconv.Itoa(i%100) + ".item." + strconv.Itoa(i/100))
					}
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := s.Insert(subj, "", -1); err != nil {
						b.Fatal(err)
					}
					if err := s.Remove(subj, "", -1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMatchFresh: every publish is to a subject never seen before,
// as per-message subjects and reply inboxes are, matched by wildcards.
func BenchmarkMatchFresh(b *testing.B) {
	s := New[int]()
	for i, p := range []string{"cas.>", "_INBOX.aGhrtuyE9bQz.*", "other.*.x", "_INBOX.zzz.*"} {
		if err := s.Insert(p, "", i); err != nil {
			b.Fatal(err)
		}
	}
	subjs := make([][]byte, 1<<16)
	for i := range subjs {
		if i%2 == 0 {
			subjs[i] = []byte("cas." + strconv.Itoa(i))
		} else {
			subjs[i] = []byte("_INBOX.aGhrtuyE9bQz." + strconv.Itoa(i))
		}
	}
	b.ResetTimer()
	for i := range b.N {
		if s.MatchBytes(subjs[i&(1<<16-1)]).Empty() {
			b.Fatal("no match")
		}
	}
}
