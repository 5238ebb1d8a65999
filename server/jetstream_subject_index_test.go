package server

import (
	"fmt"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/clock"
)

// The overlap check of a create answers from the account's subject index
// as the full walk over the assignments would, across creates, deletes,
// subject changes and a re-create of a name with its own subjects.
func TestSubjectIndexMatchesWalk(t *testing.T) {
	jc := &jsCluster{js: &jetStream{srv: &Server{clock: clock.Real}}, streams: map[string]map[string]*streamAssignment{}, leaders: newLeaderMap(), changed: make(chan struct{})}
	add := func(op, name string, subjects ...string) {
		sa := &streamAssignment{Account: "A", Config: StreamConfig{Name: name, Subjects: subjects}}
		jc.apply(&metaEntry{Op: op, SA: sa}, nil, startCreated)
	}
	walk := func(skip string, subjects []string) *ApiError {
		return overlapsOthers(subjects, func(yield func([]string) bool) { jc.eachSubjects("A", skip, yield) })
	}
	check := func(name string, subjects ...string) {
		t.Helper()
		got, want := jc.overlapsOtherStreams("A", name, subjects), walk(name, subjects)
		if (got == nil) != (want == nil) {
			t.Fatalf("%s %v: index says %v, walk says %v", name, subjects, got, want)
		}
	}
	for i := range 50 {
		add("add", fmt.Sprintf("S%d", i), fmt.Sprintf("s.%d.>", i))
	}
	check("N", "s.7.x")  // collides with S7
	check("N", "s.*.x")  // collides with all
	check("N", "t.>")    // none
	check("S7", "s.7.>") // its own subjects only
	check("S7", "s.7.>", "s.8.x")
	add("add", "T", "t.a") // indexed on add
	check("N", "t.*")
	add("del", "T", "t.a") // stale: rebuilt without T
	check("N", "t.*")
	add("upd", "S3", "u.3") // S3 moves to u.3
	check("N", "s.3.x")
	check("N", "u.3")
	add("del", "S9")
	check("N", "s.9.q")
}
