package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// viewUnderEachLeader moves stream's leadership (STREAM.LEADER.STEPDOWN)
// until n servers have led it, and returns what read saw under each
// leader, by server name. read answers through js with the leader's name
// and its view, or ok false while there is no leader or no answer yet; it
// is called only under a leader not seen yet (a read may be slow), and a
// cheap STREAM.INFO tells who leads in between. It fails the test when
// not every server led within limit.
func viewUnderEachLeader[V any](t *testing.T, nc *nats.Conn, stream string, n int, limit time.Duration,
	read func(ctx context.Context, js jetstream.JetStream) (leader string, v V, ok bool)) map[string]V {
	t.Helper()
	js, _ := jetstream.New(nc)
	leader := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := js.Stream(ctx, stream)
		if err != nil || st.CachedInfo().Cluster == nil {
			return ""
		}
		return st.CachedInfo().Cluster.Leader
	}
	seen := map[string]V{}
	deadline := time.Now().Add(limit)
	for len(seen) < n && time.Now().Before(deadline) {
		name := leader()
		if name == "" {
			time.Sleep(50 * time.Millisecond) // polling for a leader
			continue
		}
		if _, ok := seen[name]; !ok {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			got, v, ok := read(ctx, js)
			cancel()
			if !ok || got != name {
				time.Sleep(50 * time.Millisecond)
				continue // no answer yet, or the leader moved meanwhile: look again
			}
			seen[name] = v
			if len(seen) == n {
				break
			}
		}
		if !stepdownOnce(nc, stream) {
			time.Sleep(50 * time.Millisecond) // polling: asked again
			continue
		}
		// Until another server leads; a transfer the target did not take
		// up in an election timeout is given up, and asked again.
		for moved := time.Now().Add(5 * time.Second); time.Now().Before(moved); {
			if next := leader(); next != "" && next != name {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if len(seen) < n {
		t.Fatalf("not every server led %s within %v: %v", stream, limit, seen)
	}
	return seen
}

// stepdownOnce asks for STREAM.LEADER.STEPDOWN and reports whether it was
// granted.
func stepdownOnce(nc *nats.Conn, stream string) bool {
	resp, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, nil, 2*time.Second)
	var r struct {
		Success bool `json:"success"`
	}
	return err == nil && json.Unmarshal(resp.Data, &r) == nil && r.Success
}

// sameUnderEachLeader fails the test unless every view in seen is the
// same (==); it returns the names in order, for logging.
func sameUnderEachLeader[V comparable](t *testing.T, what string, seen map[string]V) []string {
	t.Helper()
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names[1:] {
		if seen[name] != seen[names[0]] {
			t.Fatalf("%s: replicas differ: %s reports %s, %s %s", what, names[0], fmt.Sprintf("%+v", seen[names[0]]), name, fmt.Sprintf("%+v", seen[name]))
		}
	}
	return names
}
