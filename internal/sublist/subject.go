package sublist

import "strings"

// Subject syntax, as understood by every helper in this file:
//
//   - a subject is a non-empty sequence of tokens separated by '.';
//   - no token may be empty and no whitespace (space, tab, CR, LF) may
//     appear anywhere;
//   - a token consisting of exactly "*" matches any single token;
//   - a token consisting of exactly ">" matches one or more trailing
//     tokens and may only be the last token;
//   - '*' and '>' inside a longer token (e.g. "foo*") are plain characters.

const (
	tsep = "." // token separator
	pwc  = "*" // partial wildcard token
	fwc  = ">" // full wildcard token
)

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n'
}

// checkSubject validates s in a single pass. It reports whether s is a
// valid subscription subject and, if so, whether it has wildcard tokens.
func checkSubject(s string) (valid, wild bool) {
	if s == "" {
		return false, false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			if c := s[i]; c != '.' {
				if isSpace(c) {
					return false, false
				}
				continue
			}
		}
		switch s[start:i] {
		case "":
			return false, false
		case fwc:
			if i != len(s) {
				return false, false
			}
			wild = true
		case pwc:
			wild = true
		}
		start = i + 1
	}
	return true, wild
}

// ValidSubject reports whether s is a valid subscription subject.
// Wildcard tokens are allowed.
func ValidSubject(s string) bool {
	ok, _ := checkSubject(s)
	return ok
}

// ValidLiteralSubject reports whether s is a valid publish subject: a valid
// subject without wildcard tokens.
func ValidLiteralSubject(s string) bool {
	ok, wild := checkSubject(s)
	return ok && !wild
}

// ValidPublishSubject reports whether s can be routed: non-empty tokens and
// no whitespace. Unlike ValidLiteralSubject it accepts "*" and ">" tokens
// anywhere and treats them as literal tokens, as nats-server routes such
// publishes (the object store publishes to DIRECT.GET.<stream>.$O.b.M.>).
// It takes bytes too, so the route parser checks a subject without making
// a string of it.
func ValidPublishSubject[T ~string | ~[]byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			if isSpace(s[i]) {
				return false
			}
			continue
		}
		if i == start {
			return false
		}
		start = i + 1
	}
	return true
}

// ValidQueueName reports whether s can be used as a queue group name:
// non-empty and free of whitespace.
func ValidQueueName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if isSpace(s[i]) {
			return false
		}
	}
	return true
}

// SubjectHasWildcard reports whether any token of s is exactly "*" or ">".
// It does not otherwise validate s.
func SubjectHasWildcard(s string) bool {
	for more := true; more; {
		var tok string
		tok, s, more = strings.Cut(s, tsep)
		if tok == pwc || tok == fwc {
			return true
		}
	}
	return false
}

// MatchLiteral reports whether the subject literal is matched by pattern.
// Tokens of literal are compared verbatim, so a "*" token in literal only
// matches "*" or a wildcard in pattern. Inputs are assumed to be valid; an
// empty literal or pattern never matches.
func MatchLiteral(literal, pattern string) bool {
	if literal == "" || pattern == "" {
		return false
	}
	for {
		pt, prest, pmore := strings.Cut(pattern, tsep)
		if pt == fwc {
			return true // literal has at least one token left
		}
		lt, lrest, lmore := strings.Cut(literal, tsep)
		if pt != pwc && pt != lt {
			return false
		}
		if pmore != lmore {
			return false
		}
		if !pmore {
			return true
		}
		pattern, literal = prest, lrest
	}
}

// SubjectIsSubsetMatch reports whether every literal subject matched by
// subset is also matched by pattern. Both may contain wildcards. Invalid
// subjects yield false, which is the safe answer for permission checks.
func SubjectIsSubsetMatch(subset, pattern string) bool {
	if !ValidSubject(subset) || !ValidSubject(pattern) {
		return false
	}
	for {
		pt, prest, pmore := strings.Cut(pattern, tsep)
		st, srest, smore := strings.Cut(subset, tsep)
		switch {
		case pt == fwc:
			return true
		case st == fwc:
			return false // subset reaches lengths pattern cannot
		case pt != pwc && (st == pwc || st != pt):
			return false
		case pmore != smore:
			return false
		case !pmore:
			return true
		}
		pattern, subset = prest, srest
	}
}

// SubjectsCollide reports whether some literal subject is matched by both a
// and b. Both may contain wildcards. Invalid subjects never collide.
func SubjectsCollide(a, b string) bool {
	if !ValidSubject(a) || !ValidSubject(b) {
		return false
	}
	for {
		at, arest, amore := strings.Cut(a, tsep)
		bt, brest, bmore := strings.Cut(b, tsep)
		switch {
		case at == fwc || bt == fwc:
			return true // both have a token here; ">" absorbs the rest
		case at != pwc && bt != pwc && at != bt:
			return false
		case amore != bmore:
			return false
		case !amore:
			return true
		}
		a, b = arest, brest
	}
}

// NumTokens returns the number of '.'-separated tokens in s (0 for "").
func NumTokens(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(s, tsep) + 1
}

// TokenAt returns the token of s at the 1-based position index, or "" when
// index is out of range.
func TokenAt(s string, index int) string {
	if index < 1 || s == "" {
		return ""
	}
	for i := 1; ; i++ {
		tok, rest, more := strings.Cut(s, tsep)
		if i == index {
			return tok
		}
		if !more {
			return ""
		}
		s = rest
	}
}
