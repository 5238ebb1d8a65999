package server

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// svcMapping turns a subject published on a service import's local subject
// into the exported subject it stands for, as nats-server maps `to`: a
// literal exported subject is always used as is; a wildcard one equal to the
// local subject takes the published subject; otherwise the tokens the local
// subject's wildcards matched fill the exported subject's wildcards in
// order ('>' carries the rest). The result is always a literal subject
// within the exported one, so the exporter only sees what it exported.
type svcMapping struct {
	remote  string
	literal bool     // remote has no wildcard
	usePub  bool     // remote == local, both with wildcards
	slots   []int    // local token index of each '*', in order
	rtoks   []string // remote tokens ('*' and '>' are filled)
	tail    int      // local token index of '>' (when both end with one)
}

func newSvcMapping(local, remote string) (*svcMapping, error) {
	m := &svcMapping{remote: remote}
	switch {
	case !sublist.SubjectHasWildcard(remote):
		m.literal = true
		return m, nil
	case local == remote:
		m.usePub = true
		return m, nil
	}
	ltoks, rtoks := strings.Split(local, "."), strings.Split(remote, ".")
	for i, t := range ltoks {
		if t == "*" {
			m.slots = append(m.slots, i)
		}
	}
	rstars := 0
	for _, t := range rtoks {
		if t == "*" {
			rstars++
		}
	}
	lfwc, rfwc := ltoks[len(ltoks)-1] == ">", rtoks[len(rtoks)-1] == ">"
	if rstars != len(m.slots) || lfwc != rfwc {
		return nil, fmt.Errorf("failed to create mapping transform for service import subject from %q to %q: wildcards do not match", local, remote)
	}
	m.rtoks, m.tail = rtoks, len(ltoks)-1
	return m, nil
}

// apply maps a literal subject matched by the local subject.
func (m *svcMapping) apply(subject string) string {
	if m.literal {
		return m.remote
	}
	if m.usePub {
		return subject
	}
	toks := strings.Split(subject, ".")
	var b strings.Builder
	b.Grow(len(m.remote) + len(subject))
	star := 0
	for i, t := range m.rtoks {
		if i > 0 {
			b.WriteByte('.')
		}
		switch t {
		case "*":
			b.WriteString(toks[m.slots[star]])
			star++
		case ">":
			b.WriteString(strings.Join(toks[m.tail:], "."))
		default:
			b.WriteString(t)
		}
	}
	return b.String()
}
