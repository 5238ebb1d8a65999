package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func requestRaw(t *testing.T, nc *nats.Conn, subject, body string) string {
	t.Helper()
	m, err := nc.Request(subject, []byte(body), 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	return string(m.Data)
}

// A JetStream API handler that panics is answered with a 500 error of its
// response type, and the server goes on answering.
func TestJetStreamAPIPanicAnswered(t *testing.T) {
	saved := apiRoutes
	t.Cleanup(func() { apiRoutes = saved }) // after the server's shutdown
	apiRoutes = append(append(apiRoutes[:0:0], saved...), struct {
		prefix  string
		typ     string
		handler apiHandler
	}{"STREAM.TESTPANIC", "test_panic_response", func(*apiRequest) any { panic("boom") }})
	s := runJSServer(t)
	nc := connectNATS(t, s.ClientURL())
	for range 2 { // the second is logged without its stack
		want := `{"type":"io.nats.jetstream.api.v1.test_panic_response","error":{"code":500,"description":"internal server error"}}`
		if got := requestRaw(t, nc, "$JS.API.STREAM.TESTPANIC", ""); got != want {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	}
	if n := s.RecoveredPanics(); n != 2 {
		t.Fatalf("%d panics recovered", n)
	}
	var names pagedAnswer
	requestJSON(t, nc, "$JS.API.STREAM.NAMES", "", &names)
	if names.Error != nil || names.Type != "io.nats.jetstream.api.v1.stream_names_response" {
		t.Fatalf("STREAM.NAMES after the panic: %+v", names)
	}
}

// A system account request whose handler panics is answered with a 500
// error beside the server's identity.
func TestSysRequestPanicAnswered(t *testing.T) {
	s, _ := sysRunConfigServer(t, sysAccountsConf)
	if err := s.sysRespond(s.SystemAccount(), "$SYS.REQ.SERVER.PING.BOOM", func([]byte) any { panic("boom") }, false); err != nil {
		t.Fatal(err)
	}
	nc := sysConnectUser(t, s, "sys", "sysp")
	var resp struct {
		Server *ServerInfo      `json:"server"`
		Error  *sysAPIError     `json:"error"`
		Data   *json.RawMessage `json:"data"`
	}
	requestJSON(t, nc, "$SYS.REQ.SERVER.PING.BOOM", "", &resp)
	if resp.Server == nil || resp.Server.ID != s.ID() || resp.Error == nil || resp.Error.Code != 500 || resp.Data != nil {
		t.Fatalf("answer: %+v", resp)
	}
	sysCheckServerInfo(t, s, sysRequest(t, nc, "$SYS.REQ.SERVER.PING.VARZ", nil))
}

// Any other internal subscription a client reaches: a panic is answered
// with a 500 error when the message asked for an answer.
func TestInternalSubscriptionPanicAnswered(t *testing.T) {
	s := runServer(t, nil)
	if _, err := s.globalAccount().subscribeInternal("boom", "", func(*subscription, *client, *Account, string, string, []byte, []byte) {
		panic("boom")
	}); err != nil {
		t.Fatal(err)
	}
	nc := connectNATS(t, s.ClientURL())
	if got, want := requestRaw(t, nc, "boom", ""), `{"error":{"code":500,"description":"internal server error"}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
	if err := nc.Publish("boom", nil); err != nil { // no reply: nothing to answer
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "both panics recovered", func() bool { return s.RecoveredPanics() == 2 })
	expectServing(t, s)
}

// Handlers that look their stream up again after the dispatcher found it
// answer "stream not found" when it was deleted in between.
func TestClusterHandlersOfADeletedStream(t *testing.T) {
	c := runJSCluster(t, 3)
	s := c.waitMetaLeader()
	jsa := s.js.Load().account(globalAccountName)
	for _, tc := range []struct {
		subject string
		handler apiHandler
	}{
		{"STREAM.PURGE.GONE", (*apiRequest).clusterStreamPurge},
		{"STREAM.MSG.DELETE.GONE", (*apiRequest).clusterStreamMsgDelete},
		{"STREAM.LEADER.STEPDOWN.GONE", (*apiRequest).streamStepdown},
	} {
		resp := tc.handler(&apiRequest{jsa: jsa, subject: tc.subject, reply: "_INBOX.x"})
		if e := resp.(interface{ apiError() *ApiError }).apiError(); e == nil || e.ErrCode != 10059 {
			t.Fatalf("%s: %+v", tc.subject, resp)
		}
	}
}
