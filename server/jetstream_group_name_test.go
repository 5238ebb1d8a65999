package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Two accounts whose names contain '-': team-a's stream x and team's
// stream a-x had one raft group name, S-team-a-x.
const groupNameConf = `
accounts {
  team-a { jetstream: enabled, users: [{user: a, password: a}] }
  team   { jetstream: enabled, users: [{user: t, password: t}] }
}
`

func runGroupNameCluster(t *testing.T) *jsTestCluster {
	t.Helper()
	conf := optsWriteConf(t, t.TempDir(), "accounts.conf", groupNameConf)
	return runJSClusterWith(t, 3, func(i int, o *Options) {
		fo, err := ProcessConfigFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		o.Users, o.Accounts = fo.Users, fo.Accounts
	})
}

// groupNameStream is one of the two colliding streams and what it holds.
type groupNameStream struct {
	account, user, name, prefix string
	want                        []string // "subject payload" of each message in order
}

func (g *groupNameStream) connect(t *testing.T, c *jsTestCluster) jetstream.JetStream {
	nc := connectNATS(t, c.servers[0].ClientURL(), nats.UserInfo(g.user, g.user))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func (g *groupNameStream) publish(t *testing.T, js jetstream.JetStream, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		subj := fmt.Sprintf("%s.%d", g.prefix, len(g.want))
		data := fmt.Sprintf("%s > %s #%d", g.account, g.name, len(g.want))
		// A leader losing its first term under load answers 10008 (it
		// resigned), and right after a restart the stream may not be led
		// yet (no leader subscribes: 503, not stored): the message, with
		// its id, is sent again.
		var ack *jetstream.PubAck
		var err error
		for try := 0; ; try++ {
			ack, err = js.Publish(ctx(t), subj, []byte(data), jetstream.WithMsgID(subj))
			retry := isTempUnavailable(err) || errors.Is(err, jetstream.ErrNoStreamResponse)
			if !retry || try == 50 {
				break
			}
			time.Sleep(100 * time.Millisecond) // a back-off before the retry
		}
		if err != nil {
			t.Fatalf("publish to %s > %s: %v", g.account, g.name, err)
		}
		g.want = append(g.want, subj+" "+data)
		if ack.Stream != g.name || ack.Sequence != uint64(len(g.want)) {
			t.Fatalf("%s > %s: ack %+v, want sequence %d", g.account, g.name, ack, len(g.want))
		}
	}
}

// isTempUnavailable: 10008, "JetStream system temporarily unavailable".
func isTempUnavailable(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == 10008
}

// held is what a replica holds, as g.want.
func held(m *stream) []string {
	var ss StreamState
	m.st().FastState(&ss)
	var out []string
	var sm StoreMsg
	for seq := ss.FirstSeq; seq <= ss.LastSeq && seq > 0; seq++ {
		if msg, err := m.st().LoadMsg(seq, &sm); err == nil {
			out = append(out, msg.Subj+" "+string(msg.Msg))
		}
	}
	return out
}

// checkHolds waits until the stream has three replicas that each hold
// exactly g.want, with one digest (every message, its time included).
func (g *groupNameStream) checkHolds(t *testing.T, c *jsTestCluster) {
	t.Helper()
	var why string
	ok := pollUntil(20*time.Second, func() bool {
		reps := c.accountReplicas(g.account, g.name)
		if len(reps) != 3 {
			why = fmt.Sprintf("%d replicas", len(reps))
			return false
		}
		for _, m := range reps {
			if got := held(m); fmt.Sprint(got) != fmt.Sprint(g.want) {
				why = fmt.Sprintf("replica on %s holds %q", m.jsa.js.srv.Name(), got)
				return false
			}
		}
		d := simStreamDigest(reps[0], true)
		for _, m := range reps[1:] {
			if simStreamDigest(m, true) != d {
				why = "replica digests differ"
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("%s > %s, want %q: %s", g.account, g.name, g.want, why)
	}
}

func collidingStreams() (*groupNameStream, *groupNameStream) {
	return &groupNameStream{account: "team-a", user: "a", name: "x", prefix: "x"},
		&groupNameStream{account: "team", user: "t", name: "a-x", prefix: "ax"}
}

func (g *groupNameStream) create(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	createStream(t, js, jetstream.StreamConfig{Name: g.name, Subjects: []string{g.prefix + ".>"}, Replicas: 3})
}

// createColliding creates both colliding streams, R3, each through a
// connection of its own account, and returns them with the connections.
func createColliding(t *testing.T, c *jsTestCluster) (a, b *groupNameStream, jsA, jsB jetstream.JetStream) {
	t.Helper()
	a, b = collidingStreams()
	jsA, jsB = a.connect(t, c), b.connect(t, c)
	a.create(t, jsA)
	b.create(t, jsB)
	return a, b, jsA, jsB
}

// TestJetStreamClusterGroupNamesOfDashAccounts: account team-a's stream x
// and account team's stream a-x, both R3 on three servers, each hold
// exactly their own messages on every replica, with separate raft groups,
// also after every server restarted (their stores are rebuilt from their
// logs).
func TestJetStreamClusterGroupNamesOfDashAccounts(t *testing.T) {
	c := runGroupNameCluster(t)
	a, b, jsA, jsB := createColliding(t, c)
	for range 5 {
		a.publish(t, jsA, 4)
		b.publish(t, jsB, 3)
	}
	a.checkHolds(t, c)
	b.checkHolds(t, c)
	for _, s := range c.servers {
		ga, gb := s.raftGroup(streamGroupName(a.account, a.name)), s.raftGroup(streamGroupName(b.account, b.name))
		if ga == nil || gb == nil || ga == gb {
			t.Fatalf("%s: groups %p and %p", s.Name(), ga, gb)
		}
	}

	c.restartAll(t)
	a.checkHolds(t, c)
	b.checkHolds(t, c)
	jsA, jsB = a.connect(t, c), b.connect(t, c)
	a.publish(t, jsA, 3)
	b.publish(t, jsB, 5)
	a.checkHolds(t, c)
	b.checkHolds(t, c)
}

// raftDir is the server's directory of raft groups.
func raftDir(s *Server) string { return filepath.Join(s.js.Load().storeDir, "_raft_") }

// renameGroupDir moves a group's directory and its log mark.
func renameGroupDir(t *testing.T, dir, from, to string) {
	t.Helper()
	if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, from+".logmark"), filepath.Join(dir, to+".logmark")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// noticeLog keeps errors and notices.
type noticeLog struct{ errLog }

func (l *noticeLog) Noticef(format string, v ...any) { l.Errorf(format, v...) }

// startAllLogged starts every server of c again (after they were shut
// down), each logging to the log returned for it.
func (c *jsTestCluster) startAllLogged(t *testing.T) []*noticeLog {
	logs := make([]*noticeLog, len(c.servers))
	for i := range c.servers {
		logs[i] = &noticeLog{}
		s, err := NewServer(c.opts[i])
		if err != nil {
			t.Fatal(err)
		}
		s.SetLogger(logs[i], false, false)
		s.Start()
		t.Cleanup(s.Shutdown)
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatal("server not ready")
		}
		c.servers[i] = s
	}
	c.waitMetaLeader()
	return logs
}

// TestJetStreamClusterGroupDirMovedToNewName: a group directory an older
// server left under the old name S-team-a-x (and its log mark) is moved
// to the new name at start: the stream keeps its messages, on every
// replica.
func TestJetStreamClusterGroupDirMovedToNewName(t *testing.T) {
	c, a, dirs, newName, oldName := stoppedWithOldGroupDir(t)
	logs := c.startAllLogged(t)
	a.checkHolds(t, c)
	for i, l := range logs {
		// team and team-a both have JetStream: the move waited for the
		// meta log's replay.
		if !l.has("'team-a > x' starts once the meta log is replayed") || !l.has("moved to") {
			t.Fatalf("%s: the move did not wait for the meta log's replay", c.servers[i].Name())
		}
	}
	for _, d := range dirs {
		if exists(filepath.Join(d, oldName)) || !groupDirHasLog(filepath.Join(d, newName)) || !exists(filepath.Join(d, newName+".logmark")) {
			t.Fatalf("%s: the group directory was not moved", d)
		}
	}
	js := a.connect(t, c)
	a.publish(t, js, 3)
	a.checkHolds(t, c)
}

// stoppedWithOldGroupDir runs a cluster with one stream holding 12
// messages, stops every server and moves the stream's group directory
// (and its log mark) to the old name, as an older server left it: the
// servers' raft directories and the group's new and old names.
func stoppedWithOldGroupDir(t *testing.T) (c *jsTestCluster, a *groupNameStream, dirs []string, newName, oldName string) {
	t.Helper()
	c = runGroupNameCluster(t)
	a, _ = collidingStreams()
	js := a.connect(t, c)
	a.create(t, js)
	a.publish(t, js, 12)
	a.checkHolds(t, c)
	newName, oldName = streamGroupName(a.account, a.name), legacyGroupName(a.account, a.name)
	dirs = make([]string, len(c.servers))
	for i, s := range c.servers {
		dirs[i] = raftDir(s)
		s.Shutdown()
	}
	for _, d := range dirs {
		renameGroupDir(t, d, newName, oldName)
	}
	return c, a, dirs, newName, oldName
}

// TestJetStreamClusterGroupDirOfCollidingStreams: a directory an older
// server left under S-team-a-x while both team-a's x and team's a-x were
// placed there may hold both logs: neither replica starts from it (each
// says why), and it is left as it was.
func TestJetStreamClusterGroupDirOfCollidingStreams(t *testing.T) {
	c := runGroupNameCluster(t)
	a, b, jsA, jsB := createColliding(t, c)
	a.publish(t, jsA, 4)
	b.publish(t, jsB, 4)
	a.checkHolds(t, c)
	b.checkHolds(t, c)
	legacy := legacyGroupName(a.account, a.name)
	dirs := make([]string, len(c.servers))
	for i, s := range c.servers {
		dirs[i] = raftDir(s)
		s.Shutdown()
	}
	// As an older server leaves it: x's log under the shared name (none
	// under the new one), no owner recorded.
	for _, d := range dirs {
		newName := streamGroupName(a.account, a.name)
		if err := os.RemoveAll(filepath.Join(d, newName)); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(d, newName+".logmark")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.Remove(filepath.Join(d, legacy, ownerFile)); err != nil {
			t.Fatal(err)
		}
	}
	logs := c.startAllLogged(t)
	for i, l := range logs {
		waitFor(t, 20*time.Second, "both replicas refused on "+c.servers[i].Name(), func() bool {
			return l.has("may hold the logs of 'team-a > x' and 'team > a-x'") &&
				l.has("may hold the logs of 'team > a-x' and 'team-a > x'")
		})
		// Both waited for the meta log's replay (either create may come
		// first in it).
		if !l.has("'team-a > x' starts once the meta log is replayed") || !l.has("'team > a-x' starts once the meta log is replayed") {
			t.Fatalf("%s: a replica did not wait for the meta log's replay", c.servers[i].Name())
		}
	}
	for _, g := range []*groupNameStream{a, b} {
		if reps := c.accountReplicas(g.account, g.name); len(reps) != 0 {
			t.Fatalf("%s > %s: %d replicas started", g.account, g.name, len(reps))
		}
	}
	for _, d := range dirs {
		if !groupDirHasLog(filepath.Join(d, legacy)) || exists(filepath.Join(d, legacy, ownerFile)) {
			t.Fatalf("%s: the shared directory was changed", d)
		}
	}
}

// TestStreamGroupNamesAreUnambiguous: over every account and stream name
// of up to three characters of "a-1", no two streams share a group name,
// an account without '-' keeps the old name, and no new name of an
// account with '-' is an old-form name.
func TestStreamGroupNamesAreUnambiguous(t *testing.T) {
	var names []string
	var gen func(prefix string, n int)
	gen = func(prefix string, n int) {
		if prefix != "" {
			names = append(names, prefix)
		}
		if n == 0 {
			return
		}
		for _, r := range "a-1" {
			gen(prefix+string(r), n-1)
		}
	}
	gen("", 3)
	seen := map[string]string{}
	for _, acc := range append(names, "$G", "$SYS", "team-a", "team") {
		for _, st := range append(names, "x", "a-x") {
			g := streamGroupName(acc, st)
			if prev, ok := seen[g]; ok {
				t.Fatalf("%q: %s and %s", g, prev, acc+" > "+st)
			}
			seen[g] = acc + " > " + st
			dash := false
			for i := range acc {
				dash = dash || acc[i] == '-'
			}
			if old := legacyGroupName(acc, st); dash == (g == old) || dash && g[1] == '-' {
				t.Fatalf("%s > %s: %q (old %q)", acc, st, g, old)
			}
		}
	}
	if g := streamGroupName("team-a", "x"); g != "S6-team-a-x" {
		t.Fatalf("team-a > x: %q", g)
	}
}

// TestJetStreamClusterSharedOldNameNotOnOldRoutes: S3 speaks route
// protocol 7 (an older server, which runs both team-a's x and team's a-x
// as S-team-a-x). The others neither send it nor take from it a raft
// message of S-team-a-x, which it would hand to either stream's group:
// a-x's replica on S3 gets none of its messages, while x's (S6-team-a-x,
// a name no older server runs) gets all of them.
func TestJetStreamClusterSharedOldNameNotOnOldRoutes(t *testing.T) {
	conf := optsWriteConf(t, t.TempDir(), "accounts.conf", groupNameConf)
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		fo, err := ProcessConfigFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		o.Users, o.Accounts = fo.Users, fo.Accounts
		if i == 2 {
			o.routeProto = routeProtoGroupNames - 1
		}
	})
	a, b, jsA, jsB := createColliding(t, c)
	// a-x's replica on S3 hears nobody: were it the first leader (term 1),
	// it leads until CheckQuorum makes it step down, and a publish it took
	// meanwhile is never answered.
	old := c.servers[2].Name()
	waitFor(t, 10*time.Second, "a-x led by a server other than "+old, func() bool {
		lead := ""
		for _, m := range c.accountReplicas(b.account, b.name) {
			if m.isLeader() {
				if lead != "" {
					return false
				}
				lead = m.jsa.js.srv.Name()
			}
		}
		return lead != "" && lead != old
	})
	b.publish(t, jsB, 5)
	a.publish(t, jsA, 5)
	a.checkHolds(t, c)
	var onOld *stream
	waitFor(t, 10*time.Second, "a-x's replica on "+old, func() bool {
		for _, m := range c.accountReplicas(b.account, b.name) {
			if m.jsa.js.srv.Name() == old {
				onOld = m
			}
		}
		return onOld != nil
	})
	if got := held(onOld); len(got) != 0 {
		t.Fatalf("a-x's replica on %s (route protocol 7) holds %q", old, got)
	}
	for _, m := range c.accountReplicas(b.account, b.name) {
		if name := m.jsa.js.srv.Name(); name != old && fmt.Sprint(held(m)) != fmt.Sprint(b.want) {
			t.Fatalf("a-x's replica on %s holds %q", name, held(m))
		}
	}
}
