package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go"
)

// Fuzz targets for what arrives from the network at a running server:
// the route protocol (every operation, raft frames and pieces), the
// JetStream API, the system account's requests and the monitoring
// endpoints' query parameters. Each checks that nothing panics, recovered
// or not (RecoveredPanics stays 0). scripts/fuzz runs them for longer.

// expectNoRecoveredPanic fails when a handler panicked (and was recovered).
func expectNoRecoveredPanic(t *testing.T, s *Server) {
	t.Helper()
	if n := s.RecoveredPanics(); n != 0 {
		t.Fatalf("%d handler panics recovered (run with TERN_TEST_LOG=1 for the stack)", n)
	}
}

// FuzzRouteReadLoop feeds a byte stream to a route's read loop on a
// running server that runs a raft group named G. INFO is taken out of
// the input: its gossip would dial the addresses it names.
func FuzzRouteReadLoop(f *testing.F) {
	h := raftTestHead("G", raft.MsgApp)
	app := string(appendRaftPayload(nil, "G", &raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: 3,
		Entries: []raft.Entry{{Term: 3, Index: 4, Data: []byte("entry")}}}))
	snap := string(appendRaftPayload(nil, "G", &raft.Message{Type: raft.MsgSnap, From: 1, To: 2, Term: 3,
		Snapshot: &raft.Snapshot{Index: 9, Term: 3, Peers: []raft.ID{1, 2}, Data: []byte("state")}}))
	for _, seed := range []string{
		"RS+ $G foo\r\nRMSG $G foo - 1 - 0 5\r\nhello\r\nRS- $G foo\r\n",
		"RS+ $G _INBOX.> \r\nRMSG $SYS $SYS.REQ.SERVER.PING.CONNZ _INBOX.x 1 - 0 18\r\n" + `{"offset":-1,"x":}` + "\r\n",
		"RS+ $G bar q1\r\nRMSG $G bar _INBOX.y 0 q1,q2 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
		"RMSG B x - 1 - -1 0\r\n\r\n",
		"RS+ $G baz g\r\nRMSG $G baz _INBOX.z 1 g 0 2\r\nhi\r\nRMSG $G baz - 3 g,h 0 2\r\nhi\r\n", // re-routes
		"RAFT " + itoa(len(app)) + "\r\n" + app + "\r\n",
		"RAFTF 7 " + itoa(len(snap)) + " 0 6\r\n" + snap[:6] + "\r\nRAFTF 7 " + itoa(len(snap)) + " 6 " + itoa(len(snap)-6) + "\r\n" + snap[6:] + "\r\n",
		"RAFT 6\r\n" + h + "xy\r\nPING\r\nPONG\r\n",
		"RAFTF 1 10 8 5\r\nxxxxx\r\n",
		string(appendRaftBatch(nil, []string{"G", "H"}, []raft.Message{{Type: raft.MsgHeartbeat, From: 1, To: 2, Term: 3},
			{Type: raft.MsgApp, From: 1, To: 2, Term: 3, Entries: []raft.Entry{{Term: 3, Index: 4, Data: []byte("e")}}}})),
	} {
		f.Add([]byte(seed))
	}
	s := runServer(f, clusterOptions())
	s.raft.mu.Lock()
	if s.raft.groups == nil {
		s.raft.groups = map[string]*raftGroup{}
	}
	// An inbox bounded at nothing: what the group would receive is dropped.
	s.raft.groups["G"] = &raftGroup{inbox: newRaftQueue[raft.Message](0)}
	s.raft.mu.Unlock()
	f.Cleanup(func() {
		s.raft.mu.Lock()
		delete(s.raft.groups, "G")
		s.raft.mu.Unlock()
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		data = bytes.ReplaceAll(data, []byte("INFO"), []byte("INFX"))
		a, b := net.Pipe()
		defer b.Close()
		r := &route{br: bufio.NewReaderSize(bytes.NewReader(data), 64*1024), remote: routeInfo{ID: "FUZZ", Name: "FUZZ", Proto: routeProto}}
		r.c = newClient(s, a, s.cidGen.Add(1))
		r.c.route = r
		_ = s.routeReadLoop(r)
		r.c.closeNow(RouteRemoved)
		for _, acc := range s.accs.all() {
			for _, e := range acc.sl.All() {
				if e.Value.route == r.c {
					_ = acc.sl.Remove(e.Subject, e.Queue, e.Value)
				}
			}
		}
		expectNoRecoveredPanic(t, s)
	})
}

// fuzzAPIs are the JetStream API calls FuzzJSAPI makes, chosen by the
// input's first byte; the rest of the input is the request's body.
var fuzzAPIs = []string{
	"INFO", "STREAM.CREATE.F", "STREAM.UPDATE.S", "STREAM.INFO.S", "STREAM.DELETE.F", "STREAM.NAMES",
	"STREAM.LIST", "STREAM.PURGE.F", "STREAM.MSG.GET.S", "STREAM.MSG.DELETE.F", "STREAM.CREATE.S",
	"STREAM.UPDATE.F", "CONSUMER.CREATE.S", "STREAM.INFO.F", "STREAM.LEADER.STEPDOWN.S", "META.LEADER.STEPDOWN",
}

// FuzzJSAPI decodes and validates every JetStream API request type on a
// running server: a memory stream S with a few messages that the calls
// read, and a stream F that they may create, change and delete (F is
// deleted after each call).
func FuzzJSAPI(f *testing.F) {
	for i, body := range []string{
		"", `{"name":"F","subjects":["f.>"],"storage":"memory","max_msgs":10}`, `{"name":"S","subjects":["s.>"],"storage":"memory","max_age":1000000000}`,
		`{"subjects_filter":">","offset":-1,"deleted_details":true}`, "", `{"offset":-1,"subject":"s.>"}`,
		`{"offset":5}`, `{"filter":"f.a","keep":1}`, `{"last_by_subj":"s.a"}`, `{"seq":1,"no_erase":true}`,
		`{"name":"S","subjects":["s.>"],"storage":"memory"}`, `{"name":"F","subjects":["g.>"],"storage":"memory","sealed":true}`,
		`{"stream_name":"S","config":{"durable_name":"d"}}`, `{"subjects_filter":"s.*","offset":1}`, "", "",
	} {
		f.Add(append([]byte{byte(i)}, body...))
	}
	f.Add([]byte("\x03{\"offset\":-1,\"subjects_filter\":\">\"}"))
	f.Add([]byte("\x08{\"seq\":1,\"next_by_subj\":\"s.>\",\"start_time\":\"2020-01-01T00:00:00Z\"}"))
	s := runJSServer(f)
	jsa := s.js.Load().account(globalAccountName)
	call := func(subject string, body []byte) any {
		r := &apiRequest{jsa: jsa, subject: subject, reply: "_INBOX.fuzz", body: body}
		_, resp := r.dispatch()
		if _, err := json.Marshal(resp); err != nil {
			f.Fatalf("%s: answer does not marshal: %v", subject, err)
		}
		return resp
	}
	setup := func() {
		if jsa.lookup("S") == nil {
			call("STREAM.CREATE.S", []byte(`{"name":"S","subjects":["s.>"],"storage":"memory"}`))
			for _, subj := range []string{"s.a", "s.b", "s.a"} {
				s.deliver(nil, s.globalAccount(), subj, "", nil, []byte("x"))
			}
		}
	}
	setup()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		setup()
		call(fuzzAPIs[int(data[0])%len(fuzzAPIs)], data[1:])
		call("STREAM.DELETE.F", nil)
		expectNoRecoveredPanic(t, s)
	})
}

// FuzzSysRequest answers every system account request with the input as
// its body; the first byte chooses the request.
func FuzzSysRequest(f *testing.F) {
	for i, body := range []string{"", `{"offset":-1,"limit":-5,"sort":"idle","state":2}`, `{"subscriptions":true,"cid":1}`,
		"{", "null", `{"offset":9223372036854775807,"limit":9223372036854775807}`, `{"sort":"nope","acc":"SYS","user":"sys"}`} {
		f.Add(append([]byte{byte(i)}, body...))
	}
	s, _ := sysRunConfigServer(f, sysAccountsConf)
	connectNATS(f, s.ClientURL(), nats.UserInfo("sys", "sysp"))
	handlers := s.sysHandlers()
	kinds := make([]string, 0, len(handlers))
	for k := range handlers {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		kind := kinds[int(data[0])%len(kinds)]
		if _, err := json.Marshal(handlers[kind](data[1:])); err != nil {
			t.Fatalf("%s: answer does not marshal: %v", kind, err)
		}
		expectNoRecoveredPanic(t, s)
	})
}

// FuzzMonitorQuery serves the monitoring endpoints that read query
// parameters with the input as the query string.
func FuzzMonitorQuery(f *testing.F) {
	for _, q := range []string{"offset=-1&limit=-5", "sort=idle&state=all&subs=detail&auth=1", "cid=1", "offset=x",
		"subs=1&test=foo.bar", "js-enabled-only=true&js-server-only=true", "callback=cb&limit=1", "offset=%zz&limit=;"} {
		f.Add(q)
	}
	o := testOptions()
	o.JetStream, o.StoreDir = true, f.TempDir()
	s := runServer(f, o)
	nc := connectNATS(f, s.ClientURL())
	if _, err := nc.SubscribeSync("foo.>"); err != nil {
		f.Fatal(err)
	}
	endpoints := map[string]func(*http.Request) (any, int){
		"/connz": s.handleConnz, "/subsz": s.handleSubsz, "/healthz": s.handleHealthz,
	}
	f.Fuzz(func(t *testing.T, query string) {
		for path, h := range endpoints {
			req := &http.Request{Method: "GET", URL: &url.URL{Path: path, RawQuery: query}, Header: http.Header{}}
			w := httptest.NewRecorder()
			s.jsonHandler(h)(w, req)
			if w.Code != 200 && w.Code != 400 && !(path == "/healthz" && w.Code == 503) {
				t.Fatalf("%s?%s: status %d: %s", path, query, w.Code, w.Body)
			}
		}
		expectNoRecoveredPanic(t, s)
	})
}
