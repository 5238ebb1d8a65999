package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pagedAnswer is the paging part of an answer and its error, if any.
type pagedAnswer struct {
	Type   string    `json:"type"`
	Error  *ApiError `json:"error"`
	Total  int       `json:"total"`
	Offset int       `json:"offset"`
	Limit  int       `json:"limit"`
}

func requestJSON(t *testing.T, nc *nats.Conn, subject, body string, v any) {
	t.Helper()
	m, err := nc.Request(subject, []byte(body), 5*time.Second)
	if err != nil {
		t.Fatalf("%s %s: %v", subject, body, err)
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		t.Fatalf("%s %s: %s: %v", subject, body, m.Data, err)
	}
}

// Negative offsets are clamped to 0 as nats-server does; each of these
// requests used to end the server.
func TestJetStreamNegativeOffsets(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	createStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}})
	for _, subj := range []string{"s.a", "s.b", "s.c"} {
		if _, err := js.Publish(ctx(t), subj, nil); err != nil {
			t.Fatal(err)
		}
	}
	var info struct {
		pagedAnswer
		State struct {
			Subjects map[string]uint64 `json:"subjects"`
		} `json:"state"`
	}
	requestJSON(t, nc, "$JS.API.STREAM.INFO.S", `{"subjects_filter":">","offset":-1}`, &info)
	if info.Error != nil || info.Offset != 0 || info.Total != 3 || len(info.State.Subjects) != 3 {
		t.Fatalf("STREAM.INFO: %+v", info)
	}
	info.State.Subjects = nil
	requestJSON(t, nc, "$JS.API.STREAM.INFO.S", `{"subjects_filter":">","offset":2}`, &info)
	if info.Offset != 2 || info.Total != 3 || len(info.State.Subjects) != 1 || info.State.Subjects["s.c"] != 1 {
		t.Fatalf("STREAM.INFO offset 2: %+v", info)
	}
	info.State.Subjects = nil
	requestJSON(t, nc, "$JS.API.STREAM.INFO.S", `{"subjects_filter":">","offset":9}`, &info)
	if info.Offset != 9 || len(info.State.Subjects) != 0 {
		t.Fatalf("STREAM.INFO offset 9: %+v", info)
	}
	for _, api := range []string{"STREAM.NAMES", "STREAM.LIST"} {
		var page pagedAnswer
		requestJSON(t, nc, "$JS.API."+api, `{"offset":-1}`, &page)
		if page.Error != nil || page.Offset != 0 || page.Total != 1 {
			t.Fatalf("%s: %+v", api, page)
		}
	}
	if !s.Running() {
		t.Fatal("server stopped")
	}
}

const pagingClusterConf = `
accounts {
  SYS { users: [{user: sys, password: sysp}] }
  APP { jetstream: enabled, users: [{user: app, password: appp}] }
}
system_account: SYS
`

// In a cluster, STREAM.NAMES is answered by the meta leader and CONNZ by
// every server: a negative offset used to end each of them.
func TestClusterNegativeOffsets(t *testing.T) {
	conf := optsWriteConf(t, t.TempDir(), "accounts.conf", pagingClusterConf)
	c := runJSClusterWith(t, 3, func(i int, o *Options) {
		fo, err := ProcessConfigFile(conf)
		if err != nil {
			t.Fatal(err)
		}
		o.Users, o.Accounts, o.SystemAccount = fo.Users, fo.Accounts, fo.SystemAccount
	})
	leader := c.waitMetaLeader()
	nc := connectNATS(t, leader.ClientURL(), nats.UserInfo("app", "appp"))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	createStream(t, js, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3})
	var names struct {
		pagedAnswer
		Streams []string `json:"streams"`
	}
	for range 3 { // repeating it once took the cluster down
		requestJSON(t, nc, "$JS.API.STREAM.NAMES", `{"offset":-1}`, &names)
		if names.Error != nil || names.Offset != 0 || names.Total != 1 || len(names.Streams) != 1 {
			t.Fatalf("STREAM.NAMES: %+v", names)
		}
	}

	for _, s := range c.servers {
		sys := connectNATS(t, s.ClientURL(), nats.UserInfo("sys", "sysp"))
		var resp struct {
			Data *Connz `json:"data"`
		}
		requestJSON(t, sys, "$SYS.REQ.SERVER.PING.CONNZ", `{"offset":-1,"limit":-5}`, &resp)
		if cz := resp.Data; cz == nil || cz.Offset != 0 || cz.Limit != defaultConnzLimit || cz.NumConns != len(cz.Conns) || cz.NumConns == 0 {
			t.Fatalf("CONNZ from %s: %+v", s.Name(), cz)
		}
	}
	for _, s := range c.servers {
		if !s.Running() {
			t.Fatalf("%s stopped", s.Name())
		}
	}
}

// /connz clamps offset and limit as nats-server does and refuses a number
// that does not parse.
func TestMonitorConnzPagingParameters(t *testing.T) {
	o := testOptions()
	o.HTTPHost, o.HTTPPort = "127.0.0.1", RANDOM_PORT
	s := runServer(t, o)
	connectNATS(t, s.ClientURL())
	get := func(query string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(fmt.Sprintf("http://%s/connz?%s", s.MonitorAddr(), query))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	code, b := get("offset=-1&limit=-5")
	var cz Connz
	if err := json.Unmarshal(b, &cz); code != 200 || err != nil || cz.Offset != 0 || cz.Limit != defaultConnzLimit || cz.NumConns != 1 {
		t.Fatalf("%d %s", code, b)
	}
	for _, q := range []string{"offset=x", "limit=1.5", "cid=-1"} {
		if code, b := get(q); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", q, code, b)
		}
	}
}
