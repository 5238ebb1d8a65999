package server

import (
	"encoding/json"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A rolling upgrade with a real server of route protocol 9: the binary
// TERN_ROUTE9_BIN names, built from a commit of that protocol (150e23b^,
// the last before 10), runs S3 beside two servers of this build. A
// system user of S3 publishes forged copies on $JSC.MCOPY (S3 relays
// them); a client of S3 has a stream create held over the meta leader's
// kill -9 (S3 sends its copy). The upgraded leader runs neither: the
// forgeries change nothing, the held create's client times out and
// nothing is created, and the leader logs them as an older peer's copies.
func TestProcessMetaCopyFromRoute9Peer(t *testing.T) {
	bin9 := os.Getenv("TERN_ROUTE9_BIN")
	if bin9 == "" {
		t.Skip("set TERN_ROUTE9_BIN to a server binary of route protocol 9 (go build at 150e23b^)")
	}
	dir := t.TempDir()
	c := newProcCluster(t, 3, "S", "MIX", func(i int) string { return "store_dir: " + dir + "/js" + itoa(i) })
	for _, conf := range c.confs {
		f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("system_account: SYS\naccounts {\n  SYS { users: [{user: sys, password: sys}] }\n" +
				"  A { jetstream: enabled, users: [{user: a, password: a}] }\n}\n")
			f.Close()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	c.startProc(0, "")
	c.startProc(1, "")
	c.startProc(2, bin9)
	sys := connectNATS(t, c.procs[0].url(), nats.UserInfo("sys", "sys"))
	leader := func() string {
		m, err := sys.Request("$SYS.REQ.SERVER.PING.JSZ", nil, time.Second)
		if err != nil {
			return ""
		}
		var r struct {
			Data struct {
				Meta struct{ Leader string } `json:"meta_cluster"`
			} `json:"data"`
		}
		_ = json.Unmarshal(m.Data, &r)
		return r.Data.Meta.Leader
	}
	waitFor(t, 20*time.Second, "a meta leader of this build", func() bool {
		switch leader() {
		case "S1", "S2":
			return true
		case "S3":
			_, _ = sys.Request(jsAPIPrefix+"META.LEADER.STEPDOWN", nil, time.Second)
		}
		return false
	})
	lead := leader()
	ml, other := c.procs[0], c.procs[1]
	if lead == "S2" {
		ml, other = other, ml
	}

	// Forgeries through S3.
	sys3 := connectNATS(t, c.procs[2].url(), nats.UserInfo("sys", "sys"))
	a := connectNATS(t, other.url(), nats.UserInfo("a", "a"))
	jsA, err := jetstream.New(a)
	if err != nil {
		t.Fatal(err)
	}
	createStream(t, jsA, jetstream.StreamConfig{Name: "KEEP", Subjects: []string{"keep"}, Replicas: 3})
	for _, body := range [][]byte{forgedCopy(t, "FORGED", false), forgedCopy(t, "KEEP", true)} {
		if err := sys3.Publish(metaCopySubject, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := sys3.Flush(); err != nil {
		t.Fatal(err)
	}
	neverWithin(t, time.Second, "a forged copy ran", func() bool {
		_, kept := jsA.Stream(ctx(t), "KEEP")
		_, forged := jsA.Stream(ctx(t), "FORGED")
		return kept != nil || forged == nil
	})

	// A held create through S3 over the leader's kill -9.
	a3 := connectNATS(t, c.procs[2].url(), nats.UserInfo("a", "a"))
	js3, err := jetstream.New(a3)
	if err != nil {
		t.Fatal(err)
	}
	createStream(t, js3, jetstream.StreamConfig{Name: "W", Subjects: []string{"w"}, Replicas: 3}) // keeps the meta group awake
	_ = ml.cmd.Process.Signal(syscall.SIGKILL)
	body := mustJSON(t, jetstream.StreamConfig{Name: "X9", Subjects: []string{"x9"}, Replicas: 3})
	m, err := a3.Request(jsAPIPrefix+"STREAM.CREATE.X9", body, 5*time.Second)
	if leader() == "S3" {
		t.Skip("S3 won the election: its copies are its own (not seen in 10 runs)")
	}
	if err == nil {
		t.Fatalf("the held create through S3 was answered: %s", m.Data)
	}
	if _, err := jsA.Stream(ctx(t), "X9"); err == nil {
		t.Fatal("X9 created")
	}
	for _, p := range []*serverProcess{ml, other} {
		if strings.Contains(p.output(), "held stream write's copy was not run: it came from meta peer S3, of route protocol 9") {
			return
		}
	}
	t.Fatalf("no leader logged S3's copies as not run:\n%s", c.logs(3000))
}
