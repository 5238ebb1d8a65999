package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/raft"
)

// infoOutcome asks for STREAM.INFO and returns the leader named in the
// answer, the error code, or fails on a timeout: while a stream has no
// leader the server the client uses must say 10008. STREAM.INFO is a
// linearizable read: a leader that stops leading asks its read index again
// of the next one, and a request lost on the way is asked again after
// readRetryTicks, so an answer may take a few of those; the server gives up
// on a read after readGiveUpTicks. The timeout is that bound plus a second
// (it once was 3 s, which a test with 200 ms ticks, where one retry takes
// 1.6 s, outran in CI); a request nobody answers still fails.
func infoOutcome(t *testing.T, nc *nats.Conn, stream string) (leader string, code int) {
	t.Helper()
	msg, err := nc.Request("$JS.API.STREAM.INFO."+stream, nil, readGiveUpTicks*raftTick+time.Second)
	if errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("STREAM.INFO went unanswered")
	}
	if err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Error   *ApiError `json:"error"`
		Cluster *struct {
			Leader string `json:"leader"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		t.Fatalf("%v: %s", err, msg.Data)
	}
	if resp.Error != nil {
		return "", int(resp.Error.ErrCode)
	}
	if resp.Cluster == nil {
		t.Fatalf("no cluster section: %s", msg.Data)
	}
	return resp.Cluster.Leader, 0
}

// awaitNewLeader polls STREAM.INFO until a leader other than old answers;
// every answer on the way is the stream's info or 10008, never silence.
func awaitNewLeader(t *testing.T, c *jsTestCluster, nc *nats.Conn, stream, old string) string {
	t.Helper()
	last := ""
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		leader, code := infoOutcome(t, nc, stream)
		last = fmt.Sprintf("leader %q code %d", leader, code)
		switch {
		case code == 10008:
		case code != 0:
			t.Fatalf("unexpected error %d", code)
		case leader != "" && leader != old:
			return leader
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no new leader after %s left; last answer %s; %s", old, last, c.groupViews(stream))
	return ""
}

func TestJetStreamClusterAPIAnswersWhileLeaderChanges(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "LCH", Subjects: []string{"lch.>"}, Replicas: 3})
	first := st.CachedInfo().Cluster.Leader

	// A stepdown: the old leader resigns, the new one announces itself.
	var via *Server
	for _, s := range c.servers {
		if s.Name() != first {
			via = s
		}
	}
	nc, _ := jsClient(t, via)
	if _, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN.LCH", nil, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	second := awaitNewLeader(t, c, nc, "LCH", first)

	// The leader's process goes away: its route closes and the others stop
	// waiting for it to answer.
	for i, s := range c.servers {
		if s.Name() == second {
			c.servers[i].Shutdown()
		}
	}
	for _, s := range c.servers {
		if s.Name() != second && s.Running() {
			via = s
		}
	}
	nc2, js2 := jsClient(t, via)
	third := awaitNewLeader(t, c, nc2, "LCH", second)
	if _, err := js2.Publish(ctx(t), "lch.a", nil); err != nil {
		t.Fatalf("publish after %s took over: %v", third, err)
	}
}

// groupViews describes every running server's view of a stream's group
// (for failure messages).
func (c *jsTestCluster) groupViews(stream string) string {
	var out []string
	for _, s := range c.servers {
		if !s.Running() {
			continue
		}
		jc := s.js.Load().cluster
		view := fmt.Sprintf("%s: map %q", s.Name(), jc.streamLeader(globalAccountName, stream))
		if jsa := s.js.Load().account(globalAccountName); jsa != nil {
			if m := jsa.lookup(stream); m != nil {
				m.mu.Lock()
				g, lead := m.group, m.leader
				m.mu.Unlock()
				if g == nil { // starting or stopping
					out = append(out, view+" no group")
					continue
				}
				st := g.softState()
				view += fmt.Sprintf(" serving %v role %v term %d lead %x ready %v", lead, st.Role, st.Term, uint64(st.Lead), st.LeaderReady)
			}
		}
		out = append(out, view)
	}
	return strings.Join(out, "; ")
}

// TestLeaderMapTerms: announcements of older terms never replace newer
// ones, a resignation only removes the resigning server's own entry, and
// entries that are not refreshed are forgotten.
func TestLeaderMapTerms(t *testing.T) {
	lm := newLeaderMap()
	now := time.Now()
	lm.set("a s", "S1", 3, now)
	lm.set("a s", "S2", 2, now) // stale
	if got := lm.get("a s", now); got != "S1" {
		t.Fatalf("leader %q after a stale announcement", got)
	}
	lm.resign("a s", "S2", 5) // not S2's entry
	if got := lm.get("a s", now); got != "S1" {
		t.Fatalf("leader %q after another server resigned", got)
	}
	lm.set("a s", "S2", 4, now)
	lm.resign("a s", "S1", 3) // S1's resignation arrives after S2 took over
	if got := lm.get("a s", now); got != "S2" {
		t.Fatalf("leader %q after a late resignation", got)
	}
	lm.set("c s", "S2", 4, now)
	lm.resign("c s", "S2", 5)
	lm.set("c s", "S2", 4, now) // a refresh sent before the resignation
	lm.set("c s", "S2", 5, now)
	if got := lm.get("c s", now); got != "" {
		t.Fatalf("leader %q: an announcement older than the resignation won", got)
	}
	lm.set("c s", "S3", 5, now) // the new leader of that term
	if got := lm.get("c s", now); got != "S3" {
		t.Fatalf("leader %q after the new leader announced", got)
	}
	lm.supersede("a s", raftID("S2"), 6) // a replica sees S2 lead term 6
	if got := lm.get("a s", now); got != "S2" {
		t.Fatalf("superseded by the same leader: %q", got)
	}
	lm.supersede("a s", raftID("S3"), 6)
	if got := lm.get("a s", now); got != "" {
		t.Fatalf("leader %q after a newer term with another leader", got)
	}
	lm.set("a s", "S3", 6, now)
	if got := lm.get("a s", now.Add(leaderForgetAfter+time.Millisecond)); got != "" {
		t.Fatalf("unrefreshed entry still answers %q", got)
	}
	lm.dropServer("S3")
	if got := lm.get("a s", now); got != "" {
		t.Fatalf("leader %q after its route went down", got)
	}
	for _, res := range []bool{false, true} {
		for _, name := range []string{"S1", "-S1"} { // a name may start with '-'
			n, term, r, ok := decodeLeaderAnnouncement(string(encodeLeaderAnnouncement(name, 7, res)))
			if !ok || n != name || term != 7 || r != res {
				t.Fatalf("round trip of %q resigned=%v: %q %d %v %v", name, res, n, term, r, ok)
			}
		}
	}
	// A version without terms announces a bare name: kept, never expired.
	if name, term, _, ok := decodeLeaderAnnouncement("S1"); !ok || name != "S1" || term != 0 {
		t.Fatalf("legacy announcement: %q %d %v", name, term, ok)
	}
	lm.set("b s", "S1", 0, now)
	if got := lm.get("b s", now.Add(time.Hour)); got != "S1" {
		t.Fatalf("legacy entry expired: %q", got)
	}
	lm.set("b s", "S2", 3, now)
	if got := lm.get("b s", now); got != "S2" {
		t.Fatalf("legacy entry not replaced by a termed one: %q", got)
	}
	for _, p := range []string{"", "S1 x", "a b c", "a 1 b", "a 1 resigned x", " 1"} {
		if _, _, _, ok := decodeLeaderAnnouncement(p); ok {
			t.Fatalf("%q accepted", p)
		}
	}
}

// TestLeaderAnnouncedDottedAccount: an account name with dots is read
// whole from $JSC.LEADER.<account>.<stream> (it was cut at the first dot).
func TestLeaderAnnouncedDottedAccount(t *testing.T) {
	s := &Server{name: "S1", clock: clock.Real}
	jc := &jsCluster{js: &jetStream{srv: s}, leaders: newLeaderMap()}
	jc.leaderAnnounced(nil, nil, nil, "$JSC.LEADER.acme.corp.ORDERS", "", nil, encodeLeaderAnnouncement("S2", 3, false))
	if got := jc.streamLeader("acme.corp", "ORDERS"); got != "S2" {
		t.Fatalf("leader of acme.corp ORDERS %q, want S2", got)
	}
}

// A server that has not yet heard a stream's leader announce itself (the
// announcement travels another route than the request and the leader's
// answer) must not answer 10008 at once: that answer raced the leader's
// and won (TestJetStreamClusterKVWatchKeysHistoryR3 failed in CI on it).
// The test makes a follower forget the leader, as if its announcement were
// still under way, and asks through that follower.
func TestJetStreamClusterLeaderNotYetKnownNoFalse10008(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "NYK", Subjects: []string{"nyk.>"}, Replicas: 3})
	leader := st.CachedInfo().Cluster.Leader
	var f *Server
	for _, s := range c.servers {
		if s.Name() != leader {
			f = s
		}
	}
	nc, _ := jsClient(t, f)
	for i := 0; i < 5; i++ {
		f.js.Load().cluster.leaders.forget(leaderKey(globalAccountName, "NYK"))
		got, code := infoOutcome(t, nc, "NYK")
		if code != 0 || got != leader {
			t.Fatalf("round %d: answer leader %q code %d, want the leader %s's answer", i, got, code, leader)
		}
	}
}

// raftViews is what each replica's raft group of stream reports (role,
// term, indexes, the leader's view of its followers, asleep) with the
// messages its store holds, for a failure's message.
func (c *jsTestCluster) raftViews(stream string) string {
	var out []string
	for _, m := range c.replicas(stream) {
		g := m.groupNow()
		if g == nil {
			continue
		}
		var ss StreamState
		m.st().FastState(&ss)
		st := g.statusSnapshot()
		_, err := os.Stat(filepath.Join(m.groupDir, repairMarker))
		out = append(out, fmt.Sprintf("%s: %+v commit %d applied %d last %d asleep %v repairing %v msgs %d last seq %d progress %+v",
			m.jsa.js.srv.Name(), st.SoftState, st.Commit, st.Applied, st.LastIndex, g.sleeping.Load(), err == nil, ss.Msgs, ss.LastSeq, st.Progress))
	}
	return strings.Join(out, "\n")
}

// logViewsOnFailure logs each replica's raft view of stream (raftViews)
// when t has failed, as t ends.
func (c *jsTestCluster) logViewsOnFailure(t *testing.T, stream string) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replicas of %s:\n%s", stream, c.raftViews(stream))
		}
	})
}

// A stepdown asked of a leader whose group is busy for longer than
// statusSnapshot waits is granted: the transfer's target is chosen on the
// group goroutine, not from the last status made (which, on a leader never
// asked before, is from no time at all: no followers to choose from, and
// the stepdown was refused with 10008 under load).
func TestJetStreamClusterStepdownBusyLeader(t *testing.T) {
	// Elections after 2 s at least: the leader's group stays busy below
	// that, so no follower campaigns meanwhile.
	setForTest(t, &raftTick, 200*time.Millisecond)
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	st := createStream(t, js, jetstream.StreamConfig{Name: "BSY", Subjects: []string{"bsy"}, Replicas: 3})
	var g *raftGroup
	for _, m := range c.replicas("BSY") {
		if m.jsa.js.srv.Name() == st.CachedInfo().Cluster.Leader {
			m.mu.Lock()
			g = m.group
			m.mu.Unlock()
		}
	}
	g.mu.Lock()
	g.status = raft.Status{} // never asked
	g.mu.Unlock()
	release := make(chan struct{})
	// The group's goroutine is busy until release, which comes whatever
	// happens (the group must go on).
	time.AfterFunc(statusWait+300*time.Millisecond, func() { close(release) })
	g.control(func(*raft.Node) { <-release })
	if transferLeadership(g) != nil {
		t.Fatal("the stepdown of a busy leader was refused")
	}
	awaitNewLeader(t, c, connectNATS(t, c.servers[0].ClientURL()), "BSY", st.CachedInfo().Cluster.Leader)
}
