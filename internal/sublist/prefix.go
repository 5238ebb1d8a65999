package sublist

import (
	"strings"
	"unsafe"
)

// The prefix cache serves subjects used once that all share a prefix: the
// reply inboxes of one connection ("_INBOX.<id>.<n>", one per request, all
// under its "_INBOX.<id>.*") and per-message subjects under a wildcard
// ("orders.<n>" under "orders.>"). Each misses the subject cache (it is
// admitted there only on a second miss), so each walked the trie. When no
// level the walk consulted for the last token holds a literal token, the
// Result does not depend on that token: every subject with the same
// leading tokens and any last token gets the same one. Such a Result is
// cached under the subject without its last token, together with the
// generation it was computed in; an entry is used only while the
// generation is unchanged (no Insert or Remove since), so it needs no
// patching and a stale one just misses.

// maxPrefix bounds the number of cached prefixes.
const maxPrefix = 256

// prefixEntry is the Result of every subject under one prefix, valid in
// generation gen.
type prefixEntry[T comparable] struct {
	r   *Result[T]
	gen uint64
}

// lastSep is the index of subject's last separator, or -1.
func lastSep(subject string) int { return strings.LastIndexByte(subject, '.') }

// prefixLookup returns the cached Result of subject through its prefix.
// Caller holds mu (either mode). The prefix part was valid when cached; the
// last token must be one a publish may use (non-empty, no whitespace).
func (s *Sublist[T]) prefixLookup(subject string) (*Result[T], bool) {
	if len(s.prefix) == 0 {
		return nil, false
	}
	i := lastSep(subject)
	if i <= 0 || i == len(subject)-1 {
		return nil, false
	}
	e, ok := s.prefix[subject[:i]]
	if !ok || e.gen != s.gen {
		return nil, false
	}
	for _, c := range []byte(subject[i+1:]) {
		if isSpace(c) {
			return nil, false
		}
	}
	return e.r, true
}

// prefixStore caches r, computed in generation gen and independent of
// subject's last token, for every subject with the same leading tokens, on
// the second miss of that prefix in a short while (the missFilter). A
// subject of one token has no prefix.
func (s *Sublist[T]) prefixStore(subject string, r *Result[T], gen uint64) {
	i := lastSep(subject)
	if i <= 0 {
		return
	}
	p := subject[:i]
	if !s.seen.admit(p) {
		return
	}
	p = strings.Clone(p) // subject may be a view of a reusable buffer
	s.mu.Lock()
	if gen == s.gen {
		if len(s.prefix) >= maxPrefix {
			s.evictPrefixes()
		}
		s.prefix[p] = prefixEntry[T]{r: r, gen: gen}
	}
	s.mu.Unlock()
}

// evictPrefixes drops stale entries, then random ones, down to three
// quarters of maxPrefix. Caller holds mu for writing.
func (s *Sublist[T]) evictPrefixes() {
	for k, e := range s.prefix {
		if e.gen != s.gen {
			delete(s.prefix, k)
		}
	}
	for k := range s.prefix {
		if len(s.prefix) <= maxPrefix*3/4 {
			return
		}
		delete(s.prefix, k)
	}
}

// viewString is b as a string without a copy, for lookups only.
func viewString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
