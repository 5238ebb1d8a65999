package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// manySubjects returns n distinct subjects: literals and wildcards behind
// literal prefixes, none colliding.
func manySubjects(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		if i%2 == 0 {
			out[i] = fmt.Sprintf("%s.%d.new", prefix, i)
		} else {
			out[i] = fmt.Sprintf("%s.%d.*", prefix, i)
		}
	}
	return out
}

// A stream with 20,000 subjects is created in moments, not after a
// quadratic overlap check holding the read loop for minutes (issue 16);
// so is a second one checked against it.
func TestJetStreamManySubjectsCreate(t *testing.T) {
	s := runJSServer(t)
	nc := connectNATS(t, s.ClientURL())
	js, _ := jetstream.New(nc)
	const n = 20000
	for _, name := range []string{"MANY1", "MANY2"} {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		start := time.Now()
		_, err := js.CreateStream(c, jetstream.StreamConfig{Name: name, Subjects: manySubjects(strings.ToLower(name), n), Storage: jetstream.MemoryStorage})
		cancel()
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		// Generous for -race on a loaded 2-core machine; the quadratic
		// check took minutes there.
		if d := time.Since(start); d > 15*time.Second {
			t.Fatalf("creating %s with %d subjects took %v", name, n, d)
		}
		t.Logf("%s: %v", name, time.Since(start))
	}
	// The check still finds a collision among them, and with MANY1.
	subs := manySubjects("many3", n)
	subs = append(subs, "many3.77.x") // collides with many3.77.*
	_, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "MANY3", Subjects: subs, Storage: jetstream.MemoryStorage})
	if err == nil || !strings.Contains(err.Error(), `subject "many3.77.*" overlaps with "many3.77.x"`) {
		t.Fatalf("create MANY3: %v", err)
	}
	_, err = js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "MANY4", Subjects: []string{"x.y", "*.1999.new"}, Storage: jetstream.MemoryStorage})
	if apiCode(err) != 10065 {
		t.Fatalf("create MANY4 overlapping MANY1: %v", err)
	}
}

// Subjects of one stream may not collide, as in nats-server: two
// wildcards that share a literal subject overlap even when neither
// contains the other.
func TestStreamSubjectsCollide(t *testing.T) {
	for subjects, want := range map[string]string{
		"a.*.c b.>":   "",
		"a.*.c a.b.*": `subject "a.*.c" overlaps with "a.b.*"`,
		"a.> a.b":     `subject "a.>" overlaps with "a.b"`,
		"x a.b a.*":   `subject "a.b" overlaps with "a.*"`,
		"a a":         "duplicate subjects detected",
	} {
		e := checkSubjects(strings.Fields(subjects))
		switch {
		case want == "" && e != nil:
			t.Errorf("%s: %v", subjects, e)
		case want != "" && (e == nil || !strings.Contains(e.Description, want)):
			t.Errorf("%s: got %v, want %s", subjects, e, want)
		}
	}
}

func BenchmarkCheckSubjects20k(b *testing.B) {
	subjects := manySubjects("bench", 20000)
	b.ReportAllocs()
	for b.Loop() {
		if e := checkSubjects(subjects); e != nil {
			b.Fatal(e)
		}
	}
}
