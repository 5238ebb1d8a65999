package store

import (
	"strconv"
	"testing"
)

// BenchmarkMemStorePerSubjectHistory stores to many subjects in turn with
// a per-subject limit above 1 (a memory KV bucket with history): every
// store drops its subject's oldest message, whose successor under that
// subject lies a whole round of subjects further on.
func BenchmarkMemStorePerSubjectHistory(b *testing.B) {
	for _, keys := range []int{1000, 100000} {
		b.Run(strconv.Itoa(keys), func(b *testing.B) {
			ms := fillMemStore(b, StoreLimits{MaxMsgsPerSubject: 2}, 2, keys)
			msg := make([]byte, 64)
			i := 0
			for b.Loop() {
				if _, err := ms.StoreMsg("kv.k."+strconv.Itoa(i%keys), nil, msg, 0); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkMemStoreNextBySubject reads one subject's messages in order
// (a consumer filtered on it, a KV history) among 100k other subjects.
func BenchmarkMemStoreNextBySubject(b *testing.B) {
	ms := fillMemStore(b, StoreLimits{}, 8, 100000)
	var sm StoreMsg
	next := uint64(0)
	for b.Loop() {
		if _, err := ms.LoadNextMsg("kv.k.7", next, &sm); err != nil {
			next = 0
			continue
		}
		next = sm.Seq + 1
	}
}

// BenchmarkMemStorePurgeSubject purges one subject down to its last
// message (a KV purge, a subject rollup) among 100k other subjects.
func BenchmarkMemStorePurgeSubject(b *testing.B) {
	ms := fillMemStore(b, StoreLimits{}, 1, 100000)
	msg := make([]byte, 64)
	i := 0
	for b.Loop() {
		subj := "kv.k." + strconv.Itoa(i%100000)
		if _, err := ms.StoreMsg(subj, nil, msg, 0); err != nil {
			b.Fatal(err)
		}
		if n, err := ms.PurgeEx(subj, 0, 1); err != nil || n != 1 {
			b.Fatalf("purged %d, %v", n, err)
		}
		i++
	}
}

// BenchmarkMemStoreFilteredState counts one subject's messages from a
// point on (a filtered consumer's pending count) among 100k subjects.
func BenchmarkMemStoreFilteredState(b *testing.B) {
	ms := fillMemStore(b, StoreLimits{}, 8, 100000)
	for b.Loop() {
		if st := ms.FilteredState(400000, "kv.k.7"); st.Msgs != 4 {
			b.Fatalf("state %+v", st)
		}
	}
}

// fillMemStore stores rounds of one 64-byte message to each of subjects
// subjects kv.k.<n>.
func fillMemStore(b *testing.B, lim StoreLimits, rounds, subjects int) *memStore {
	ms := newMemStore(lim)
	msg := make([]byte, 64)
	for r := 0; r < rounds; r++ {
		for i := 0; i < subjects; i++ {
			if _, err := ms.StoreMsg("kv.k."+strconv.Itoa(i), nil, msg, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	return ms
}
