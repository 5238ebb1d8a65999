package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// ccGoldenDir holds one file per case of ccCases: the requests and the
// response nats-server v2.15.2 gave.
const ccGoldenDir = "testdata/consumer_golden"

type ccGoldenFile struct {
	Server   string          `json:"server,omitempty"`
	Stream   string          `json:"stream"`
	Pre      []ccReq         `json:"pre,omitempty"`
	Request  ccReq           `json:"request"`
	Response json.RawMessage `json:"response"`
	// Raw is the response exactly as sent (Response is re-indented).
	Raw string `json:"raw"`
}

// TestConsumerGoldenRecord re-records the golden files against a real
// nats-server: TERN_REF_NATS_SERVER=/path/to/nats-server (v2.15.2, e.g.
// GOBIN=/tmp/refbin go install github.com/nats-io/nats-server/v2@v2.15.2).
func TestConsumerGoldenRecord(t *testing.T) {
	bin := os.Getenv("TERN_REF_NATS_SERVER")
	if bin == "" {
		t.Skip("set TERN_REF_NATS_SERVER to a nats-server v2.15.2 binary to record")
	}
	conns := map[string]*nats.Conn{
		"":       ccStartRef(t, bin, ""),
		"limits": ccStartRef(t, bin, fmt.Sprintf("limits { max_ack_pending: %d, max_request_batch: %d }", ccLimitsMaxAckPending, ccLimitsMaxRequestBatch)),
	}
	if err := os.MkdirAll(ccGoldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ccRecordShapes(t, conns[""])
	for _, c := range ccCases() {
		nc := conns[c.Server]
		resp := ccRecordCase(t, nc, c)
		f := ccGoldenFile{Server: c.Server, Stream: c.Stream, Pre: c.Pre, Request: c.Req, Response: resp, Raw: string(resp)}
		b, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ccGoldenDir, c.Name+".json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func ccStartRef(t *testing.T, bin, jsExtra string) *nats.Conn {
	dir := t.TempDir()
	port := freePort(t)
	conf := filepath.Join(dir, "ref.conf")
	text := fmt.Sprintf("listen: 127.0.0.1:%d\njetstream { store_dir: %q\n%s }\n", port, filepath.Join(dir, "js"), jsExtra)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	startProcessBinary(t, bin, port, "-c", conf)
	nc, err := nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// ccRecordCase deletes every stream, creates the case's stream, sends the
// pre requests (each must succeed) and returns the response to the request.
func ccRecordCase(t *testing.T, nc *nats.Conn, c ccGoldenCase) json.RawMessage {
	for name := range ccStreams {
		ccAPI(t, nc, "STREAM.DELETE."+name, "")
	}
	if r := ccAPI(t, nc, "STREAM.CREATE."+c.Stream, ccStreams[c.Stream]); hasErrorField(r) {
		t.Fatalf("%s: stream create: %s", c.Name, r)
	}
	for _, p := range c.Pre {
		if r := ccAPI(t, nc, p.Subject, p.Body); hasErrorField(r) {
			t.Fatalf("%s: pre request %s: %s", c.Name, p.Subject, r)
		}
	}
	return ccAPI(t, nc, c.Req.Subject, c.Req.Body)
}

func ccAPI(t *testing.T, nc *nats.Conn, subject, body string) json.RawMessage {
	m, err := nc.Request("$JS.API."+subject, []byte(body), 5*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", subject, err)
	}
	return json.RawMessage(m.Data)
}

func hasErrorField(r json.RawMessage) bool {
	var v struct {
		Error *ApiError `json:"error"`
	}
	return json.Unmarshal(r, &v) == nil && v.Error != nil
}

// ccShapeFile holds the other consumer API responses, byte for byte.
const ccShapeFile = "testdata/consumer_golden/_api_shapes.json"

// ccShape is one API exchange whose response Tern's types must reproduce.
type ccShape struct {
	Name string `json:"name"`
	Req  ccReq  `json:"request"`
	Raw  string `json:"raw"`
}

// ccShapeRequests are sent in order on stream L (after the setup).
func ccShapeRequests() []ccShape {
	return []ccShape{
		{Name: "names", Req: ccReq{"CONSUMER.NAMES.L", ""}},
		{Name: "names_offset", Req: ccReq{"CONSUMER.NAMES.L", `{"offset":1}`}},
		{Name: "list", Req: ccReq{"CONSUMER.LIST.L", ""}},
		{Name: "info", Req: ccReq{"CONSUMER.INFO.L.pull", ""}},
		{Name: "info_missing", Req: ccReq{"CONSUMER.INFO.L.nope", ""}},
		{Name: "pause", Req: ccReq{"CONSUMER.PAUSE.L.pull", `{"pause_until":"2099-01-02T03:04:05Z"}`}},
		{Name: "info_paused", Req: ccReq{"CONSUMER.INFO.L.pull", ""}},
		{Name: "resume", Req: ccReq{"CONSUMER.PAUSE.L.pull", `{}`}},
		{Name: "pause_missing", Req: ccReq{"CONSUMER.PAUSE.L.nope", `{}`}},
		{Name: "unpin", Req: ccReq{"CONSUMER.UNPIN.L.pinned", `{"group":"A"}`}},
		{Name: "unpin_bad_group", Req: ccReq{"CONSUMER.UNPIN.L.pinned", `{"group":"B"}`}},
		{Name: "unpin_not_pinned", Req: ccReq{"CONSUMER.UNPIN.L.pull", `{"group":"A"}`}},
		{Name: "stepdown", Req: ccReq{"CONSUMER.LEADER.STEPDOWN.L.pull", ""}},
		{Name: "delete", Req: ccReq{"CONSUMER.DELETE.L.push", ""}},
		{Name: "delete_missing", Req: ccReq{"CONSUMER.DELETE.L.push", ""}},
		{Name: "list_after_delete", Req: ccReq{"CONSUMER.LIST.L", `{"offset":5}`}},
	}
}

// ccShapeSetup are the consumers the shape requests look at.
var ccShapeSetup = []ccReq{
	named("L", "pull", pullD("pull", `"filter_subject":"L.a"`), ""),
	named("L", "push", pushD("push", `"idle_heartbeat":1000000000`), ""),
	named("L", "pinned", pullD("pinned", `"priority_policy":"pinned_client","priority_groups":["A"]`), ""),
}

func ccRecordShapes(t *testing.T, nc *nats.Conn) {
	for name := range ccStreams {
		ccAPI(t, nc, "STREAM.DELETE."+name, "")
	}
	ccAPI(t, nc, "STREAM.CREATE.L", ccStreams["L"])
	for _, p := range ccShapeSetup {
		if r := ccAPI(t, nc, p.Subject, p.Body); hasErrorField(r) {
			t.Fatalf("shape setup %s: %s", p.Subject, r)
		}
	}
	shapes := ccShapeRequests()
	for i := range shapes {
		shapes[i].Raw = string(ccAPI(t, nc, shapes[i].Req.Subject, shapes[i].Req.Body))
	}
	b, err := json.MarshalIndent(shapes, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ccShapeFile, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}
