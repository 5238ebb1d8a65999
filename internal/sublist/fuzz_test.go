package sublist

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// naiveValid is an independent, split-based restatement of the subject
// rules used as an oracle.
func naiveValid(s string) (valid, literal bool) {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return false, false
	}
	toks := strings.Split(s, ".")
	literal = true
	for i, tok := range toks {
		switch {
		case tok == "":
			return false, false
		case tok == ">" && i != len(toks)-1:
			return false, false
		case tok == "*" || tok == ">":
			literal = false
		}
	}
	return true, literal
}

// naiveMatch reports whether the valid pattern matches subject, by splitting
// both on '.' and comparing token by token. Wildcard tokens in the subject
// are literal tokens (nats-server routes such publishes).
func naiveMatch(pattern, subject string) bool {
	if subject == "" || strings.ContainsAny(subject, " \t\r\n") || slices.Contains(strings.Split(subject, "."), "") {
		return false
	}
	p, s := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, pt := range p {
		if pt == ">" {
			return len(s) > i
		}
		if i >= len(s) || pt != "*" && pt != s[i] {
			return false
		}
	}
	return len(p) == len(s)
}

// byteReader hands out fuzz bytes, then zeros once exhausted.
type byteReader struct{ b []byte }

func (r *byteReader) next() int {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return int(c)
}

func (r *byteReader) subject(alphabet []string, maxToks int) string {
	n := 1 + r.next()%maxToks
	toks := make([]string, n)
	for i := range toks {
		toks[i] = alphabet[r.next()%len(alphabet)]
	}
	return strings.Join(toks, ".")
}

var (
	patAlphabet = []string{"a", "b", "c", "*", ">", "a*", "*"}
	litAlphabet = []string{"a", "b", "c", "a*"}
)

// model mirrors a Sublist as a plain set of entries.
type model map[sub]bool

func (m model) want(subject string) []string {
	var out []string
	for e := range m {
		if !naiveMatch(e.subj, subject) {
			continue
		}
		if e.queue == "" {
			out = append(out, strconv.Itoa(e.v))
		} else {
			out = append(out, e.queue+":"+strconv.Itoa(e.v))
		}
	}
	return sorted(out...)
}

func (m model) sortedKeys() []sub {
	keys := make([]sub, 0, len(m))
	for e := range m {
		keys = append(keys, e)
	}
	slices.SortFunc(keys, func(x, y sub) int {
		return strings.Compare(x.subj+"|"+x.queue+"|"+strconv.Itoa(x.v), y.subj+"|"+y.queue+"|"+strconv.Itoa(y.v))
	})
	return keys
}

func (m model) check(t *testing.T, s *Sublist[int], subject string) {
	t.Helper()
	want := m.want(subject)
	for range 3 { // the first passes may walk the trie, the third hits the cache
		if got := s.HasInterest(subject); got != (len(want) > 0) {
			t.Fatalf("HasInterest(%q) = %v, want %v", subject, got, len(want) > 0)
		}
		if got := canon(s.Match(subject)); !slices.Equal(got, want) {
			t.Fatalf("Match(%q) = %v, want %v (entries %v)", subject, got, want, m)
		}
	}
}

// FuzzMatch interprets the fuzz input as a program of inserts, removes and
// matches over a small token alphabet (so patterns overlap heavily and the
// cache is patched constantly), checking every Match against the model.
// The raw strings add one arbitrary entry and one arbitrary query.
func FuzzMatch(f *testing.F) {
	f.Add([]byte{0, 1, 2, 2, 0, 3, 3, 1, 2, 4, 0, 0, 2}, "foo.*", "foo.bar")
	f.Add([]byte{0, 3, 3, 4, 2, 2, 0, 2, 1, 1, 3, 1, 0, 2, 6, 6, 1, 0, 2}, ">", "a")
	f.Add([]byte("insert remove match all the things"), "a.>", "a.b.c")
	f.Add([]byte{}, "a. b", "a")
	f.Fuzz(func(t *testing.T, prog []byte, rawPat, rawSubj string) {
		s, m := New[int](), model{}
		if valid, _ := naiveValid(rawPat); valid {
			mustInsert(t, s, sub{rawPat, "", 1000})
			m[sub{rawPat, "", 1000}] = true
		} else if err := s.Insert(rawPat, "", 1000); err == nil {
			t.Fatalf("Insert(%q) accepted an invalid subject", rawPat)
		}
		m.check(t, s, rawSubj)
		r := &byteReader{prog}
		for steps := 0; len(r.b) > 0 && steps < 200; steps++ {
			runOp(t, s, m, r)
		}
		for _, e := range s.All() {
			if !m[sub{e.Subject, e.Queue, e.Value}] {
				t.Fatalf("All returned unknown entry %+v", e)
			}
		}
		if int(s.Count()) != len(m) || len(s.All()) != len(m) {
			t.Fatalf("Count = %d, All = %d, model = %d", s.Count(), len(s.All()), len(m))
		}
		m.check(t, s, rawSubj)
	})
}

func runOp(t *testing.T, s *Sublist[int], m model, r *byteReader) {
	switch r.next() % 4 {
	case 0, 1: // insert
		e := sub{r.subject(patAlphabet, 4), []string{"", "", "q", "r"}[r.next()%4], r.next() % 8}
		err := s.Insert(e.subj, e.queue, e.v)
		if valid, _ := naiveValid(e.subj); valid != (err == nil) {
			t.Fatalf("Insert(%q) = %v, valid = %v", e.subj, err, valid)
		}
		if err == nil {
			m[e] = true
		}
	case 2: // remove an existing entry (or a missing one)
		e := sub{r.subject(patAlphabet, 4), "", r.next() % 8}
		if pick := r.next(); len(m) > 0 && pick%4 != 0 {
			e = m.sortedKeys()[pick%len(m)] // deterministic for replay
		}
		err := s.Remove(e.subj, e.queue, e.v)
		if valid, _ := naiveValid(e.subj); valid && (err == nil) != m[e] {
			t.Fatalf("Remove(%+v) = %v, present = %v", e, err, m[e])
		}
		delete(m, e)
	case 3:
		m.check(t, s, r.subject(litAlphabet, 5))
	}
}

// FuzzValidSubject checks that the subject helpers never panic and agree
// with the split-based oracle on arbitrary input.
func FuzzValidSubject(f *testing.F) {
	for _, seed := range []string{"", ".", "foo.", ".foo", "foo..bar", "foo. bar", "*", ">", "foo.>.bar", "foo*", "a.*.>", "\t", "ü.>"} {
		f.Add(seed, "a.>")
	}
	f.Fuzz(func(t *testing.T, s, other string) {
		valid, lit := naiveValid(s)
		if ValidSubject(s) != valid || ValidLiteralSubject(s) != lit {
			t.Fatalf("ValidSubject(%q) = %v, ValidLiteralSubject = %v; want %v, %v",
				s, ValidSubject(s), ValidLiteralSubject(s), valid, lit)
		}
		toks := strings.Split(s, ".")
		if s != "" && NumTokens(s) != len(toks) {
			t.Fatalf("NumTokens(%q) = %d", s, NumTokens(s))
		}
		for i := 0; i <= len(toks)+1; i++ {
			want := ""
			if i >= 1 && i <= len(toks) && s != "" {
				want = toks[i-1]
			}
			if got := TokenAt(s, i); got != want {
				t.Fatalf("TokenAt(%q, %d) = %q, want %q", s, i, got, want)
			}
		}
		if valid && SubjectHasWildcard(s) == lit {
			t.Fatalf("SubjectHasWildcard(%q) disagrees with literal = %v", s, lit)
		}
		if valid != SubjectIsSubsetMatch(s, s) || valid != SubjectsCollide(s, s) {
			t.Fatalf("reflexive subset/collide wrong for %q", s)
		}
		if lit && ValidSubject(other) && MatchLiteral(s, other) != naiveMatch(other, s) {
			t.Fatalf("MatchLiteral(%q, %q) = %v", s, other, MatchLiteral(s, other))
		}
		SubjectIsSubsetMatch(s, other)
		SubjectsCollide(s, other)
		ValidQueueName(s)
	})
}

// FuzzSubjectRelations checks SubjectIsSubsetMatch and SubjectsCollide
// against brute force: every literal subject over the tokens involved (plus
// a fresh one) up to one token longer than either pattern. That bound is
// enough for a counterexample or a common subject to exist if any does.
func FuzzSubjectRelations(f *testing.F) {
	f.Add([]byte{2, 0, 3}, []byte{2, 0, 4})
	f.Add([]byte{1, 4}, []byte{3, 3, 2, 1})
	f.Add([]byte{0, 3, 3}, []byte{0, 4})
	f.Fuzz(func(t *testing.T, ab, bb []byte) {
		alpha := []string{"a", "b", "*", ">"}
		a := (&byteReader{ab}).subject(alpha, 4)
		b := (&byteReader{bb}).subject(alpha, 4)
		if !ValidSubject(a) || !ValidSubject(b) {
			return
		}
		subset, collide := true, false
		forEachLiteral([]string{"a", "b", "z"}, max(NumTokens(a), NumTokens(b))+1, func(lit string) {
			ma, mb := MatchLiteral(lit, a), MatchLiteral(lit, b)
			if ma != naiveMatch(a, lit) {
				t.Fatalf("MatchLiteral(%q, %q) = %v", lit, a, ma)
			}
			subset = subset && (!ma || mb)
			collide = collide || (ma && mb)
		})
		if got := SubjectIsSubsetMatch(a, b); got != subset {
			t.Fatalf("SubjectIsSubsetMatch(%q, %q) = %v, want %v", a, b, got, subset)
		}
		if got := SubjectsCollide(a, b); got != collide {
			t.Fatalf("SubjectsCollide(%q, %q) = %v, want %v", a, b, got, collide)
		}
	})
}

// forEachLiteral calls fn with every subject of 1..maxToks tokens drawn
// from alphabet.
func forEachLiteral(alphabet []string, maxToks int, fn func(string)) {
	var rec func(prefix string, n int)
	rec = func(prefix string, n int) {
		for _, tok := range alphabet {
			subj := tok
			if prefix != "" {
				subj = prefix + "." + tok
			}
			fn(subj)
			if n > 1 {
				rec(subj, n-1)
			}
		}
	}
	rec("", maxToks)
}
