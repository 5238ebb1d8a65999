package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// monRunServer starts a server with monitoring on a random port.
func monRunServer(t *testing.T, o *Options) *Server {
	t.Helper()
	if o == nil {
		o = testOptions()
	}
	o.HTTPHost = "127.0.0.1"
	o.HTTPPort = RANDOM_PORT
	s := runServer(t, o)
	if s.MonitorAddr() == nil {
		t.Fatalf("monitoring not started")
	}
	return s
}

var monHTTP = &http.Client{Timeout: 5 * time.Second}

// monGet fetches path from the monitoring port and returns status and body.
func monGet(t *testing.T, s *Server, path string) (int, []byte) {
	t.Helper()
	resp, err := monHTTP.Get("http://" + s.MonitorAddr().String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", path, err)
	}
	return resp.StatusCode, b
}

// monJSON fetches path, requires 200 and application/json and decodes
// the body into v.
func monJSON(t *testing.T, s *Server, path string, v any) {
	t.Helper()
	resp, err := monHTTP.Get("http://" + s.MonitorAddr().String() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("GET %s: content type %q", path, ct)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: decoding %s: %v", path, b, err)
	}
}

func monConnect(t *testing.T, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.Timeout(5 * time.Second), nats.MaxReconnects(0)}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func TestMonitorVarz(t *testing.T) {
	o := testOptions()
	o.ServerName = "varz-srv"
	s := monRunServer(t, o)

	nc := monConnect(t, s.ClientURL())
	sub, err := nc.SubscribeSync("varz.test")
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte("hello")
	for i := 0; i < 3; i++ {
		if err := nc.Publish("varz.test", payload); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		if _, err := sub.NextMsg(5 * time.Second); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}

	var v map[string]any
	monJSON(t, s, "/varz", &v)
	for _, k := range []string{
		"server_id", "server_name", "version", "proto", "go", "host", "port", "max_connections",
		"ping_interval", "ping_max", "http_port", "auth_timeout", "max_control_line", "max_payload",
		"max_pending", "tls_timeout", "write_deadline", "start", "now", "uptime", "mem", "cores",
		"gomaxprocs", "cpu", "connections", "total_connections", "routes", "remotes", "leafnodes",
		"in_msgs", "out_msgs", "in_bytes", "out_bytes", "slow_consumers", "subscriptions",
		"config_load_time",
	} {
		if _, ok := v[k]; !ok {
			t.Errorf("/varz lacks %q", k)
		}
	}
	num := func(k string) float64 {
		f, ok := v[k].(float64)
		if !ok {
			t.Errorf("/varz %q = %#v, want a number", k, v[k])
		}
		return f
	}
	if v["server_id"] != s.ID() || v["server_name"] != "varz-srv" {
		t.Errorf("server_id/name = %v/%v", v["server_id"], v["server_name"])
	}
	if v["version"] != VERSION || num("proto") != PROTO {
		t.Errorf("version/proto = %v/%v", v["version"], v["proto"])
	}
	if got, want := fmt.Sprint(int(num("port"))), s.Addr().String()[strings.LastIndex(s.Addr().String(), ":")+1:]; got != want {
		t.Errorf("port = %s, want the bound port %s", got, want)
	}
	if num("max_payload") != MAX_PAYLOAD_SIZE || num("max_pending") != MAX_PENDING_SIZE ||
		num("max_control_line") != MAX_CONTROL_LINE_SIZE || num("max_connections") != DEFAULT_MAX_CONNECTIONS {
		t.Errorf("limits = %v %v %v %v", v["max_payload"], v["max_pending"], v["max_control_line"], v["max_connections"])
	}
	if num("ping_max") != DEFAULT_PING_MAX_OUT || num("ping_interval") != float64(DEFAULT_PING_INTERVAL) {
		t.Errorf("ping = %v %v", v["ping_max"], v["ping_interval"])
	}
	if num("connections") != 1 || num("total_connections") != 1 {
		t.Errorf("connections/total = %v/%v", v["connections"], v["total_connections"])
	}
	if num("in_msgs") != 3 || num("out_msgs") != 3 {
		t.Errorf("in_msgs/out_msgs = %v/%v, want 3/3", v["in_msgs"], v["out_msgs"])
	}
	if num("in_bytes") != 15 || num("out_bytes") != 15 {
		t.Errorf("in_bytes/out_bytes = %v/%v, want 15/15", v["in_bytes"], v["out_bytes"])
	}
	if num("subscriptions") < 1 {
		t.Errorf("subscriptions = %v", v["subscriptions"])
	}
	for _, k := range []string{"start", "now", "config_load_time"} {
		str, _ := v[k].(string)
		if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
			t.Errorf("%q = %v is not a time: %v", k, v[k], err)
		}
	}
	if up, _ := v["uptime"].(string); !strings.HasSuffix(up, "s") {
		t.Errorf("uptime = %v", v["uptime"])
	}

	// Counters move with traffic: one more message in and out.
	if err := nc.Publish("varz.test", payload); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.NextMsg(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	monJSON(t, s, "/varz", &v)
	if num("in_msgs") != 4 || num("out_msgs") != 4 {
		t.Errorf("after one more: in_msgs/out_msgs = %v/%v, want 4/4", v["in_msgs"], v["out_msgs"])
	}
}

// monConnz mirrors /connz with the JSON names clients rely on.
type monConnz struct {
	ID       string        `json:"server_id"`
	Now      time.Time     `json:"now"`
	NumConns int           `json:"num_connections"`
	Total    int           `json:"total"`
	Offset   int           `json:"offset"`
	Limit    int           `json:"limit"`
	Conns    []monConnInfo `json:"connections"`
}

type monConnInfo struct {
	Cid            uint64     `json:"cid"`
	Kind           string     `json:"kind"`
	Type           string     `json:"type"`
	IP             string     `json:"ip"`
	Port           int        `json:"port"`
	Start          time.Time  `json:"start"`
	Stop           *time.Time `json:"stop"`
	Reason         string     `json:"reason"`
	InMsgs         int64      `json:"in_msgs"`
	OutMsgs        int64      `json:"out_msgs"`
	NumSubs        uint32     `json:"subscriptions"`
	Name           string     `json:"name"`
	Lang           string     `json:"lang"`
	Version        string     `json:"version"`
	AuthorizedUser string     `json:"authorized_user"`
	Account        string     `json:"account"`
	Subs           []string   `json:"subscriptions_list"`
}

func monConnzNames(cz *monConnz) []string {
	var out []string
	for _, c := range cz.Conns {
		out = append(out, c.Name)
	}
	return out
}

func TestMonitorConnz(t *testing.T) {
	s := monRunServer(t, nil)

	const n = 5
	conns := make([]*nats.Conn, n)
	cids := make([]uint64, n)
	for i := range conns {
		nc := monConnect(t, s.ClientURL(), nats.Name(fmt.Sprintf("conn-%d", i)))
		conns[i] = nc
		id, err := nc.GetClientID()
		if err != nil {
			t.Fatal(err)
		}
		cids[i] = id
		// conn-i has i+1 subscriptions and publishes i messages.
		for j := 0; j <= i; j++ {
			if _, err := nc.SubscribeSync(fmt.Sprintf("sub.%d.%d", i, j)); err != nil {
				t.Fatal(err)
			}
		}
		for j := 0; j < i; j++ {
			if err := nc.Publish("nobody.listens", []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < n; i++ {
		if cids[i] <= cids[i-1] {
			t.Fatalf("client ids not increasing: %v", cids)
		}
	}

	var cz monConnz
	monJSON(t, s, "/connz", &cz)
	if cz.ID != s.ID() || cz.NumConns != n || cz.Total != n || cz.Offset != 0 || cz.Limit != 1024 {
		t.Fatalf("/connz header: id %q num %d total %d offset %d limit %d", cz.ID, cz.NumConns, cz.Total, cz.Offset, cz.Limit)
	}
	if !reflect.DeepEqual(monConnzNames(&cz), []string{"conn-0", "conn-1", "conn-2", "conn-3", "conn-4"}) {
		t.Errorf("default order (cid) = %v", monConnzNames(&cz))
	}
	for i, c := range cz.Conns {
		if c.Cid != cids[i] || c.Kind != "Client" || c.Type != "nats" || c.IP != "127.0.0.1" || c.Port == 0 {
			t.Errorf("conn %d: %+v", i, c)
		}
		if c.Lang != "go" || c.Version == "" {
			t.Errorf("conn %d: lang %q version %q", i, c.Lang, c.Version)
		}
		if c.NumSubs != uint32(i+1) || c.InMsgs != int64(i) {
			t.Errorf("conn %d: subs %d in_msgs %d, want %d/%d", i, c.NumSubs, c.InMsgs, i+1, i)
		}
		if c.Subs != nil {
			t.Errorf("conn %d: subscriptions_list without subs=1: %v", i, c.Subs)
		}
		if c.Account != globalAccountName {
			t.Errorf("conn %d: account %q", i, c.Account)
		}
	}

	// Paging.
	monJSON(t, s, "/connz?limit=2&offset=1", &cz)
	if cz.NumConns != 2 || cz.Total != n || cz.Offset != 1 || cz.Limit != 2 {
		t.Errorf("paging header: num %d total %d offset %d limit %d", cz.NumConns, cz.Total, cz.Offset, cz.Limit)
	}
	if !reflect.DeepEqual(monConnzNames(&cz), []string{"conn-1", "conn-2"}) {
		t.Errorf("limit=2 offset=1 = %v", monConnzNames(&cz))
	}
	monJSON(t, s, "/connz?offset=10", &cz)
	if cz.NumConns != 0 || cz.Total != n || cz.Conns == nil || len(cz.Conns) != 0 {
		t.Errorf("offset past the end: num %d total %d conns %v", cz.NumConns, cz.Total, cz.Conns)
	}

	// Sorting.
	monJSON(t, s, "/connz?sort=cid", &cz)
	for i := 1; i < len(cz.Conns); i++ {
		if cz.Conns[i].Cid <= cz.Conns[i-1].Cid {
			t.Errorf("sort=cid not ascending: %v", monConnzNames(&cz))
		}
	}
	monJSON(t, s, "/connz?sort=msgs_from", &cz)
	if !reflect.DeepEqual(monConnzNames(&cz), []string{"conn-4", "conn-3", "conn-2", "conn-1", "conn-0"}) {
		t.Errorf("sort=msgs_from = %v", monConnzNames(&cz))
	}
	monJSON(t, s, "/connz?sort=subs&limit=1", &cz)
	if len(cz.Conns) != 1 || cz.Conns[0].Name != "conn-4" {
		t.Errorf("sort=subs limit=1 = %v", monConnzNames(&cz))
	}

	// Subscriptions list.
	monJSON(t, s, "/connz?subs=1", &cz)
	for i, c := range cz.Conns {
		var want []string
		for j := 0; j <= i; j++ {
			want = append(want, fmt.Sprintf("sub.%d.%d", i, j))
		}
		got := append([]string(nil), c.Subs...)
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("conn %d subscriptions_list = %v, want %v", i, c.Subs, want)
		}
	}

	// cid filter.
	monJSON(t, s, fmt.Sprintf("/connz?cid=%d", cids[3]), &cz)
	if cz.NumConns != 1 || cz.Total != 1 || len(cz.Conns) != 1 || cz.Conns[0].Name != "conn-3" {
		t.Errorf("cid filter = %+v", cz)
	}

	// Invalid sort.
	if code, body := monGet(t, s, "/connz?sort=nonsense"); code != http.StatusBadRequest {
		t.Errorf("invalid sort: status %d body %s", code, body)
	}

	// Closed connections.
	conns[2].Close()
	waitFor(t, 5*time.Second, "conn-2 to be closed", func() bool {
		var closed monConnz
		monJSON(t, s, "/connz?state=closed", &closed)
		return closed.NumConns == 1
	})
	monJSON(t, s, "/connz?state=closed", &cz)
	if len(cz.Conns) != 1 {
		t.Fatalf("closed = %+v", cz)
	}
	cc := cz.Conns[0]
	if cc.Cid != cids[2] || cc.Name != "conn-2" || cc.Stop == nil || cc.Reason != "Client Closed" {
		t.Errorf("closed conn = %+v", cc)
	}
	if cc.InMsgs != 2 {
		t.Errorf("closed conn keeps its stats: in_msgs %d", cc.InMsgs)
	}
	monJSON(t, s, "/connz", &cz)
	if cz.NumConns != n-1 || !reflect.DeepEqual(monConnzNames(&cz), []string{"conn-0", "conn-1", "conn-3", "conn-4"}) {
		t.Errorf("open after close = %v", monConnzNames(&cz))
	}
	monJSON(t, s, "/connz?state=all", &cz)
	if cz.Total != n {
		t.Errorf("state=all total = %d, want %d", cz.Total, n)
	}
}

func TestMonitorConnzAuthorizedUser(t *testing.T) {
	o := testOptions()
	o.Users = []*User{{Username: "alice", Password: "pw"}}
	s := monRunServer(t, o)

	nc := monConnect(t, s.ClientURL(), nats.UserInfo("alice", "pw"), nats.Name("alice-conn"))
	var cz monConnz
	monJSON(t, s, "/connz", &cz)
	if len(cz.Conns) != 1 || cz.Conns[0].AuthorizedUser != "" {
		t.Fatalf("authorized_user shown without auth=1: %+v", cz.Conns)
	}
	monJSON(t, s, "/connz?auth=1", &cz)
	if len(cz.Conns) != 1 || cz.Conns[0].AuthorizedUser != "alice" {
		t.Fatalf("auth=1: %+v", cz.Conns)
	}
	monJSON(t, s, "/connz?user=alice", &cz)
	if cz.Total != 1 {
		t.Errorf("user filter: total %d", cz.Total)
	}
	monJSON(t, s, "/connz?user=bob", &cz)
	if cz.Total != 0 {
		t.Errorf("user=bob: total %d", cz.Total)
	}

	nc.Close()
	waitFor(t, 5*time.Second, "the closed connection", func() bool {
		var closed monConnz
		monJSON(t, s, "/connz?state=closed", &closed)
		return closed.NumConns == 1
	})
	// A query without auth=1 must not erase the user recorded for the
	// closed connection: asking again with auth=1 still shows it.
	monJSON(t, s, "/connz?state=closed", &cz)
	if len(cz.Conns) != 1 || cz.Conns[0].AuthorizedUser != "" {
		t.Fatalf("closed, no auth: %+v", cz.Conns)
	}
	monJSON(t, s, "/connz?state=closed&auth=1", &cz)
	if len(cz.Conns) != 1 || cz.Conns[0].AuthorizedUser != "alice" {
		t.Fatalf("closed, auth=1: authorized_user %q, want alice", cz.Conns[0].AuthorizedUser)
	}
}

func TestMonitorSubsz(t *testing.T) {
	s := monRunServer(t, nil)

	var before map[string]any
	monJSON(t, s, "/subsz", &before)
	for _, k := range []string{"server_id", "now", "num_subscriptions", "num_cache", "num_inserts",
		"num_removes", "num_matches", "cache_hit_rate", "max_fanout", "avg_fanout"} {
		if _, ok := before[k]; !ok {
			t.Errorf("/subsz lacks %q", k)
		}
	}
	base := before["num_subscriptions"].(float64)

	nc := monConnect(t, s.ClientURL())
	for _, subj := range []string{"foo.bar", "foo.*", "baz"} {
		if _, err := nc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := nc.QueueSubscribeSync("q.work", "workers"); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	cid, _ := nc.GetClientID()

	type subDetail struct {
		Account string `json:"account"`
		Subject string `json:"subject"`
		Queue   string `json:"qgroup"`
		Sid     string `json:"sid"`
		Msgs    int64  `json:"msgs"`
		Cid     uint64 `json:"cid"`
	}
	var sz struct {
		NumSubs float64     `json:"num_subscriptions"`
		Total   int         `json:"total"`
		Subs    []subDetail `json:"subscriptions_list"`
	}
	monJSON(t, s, "/subsz", &sz)
	if sz.NumSubs != base+4 {
		t.Errorf("num_subscriptions = %v, want %v", sz.NumSubs, base+4)
	}
	if len(sz.Subs) != 0 {
		t.Errorf("subscriptions_list without subs=1: %v", sz.Subs)
	}

	monJSON(t, s, "/subsz?subs=1", &sz)
	if sz.Total != 4 || len(sz.Subs) != 4 {
		t.Fatalf("subs=1: total %d list %+v", sz.Total, sz.Subs)
	}
	got := map[string]subDetail{}
	for _, d := range sz.Subs {
		got[d.Subject] = d
		if d.Cid != cid || d.Account != globalAccountName || d.Sid == "" {
			t.Errorf("sub detail %+v", d)
		}
	}
	if got["q.work"].Queue != "workers" {
		t.Errorf("queue group missing: %+v", got["q.work"])
	}
	for _, subj := range []string{"foo.bar", "foo.*", "baz"} {
		if _, ok := got[subj]; !ok {
			t.Errorf("subscriptions_list lacks %q", subj)
		}
	}

	// test= filters the list to subscriptions matching a literal subject.
	monJSON(t, s, "/subsz?subs=1&test=foo.bar", &sz)
	var subjects []string
	for _, d := range sz.Subs {
		subjects = append(subjects, d.Subject)
	}
	sort.Strings(subjects)
	if !reflect.DeepEqual(subjects, []string{"foo.*", "foo.bar"}) {
		t.Errorf("test=foo.bar = %v", subjects)
	}

	// /subscriptionsz is the long alias.
	monJSON(t, s, "/subscriptionsz", &sz)
	if sz.NumSubs != base+4 {
		t.Errorf("/subscriptionsz num_subscriptions = %v", sz.NumSubs)
	}

	// Unsubscribing lowers the count.
	nc.Close()
	waitFor(t, 5*time.Second, "subscriptions to go away", func() bool {
		monJSON(t, s, "/subsz", &sz)
		return sz.NumSubs == base
	})
}

func TestMonitorAccountzHealthzRoutez(t *testing.T) {
	s := monRunServer(t, nil)

	var az struct {
		ID            string   `json:"server_id"`
		SystemAccount string   `json:"system_account"`
		Accounts      []string `json:"accounts"`
	}
	monJSON(t, s, "/accountz", &az)
	if az.ID != s.ID() || az.SystemAccount != DEFAULT_SYSTEM_ACCOUNT {
		t.Errorf("/accountz = %+v", az)
	}
	has := map[string]bool{}
	for _, a := range az.Accounts {
		has[a] = true
	}
	if !has["$G"] || !has["$SYS"] {
		t.Errorf("/accountz accounts = %v, want $G and $SYS", az.Accounts)
	}

	code, body := monGet(t, s, "/healthz")
	if code != http.StatusOK {
		t.Fatalf("/healthz status %d: %s", code, body)
	}
	var h map[string]any
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("/healthz body %q: %v", body, err)
	}
	if !reflect.DeepEqual(h, map[string]any{"status": "ok"}) {
		t.Errorf("/healthz = %s, want exactly {\"status\":\"ok\"}", body)
	}

	var rz map[string]any
	monJSON(t, s, "/routez", &rz)
	for _, k := range []string{"server_id", "server_name", "now", "num_routes", "routes"} {
		if _, ok := rz[k]; !ok {
			t.Errorf("/routez lacks %q: %v", k, rz)
		}
	}
	if rz["server_id"] != s.ID() || rz["num_routes"] != float64(0) {
		t.Errorf("/routez = %v", rz)
	}
	if routes, ok := rz["routes"].([]any); !ok || len(routes) != 0 {
		t.Errorf("/routez routes = %#v, want []", rz["routes"])
	}

	// JSONP callback and unknown paths.
	code, body = monGet(t, s, "/varz?callback=cb")
	if code != http.StatusOK || !strings.HasPrefix(string(body), "cb(") || !strings.HasSuffix(string(body), ")") {
		t.Errorf("/varz?callback=cb: %d %.40s", code, body)
	}
	if code, _ := monGet(t, s, "/no-such-endpoint"); code != http.StatusNotFound {
		t.Errorf("unknown endpoint: status %d", code)
	}
	if code, body := monGet(t, s, "/"); code != http.StatusOK || !strings.Contains(string(body), "varz") {
		t.Errorf("/: %d %s", code, body)
	}
}

func TestMonitorOffByDefault(t *testing.T) {
	s := runServer(t, nil)
	if s.MonitorAddr() != nil {
		t.Fatalf("monitoring started without http_port")
	}
}

func TestMonitorHTTPBasePath(t *testing.T) {
	o := testOptions()
	o.HTTPBasePath = "/nats"
	s := monRunServer(t, o)
	var v map[string]any
	monJSON(t, s, "/nats/varz", &v)
	if v["server_id"] != s.ID() {
		t.Errorf("/nats/varz = %v", v["server_id"])
	}
	if code, _ := monGet(t, s, "/varz"); code != http.StatusNotFound {
		t.Errorf("/varz without the base path: %d", code)
	}
}

func TestMonitorConnzClosedKeepsSubscriptions(t *testing.T) {
	s := monRunServer(t, nil)
	nc := monConnect(t, s.ClientURL(), nats.Name("subs-conn"))
	for _, subj := range []string{"a", "b", "c"} {
		if _, err := nc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	nc.Close()
	var cz monConnz
	waitFor(t, 5*time.Second, "the closed connection", func() bool {
		monJSON(t, s, "/connz?state=closed&subs=1", &cz)
		return cz.NumConns == 1
	})
	if c := cz.Conns[0]; c.NumSubs != 3 {
		t.Errorf("closed connection: subscriptions %d, want 3", c.NumSubs)
	}
}

func TestMonitorConnzConcurrentClosedQueries(t *testing.T) {
	// Concurrent /connz queries over closed connections must not race on
	// the stored records (run with -race).
	o := testOptions()
	o.Users = []*User{{Username: "u", Password: "p"}}
	s := monRunServer(t, o)
	for i := 0; i < 3; i++ {
		monConnect(t, s.ClientURL(), nats.UserInfo("u", "p")).Close()
	}
	waitFor(t, 5*time.Second, "3 closed connections", func() bool {
		var cz monConnz
		monJSON(t, s, "/connz?state=closed", &cz)
		return cz.NumConns == 3
	})
	done := make(chan struct{})
	for i := 0; i < 4; i++ {
		go func(i int) {
			defer func() { done <- struct{}{} }()
			for j := 0; j < 10; j++ {
				q := "/connz?state=closed&sort=cid"
				if (i+j)%2 == 0 {
					q += "&auth=1"
				}
				resp, err := monHTTP.Get("http://" + s.MonitorAddr().String() + q)
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}(i)
	}
	for i := 0; i < 4; i++ {
		<-done
	}
	var cz monConnz
	monJSON(t, s, "/connz?state=closed&auth=1", &cz)
	for _, c := range cz.Conns {
		if c.AuthorizedUser != "u" {
			t.Errorf("closed cid %d: authorized_user %q, want u", c.Cid, c.AuthorizedUser)
		}
	}
}
