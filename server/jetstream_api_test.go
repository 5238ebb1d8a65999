package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// apiResp is a decoded JetStream API response; numbers stay json.Number so
// they compare exactly.
type apiResp map[string]any

// jsAPIReq sends body to subject as a plain core request and decodes the
// JSON answer.
func jsAPIReq(t testing.TB, nc *nats.Conn, subject, body string) apiResp {
	t.Helper()
	m, err := nc.Request(subject, []byte(body), 5*time.Second)
	if err != nil {
		t.Fatalf("request %s %s: %v", subject, body, err)
	}
	return decodeAPIResp(t, m.Data)
}

func decodeAPIResp(t testing.TB, data []byte) apiResp {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var r apiResp
	if err := d.Decode(&r); err != nil {
		t.Fatalf("response is not JSON: %v: %s", err, data)
	}
	return r
}

// get walks a dotted path of object keys.
func (r apiResp) get(path string) any {
	var cur any = map[string]any(r)
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func (r apiResp) has(path string) bool {
	i := strings.LastIndexByte(path, '.')
	parent := any(map[string]any(r))
	if i >= 0 {
		parent = r.get(path[:i])
	}
	m, ok := parent.(map[string]any)
	if !ok {
		return false
	}
	_, ok = m[path[i+1:]]
	return ok
}

// num returns the number at path as a string ("" when absent).
func (r apiResp) num(path string) string {
	if n, ok := r.get(path).(json.Number); ok {
		return n.String()
	}
	return ""
}

func (r apiResp) str(path string) string {
	s, _ := r.get(path).(string)
	return s
}

func (r apiResp) strs(path string) []string {
	arr, _ := r.get(path).([]any)
	out := []string{}
	for _, v := range arr {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// wantAPIErr checks the error object of a response exactly. An empty desc
// is not compared; a desc ending in "*" is compared as a prefix.
func wantAPIErr(t testing.TB, r apiResp, code, errCode int, desc string) {
	t.Helper()
	if !r.has("error") {
		t.Fatalf("expected error %d/%d, got success: %v", code, errCode, r)
	}
	gotCode, gotErr, gotDesc := r.num("error.code"), r.num("error.err_code"), r.str("error.description")
	if gotCode != fmt.Sprint(code) || gotErr != fmt.Sprint(errCode) {
		t.Fatalf("expected error %d/%d, got %s/%s %q", code, errCode, gotCode, gotErr, gotDesc)
	}
	switch {
	case desc == "":
	case strings.HasSuffix(desc, "*"):
		if !strings.HasPrefix(gotDesc, strings.TrimSuffix(desc, "*")) {
			t.Fatalf("error description %q, want prefix %q", gotDesc, desc)
		}
	case gotDesc != desc:
		t.Fatalf("error description %q, want %q", gotDesc, desc)
	}
}

func wantAPIOK(t testing.TB, r apiResp) {
	t.Helper()
	if r.has("error") {
		t.Fatalf("unexpected API error: %v", r.get("error"))
	}
}

func wantType(t testing.TB, r apiResp, kind string) {
	t.Helper()
	if got := r.str("type"); got != "io.nats.jetstream.api.v1."+kind {
		t.Fatalf("type %q, want %q", got, "io.nats.jetstream.api.v1."+kind)
	}
}

// jsCreate creates a stream with a raw request and fails the test on error.
func jsCreate(t testing.TB, nc *nats.Conn, name, cfgJSON string) apiResp {
	t.Helper()
	r := jsAPIReq(t, nc, "$JS.API.STREAM.CREATE."+name, cfgJSON)
	wantAPIOK(t, r)
	return r
}

// jsPubN publishes n messages to subject and waits for every ack.
func jsPubN(t testing.TB, js jetstream.JetStream, subject string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := js.Publish(ctx(t), subject, []byte(fmt.Sprint(i))); err != nil {
			t.Fatalf("publish %s #%d: %v", subject, i, err)
		}
	}
}

func TestJSAPIStreamCreateNormalisedEcho(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)

	r := jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.S", `{"name":"S","storage":"memory"}`)
	wantAPIOK(t, r)
	wantType(t, r, "stream_create_response")
	if r.get("did_create") != true {
		t.Fatalf("first create: did_create = %v", r.get("did_create"))
	}
	for path, want := range map[string]string{
		"config.max_msgs":             "-1",
		"config.max_bytes":            "-1",
		"config.max_msgs_per_subject": "-1",
		"config.max_msg_size":         "-1",
		"config.max_consumers":        "-1",
		"config.num_replicas":         "1",
		"config.max_age":              "0",
		"config.duplicate_window":     "120000000000",
		"state.messages":              "0",
		"state.last_seq":              "0",
	} {
		if got := r.num(path); got != want {
			t.Errorf("%s = %q, want %s", path, got, want)
		}
	}
	if got := r.strs("config.subjects"); !reflect.DeepEqual(got, []string{"S"}) {
		t.Errorf("subjects default %v, want [S]", got)
	}
	for path, want := range map[string]string{"config.retention": "limits", "config.discard": "old",
		"config.storage": "memory", "config.compression": "none"} {
		if got := r.str(path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	// Booleans clients compare must be present even when false.
	for _, k := range []string{"sealed", "deny_delete", "deny_purge", "allow_rollup_hdrs", "allow_direct",
		"mirror_direct", "allow_msg_ttl", "consumer_limits"} {
		if !r.has("config." + k) {
			t.Errorf("config.%s missing from the echo", k)
		}
	}
	if r.str("cluster.leader") == "" {
		t.Errorf("cluster.leader missing: %v", r.get("cluster"))
	}

	// Same config again: success, not created.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.S", `{"name":"S","storage":"memory"}`)
	wantAPIOK(t, r)
	if r.has("did_create") && r.get("did_create") != false {
		t.Fatalf("idempotent create reported did_create: %v", r.get("did_create"))
	}
	// The normalised form sent back is also "the same config".
	r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.S",
		`{"name":"S","subjects":["S"],"storage":"memory","max_msgs":-1,"max_bytes":-1,"max_msgs_per_subject":-1,"max_msg_size":-1,"max_consumers":-1,"num_replicas":1,"duplicate_window":120000000000}`)
	wantAPIOK(t, r)

	// duplicate_window defaults to max_age when that is smaller.
	r = jsCreate(t, nc, "AGED", `{"name":"AGED","storage":"memory","max_age":1000000000}`)
	if got := r.num("config.duplicate_window"); got != "1000000000" {
		t.Fatalf("duplicate_window with max_age 1s = %s", got)
	}
	// An explicit window larger than max_age is refused.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.AGED2", `{"name":"AGED2","storage":"memory","max_age":1000000000,"duplicate_window":2000000000}`)
	wantAPIErr(t, r, 500, 10052, "")

	// nats.go sees the same normalisation.
	_, js := jsClient(t, s)
	st := createStream(t, js, jetstream.StreamConfig{Name: "GO", Subjects: []string{"go.>"}, Storage: jetstream.MemoryStorage})
	cfg := st.CachedInfo().Config
	if cfg.MaxMsgs != -1 || cfg.MaxBytes != -1 || cfg.MaxMsgsPerSubject != -1 || cfg.MaxMsgSize != -1 ||
		cfg.MaxConsumers != -1 || cfg.Duplicates != 2*time.Minute || cfg.Replicas != 1 {
		t.Fatalf("nats.go config %+v", cfg)
	}
}

func TestJSAPIStreamCreateErrors(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s.>"],"storage":"memory"}`)

	// Different configuration under the same name.
	r := jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.S", `{"name":"S","subjects":["s.>"],"storage":"memory","max_msgs":10}`)
	wantAPIErr(t, r, 400, 10058, "stream name already in use with a different configuration")
	wantType(t, r, "stream_create_response")

	// Name in the subject is not the name in the body.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.X", `{"name":"Y","storage":"memory"}`)
	wantAPIErr(t, r, 400, 10056, "stream name in subject does not match request")

	// Subjects overlapping another stream's.
	for _, subj := range []string{"s.a", "s.*", "*.b", "s.a.>"} {
		r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.O", `{"name":"O","subjects":["`+subj+`"],"storage":"memory"}`)
		wantAPIErr(t, r, 400, 10065, "subjects overlap with an existing stream")
	}

	// Invalid names (sent raw: nats.go refuses them client side).
	for _, name := range []string{"a.b", "*", ">", "a*b", strings.Repeat("n", 256)} {
		r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE."+name, `{"name":"`+name+`","storage":"memory"}`)
		wantAPIErr(t, r, 500, 10052, "")
	}
	// 255 characters is still a valid name.
	long := strings.Repeat("n", 255)
	jsCreate(t, nc, long, `{"name":"`+long+`","subjects":["long"],"storage":"memory"}`)

	// Replicas > 1 on a single server.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.R3", `{"name":"R3","storage":"memory","num_replicas":3}`)
	wantAPIErr(t, r, 500, 10074, "replicas > 1 not supported in non-clustered mode")

	// Bad JSON.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.J", `{"name":`)
	wantAPIErr(t, r, 400, 10025, "invalid JSON*")
	r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.J", `{"name":"J","max_msgs":"ten"}`)
	wantAPIErr(t, r, 400, 10025, "invalid JSON*")

	// A stream can not be created sealed (only sealed by an update).
	r = jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.SEAL", `{"name":"SEAL","storage":"memory","sealed":true}`)
	wantAPIErr(t, r, 500, 10052, "stream configuration for create can not be sealed")

	// Nothing that failed was created.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.NAMES", "")
	if got := r.strs("streams"); !reflect.DeepEqual(got, []string{"S", long}) {
		t.Fatalf("streams after failed creates: %v", got)
	}
	// Through nats.go: the typed errors.
	_, js := jsClient(t, s)
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "S", Subjects: []string{"other"}}); !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		t.Fatalf("nats.go conflicting create: %v", err)
	}
}

func TestJSAPIStreamUpdate(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s.a"],"storage":"memory"}`)
	jsPubN(t, js, "s.a", 5)

	// Limits change is applied to what is stored.
	r := jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"S","subjects":["s.a"],"storage":"memory","max_msgs":2}`)
	wantAPIOK(t, r)
	wantType(t, r, "stream_update_response")
	if r.num("config.max_msgs") != "2" || r.num("state.messages") != "2" || r.num("state.first_seq") != "4" {
		t.Fatalf("after max_msgs 2: config %v state %v", r.get("config.max_msgs"), r.get("state"))
	}
	// The new limit applies to new messages too.
	jsPubN(t, js, "s.a", 1)
	if r = jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", ""); r.num("state.messages") != "2" || r.num("state.first_seq") != "5" {
		t.Fatalf("after publish: %v", r.get("state"))
	}

	// Subjects change: the stream listens to the new subject only.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"S","subjects":["s.b"],"storage":"memory","max_msgs":2}`)
	wantAPIOK(t, r)
	if _, err := js.Publish(ctx(t), "s.a", []byte("x"), jetstream.WithRetryAttempts(0)); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("publish to the old subject: %v", err)
	}
	ack, err := js.Publish(ctx(t), "s.b", []byte("x"))
	if err != nil || ack.Sequence != 7 {
		t.Fatalf("publish to the new subject: %+v %v", ack, err)
	}

	// Immutable fields.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"S","subjects":["s.b"],"storage":"file","max_msgs":2}`)
	wantAPIErr(t, r, 500, 10052, "stream configuration update can not change storage type")
	r = jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"S","subjects":["s.b"],"storage":"memory","max_msgs":2,"num_replicas":3}`)
	if !r.has("error") {
		t.Fatalf("replicas change accepted: %v", r)
	}
	// Unknown stream, name mismatch, overlap with another stream.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.NOPE", `{"name":"NOPE","storage":"memory"}`)
	wantAPIErr(t, r, 404, 10059, "stream not found")
	r = jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"T","storage":"memory"}`)
	wantAPIErr(t, r, 400, 10056, "stream name in subject does not match request")
	jsCreate(t, nc, "T", `{"name":"T","subjects":["t"],"storage":"memory"}`)
	r = jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"S","subjects":["s.b","t"],"storage":"memory","max_msgs":2}`)
	wantAPIErr(t, r, 400, 10065, "subjects overlap with an existing stream")
	// A refused update changed nothing.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", "")
	if got := r.strs("config.subjects"); !reflect.DeepEqual(got, []string{"s.b"}) || r.str("config.storage") != "memory" {
		t.Fatalf("config after refused updates: %v", r.get("config"))
	}
}

func TestJSAPIStreamInfoSubjectsAndDeleted(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["a.*","b.*"],"storage":"memory"}`)
	jsPubN(t, js, "a.1", 3) // 1-3
	jsPubN(t, js, "a.2", 2) // 4-5
	jsPubN(t, js, "b.1", 1) // 6

	r := jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", `{"subjects_filter":"a.*"}`)
	wantAPIOK(t, r)
	wantType(t, r, "stream_info_response")
	subs, _ := r.get("state.subjects").(map[string]any)
	if len(subs) != 2 || fmt.Sprint(subs["a.1"]) != "3" || fmt.Sprint(subs["a.2"]) != "2" {
		t.Fatalf("subjects for a.*: %v", r.get("state.subjects"))
	}
	if r.num("total") != "2" || r.num("offset") != "0" {
		t.Fatalf("paging for a.*: total %s offset %s", r.num("total"), r.num("offset"))
	}
	r = jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", `{"subjects_filter":">"}`)
	if subs, _ := r.get("state.subjects").(map[string]any); len(subs) != 3 || fmt.Sprint(subs["b.1"]) != "1" {
		t.Fatalf("subjects for >: %v", r.get("state.subjects"))
	}
	// Without a filter, no subject map.
	if r = jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", ""); r.has("state.subjects") || r.num("state.num_subjects") != "3" {
		t.Fatalf("plain info: %v", r.get("state"))
	}

	// Deleted sequences: counted always, listed only on request.
	for _, seq := range []string{"2", "4"} {
		wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.S", `{"seq":`+seq+`}`))
	}
	r = jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", "")
	if r.num("state.num_deleted") != "2" || r.has("state.deleted") || r.num("state.messages") != "4" {
		t.Fatalf("info after deletes: %v", r.get("state"))
	}
	r = jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", `{"deleted_details":true}`)
	if d := fmt.Sprint(r.get("state.deleted")); d != "[2 4]" {
		t.Fatalf("deleted details %s", d)
	}
	// The subject counts follow the deletes.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", `{"subjects_filter":"a.*"}`)
	if subs, _ := r.get("state.subjects").(map[string]any); fmt.Sprint(subs["a.1"]) != "2" || fmt.Sprint(subs["a.2"]) != "1" {
		t.Fatalf("subjects after deletes: %v", subs)
	}
	// nats.go view.
	st, err := js.Stream(ctx(t), "S")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx(t), jetstream.WithDeletedDetails(true), jetstream.WithSubjectFilter("a.1"))
	if err != nil || !reflect.DeepEqual(info.State.Deleted, []uint64{2, 4}) || len(info.State.Subjects) != 1 || info.State.Subjects["a.1"] != 2 {
		t.Fatalf("nats.go info %+v %v", info.State, err)
	}
	// Unknown stream.
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.INFO.NOPE", ""), 404, 10059, "stream not found")
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", `{"deleted_details":`), 400, 10025, "invalid JSON*")
}

func TestJSAPIStreamNamesAndList(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "C", `{"name":"C","subjects":["c.x"],"storage":"memory"}`)
	jsCreate(t, nc, "A", `{"name":"A","subjects":["a.>"],"storage":"memory"}`)
	jsCreate(t, nc, "B", `{"name":"B","subjects":["b.*","bb"],"storage":"memory"}`)

	check := func(body string, want []string, total, offset string) apiResp {
		t.Helper()
		r := jsAPIReq(t, nc, "$JS.API.STREAM.NAMES", body)
		wantAPIOK(t, r)
		wantType(t, r, "stream_names_response")
		if got := r.strs("streams"); !reflect.DeepEqual(got, want) {
			t.Fatalf("names %s = %v, want %v", body, got, want)
		}
		if r.num("total") != total || r.num("offset") != offset || r.num("limit") != "1024" {
			t.Fatalf("names %s paging total=%s offset=%s limit=%s", body, r.num("total"), r.num("offset"), r.num("limit"))
		}
		return r
	}
	check("", []string{"A", "B", "C"}, "3", "0")
	check(`{}`, []string{"A", "B", "C"}, "3", "0")
	check(`{"subject":"b.x"}`, []string{"B"}, "1", "0")
	check(`{"subject":"*.x"}`, []string{"A", "B", "C"}, "3", "0")
	check(`{"subject":"a.>"}`, []string{"A"}, "1", "0")
	check(`{"subject":"bb"}`, []string{"B"}, "1", "0")
	check(`{"offset":1}`, []string{"B", "C"}, "3", "1")
	check(`{"offset":2,"subject":">"}`, []string{"C"}, "3", "2")
	// An offset past the end is clamped to the total.
	check(`{"offset":10}`, []string{}, "3", "3")
	check(`{"subject":"nothing.here"}`, []string{}, "0", "0")
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.NAMES", `{"offset":`), 400, 10025, "invalid JSON*")

	r := jsAPIReq(t, nc, "$JS.API.STREAM.LIST", `{"subject":"*.x"}`)
	wantAPIOK(t, r)
	wantType(t, r, "stream_list_response")
	list, _ := r.get("streams").([]any)
	var names []string
	for _, si := range list {
		names = append(names, si.(map[string]any)["config"].(map[string]any)["name"].(string))
	}
	if !reflect.DeepEqual(names, []string{"A", "B", "C"}) || r.num("total") != "3" || r.num("limit") != "256" {
		t.Fatalf("list: %v total=%s limit=%s", names, r.num("total"), r.num("limit"))
	}
	r = jsAPIReq(t, nc, "$JS.API.STREAM.LIST", `{"subject":"none"}`)
	if list, ok := r.get("streams").([]any); !ok || len(list) != 0 || r.num("total") != "0" {
		t.Fatalf("empty list must be [] not null: %v", r)
	}

	// nats.go StreamNameBySubject and filtered name listing.
	name, err := js.StreamNameBySubject(ctx(t), "a.q.r")
	if err != nil || name != "A" {
		t.Fatalf("StreamNameBySubject: %q %v", name, err)
	}
	var got []string
	lister := js.StreamNames(ctx(t), jetstream.WithStreamListSubject("b.*"))
	for n := range lister.Name() {
		got = append(got, n)
	}
	if lister.Err() != nil || !reflect.DeepEqual(got, []string{"B"}) {
		t.Fatalf("nats.go names b.*: %v %v", got, lister.Err())
	}
	var infos []string
	il := js.ListStreams(ctx(t))
	for si := range il.Info() {
		infos = append(infos, si.Config.Name)
	}
	sort.Strings(infos)
	if il.Err() != nil || !reflect.DeepEqual(infos, []string{"A", "B", "C"}) {
		t.Fatalf("nats.go list: %v %v", infos, il.Err())
	}
}

func TestJSAPIStreamDelete(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"memory"}`)
	jsPubN(t, js, "s", 3)
	r := jsAPIReq(t, nc, "$JS.API.STREAM.DELETE.S", "")
	wantAPIOK(t, r)
	wantType(t, r, "stream_delete_response")
	if r.get("success") != true {
		t.Fatalf("delete: %v", r)
	}
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.DELETE.S", ""), 404, 10059, "stream not found")
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", ""), 404, 10059, "stream not found")
	if _, err := js.Publish(ctx(t), "s", nil, jetstream.WithRetryAttempts(0)); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("publish after delete: %v", err)
	}
	// The name and subjects are free again, and the new stream starts empty.
	r = jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"memory"}`)
	if r.get("did_create") != true || r.num("state.messages") != "0" || r.num("state.last_seq") != "0" {
		t.Fatalf("recreate: %v", r)
	}
}

func TestJSAPIStreamPurge(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["p.*"],"storage":"memory"}`)
	state := func() (msgs, first, last string) {
		r := jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", "")
		return r.num("state.messages"), r.num("state.first_seq"), r.num("state.last_seq")
	}
	purge := func(body, purged string) {
		t.Helper()
		r := jsAPIReq(t, nc, "$JS.API.STREAM.PURGE.S", body)
		wantAPIOK(t, r)
		wantType(t, r, "stream_purge_response")
		if r.get("success") != true || r.num("purged") != purged {
			t.Fatalf("purge %s: %v, want purged %s", body, r, purged)
		}
	}

	// Everything.
	jsPubN(t, js, "p.a", 10)
	purge("", "10")
	if m, f, l := state(); m != "0" || f != "11" || l != "10" {
		t.Fatalf("after full purge: %s %s %s", m, f, l)
	}
	// By subject: 11-14 p.a, 15-17 p.b.
	jsPubN(t, js, "p.a", 4)
	jsPubN(t, js, "p.b", 3)
	purge(`{"filter":"p.a"}`, "4")
	if m, f, _ := state(); m != "3" || f != "15" {
		t.Fatalf("after filter purge: %s %s", m, f)
	}
	// Keep the newest n.
	purge(`{"keep":1}`, "2")
	if m, f, _ := state(); m != "1" || f != "17" {
		t.Fatalf("after keep purge: %s %s", m, f)
	}
	// Below a sequence (exclusive): 18-22 p.a.
	jsPubN(t, js, "p.a", 5)
	purge(`{"seq":20}`, "3") // 17, 18, 19
	if m, f, _ := state(); m != "3" || f != "20" {
		t.Fatalf("after seq purge: %s %s", m, f)
	}
	// Filter and keep together: 23-24 p.b.
	jsPubN(t, js, "p.b", 2)
	purge(`{"filter":"p.a","keep":1}`, "2") // 20, 21 go; 22 stays
	if m, f, _ := state(); m != "3" || f != "22" {
		t.Fatalf("after filter+keep purge: %s %s", m, f)
	}
	// seq and keep are mutually exclusive.
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.PURGE.S", `{"seq":5,"keep":1}`), 400, 10003, "bad request")
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.PURGE.NOPE", ""), 404, 10059, "stream not found")
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.PURGE.S", `{"keep":`), 400, 10025, "invalid JSON*")

	// deny_purge.
	jsCreate(t, nc, "DP", `{"name":"DP","subjects":["dp"],"storage":"memory","deny_purge":true}`)
	jsPubN(t, js, "dp", 2)
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.PURGE.DP", ""), 500, 10110, "stream purge not permitted")
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.PURGE.DP", `{"filter":"dp"}`), 500, 10110, "stream purge not permitted")
	if r := jsAPIReq(t, nc, "$JS.API.STREAM.INFO.DP", ""); r.num("state.messages") != "2" {
		t.Fatalf("deny_purge stream lost messages: %v", r.get("state"))
	}
	// nats.go purge options map onto the same request.
	st, _ := js.Stream(ctx(t), "S")
	if err := st.Purge(ctx(t), jetstream.WithPurgeSubject("p.b"), jetstream.WithPurgeKeep(1)); err != nil {
		t.Fatal(err)
	}
	if m, f, _ := state(); m != "2" || f != "22" {
		t.Fatalf("after nats.go purge: %s %s", m, f)
	}
}

func TestJSAPISealedStream(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"memory"}`)
	jsPubN(t, js, "s", 3)
	r := jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"S","subjects":["s"],"storage":"memory","sealed":true}`)
	wantAPIOK(t, r)
	if r.get("config.sealed") != true {
		t.Fatalf("sealed not echoed: %v", r.get("config"))
	}
	// Publish refused with the sealed error.
	m, err := nc.Request("s", []byte("x"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"error":{"code":400,"err_code":10109,"description":"invalid operation on sealed stream"},"stream":"S","seq":0}`; string(m.Data) != want {
		t.Fatalf("publish to sealed stream:\n got %s\nwant %s", m.Data, want)
	}
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.S", `{"seq":1}`), 400, 10109, "invalid operation on sealed stream")
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.PURGE.S", ""), 400, 10109, "invalid operation on sealed stream")
	// Can not unseal.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"S","subjects":["s"],"storage":"memory"}`)
	wantAPIErr(t, r, 500, 10052, "")
	// Reads still work, and nothing changed.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.MSG.GET.S", `{"seq":1}`)
	wantAPIOK(t, r)
	if r = jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", ""); r.num("state.messages") != "3" || r.get("config.sealed") != true {
		t.Fatalf("sealed stream state: %v", r)
	}
}

func TestJSAPIStreamMsgGet(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["g.*"],"storage":"memory"}`)
	hm := nats.NewMsg("g.a")
	hm.Header.Set("X-Test", "yes")
	hm.Data = []byte("one")
	if _, err := js.PublishMsg(ctx(t), hm); err != nil { // 1
		t.Fatal(err)
	}
	for _, subj := range []string{"g.b", "g.a", "g.b", "g.c"} { // 2-5
		if _, err := js.Publish(ctx(t), subj, []byte(subj)); err != nil {
			t.Fatal(err)
		}
	}
	get := func(body string) apiResp {
		t.Helper()
		r := jsAPIReq(t, nc, "$JS.API.STREAM.MSG.GET.S", body)
		wantType(t, r, "stream_msg_get_response")
		return r
	}
	r := get(`{"seq":1}`)
	wantAPIOK(t, r)
	if r.str("message.subject") != "g.a" || r.num("message.seq") != "1" || r.str("message.data") != "b25l" {
		t.Fatalf("get seq 1: %v", r.get("message"))
	}
	if h, err := base64.StdEncoding.DecodeString(r.str("message.hdrs")); err != nil || !bytes.HasPrefix(h, []byte("NATS/1.0\r\n")) || !bytes.Contains(h, []byte("X-Test: yes\r\n")) {
		t.Fatalf("get seq 1 headers %q: %v", h, err)
	}
	if _, err := time.Parse(time.RFC3339Nano, r.str("message.time")); err != nil {
		t.Fatalf("message.time %q: %v", r.str("message.time"), err)
	}
	if r = get(`{"last_by_subj":"g.b"}`); r.num("message.seq") != "4" {
		t.Fatalf("last_by_subj g.b: %v", r.get("message"))
	}
	if r = get(`{"last_by_subj":"g.*"}`); r.num("message.seq") != "5" {
		t.Fatalf("last_by_subj g.*: %v", r.get("message"))
	}
	if r = get(`{"next_by_subj":"g.a","seq":2}`); r.num("message.seq") != "3" {
		t.Fatalf("next_by_subj g.a from 2: %v", r.get("message"))
	}
	if r = get(`{"next_by_subj":"g.b"}`); r.num("message.seq") != "2" {
		t.Fatalf("next_by_subj g.b: %v", r.get("message"))
	}
	for _, body := range []string{`{"seq":99}`, `{"last_by_subj":"g.z"}`, `{"next_by_subj":"g.a","seq":4}`} {
		wantAPIErr(t, get(body), 404, 10037, "no message found")
	}
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.GET.NOPE", `{"seq":1}`), 404, 10059, "stream not found")
	wantAPIErr(t, get(`{"seq":`), 400, 10025, "invalid JSON*")

	// A deleted message is not found; nats.go maps it to ErrMsgNotFound.
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.S", `{"seq":2}`))
	wantAPIErr(t, get(`{"seq":2}`), 404, 10037, "no message found")
	st, _ := js.Stream(ctx(t), "S")
	if _, err := st.GetMsg(ctx(t), 2); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("nats.go GetMsg deleted: %v", err)
	}
	m, err := st.GetMsg(ctx(t), 1)
	if err != nil || m.Header.Get("X-Test") != "yes" || string(m.Data) != "one" {
		t.Fatalf("nats.go GetMsg 1: %+v %v", m, err)
	}
}

func TestJSAPIStreamMsgDelete(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["d"],"storage":"memory"}`)
	jsPubN(t, js, "d", 4)

	r := jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.S", `{"seq":2,"no_erase":true}`)
	wantAPIOK(t, r)
	wantType(t, r, "stream_msg_delete_response")
	if r.get("success") != true {
		t.Fatalf("delete 2: %v", r)
	}
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.S", `{"seq":3,"no_erase":false}`))
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.S", `{"seq":1}`))
	// Already gone, never existed, beyond the end.
	for _, seq := range []string{"2", "99"} {
		wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.S", `{"seq":`+seq+`}`), 400, 10043, "sequence "+seq+" not found")
	}
	if r = jsAPIReq(t, nc, "$JS.API.STREAM.INFO.S", ""); r.num("state.messages") != "1" || r.num("state.first_seq") != "4" {
		t.Fatalf("after deletes: %v", r.get("state"))
	}
	// nats.go DeleteMsg (no_erase) and SecureDeleteMsg (erase).
	jsPubN(t, js, "d", 2) // 5, 6
	st, _ := js.Stream(ctx(t), "S")
	if err := st.DeleteMsg(ctx(t), 5); err != nil {
		t.Fatal(err)
	}
	if err := st.SecureDeleteMsg(ctx(t), 6); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteMsg(ctx(t), 6); !errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) || !strings.Contains(err.Error(), "err_code=10043") {
		t.Fatalf("nats.go delete of a deleted message: %v", err)
	}

	// deny_delete.
	jsCreate(t, nc, "DD", `{"name":"DD","subjects":["dd"],"storage":"memory","deny_delete":true}`)
	jsPubN(t, js, "dd", 1)
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.DD", `{"seq":1}`), 500, 10057, "message delete not permitted")
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.NOPE", `{"seq":1}`), 404, 10059, "stream not found")
}

func TestJSAPIAccountInfo(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	r := jsAPIReq(t, nc, "$JS.API.INFO", "")
	wantAPIOK(t, r)
	wantType(t, r, "account_info_response")
	if r.num("streams") != "0" || r.num("memory") != "0" || r.num("storage") != "0" || r.num("api.level") != "0" {
		t.Fatalf("empty account info: %v", r)
	}
	for _, k := range []string{"max_memory", "max_storage", "max_streams", "max_consumers", "max_ack_pending",
		"memory_max_stream_bytes", "storage_max_stream_bytes"} {
		if got := r.num("limits." + k); got != "-1" {
			t.Errorf("limits.%s = %s, want -1", k, got)
		}
	}
	jsCreate(t, nc, "M", `{"name":"M","subjects":["m"],"storage":"memory"}`)
	jsCreate(t, nc, "F", `{"name":"F","subjects":["f"],"storage":"file"}`)
	jsPubN(t, js, "m", 3)
	jsPubN(t, js, "f", 2)
	mem := jsAPIReq(t, nc, "$JS.API.STREAM.INFO.M", "").num("state.bytes")
	file := jsAPIReq(t, nc, "$JS.API.STREAM.INFO.F", "").num("state.bytes")
	r = jsAPIReq(t, nc, "$JS.API.INFO", "")
	if r.num("streams") != "2" || r.num("memory") != mem || r.num("storage") != file || mem == "0" || file == "0" {
		t.Fatalf("account info %v (memory stream %s bytes, file stream %s bytes)", r, mem, file)
	}
	// API call counters: an error is counted as one.
	before := r.num("api.errors")
	jsAPIReq(t, nc, "$JS.API.STREAM.INFO.NOPE", "")
	r = jsAPIReq(t, nc, "$JS.API.INFO", "")
	if fmt.Sprint(mustAtoi(t, before)+1) != r.num("api.errors") || mustAtoi(t, r.num("api.total")) < 7 {
		t.Fatalf("api stats %v (errors before %s)", r.get("api"), before)
	}
	ai, err := js.AccountInfo(ctx(t))
	if err != nil || ai.Streams != 2 || ai.API.Level != 0 || ai.Limits.MaxMemory != -1 {
		t.Fatalf("nats.go AccountInfo %+v %v", ai, err)
	}
}

func mustAtoi(t testing.TB, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not a number: %q", s)
	}
	return n
}

func TestJSAPIRequiredAPILevel(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","storage":"memory"}`)
	req := func(subject, level, body string) apiResp {
		t.Helper()
		m := nats.NewMsg(subject)
		m.Header.Set("Nats-Required-Api-Level", level)
		m.Data = []byte(body)
		resp, err := nc.RequestMsg(m, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return decodeAPIResp(t, resp.Data)
	}
	for _, subj := range []string{"$JS.API.INFO", "$JS.API.STREAM.NAMES", "$JS.API.STREAM.INFO.S"} {
		r := req(subj, "1", "")
		wantAPIErr(t, r, 412, 10185, "JetStream minimum api level required")
		wantAPIOK(t, req(subj, "0", ""))
	}
	// A create that needs a newer level is refused and creates nothing.
	wantAPIErr(t, req("$JS.API.STREAM.CREATE.NEW", "2", `{"name":"NEW","storage":"memory"}`), 412, 10185, "JetStream minimum api level required")
	wantAPIErr(t, jsAPIReq(t, nc, "$JS.API.STREAM.INFO.NEW", ""), 404, 10059, "stream not found")
}

const jsTwoAccountsConf = `
jetstream { store_dir: %q }
accounts {
  JS { jetstream: enabled, users: [ {user: js, password: js} ] }
  PLAIN { users: [ {user: plain, password: plain} ] }
}
`

func TestJSAPIAccountWithoutJetStream(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "js.conf")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(jsTwoAccountsConf, filepath.Join(dir, "store"))), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o.Host, o.Port, o.NoLog, o.NoSigs = "127.0.0.1", RANDOM_PORT, true, true
	s := runServer(t, o)

	plain := connectNATS(t, s.ClientURL(), nats.UserInfo("plain", "plain"))
	pjs, err := jetstream.New(plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pjs.AccountInfo(ctx(t)); !errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
		t.Fatalf("AccountInfo without JetStream: %v", err)
	}
	if _, err := plain.Request("$JS.API.STREAM.NAMES", nil, 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("raw API request without JetStream: %v", err)
	}
	if _, err := pjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "X"}); err == nil {
		t.Fatal("stream created in an account without JetStream")
	}

	withJS := connectNATS(t, s.ClientURL(), nats.UserInfo("js", "js"))
	jjs, err := jetstream.New(withJS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := jjs.CreateStream(ctx(t), jetstream.StreamConfig{Name: "X", Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	if ack, err := jjs.Publish(ctx(t), "X", []byte("1")); err != nil || ack.Stream != "X" {
		t.Fatalf("publish in the JetStream account: %+v %v", ack, err)
	}
	// The other account's publish on the same subject reaches no stream.
	if _, err := plain.Request("X", nil, 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("publish from the plain account: %v", err)
	}
}

// Updating a stream's limits while clients publish, read and list must not
// drop a publish (the stream keeps listening on subjects it keeps) nor race.
func TestJSAPIUpdateWhileBusy(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "U", `{"name":"U","subjects":["u.*"],"storage":"memory","allow_direct":true}`)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var pubs, noResp, readErrs atomic.Int64
	pubConn := connectNATS(t, s.ClientURL())
	readConn := connectNATS(t, s.ClientURL())
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			m, err := pubConn.Request(fmt.Sprintf("u.%d", i%3), []byte("x"), 5*time.Second)
			switch {
			case errors.Is(err, nats.ErrNoResponders):
				noResp.Add(1)
			case err != nil || !bytes.HasPrefix(m.Data, []byte(`{"stream":"U","seq":`)):
				readErrs.Add(1)
			default:
				pubs.Add(1)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, q := range [][2]string{{"$JS.API.DIRECT.GET.U.u.1", ""}, {"$JS.API.STREAM.NAMES", `{"subject":"u.x"}`},
				{"$JS.API.STREAM.LIST", ""}, {"$JS.API.STREAM.INFO.U", ""}} {
				if _, err := readConn.Request(q[0], []byte(q[1]), 5*time.Second); err != nil && !errors.Is(err, nats.ErrNoResponders) {
					readErrs.Add(1)
				}
			}
		}
	}()
	for i := 0; i < 40; i++ {
		body := fmt.Sprintf(`{"name":"U","subjects":["u.*"],"storage":"memory","allow_direct":true,"max_msgs":%d}`, 1000+i)
		wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.U", body))
	}
	waitFor(t, 5*time.Second, "publishes during updates", func() bool { return pubs.Load() > 20 })
	close(stop)
	wg.Wait()
	if noResp.Load() != 0 || readErrs.Load() != 0 {
		t.Fatalf("%d publishes met no stream, %d other errors (of %d publishes) while updating limits", noResp.Load(), readErrs.Load(), pubs.Load())
	}
}

// Plain publishes (no reply, nobody would notice a loss) sent while the
// stream's limits are updated must all be stored.
func TestJSAPIUpdateLosesNoPublish(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "U", `{"name":"U","subjects":["u"],"storage":"memory"}`)
	pub := connectNATS(t, s.ClientURL())
	n := 50000
	if raceBuild() {
		n = 20000
	}
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			if err := pub.Publish("u", []byte("x")); err != nil {
				done <- err
				return
			}
		}
		done <- pub.Flush()
	}()
	updates := 0
	for finished := false; !finished; updates++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			finished = true
		default:
		}
		body := fmt.Sprintf(`{"name":"U","subjects":["u"],"storage":"memory","max_msgs":%d}`, n+1+updates%2)
		wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.U", body))
	}
	if _, _, last := streamMsgs(t, nc, "U"); last != uint64(n) {
		t.Fatalf("stored %d of %d publishes across %d limit updates", last, n, updates)
	}
}

// Streams created, used, updated, purged and deleted concurrently with
// readers listing them: every answer is a success or a "not found" (for
// a stream deleted meanwhile), and nothing races (run with -race).
func TestJSAPIStreamLifecycleConcurrent(t *testing.T) {
	casStorages(t, testStreamLifecycleConcurrent)
}

func testStreamLifecycleConcurrent(t *testing.T, storage string) {
	s := runJSServer(t)
	const workers, cycles = 4, 8
	stop := make(chan struct{})
	var bad atomic.Int64
	var mu sync.Mutex
	var firstBad string
	report := func(format string, a ...any) {
		if bad.Add(1) == 1 {
			mu.Lock()
			firstBad = fmt.Sprintf(format, a...)
			mu.Unlock()
		}
	}
	okOrNotFound := func(what string, data []byte) {
		var r struct {
			Error *struct {
				ErrCode int `json:"err_code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(data, &r); err != nil {
			report("%s: %v %s", what, err, data)
		} else if r.Error != nil && r.Error.ErrCode != 10059 {
			report("%s: %s", what, data)
		}
	}
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		nc := connectNATS(t, s.ClientURL())
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, subj := range []string{"$JS.API.STREAM.LIST", "$JS.API.STREAM.NAMES", "$JS.API.INFO",
				fmt.Sprintf("$JS.API.STREAM.INFO.L%d", i%workers)} {
				m, err := nc.Request(subj, nil, 5*time.Second)
				if err != nil {
					report("%s: %v", subj, err)
					continue
				}
				okOrNotFound(subj, m.Data)
			}
			if m, err := nc.Request(fmt.Sprintf("$JS.API.DIRECT.GET.L%d", i%workers), []byte(`{"seq":1}`), 5*time.Second); err == nil {
				if st := m.Header.Get("Status"); st != "" && st != "404" {
					report("direct get status %s", st)
				}
			} else if !errors.Is(err, nats.ErrNoResponders) {
				report("direct get: %v", err)
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			nc := connectNATS(t, s.ClientURL())
			name := fmt.Sprintf("L%d", w)
			req := func(subj, body string) []byte {
				m, err := nc.Request(subj, []byte(body), 5*time.Second)
				if err != nil {
					report("%s: %v", subj, err)
					return []byte("{}")
				}
				return m.Data
			}
			for c := 0; c < cycles; c++ {
				cfg := fmt.Sprintf(`{"name":%q,"subjects":["l%d.>"],"storage":%q,"allow_direct":true,"max_msgs":%d}`, name, w, storage, 100+c)
				okOrNotFound("create", req("$JS.API.STREAM.CREATE."+name, cfg))
				for i := 0; i < 5; i++ {
					if ack := req(fmt.Sprintf("l%d.x", w), "x"); !bytes.HasPrefix(ack, []byte(`{"stream":"`+name+`","seq":`)) {
						report("publish: %s", ack)
					}
				}
				cfg = fmt.Sprintf(`{"name":%q,"subjects":["l%d.>"],"storage":%q,"allow_direct":%v,"max_msgs":3}`, name, w, storage, c%2 == 0)
				okOrNotFound("update", req("$JS.API.STREAM.UPDATE."+name, cfg))
				okOrNotFound("purge", req("$JS.API.STREAM.PURGE."+name, `{"keep":1}`))
				okOrNotFound("delete", req("$JS.API.STREAM.DELETE."+name, ""))
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if n := bad.Load(); n != 0 {
		t.Fatalf("%d bad answers, first: %s", n, firstBad)
	}
	nc, _ := jsClient(t, s)
	if r := jsAPIReq(t, nc, "$JS.API.STREAM.NAMES", ""); r.num("total") != "0" {
		t.Fatalf("streams left: %v", r.get("streams"))
	}
	// Nothing of the deleted streams still listens.
	if _, err := nc.Request("l0.x", nil, time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("publish after all deletes: %v", err)
	}
}

// Limits added by an update apply to messages already stored: a lower
// max_msgs_per_subject trims each subject, a new max_age expires old ones.
func TestJSAPIStreamUpdateAppliesToStored(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["u.*"],"storage":"memory"}`)
	jsPubN(t, js, "u.a", 3) // 1-3
	jsPubN(t, js, "u.b", 2) // 4-5
	r := jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"S","subjects":["u.*"],"storage":"memory","max_msgs_per_subject":1}`)
	wantAPIOK(t, r)
	if r.num("state.messages") != "2" {
		t.Fatalf("after max_msgs_per_subject 1: %v", r.get("state"))
	}
	for subj, seq := range map[string]string{"u.a": "3", "u.b": "5"} {
		if r := jsAPIReq(t, nc, "$JS.API.STREAM.MSG.GET.S", `{"last_by_subj":"`+subj+`"}`); r.num("message.seq") != seq {
			t.Fatalf("kept on %s: %v", subj, r.get("message"))
		}
	}
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S",
		`{"name":"S","subjects":["u.*"],"storage":"memory","max_msgs_per_subject":1,"max_age":100000000,"duplicate_window":100000000}`))
	waitFor(t, 3*time.Second, "max_age added by an update", func() bool {
		n, _, _ := streamMsgs(t, nc, "S")
		return n == 0
	})
	// The window can not exceed max_age.
	r = jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.S", `{"name":"S","subjects":["u.*"],"storage":"memory","max_age":100000000,"duplicate_window":120000000000}`)
	wantAPIErr(t, r, 500, 10052, "")
}
