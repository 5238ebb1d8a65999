package store

import (
	"slices"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/subjects"
	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// Queries over a store's per-subject index, the same for both stores.

// lastInIndex is the last sequence of a subject matching filter (a subject
// or a wildcard pattern; not "" or ">", which each store answers itself).
func lastInIndex(fss *subjects.Table, filter string) uint64 {
	if !sublist.SubjectHasWildcard(filter) {
		ss, _ := fss.Get(filter)
		return ss.Last
	}
	var last uint64
	for subj, ss := range fss.All() {
		if ss.Last > last && sublist.MatchLiteral(subj, filter) {
			last = ss.Last
		}
	}
	return last
}

// subjectsStateOf is the state of each subject matching filter ("" or ">":
// every subject).
func subjectsStateOf(fss *subjects.Table, filter string) map[string]SimpleState {
	out := map[string]SimpleState{}
	for subj, ss := range fss.All() {
		if filter == "" || filter == ">" || sublist.MatchLiteral(subj, filter) {
			out[strings.Clone(subj)] = SimpleState(ss)
		}
	}
	return out
}

// filterSet is a consumer's subject filters sorted out: all (no filter,
// or one matching every subject), or distinct literals and wildcards.
type filterSet struct {
	all  bool
	lits []string
	wild []wildFilter
}

func newFilterSet(filters []string) filterSet {
	f := filterSet{all: len(filters) == 0}
	for _, flt := range filters {
		switch {
		case matchAll(flt):
			return filterSet{all: true}
		case sublist.SubjectHasWildcard(flt):
			f.wild = append(f.wild, compileWild(flt))
		case !slices.Contains(f.lits, flt):
			f.lits = append(f.lits, flt)
		}
	}
	return f
}

// match reports whether subj matches one of the filters.
func (f *filterSet) match(subj string) bool {
	if f.all || slices.Contains(f.lits, subj) {
		return true
	}
	for i := range f.wild {
		if f.wild[i].match(subj) {
			return true
		}
	}
	return false
}

// wildFilter is a subject pattern with wildcards, split for matching
// many subjects against it: most are told apart by their prefix alone.
type wildFilter struct {
	prefix string   // the literal tokens before the first wildcard, each with its "."
	toks   []string // the tokens from the first wildcard on
}

func compileWild(pattern string) wildFilter {
	toks := strings.Split(pattern, ".")
	i := 0
	for i < len(toks) && toks[i] != "*" && toks[i] != ">" {
		i++
	}
	var prefix string
	if i > 0 {
		prefix = strings.Join(toks[:i], ".") + "."
	}
	return wildFilter{prefix: prefix, toks: toks[i:]}
}

// match reports whether the literal subject subj matches the pattern.
func (w *wildFilter) match(subj string) bool {
	if !strings.HasPrefix(subj, w.prefix) {
		return false
	}
	s := subj[len(w.prefix):]
	for k, t := range w.toks {
		if t == ">" {
			return s != ""
		}
		last := k == len(w.toks)-1
		j := strings.IndexByte(s, '.')
		if j < 0 {
			return last && s != "" && (t == "*" || t == s)
		}
		if last || t != "*" && t != s[:j] {
			return false
		}
		s = s[j+1:]
	}
	return false
}

// eachSubject calls fn with every subject of fss matching f (not f.all:
// the caller has counters for that): the literals by lookup, every
// subject once when there is a wildcard.
func (f *filterSet) eachSubject(fss *subjects.Table, fn func(string, subjects.State)) {
	if f.all || len(f.wild) > 0 {
		for subj, ss := range fss.All() {
			if f.match(subj) {
				fn(subj, ss)
			}
		}
		return
	}
	for _, s := range f.lits {
		if ss, ok := fss.Get(s); ok {
			fn(s, ss)
		}
	}
}

// lastMatchingIndex is the last sequence of a subject matching f (not
// f.all), 0 when none.
func lastMatchingIndex(fss *subjects.Table, f filterSet) uint64 {
	var last uint64
	f.eachSubject(fss, func(_ string, ss subjects.State) { last = max(last, ss.Last) })
	return last
}

// splitTails is what NumPending learns from the per-subject index alone:
// n, the messages >= from of subjects entirely at or after from (with
// lastPer, every subject whose last message is >= from counts 1), and the
// subjects with messages on both sides of from, whose part >= from the
// store has to count. Those are the subjects matching f, or, when
// complement is set, the subjects not matching f (a wildcard matching
// most subjects): the answer is then every message >= from less theirs.
func splitTails(fss *subjects.Table, from uint64, f filterSet, lastPer bool) (n uint64, part tails, complement bool) {
	if lastPer || len(f.wild) == 0 {
		n, part = collectTails(fss, from, f, lastPer, true)
		return n, part, false
	}
	var in, out tails
	for subj, ss := range fss.All() {
		if f.match(subj) {
			in.note(ss, from)
		} else {
			out.note(ss, from)
		}
	}
	complement = out.total < in.total
	side := &in
	if complement {
		side = &out
	}
	if side.parts == 0 {
		return side.whole, tails{}, complement
	}
	n, part = collectTails(fss, from, f, false, !complement)
	return n, part, complement
}

// collectTails is splitTails over the subjects for which f.match is want.
func collectTails(fss *subjects.Table, from uint64, f filterSet, lastPer, want bool) (n uint64, part tails) {
	visit := func(subj string, ss subjects.State) {
		switch {
		case ss.Msgs == 0 || ss.Last < from:
		case lastPer:
			n++
		case ss.First >= from:
			n += ss.Msgs
		default:
			if part.set == nil {
				part.set = map[string]subjects.State{}
			}
			part.set[subj] = ss
			part.note(ss, from)
		}
	}
	if want {
		f.eachSubject(fss, visit)
		return n, part
	}
	for subj, ss := range fss.All() {
		if !f.match(subj) {
			visit(subj, ss)
		}
	}
	return n, part
}

// tails are subjects with messages on both sides of some sequence from:
// parts of them, with total messages, all in [lo, hi] (and whole, the
// messages >= from of subjects entirely at or after from, while counting).
type tails struct {
	set    map[string]subjects.State
	parts  int
	total  uint64
	lo, hi uint64
	whole  uint64
}

// note counts a subject's state into t.
func (t *tails) note(ss subjects.State, from uint64) {
	switch {
	case ss.Msgs == 0 || ss.Last < from:
	case ss.First >= from:
		t.whole += ss.Msgs
	default:
		if t.parts == 0 {
			t.lo, t.hi = ss.First, ss.Last
		}
		t.parts++
		t.total += ss.Msgs
		t.lo, t.hi = min(t.lo, ss.First), max(t.hi, ss.Last)
	}
}

// count counts the messages >= from of the subjects in t, given cnt, which
// counts their live messages in a range: it counts whichever side of from
// is shorter.
func (t *tails) count(from uint64, cnt func(lo, hi uint64) uint64) uint64 {
	if len(t.set) == 0 {
		return 0
	}
	if t.hi-from <= from-t.lo {
		return cnt(from, t.hi)
	}
	return t.total - cnt(t.lo, from-1)
}
