package server

import (
	"slices"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/clock"
)

// TestSharedOldNamesUpkeep: the meta apply keeps the set of old-form group
// names that two streams share as streams are added, deleted and created
// again (three streams under one name too), a snapshot's restore makes it
// anew, and sharedOldName answers from it.
func TestSharedOldNamesUpkeep(t *testing.T) {
	s := &Server{clock: clock.Real}
	js := &jetStream{srv: s}
	jc := &jsCluster{js: js, streams: map[string]map[string]*streamAssignment{}, leaders: newLeaderMap(), changed: make(chan struct{})}
	js.cluster = jc
	s.js.Store(js)
	apply := func(op, account, stream string) {
		t.Helper()
		jc.apply(&metaEntry{Op: op, SA: &streamAssignment{Account: account, Config: StreamConfig{Name: stream}}}, nil, startCreated)
	}
	check := func(step string, want ...string) {
		t.Helper()
		var got []string
		if m := jc.sharedOld.p.Load(); m != nil {
			for name := range *m {
				got = append(got, name)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: shared old names %q, want %q", step, got, want)
		}
		for _, name := range []string{"S-team-a-x", "S-a-b-c-d", "S-team-y"} {
			if shared := s.sharedOldName([]byte(name)); shared != slices.Contains(want, name) {
				t.Fatalf("%s: sharedOldName(%q) = %v", step, name, shared)
			}
		}
	}
	check("no streams")
	apply("add", "team-a", "x")
	check("team-a > x alone")
	apply("add", "team", "a-x")
	check("team > a-x added", "S-team-a-x")
	apply("add", "team", "y")
	apply("upd", "team", "a-x")
	check("a stream without '-', an update", "S-team-a-x")
	apply("del", "team-a", "x")
	check("team-a > x deleted")
	apply("del", "team-a", "x") // not found: changes nothing
	check("a second delete")
	apply("add", "team-a", "x")
	check("team-a > x created again", "S-team-a-x")
	// S-a-b-c-d: a's b-c-d, a-b's c-d and a-b-c's d.
	apply("add", "a", "b-c-d")
	apply("add", "a-b", "c-d")
	check("two of three", "S-team-a-x", "S-a-b-c-d")
	apply("add", "a-b-c", "d")
	apply("del", "a", "b-c-d")
	check("two of three left", "S-team-a-x", "S-a-b-c-d")
	apply("del", "a-b", "c-d")
	check("one of three left", "S-team-a-x")

	list := []*streamAssignment{
		{Account: "a", Config: StreamConfig{Name: "b-c-d"}},
		{Account: "a-b-c", Config: StreamConfig{Name: "d"}},
		{Account: "team", Config: StreamConfig{Name: "a-x"}},
		{Account: "team", Config: StreamConfig{Name: "y"}},
	}
	jc.restoreAssignments(list)
	check("restored", "S-a-b-c-d")
	apply("add", "team-a", "x")
	check("created after the restore", "S-a-b-c-d", "S-team-a-x")
}
