package sublist

import "testing"

func TestValidSubject(t *testing.T) {
	tests := []struct {
		subj         string
		valid, lit   bool
		hasWildcards bool
	}{
		{"", false, false, false},
		{".", false, false, false},
		{"..", false, false, false},
		{"foo.", false, false, false},
		{".foo", false, false, false},
		{"foo..bar", false, false, false},
		{"foo. bar", false, false, false},
		{"foo bar", false, false, false},
		{"foo\tbar", false, false, false},
		{"foo\r", false, false, false},
		{"\nfoo", false, false, false},
		{" ", false, false, false},
		{"foo.>.bar", false, false, true},
		{">.foo", false, false, true},
		{">.>", false, false, true},
		{"foo", true, true, false},
		{"foo.bar.baz", true, true, false},
		{"foo*", true, true, false},
		{"foo>", true, true, false},
		{"*foo.>bar", true, true, false},
		{"foo.*bar*", true, true, false},
		{"*", true, false, true},
		{">", true, false, true},
		{"foo.*", true, false, true},
		{"foo.>", true, false, true},
		{"*.*.>", true, false, true},
		{"foo.*.bar", true, false, true},
		{"$SYS.REQ.>", true, false, true},
		{"_INBOX.abc123", true, true, false},
		{"ünïcode.✓", true, true, false},
	}
	for _, tt := range tests {
		if got := ValidSubject(tt.subj); got != tt.valid {
			t.Errorf("ValidSubject(%q) = %v, want %v", tt.subj, got, tt.valid)
		}
		if got := ValidLiteralSubject(tt.subj); got != tt.lit {
			t.Errorf("ValidLiteralSubject(%q) = %v, want %v", tt.subj, got, tt.lit)
		}
		if got := SubjectHasWildcard(tt.subj); got != tt.hasWildcards {
			t.Errorf("SubjectHasWildcard(%q) = %v, want %v", tt.subj, got, tt.hasWildcards)
		}
	}
}

func TestValidQueueName(t *testing.T) {
	tests := map[string]bool{
		"":        false,
		" ":       false,
		"q 1":     false,
		"q\t":     false,
		"\nq":     false,
		"q\r":     false,
		"workers": true,
		"a.b":     true,
		"*":       true,
		">":       true,
	}
	for q, want := range tests {
		if got := ValidQueueName(q); got != want {
			t.Errorf("ValidQueueName(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestMatchLiteral(t *testing.T) {
	tests := []struct {
		lit, pat string
		want     bool
	}{
		{"foo", "foo", true},
		{"foo", "bar", false},
		{"foo.bar", "foo.bar", true},
		{"foo.bar", "foo", false},
		{"foo", "foo.bar", false},
		{"foo.bar", "foo.*", true},
		{"foo.bar", "*.bar", true},
		{"foo.bar", "*.*", true},
		{"foo.bar", "*", false},
		{"foo", "*.*", false},
		{"foo.bar", ">", true},
		{"foo", ">", true},
		{"foo", "foo.>", false},
		{"foo.bar", "foo.>", true},
		{"foo.bar.baz", "foo.>", true},
		{"foo.bar.baz", "foo.*.>", true},
		{"foo.bar", "foo.*.>", false},
		{"foo.bar.baz", "*.bar.*", true},
		{"foo.baz.baz", "*.bar.*", false},
		{"foo*", "foo*", true},
		{"foox", "foo*", false},
		{"foo.*", "foo.*", true},
		{"", ">", false},
		{"foo", "", false},
	}
	for _, tt := range tests {
		if got := MatchLiteral(tt.lit, tt.pat); got != tt.want {
			t.Errorf("MatchLiteral(%q, %q) = %v, want %v", tt.lit, tt.pat, got, tt.want)
		}
	}
}

func TestSubjectIsSubsetMatch(t *testing.T) {
	tests := []struct {
		subset, pat string
		want        bool
	}{
		{"foo", "foo", true},
		{"foo", "bar", false},
		{"foo", "*", true},
		{"foo", ">", true},
		{"*", ">", true},
		{">", ">", true},
		{">", "*", false},
		{"*", "foo", false},
		{"*", "*", true},
		{"foo.bar", "foo.*", true},
		{"foo.*", "foo.*", true},
		{"foo.*", "foo.bar", false},
		{"foo.*", "foo.>", true},
		{"foo.>", "foo.*", false},
		{"foo.>", "foo.>", true},
		{"foo.bar.>", "foo.>", true},
		{"foo.>", "foo.bar.>", false},
		{"foo.*.>", "foo.>", true},
		{"foo.>", "foo.*.>", false},
		{"foo", "foo.>", false},
		{"foo.bar", "*.>", true},
		{"foo.bar", "*.*.>", false},
		{"foo.bar", "foo.bar.baz", false},
		{"foo.bar.baz", "foo.bar", false},
		{"*.bar", "foo.*", false},
		{"foo.bar", "", false},
		{"foo..bar", ">", false},
		{"foo", "foo.", false},
	}
	for _, tt := range tests {
		if got := SubjectIsSubsetMatch(tt.subset, tt.pat); got != tt.want {
			t.Errorf("SubjectIsSubsetMatch(%q, %q) = %v, want %v", tt.subset, tt.pat, got, tt.want)
		}
	}
}

func TestSubjectsCollide(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"foo", "foo", true},
		{"foo", "bar", false},
		{"foo", "*", true},
		{"foo", ">", true},
		{"foo.bar", ">", true},
		{"foo.bar", "*", false},
		{"foo.*", "*.bar", true},
		{"foo.*", "bar.*", false},
		{"foo.>", "foo", false},
		{"foo.>", "foo.bar.baz", true},
		{"foo.>", "*.*.*", true},
		{"foo.*.baz", "*.bar.*", true},
		{"foo.*.baz", "*.bar.qux", false},
		{"foo.*", "foo.*.*", false},
		{"foo.*", "foo.>", true},
		{"foo.*.>", "foo.>", true},
		{"foo.*.>", "foo.bar", false},
		{">", ">", true},
		{"*.>", "foo", false},
		{"a.b.c", "a.b.c.d", false},
		{"foo", "", false},
		{"foo.>", "foo..bar", false},
	}
	for _, tt := range tests {
		if got := SubjectsCollide(tt.a, tt.b); got != tt.want {
			t.Errorf("SubjectsCollide(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := SubjectsCollide(tt.b, tt.a); got != tt.want {
			t.Errorf("SubjectsCollide(%q, %q) = %v, want %v (symmetry)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestTokens(t *testing.T) {
	counts := map[string]int{"": 0, "foo": 1, "foo.bar": 2, "a.b.c.>": 4, ".": 2}
	for s, want := range counts {
		if got := NumTokens(s); got != want {
			t.Errorf("NumTokens(%q) = %d, want %d", s, got, want)
		}
	}
	tests := []struct {
		s     string
		index int
		want  string
	}{
		{"foo.bar.baz", 1, "foo"},
		{"foo.bar.baz", 2, "bar"},
		{"foo.bar.baz", 3, "baz"},
		{"foo.bar.baz", 4, ""},
		{"foo.bar.baz", 0, ""},
		{"foo.bar.baz", -1, ""},
		{"foo", 1, "foo"},
		{"", 1, ""},
		{"$JS.API.STREAM.INFO.orders", 5, "orders"},
	}
	for _, tt := range tests {
		if got := TokenAt(tt.s, tt.index); got != tt.want {
			t.Errorf("TokenAt(%q, %d) = %q, want %q", tt.s, tt.index, got, tt.want)
		}
	}
}
