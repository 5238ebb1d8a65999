package store

import (
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
