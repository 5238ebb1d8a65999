package server

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go/jetstream"
)

// TestLeaderListStaleness: a list's entries are held without expiry; at
// the end of a list, the server's entries that neither it nor the
// previous list confirmed go (a lost resignation), those announced after
// the previous list stay until the next, tombstones and other servers'
// entries are untouched.
func TestLeaderListStaleness(t *testing.T) {
	lm := newLeaderMap()
	now := time.Now()
	l := func(stream string, term uint64) leadership { return leadership{"a", stream, term} }
	lm.listed("S1", []leadership{l("s1", 3), l("s2", 4)}, false, now)
	lm.listed("S1", []leadership{l("s3", 5)}, true, now)
	lm.set("a o", "S2", 7, now)
	lm.resign("a s5", "S1", 2)
	later := now.Add(time.Hour)
	for _, s := range []string{"s1", "s2", "s3"} {
		if got := lm.get("a "+s, later); got != "S1" {
			t.Fatalf("listed %s: leader %q an hour later, want S1 (held)", s, got)
		}
	}
	lm.hold("a s4", "S1", 2, now) // announced after the first list was made
	lm.listed("S1", []leadership{l("s1", 3), l("s3", 5), l("s5", 2)}, true, now)
	if got := lm.get("a s2", now); got != "" {
		t.Fatalf("s2, left out of a list, still led by %q", got)
	}
	if got := lm.get("a s4", now); got != "S1" {
		t.Fatalf("s4, announced after the previous list, dropped: %q", got)
	}
	if got := lm.get("a s5", now); got != "" {
		t.Fatalf("a list made before a resignation revived s5: %q", got)
	}
	lm.listed("S1", []leadership{l("s1", 3)}, true, now)
	for s, want := range map[string]string{"s1": "S1", "s3": "", "s4": "", "o": "S2"} {
		if got := lm.get("a "+s, now); got != want {
			t.Fatalf("after the third list %s is led by %q, want %q", s, got, want)
		}
	}
	if got := lm.get("a o", now.Add(leaderForgetAfter+time.Millisecond)); got != "" {
		t.Fatalf("an unrefreshed entry of a server without lists answers %q", got)
	}
}

// TestLeaderListCodec: a long list goes in chunks, only the last marked
// last, and reads back whole; malformed chunks are refused.
func TestLeaderListCodec(t *testing.T) {
	var led []leadership
	for i := range 5000 {
		led = append(led, leadership{fmt.Sprintf("acc.%d", i%7), fmt.Sprintf("STREAM_%d", i), uint64(i)})
	}
	chunks := encodeLeaderList("-n1", led)
	if len(chunks) < 3 {
		t.Fatalf("%d chunks for %d entries", len(chunks), len(led))
	}
	var got []leadership
	for i, c := range chunks {
		name, last, part, ok := decodeLeaderList(c)
		if !ok || name != "-n1" || last != (i == len(chunks)-1) || len(c) > leaderListChunk+200 {
			t.Fatalf("chunk %d: %q last=%v ok=%v size %d", i, name, last, ok, len(c))
		}
		got = append(got, part...)
	}
	if !slices.Equal(got, led) {
		t.Fatalf("round trip lost entries: %d of %d", len(got), len(led))
	}
	if name, last, part, ok := decodeLeaderList(encodeLeaderList("n2", nil)[0]); !ok || name != "n2" || !last || len(part) != 0 {
		t.Fatalf("empty list: %q %v %v %v", name, last, part, ok)
	}
	for _, p := range []string{"", "n1", "n1 2", " 0", "n1 0 x", "n1 0\na s", "n1 0\na s x", "n1 0\na  3", "n1 0\n", "n1 0\na s 1 2"} {
		if _, _, _, ok := decodeLeaderList([]byte(p)); ok {
			t.Fatalf("%q accepted", p)
		}
	}
}

// countLeaderAnnouncements counts the $JSC.LEADER messages s receives.
func countLeaderAnnouncements(t *testing.T, s *Server) *atomic.Int64 {
	var n atomic.Int64
	_, err := s.SystemAccount().subscribeInternal("$JSC.LEADER.>", "", func(*subscription, *client, *Account, string, string, []byte, []byte) {
		n.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	return &n
}

// streamGroupPasses sums the events the stream groups of the cluster
// handled (liveness nudges aside).
func (c *jsTestCluster) streamGroupPasses() uint64 {
	var n uint64
	for _, s := range c.servers {
		s.raft.mu.Lock()
		for name, g := range s.raft.groups {
			if strings.HasPrefix(name, "S-") {
				n += g.passes.Load()
			}
		}
		s.raft.mu.Unlock()
	}
	return n
}

// reconcilesWanted counts the streams waiting for a membership check.
func (c *jsTestCluster) reconcilesWanted() int {
	n := 0
	for _, s := range c.servers {
		lm := s.js.Load().cluster.leaders
		lm.mu.Lock()
		n += len(lm.reconcile)
		lm.mu.Unlock()
	}
	return n
}

// Idle streams cost their servers nothing per stream: once quiet, no
// leader announces itself again (one list per server refreshes them all)
// and no group is woken (the membership check used to ask each led group
// for its status every second), yet every server keeps knowing every
// leader past leaderForgetAfter.
func TestJetStreamClusterIdleLeadersQuiet(t *testing.T) {
	c := runJSCluster(t, 3)
	_, js := jsClient(t, c.servers[0])
	const n = 6
	for i := range n {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("L%d", i), Subjects: []string{fmt.Sprintf("l.%d", i)}, Replicas: 3})
	}
	// A new leader checks its membership once (reannounce), waking its group.
	waitFor(t, 15*time.Second, "every group asleep, memberships checked", func() bool {
		return c.groupsAwake() == "" && c.reconcilesWanted() == 0
	})
	heard := countLeaderAnnouncements(t, c.servers[1])
	passes := c.streamGroupPasses()
	time.Sleep(leaderForgetAfter + leaderAnnounceEvery) // no condition to poll: nothing may happen
	if got := heard.Load(); got != 0 {
		t.Fatalf("%d leader announcements while every stream was idle", got)
	}
	if aw := c.groupsAwake(); aw != "" {
		t.Fatalf("groups woke while idle: %s", aw)
	}
	if d := c.streamGroupPasses() - passes; d != 0 {
		t.Fatalf("idle stream groups handled %d events", d)
	}
	for _, s := range c.servers {
		if jsz, err := s.Jsz(nil); err != nil || jsz.RaftGroups != n+1 || jsz.RaftGroupsQuiet != n+1 {
			t.Fatalf("%s /jsz: %d raft groups, %d quiescent, want %d (%v)", s.Name(), jsz.RaftGroups, jsz.RaftGroupsQuiet, n+1, err)
		}
		jc := s.js.Load().cluster
		for i := range n {
			if jc.streamLeader(globalAccountName, fmt.Sprintf("L%d", i)) == "" {
				t.Fatalf("%s forgot the leader of L%d", s.Name(), i)
			}
		}
	}
}

// readyLeader is the member of stream's group that leads it, ready, in
// the newest term (none while it changes hands).
func (c *jsTestCluster) readyLeader(stream string) (name string, term uint64) {
	for _, m := range c.replicas(stream) {
		g := m.groupNow()
		if g == nil {
			continue
		}
		if st := g.softState(); st.Role == raft.Leader && st.LeaderReady && st.Term > term {
			name, term = m.jsa.js.srv.Name(), st.Term
		}
	}
	return name, term
}

// A server of an older version expires leaderships it does not hear
// again: while one is in the cluster, leaders refresh each leadership
// every leaderAnnounceEvery, and it keeps knowing every leader.
//
// Leaderships may change meanwhile: under load the first leaders bunch up
// on one server (the one that wins the first elections) and the balancer
// hands some over at its first round, or a group elects. Until the new
// leader's announcement arrives the older server knows no leader, or the
// old one; that is a change, not a lost refresh. A lost refresh leaves a
// leader that keeps leading unknown leaderForgetAfter after its
// announcement: so every leader that has led, ready, in one term for
// leaderForgetAfter must be the older server's, and every stream must end
// with one leader, known throughout, for 2*leaderForgetAfter (an entry
// never refreshed would have gone by then).
func TestJetStreamClusterLeadersRefreshedForOlderPeer(t *testing.T) {
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		if i == 2 {
			o.routeProto = routeProtoLeaderList - 1
		}
	})
	_, js := jsClient(t, c.servers[0])
	const n = 4
	streams := make([]string, n)
	for i := range streams {
		streams[i] = fmt.Sprintf("O%d", i)
		createStream(t, js, jetstream.StreamConfig{Name: streams[i], Subjects: []string{fmt.Sprintf("o.%d", i)}, Replicas: 3})
	}
	jc := c.servers[2].js.Load().cluster
	type reign struct {
		name  string
		term  uint64
		since time.Time // first seen leading, ready
		known time.Time // known to the older server at every look since
	}
	reigns := make([]reign, n)
	views := func() string {
		var v []string
		for _, st := range streams {
			v = append(v, c.groupViews(st))
		}
		return strings.Join(v, "\n")
	}
	// Time for the balancer's rounds and a few elections under load: each
	// change restarts a stream's 2*leaderForgetAfter.
	deadline := time.Now().Add(5 * (2*leaderForgetAfter + leaderBalanceEvery))
	for settled := false; !settled; time.Sleep(raftTick) {
		now := time.Now()
		if now.After(deadline) {
			t.Fatalf("no stable, known leader for %v of every stream:\n%s", 2*leaderForgetAfter, views())
		}
		settled = true
		for i, st := range streams {
			r := &reigns[i]
			name, term := c.readyLeader(st)
			if name != r.name || term != r.term {
				*r = reign{name: name, term: term, since: now}
			}
			if name == "" {
				settled = false
				continue
			}
			switch got := jc.streamLeader(globalAccountName, st); {
			case got == name:
				if r.known.IsZero() {
					r.known = now
				}
			case now.Sub(r.since) >= leaderForgetAfter:
				t.Fatalf("the older server knows %q as leader of %s, led by %s in term %d for %v:\n%s",
					got, st, name, term, now.Sub(r.since), views())
			default: // a new leadership, announced at once: given as long as an entry lives
				r.known = time.Time{}
			}
			settled = settled && !r.known.IsZero() && now.Sub(r.known) >= 2*leaderForgetAfter
		}
	}
}

// countLeaderLists counts the $JSC.LEADERS chunks s receives and notes
// when the last came.
func countLeaderLists(t *testing.T, s *Server) (n *atomic.Int64, last *atomic.Int64) {
	n, last = new(atomic.Int64), new(atomic.Int64)
	_, err := s.SystemAccount().subscribeInternal(leaderListSubject, "", func(*subscription, *client, *Account, string, string, []byte, []byte) {
		n.Add(1)
		last.Store(time.Now().UnixNano())
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, last
}

// Idle leaders send no leader lists: a list that would repeat the last
// two goes only every leaderListIdle. After a change two go, so a stale
// entry (announced after one list, missing from the next: a resignation
// lost) still goes within two periods.
func TestJetStreamClusterLeaderListsOnlyOnChange(t *testing.T) {
	setForTest(t, &leaderListEvery, 100*time.Millisecond)
	setForTest(t, &leaderAnnounceEvery, 50*time.Millisecond)
	setForTest(t, &leaderBalanceEvery, time.Hour) // no transfers of its own
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	for i := range 3 {
		createStream(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("LL%d", i), Subjects: []string{fmt.Sprintf("ll.%d", i)}, Replicas: 3})
	}
	jc0 := c.servers[0].js.Load().cluster
	var leader, other *Server
	waitFor(t, 10*time.Second, "LL0 led", func() bool {
		name := jc0.streamLeader(globalAccountName, "LL0")
		for _, s := range c.servers {
			if s.Name() == name {
				leader = s
			} else if name != "" {
				other = s
			}
		}
		return name != ""
	})
	lists, last := countLeaderLists(t, other)
	waitFor(t, 15*time.Second, "no list for 10 periods", func() bool {
		return time.Since(time.Unix(0, last.Load())) > 10*leaderListEvery && c.groupsAwake() == ""
	})
	before := lists.Load()
	time.Sleep(10 * leaderListEvery) // no condition to poll: nothing may happen
	if got := lists.Load() - before; got != 0 {
		t.Fatalf("%d leader lists while every leadership stayed", got)
	}
	// A leadership of leader that it lost without telling other.
	ojc := other.js.Load().cluster
	ojc.leaders.hold(leaderKey(globalAccountName, "GHOST"), leader.Name(), 1, time.Now())
	stepdownStream(t, nc, "LL0")
	waitFor(t, 20*leaderListEvery, "the stale entry dropped by the lists after the stepdown", func() bool {
		return ojc.streamLeader(globalAccountName, "GHOST") == ""
	})
}
