package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jsPubRaw publishes data to subject as a core request with the header
// pairs kv and returns the PubAck exactly as the server wrote it.
func jsPubRaw(t testing.TB, nc *nats.Conn, subject, data string, kv ...string) string {
	t.Helper()
	m := nats.NewMsg(subject)
	m.Data = []byte(data)
	for i := 0; i+1 < len(kv); i += 2 {
		m.Header.Add(kv[i], kv[i+1])
	}
	resp, err := nc.RequestMsg(m, 5*time.Second)
	if err != nil {
		t.Fatalf("publish %s %v: %v", subject, kv, err)
	}
	return string(resp.Data)
}

// pubAck is a decoded PubAck or publish error.
type pubAck struct {
	Error *struct {
		Code        int    `json:"code"`
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
	Stream    string `json:"stream"`
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
}

func parsePubAck(t testing.TB, raw string) pubAck {
	t.Helper()
	var a pubAck
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		t.Fatalf("PubAck is not JSON: %v: %s", err, raw)
	}
	return a
}

// wantPubErr checks a raw PubAck is exactly the error nats-server sends.
func wantPubErr(t testing.TB, raw, stream string, code, errCode int, desc string) {
	t.Helper()
	want := fmt.Sprintf(`{"error":{"code":%d,"err_code":%d,"description":%q},"stream":%q,"seq":0}`, code, errCode, desc, stream)
	if raw != want {
		t.Fatalf("publish error\n got %s\nwant %s", raw, want)
	}
}

func wantPubOK(t testing.TB, raw, stream string, seq uint64) {
	t.Helper()
	if want := fmt.Sprintf(`{"stream":%q,"seq":%d}`, stream, seq); raw != want {
		t.Fatalf("PubAck\n got %s\nwant %s", raw, want)
	}
}

func streamMsgs(t testing.TB, nc *nats.Conn, stream string) (msgs, first, last uint64) {
	t.Helper()
	r := jsAPIReq(t, nc, "$JS.API.STREAM.INFO."+stream, "")
	wantAPIOK(t, r)
	return uint64(mustAtoi(t, r.num("state.messages"))), uint64(mustAtoi(t, r.num("state.first_seq"))),
		uint64(mustAtoi(t, r.num("state.last_seq")))
}

func TestJSPubAckExactBytes(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"memory"}`)

	if got := jsPubRaw(t, nc, "s", "a", "Nats-Msg-Id", "m1"); got != `{"stream":"S","seq":1}` {
		t.Fatalf("first ack %s", got)
	}
	if got := jsPubRaw(t, nc, "s", "a", "Nats-Msg-Id", "m1"); got != `{"stream":"S","seq":1,"duplicate": true}` {
		t.Fatalf("duplicate ack %s", got)
	}
	if got := jsPubRaw(t, nc, "s", "b", "Nats-Expected-Last-Sequence", "7"); got != `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"},"stream":"S","seq":0}` {
		t.Fatalf("error ack %s", got)
	}
	// A publish without a reply is stored without an ack.
	if err := nc.Publish("s", []byte("no-reply")); err != nil {
		t.Fatal(err)
	}
	wantPubOK(t, jsPubRaw(t, nc, "s", "c"), "S", 3)
	if n, _, _ := streamMsgs(t, nc, "S"); n != 3 {
		t.Fatalf("messages %d, want 3", n)
	}
}

func TestJSPublishNoStream(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	if _, err := js.Publish(ctx(t), "nowhere", []byte("x"), jetstream.WithRetryAttempts(0)); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Fatalf("nats.go publish without a stream: %v", err)
	}
	if _, err := nc.Request("nowhere", []byte("x"), 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("raw publish without a stream: %v", err)
	}
}

func TestJSMsgIdDedupe(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s.*"],"storage":"memory"}`)
	jsCreate(t, nc, "W", `{"name":"W","subjects":["w"],"storage":"memory","duplicate_window":200000000}`)

	// Within the window: duplicate with the original sequence, nothing stored.
	a1, err := js.Publish(ctx(t), "s.a", []byte("1"), jetstream.WithMsgID("id-1"))
	if err != nil || a1.Sequence != 1 || a1.Duplicate {
		t.Fatalf("first: %+v %v", a1, err)
	}
	js.Publish(ctx(t), "s.b", []byte("2")) // 2
	a2, err := js.Publish(ctx(t), "s.b", []byte("other data"), jetstream.WithMsgID("id-1"))
	if err != nil || a2.Sequence != 1 || !a2.Duplicate {
		t.Fatalf("duplicate: %+v %v", a2, err)
	}
	if n, _, last := streamMsgs(t, nc, "S"); n != 2 || last != 2 {
		t.Fatalf("after duplicate: %d msgs, last %d", n, last)
	}
	// Ids are per stream.
	wantPubOK(t, jsPubRaw(t, nc, "w", "x", "Nats-Msg-Id", "id-1"), "W", 1)

	// After the window the id is new again. Every duplicate stores nothing,
	// so the first non-duplicate is sequence 2.
	deadline := time.Now().Add(3 * time.Second)
	for {
		a := parsePubAck(t, jsPubRaw(t, nc, "w", "x", "Nats-Msg-Id", "id-1"))
		if a.Error != nil {
			t.Fatalf("publish: %+v", a.Error)
		}
		if !a.Duplicate {
			if a.Seq != 2 {
				t.Fatalf("first publish after the window got seq %d", a.Seq)
			}
			break
		}
		if a.Seq != 1 {
			t.Fatalf("duplicate within the window points at %d", a.Seq)
		}
		if time.Now().After(deadline) {
			t.Fatal("message id still a duplicate long after the 200ms window")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n, _, _ := streamMsgs(t, nc, "W"); n != 2 {
		t.Fatalf("W holds %d messages, want 2", n)
	}
}

func TestJSExpectedStreamAndLastSequence(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s.*"],"storage":"memory"}`)

	wantPubErr(t, jsPubRaw(t, nc, "s.a", "x", "Nats-Expected-Stream", "OTHER"), "S", 400, 10060, "expected stream does not match")
	wantPubOK(t, jsPubRaw(t, nc, "s.a", "x", "Nats-Expected-Stream", "S"), "S", 1)

	wantPubErr(t, jsPubRaw(t, nc, "s.a", "x", "Nats-Expected-Last-Sequence", "0"), "S", 400, 10071, "wrong last sequence: 1")
	wantPubOK(t, jsPubRaw(t, nc, "s.b", "x", "Nats-Expected-Last-Sequence", "1"), "S", 2)
	wantPubErr(t, jsPubRaw(t, nc, "s.a", "x", "Nats-Expected-Last-Sequence", "1"), "S", 400, 10071, "wrong last sequence: 2")
	// The stream's last sequence survives a purge.
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.PURGE.S", ""))
	wantPubErr(t, jsPubRaw(t, nc, "s.a", "x", "Nats-Expected-Last-Sequence", "0"), "S", 400, 10071, "wrong last sequence: 2")
	wantPubOK(t, jsPubRaw(t, nc, "s.a", "x", "Nats-Expected-Last-Sequence", "2"), "S", 3)

	// Through nats.go.
	if _, err := js.Publish(ctx(t), "s.a", nil, jetstream.WithExpectStream("NOPE")); apiCode(err) != 10060 {
		t.Fatalf("nats.go expect stream: %v", err)
	}
	if _, err := js.Publish(ctx(t), "s.a", nil, jetstream.WithExpectLastSequence(1)); apiCode(err) != 10071 {
		t.Fatalf("nats.go expect last seq: %v", err)
	}
	if a, err := js.Publish(ctx(t), "s.a", nil, jetstream.WithExpectLastSequence(3)); err != nil || a.Sequence != 4 {
		t.Fatalf("nats.go expect last seq ok: %+v %v", a, err)
	}
}

func TestJSExpectedLastMsgId(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"memory"}`)

	wantPubOK(t, jsPubRaw(t, nc, "s", "x", "Nats-Msg-Id", "a"), "S", 1)
	wantPubErr(t, jsPubRaw(t, nc, "s", "x", "Nats-Expected-Last-Msg-Id", "b"), "S", 400, 10070, "wrong last msg ID: a")
	wantPubOK(t, jsPubRaw(t, nc, "s", "x", "Nats-Expected-Last-Msg-Id", "a", "Nats-Msg-Id", "b"), "S", 2)
	// A rejected publish does not change the last id.
	wantPubErr(t, jsPubRaw(t, nc, "s", "x", "Nats-Expected-Last-Msg-Id", "a", "Nats-Msg-Id", "c"), "S", 400, 10070, "wrong last msg ID: b")
	wantPubOK(t, jsPubRaw(t, nc, "s", "x", "Nats-Expected-Last-Msg-Id", "b", "Nats-Msg-Id", "c"), "S", 3)
	// A message without an id makes the last id empty.
	wantPubOK(t, jsPubRaw(t, nc, "s", "x"), "S", 4)
	wantPubErr(t, jsPubRaw(t, nc, "s", "x", "Nats-Expected-Last-Msg-Id", "c"), "S", 400, 10070, "wrong last msg ID: ")
	if _, err := js.Publish(ctx(t), "s", nil, jetstream.WithExpectLastMsgID("zzz")); apiCode(err) != 10070 {
		t.Fatalf("nats.go expect last msg id: %v", err)
	}
}

func TestJSExpectedLastSubjectSequence(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["k.>"],"storage":"memory"}`)
	const hdr, hdrSubj = "Nats-Expected-Last-Subject-Sequence", "Nats-Expected-Last-Subject-Sequence-Subject"

	// 0 means "no message on this subject".
	wantPubOK(t, jsPubRaw(t, nc, "k.a", "1", hdr, "0"), "S", 1)
	wantPubErr(t, jsPubRaw(t, nc, "k.a", "2", hdr, "0"), "S", 400, 10071, "wrong last sequence: 1")
	wantPubOK(t, jsPubRaw(t, nc, "k.b", "1", hdr, "0"), "S", 2)
	wantPubOK(t, jsPubRaw(t, nc, "k.b", "2"), "S", 3)
	// The mismatch reports the subject's last sequence, not the stream's.
	wantPubErr(t, jsPubRaw(t, nc, "k.a", "2", hdr, "3"), "S", 400, 10071, "wrong last sequence: 1")
	wantPubErr(t, jsPubRaw(t, nc, "k.c", "1", hdr, "1"), "S", 400, 10071, "wrong last sequence: 0")
	wantPubOK(t, jsPubRaw(t, nc, "k.a", "2", hdr, "1"), "S", 4)

	// -Subject with a literal: check k.b's last sequence while publishing to k.c.
	wantPubErr(t, jsPubRaw(t, nc, "k.c", "x", hdr, "2", hdrSubj, "k.b"), "S", 400, 10071, "wrong last sequence: 3")
	wantPubOK(t, jsPubRaw(t, nc, "k.c", "x", hdr, "3", hdrSubj, "k.b"), "S", 5)
	// -Subject with a wildcard: the last sequence of anything matching.
	wantPubErr(t, jsPubRaw(t, nc, "k.d", "x", hdr, "4", hdrSubj, "k.*"), "S", 400, 10071, "wrong last sequence: 5")
	wantPubOK(t, jsPubRaw(t, nc, "k.d", "x", hdr, "5", hdrSubj, "k.*"), "S", 6)
	wantPubOK(t, jsPubRaw(t, nc, "k.e", "x", hdr, "0", hdrSubj, "k.x.>"), "S", 7)
	wantPubErr(t, jsPubRaw(t, nc, "k.x.y", "x", hdr, "0", hdrSubj, "k.>"), "S", 400, 10071, "wrong last sequence: 7")
	// -Subject without the sequence header.
	wantPubErr(t, jsPubRaw(t, nc, "k.a", "x", hdrSubj, "k.a"), "S", 400, 10193, "missing sequence for expected last sequence per subject")

	// A deleted message is no longer the subject's last.
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.S", `{"seq":4}`))
	wantPubErr(t, jsPubRaw(t, nc, "k.a", "3", hdr, "4"), "S", 400, 10071, "wrong last sequence: 1")
	wantPubOK(t, jsPubRaw(t, nc, "k.a", "3", hdr, "1"), "S", 8)

	// nats.go options.
	if _, err := js.Publish(ctx(t), "k.a", nil, jetstream.WithExpectLastSequencePerSubject(1)); apiCode(err) != 10071 {
		t.Fatalf("nats.go per-subject mismatch: %v", err)
	}
	if a, err := js.Publish(ctx(t), "k.a", nil, jetstream.WithExpectLastSequencePerSubject(8)); err != nil || a.Sequence != 9 {
		t.Fatalf("nats.go per-subject ok: %+v %v", a, err)
	}
	if a, err := js.Publish(ctx(t), "k.z", nil, jetstream.WithExpectLastSequenceForSubject(9, "k.a")); err != nil || a.Sequence != 10 {
		t.Fatalf("nats.go for-subject ok: %+v %v", a, err)
	}
}

// A publish rejected by a condition leaves no trace of its Nats-Msg-Id: a
// retry with the same id is judged again, not acked as a duplicate.
func TestJSRejectedConditionalPublishNotDeduped(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s.*"],"storage":"memory"}`)
	const hdr = "Nats-Expected-Last-Subject-Sequence"
	wantPubOK(t, jsPubRaw(t, nc, "s.a", "v1"), "S", 1)

	for i := 0; i < 2; i++ {
		wantPubErr(t, jsPubRaw(t, nc, "s.a", "v2", hdr, "0", "Nats-Msg-Id", "op-1"), "S", 400, 10071, "wrong last sequence: 1")
	}
	wantPubErr(t, jsPubRaw(t, nc, "s.a", "v2", "Nats-Expected-Last-Sequence", "5", "Nats-Msg-Id", "op-1"), "S", 400, 10071, "wrong last sequence: 1")
	wantPubErr(t, jsPubRaw(t, nc, "s.a", "v2", "Nats-Expected-Stream", "X", "Nats-Msg-Id", "op-1"), "S", 400, 10060, "expected stream does not match")
	// Retried with a satisfiable condition: stored as new.
	wantPubOK(t, jsPubRaw(t, nc, "s.a", "v2", hdr, "1", "Nats-Msg-Id", "op-1"), "S", 2)
	// Now the id is known, and a duplicate wins over the (stale) condition.
	if got := jsPubRaw(t, nc, "s.a", "v2", hdr, "1", "Nats-Msg-Id", "op-1"); got != `{"stream":"S","seq":2,"duplicate": true}` {
		t.Fatalf("duplicate of the stored retry: %s", got)
	}
	if n, _, _ := streamMsgs(t, nc, "S"); n != 2 {
		t.Fatalf("stream holds %d messages, want 2", n)
	}
	// A message refused by a limit is not remembered either.
	jsCreate(t, nc, "L", `{"name":"L","subjects":["l"],"storage":"memory","max_msgs":1,"discard":"new"}`)
	wantPubOK(t, jsPubRaw(t, nc, "l", "1"), "L", 1)
	wantPubErr(t, jsPubRaw(t, nc, "l", "2", "Nats-Msg-Id", "lim"), "L", 503, 10077, "maximum messages exceeded")
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.PURGE.L", ""))
	wantPubOK(t, jsPubRaw(t, nc, "l", "2", "Nats-Msg-Id", "lim"), "L", 2)
}

func TestJSRollup(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "R", `{"name":"R","subjects":["r.*"],"storage":"memory","allow_rollup_hdrs":true}`)
	jsPubN(t, js, "r.a", 3)
	jsPubN(t, js, "r.b", 2)
	wantPubOK(t, jsPubRaw(t, nc, "r.a", "roll", "Nats-Rollup", "sub"), "R", 6)
	r := jsAPIReq(t, nc, "$JS.API.STREAM.INFO.R", `{"subjects_filter":">"}`)
	if subs, _ := r.get("state.subjects").(map[string]any); fmt.Sprint(subs["r.a"]) != "1" || fmt.Sprint(subs["r.b"]) != "2" {
		t.Fatalf("after sub rollup: %v", subs)
	}
	if r = jsAPIReq(t, nc, "$JS.API.STREAM.MSG.GET.R", `{"last_by_subj":"r.a"}`); r.num("message.seq") != "6" {
		t.Fatalf("rollup message: %v", r.get("message"))
	}
	wantPubOK(t, jsPubRaw(t, nc, "r.b", "all", "Nats-Rollup", "all"), "R", 7)
	if n, first, last := streamMsgs(t, nc, "R"); n != 1 || first != 7 || last != 7 {
		t.Fatalf("after all rollup: %d msgs %d..%d", n, first, last)
	}
	wantPubErr(t, jsPubRaw(t, nc, "r.b", "x", "Nats-Rollup", "bogus"), "R", 500, 10111, `rollup value invalid: "bogus"`)

	// Not allowed without allow_rollup_hdrs, nor with deny_purge.
	jsCreate(t, nc, "N", `{"name":"N","subjects":["n"],"storage":"memory"}`)
	jsCreate(t, nc, "D", `{"name":"D","subjects":["d"],"storage":"memory","allow_rollup_hdrs":true,"deny_purge":true}`)
	for _, subj := range []string{"n", "d"} {
		for _, v := range []string{"sub", "all"} {
			wantPubErr(t, jsPubRaw(t, nc, subj, "x", "Nats-Rollup", v), strings.ToUpper(subj), 500, 10111, "rollup not permitted")
		}
	}
}

func TestJSDiscardNew(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "M", `{"name":"M","subjects":["m"],"storage":"memory","max_msgs":2,"discard":"new"}`)
	wantPubOK(t, jsPubRaw(t, nc, "m", "1"), "M", 1)
	wantPubOK(t, jsPubRaw(t, nc, "m", "2"), "M", 2)
	wantPubErr(t, jsPubRaw(t, nc, "m", "3"), "M", 503, 10077, "maximum messages exceeded")
	if n, first, _ := streamMsgs(t, nc, "M"); n != 2 || first != 1 {
		t.Fatalf("discard new kept %d from %d", n, first)
	}

	jsCreate(t, nc, "B", `{"name":"B","subjects":["b"],"storage":"memory","max_bytes":300,"discard":"new"}`)
	wantPubOK(t, jsPubRaw(t, nc, "b", strings.Repeat("x", 100)), "B", 1)
	wantPubOK(t, jsPubRaw(t, nc, "b", strings.Repeat("x", 100)), "B", 2)
	wantPubErr(t, jsPubRaw(t, nc, "b", strings.Repeat("x", 100)), "B", 503, 10077, "maximum bytes exceeded")

	jsCreate(t, nc, "P", `{"name":"P","subjects":["p.*"],"storage":"memory","max_msgs_per_subject":1,"discard":"new","discard_new_per_subject":true}`)
	wantPubOK(t, jsPubRaw(t, nc, "p.a", "1"), "P", 1)
	wantPubOK(t, jsPubRaw(t, nc, "p.b", "1"), "P", 2)
	wantPubErr(t, jsPubRaw(t, nc, "p.a", "2"), "P", 503, 10077, "maximum messages per subject exceeded")
	// discard_new_per_subject needs discard new and a per-subject limit.
	r := jsAPIReq(t, nc, "$JS.API.STREAM.CREATE.Q", `{"name":"Q","subjects":["q"],"storage":"memory","max_msgs_per_subject":1,"discard_new_per_subject":true}`)
	wantAPIErr(t, r, 500, 10052, "")
}

// With discard new, a message that will replace the oldest one on a subject
// at its max_msgs_per_subject limit is accepted even when the stream is at
// max_msgs or max_bytes (nats-server's rule, which a full KV bucket needs to
// keep accepting updates of existing keys).
func TestJSDiscardNewReplacesAtSubjectLimit(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "M", `{"name":"M","subjects":["k.*"],"storage":"memory","max_msgs":2,"max_msgs_per_subject":1,"discard":"new"}`)
	wantPubOK(t, jsPubRaw(t, nc, "k.1", "a"), "M", 1)
	wantPubOK(t, jsPubRaw(t, nc, "k.2", "a"), "M", 2)
	wantPubOK(t, jsPubRaw(t, nc, "k.1", "b"), "M", 3) // replaces seq 1
	wantPubErr(t, jsPubRaw(t, nc, "k.3", "a"), "M", 503, 10077, "maximum messages exceeded")
	if n, first, _ := streamMsgs(t, nc, "M"); n != 2 || first != 2 {
		t.Fatalf("M holds %d from %d", n, first)
	}

	// Bytes: each message is well under half of max_bytes; a replacement
	// no larger than the message it replaces fits, a larger one does not.
	jsCreate(t, nc, "B", `{"name":"B","subjects":["b.*"],"storage":"memory","max_bytes":300,"max_msgs_per_subject":1,"discard":"new"}`)
	v := strings.Repeat("v", 100)
	wantPubOK(t, jsPubRaw(t, nc, "b.1", v), "B", 1)
	wantPubOK(t, jsPubRaw(t, nc, "b.2", v), "B", 2)
	wantPubErr(t, jsPubRaw(t, nc, "b.3", v), "B", 503, 10077, "maximum bytes exceeded")
	wantPubOK(t, jsPubRaw(t, nc, "b.1", v), "B", 3) // a refused message uses no sequence
	wantPubErr(t, jsPubRaw(t, nc, "b.1", v+"longer"), "B", 503, 10077, "maximum bytes exceeded")

	// The KV view: a full bucket still takes updates of existing keys.
	kv, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "full", MaxBytes: 400, Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx(t), "a", []byte(v)); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx(t), "b", []byte(v)); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx(t), "c", []byte(v)); apiCode(err) != 10077 {
		t.Fatalf("new key in a full bucket: %v", err)
	}
	if rev, err := kv.Put(ctx(t), "a", []byte(v)); err != nil || rev != 3 {
		t.Fatalf("update of an existing key in a full bucket: %d %v", rev, err)
	}
}

func TestJSDiscardOldLimits(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "M", `{"name":"M","subjects":["m"],"storage":"memory","max_msgs":3}`)
	jsPubN(t, js, "m", 5)
	if n, first, last := streamMsgs(t, nc, "M"); n != 3 || first != 3 || last != 5 {
		t.Fatalf("max_msgs: %d msgs %d..%d", n, first, last)
	}

	jsCreate(t, nc, "B", `{"name":"B","subjects":["b"],"storage":"memory","max_bytes":400}`)
	for i := 1; i <= 6; i++ {
		wantPubOK(t, jsPubRaw(t, nc, "b", strings.Repeat("x", 100)), "B", uint64(i))
	}
	n, first, last := streamMsgs(t, nc, "B")
	if r := jsAPIReq(t, nc, "$JS.API.STREAM.INFO.B", ""); mustAtoi(t, r.num("state.bytes")) > 400 || n == 0 || last != 6 || first != last-n+1 {
		t.Fatalf("max_bytes: %d msgs %d..%d, %s bytes", n, first, last, r.num("state.bytes"))
	}

	jsCreate(t, nc, "P", `{"name":"P","subjects":["p.*"],"storage":"memory","max_msgs_per_subject":2}`)
	for i := 0; i < 4; i++ {
		jsPubRaw(t, nc, "p.a", fmt.Sprint("a", i))
		jsPubRaw(t, nc, "p.b", fmt.Sprint("b", i))
	}
	r := jsAPIReq(t, nc, "$JS.API.STREAM.INFO.P", `{"subjects_filter":">"}`)
	if subs, _ := r.get("state.subjects").(map[string]any); fmt.Sprint(subs["p.a"]) != "2" || fmt.Sprint(subs["p.b"]) != "2" {
		t.Fatalf("per subject: %v", subs)
	}
	st, _ := js.Stream(ctx(t), "P")
	for subj, want := range map[string][]string{"p.a": {"a2", "a3"}, "p.b": {"b2", "b3"}} {
		m, err := st.GetMsg(ctx(t), 0, jetstream.WithGetMsgSubject(subj))
		if err != nil || string(m.Data) != want[0] {
			t.Fatalf("oldest kept on %s: %v %v", subj, m, err)
		}
		m, err = st.GetLastMsgForSubject(ctx(t), subj)
		if err != nil || string(m.Data) != want[1] {
			t.Fatalf("newest on %s: %v %v", subj, m, err)
		}
	}
}

func TestJSMaxMsgSize(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"memory","max_msg_size":10}`)
	wantPubOK(t, jsPubRaw(t, nc, "s", "0123456789"), "S", 1)
	wantPubErr(t, jsPubRaw(t, nc, "s", "0123456789a"), "S", 400, 10054, "message size exceeds maximum allowed")
	// Headers count towards the size.
	wantPubErr(t, jsPubRaw(t, nc, "s", "x", "A", "b"), "S", 400, 10054, "message size exceeds maximum allowed")
}

func TestJSMaxAgeExpiry(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"memory","max_age":300000000}`)
	jsPubN(t, js, "s", 3)
	start := time.Now()
	if n, _, _ := streamMsgs(t, nc, "S"); n != 3 {
		t.Fatalf("fresh messages: %d", n)
	}
	waitFor(t, 3*time.Second, "max_age expiry", func() bool {
		n, _, _ := streamMsgs(t, nc, "S")
		return n == 0
	})
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Fatalf("messages expired after %v, before max_age", el)
	}
	// The stream keeps counting, and expires later messages too.
	wantPubOK(t, jsPubRaw(t, nc, "s", "late"), "S", 4)
	waitFor(t, 3*time.Second, "second expiry", func() bool {
		n, first, _ := streamMsgs(t, nc, "S")
		return n == 0 && first == 5
	})
}

func TestJSHeaderTooBig(t *testing.T) {
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	o.MaxPayload = 1 << 20
	s := runServer(t, o)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "S", `{"name":"S","subjects":["s"],"storage":"memory"}`)
	// The block is "NATS/1.0\r\n" + "X-Big: " + v + "\r\n" + "\r\n": 21 bytes plus v.
	wantPubOK(t, jsPubRaw(t, nc, "s", "ok", "X-Big", strings.Repeat("h", 65535-21)), "S", 1)
	r := jsAPIReq(t, nc, "$JS.API.STREAM.MSG.GET.S", `{"seq":1}`)
	if h := r.str("message.hdrs"); len(h) != (65535+2)/3*4 {
		t.Fatalf("stored header block is not 65535 bytes (base64 length %d)", len(h))
	}
	wantPubErr(t, jsPubRaw(t, nc, "s", "big", "X-Big", strings.Repeat("h", 65536-21)), "S", 400, 10097, "header size exceeds maximum allowed of 64k")
	wantPubErr(t, jsPubRaw(t, nc, "s", "big", "X-Big", strings.Repeat("h", 70000)), "S", 400, 10097, "header size exceeds maximum allowed of 64k")
	if n, _, _ := streamMsgs(t, nc, "S"); n != 1 {
		t.Fatalf("stream holds %d messages", n)
	}
}

// raceBuild reports whether the test binary was built with -race.
func raceBuild() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
}

// casRounds is how many rounds the concurrent conditional publish tests
// run: fewer under the race detector, which slows every round trip.
func casRounds() int {
	if raceBuild() || testing.Short() {
		return 50
	}
	return 200
}

const casWriters = 16

// casOutcome is one writer's result in a round.
type casOutcome struct {
	writer int
	ack    pubAck
	raw    string
	err    error
}

// runCASRounds runs rounds of casWriters writers, each on its own
// connection. In every round all writers are released together and each
// publishes the message msgFor builds from the previous winner's sequence.
// It checks that exactly one writer wins each round and that every loser
// got 10071 naming the winner's sequence (the losers are judged after the
// winner), and returns the winning sequences.
func runCASRounds(t *testing.T, s *Server, stream string, rounds int, dupes bool, msgFor func(round, writer int, last uint64) *nats.Msg) []uint64 {
	t.Helper()
	conns := make([]*nats.Conn, casWriters)
	for i := range conns {
		conns[i] = connectNATS(t, s.ClientURL())
	}
	var winners []uint64
	var last uint64
	for round := 0; round < rounds; round++ {
		start := make(chan struct{})
		out := make([]casOutcome, casWriters)
		var wg sync.WaitGroup
		for w := 0; w < casWriters; w++ {
			m := msgFor(round, w, last)
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				<-start
				resp, err := conns[w].RequestMsg(m, 5*time.Second)
				out[w] = casOutcome{writer: w, err: err}
				if err == nil {
					out[w].raw = string(resp.Data)
					out[w].err = json.Unmarshal(resp.Data, &out[w].ack)
				}
			}(w)
		}
		close(start)
		wg.Wait()
		var win *casOutcome
		for i := range out {
			o := &out[i]
			if o.err != nil {
				t.Fatalf("round %d writer %d: %v", round, o.writer, o.err)
			}
			if o.ack.Error == nil && !o.ack.Duplicate {
				if win != nil {
					t.Fatalf("round %d: two winners, seq %d and %d", round, win.ack.Seq, o.ack.Seq)
				}
				win = o
			}
		}
		if win == nil {
			t.Fatalf("round %d: no winner: %+v", round, out)
		}
		if win.ack.Stream != stream || win.ack.Seq != last+1 {
			t.Fatalf("round %d: winner ack %s after %d", round, win.raw, last)
		}
		for _, o := range out {
			switch {
			case o.writer == win.writer:
			case dupes:
				if want := fmt.Sprintf(`{"stream":%q,"seq":%d,"duplicate": true}`, stream, win.ack.Seq); o.raw != want {
					t.Fatalf("round %d writer %d: %s, want %s", round, o.writer, o.raw, want)
				}
			default:
				want := fmt.Sprintf(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: %d"},"stream":%q,"seq":0}`, win.ack.Seq, stream)
				if o.raw != want {
					t.Fatalf("round %d writer %d:\n got %s\nwant %s", round, o.writer, o.raw, want)
				}
			}
		}
		last = win.ack.Seq
		winners = append(winners, last)
	}
	return winners
}

// checkCASChain reads every message back and checks that each one's header
// names its predecessor's sequence (0 for the first).
func checkCASChain(t *testing.T, js jetstream.JetStream, stream, header string, rounds int) {
	t.Helper()
	st, err := js.Stream(ctx(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx(t))
	if err != nil || info.State.Msgs != uint64(rounds) || info.State.LastSeq != uint64(rounds) {
		t.Fatalf("stream state %+v %v, want %d messages", info.State, err, rounds)
	}
	for seq := uint64(1); seq <= uint64(rounds); seq++ {
		m, err := st.GetMsg(ctx(t), seq)
		if err != nil {
			t.Fatalf("get %d: %v", seq, err)
		}
		if got := m.Header.Get(header); got != strconv.FormatUint(seq-1, 10) {
			t.Fatalf("message %d carries %s %q, want %d", seq, header, got, seq-1)
		}
	}
}

func casStorages(t *testing.T, fn func(t *testing.T, storage string)) {
	for _, storage := range []string{"memory", "file"} {
		t.Run(storage, func(t *testing.T) { fn(t, storage) })
	}
}

func TestJSConcurrentExpectedLastSubjectSequence(t *testing.T) {
	casStorages(t, func(t *testing.T, storage string) {
		s := runJSServer(t)
		nc, js := jsClient(t, s)
		jsCreate(t, nc, "KV", `{"name":"KV","subjects":["kv.>"],"storage":"`+storage+`"}`)
		rounds := casRounds()
		runCASRounds(t, s, "KV", rounds, false, func(round, w int, last uint64) *nats.Msg {
			m := nats.NewMsg("kv.foo")
			m.Header.Set("Nats-Expected-Last-Subject-Sequence", strconv.FormatUint(last, 10))
			m.Data = []byte(fmt.Sprintf("%d-%d", round, w))
			return m
		})
		checkCASChain(t, js, "KV", "Nats-Expected-Last-Subject-Sequence", rounds)
	})
}

func TestJSConcurrentExpectedLastSequence(t *testing.T) {
	casStorages(t, func(t *testing.T, storage string) {
		s := runJSServer(t)
		nc, js := jsClient(t, s)
		jsCreate(t, nc, "ES", `{"name":"ES","subjects":["es.*"],"storage":"`+storage+`"}`)
		rounds := casRounds()
		// Each writer has its own subject: the stream-wide condition still
		// lets only one through.
		runCASRounds(t, s, "ES", rounds, false, func(round, w int, last uint64) *nats.Msg {
			m := nats.NewMsg(fmt.Sprintf("es.w%d", w))
			m.Header.Set("Nats-Expected-Last-Sequence", strconv.FormatUint(last, 10))
			m.Data = []byte(fmt.Sprintf("%d-%d", round, w))
			return m
		})
		checkCASChain(t, js, "ES", "Nats-Expected-Last-Sequence", rounds)
	})
}

func TestJSConcurrentExpectedLastSubjectSequenceWildcard(t *testing.T) {
	casStorages(t, func(t *testing.T, storage string) {
		s := runJSServer(t)
		nc, js := jsClient(t, s)
		jsCreate(t, nc, "WC", `{"name":"WC","subjects":["wc.>"],"storage":"`+storage+`"}`)
		rounds := casRounds()
		// Writers race on different subjects that all match the wildcard
		// the condition names.
		runCASRounds(t, s, "WC", rounds, false, func(round, w int, last uint64) *nats.Msg {
			m := nats.NewMsg(fmt.Sprintf("wc.agg.%d", w%4))
			m.Header.Set("Nats-Expected-Last-Subject-Sequence", strconv.FormatUint(last, 10))
			m.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", "wc.agg.*")
			m.Data = []byte(fmt.Sprintf("%d-%d", round, w))
			return m
		})
		checkCASChain(t, js, "WC", "Nats-Expected-Last-Subject-Sequence", rounds)
	})
}

func TestJSConcurrentSameMsgId(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "ID", `{"name":"ID","subjects":["id"],"storage":"memory"}`)
	rounds := casRounds()
	runCASRounds(t, s, "ID", rounds, true, func(round, w int, _ uint64) *nats.Msg {
		m := nats.NewMsg("id")
		m.Header.Set("Nats-Msg-Id", fmt.Sprint("op-", round))
		m.Data = []byte(fmt.Sprintf("%d-%d", round, w))
		return m
	})
	if n, _, last := streamMsgs(t, nc, "ID"); n != uint64(rounds) || last != uint64(rounds) {
		t.Fatalf("stored %d messages (last %d), want %d", n, last, rounds)
	}
}

// rawMsg is one message read off a raw connection.
type rawMsg struct {
	hdr  string // the whole header block, "" for MSG
	data string
}

// header returns the value of key in the raw header block.
func (m rawMsg) header(key string) string {
	for _, l := range strings.Split(m.hdr, "\r\n")[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// directClient is a raw connection subscribed to one reply subject, so
// direct get replies can be checked byte for byte (header order included).
type directClient struct{ rc *rawConn }

func newDirectClient(t testing.TB, s *Server) *directClient {
	rc := dialRaw(t, s)
	rc.connect(`{"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}`)
	rc.send("SUB _INBOX.dg 1\r\nPING\r\n")
	if l := rc.line(); l != "PONG\r\n" {
		t.Fatalf("expected PONG, got %q", l)
	}
	return &directClient{rc: rc}
}

func (d *directClient) request(subject, body string) {
	d.rc.send(fmt.Sprintf("PUB %s _INBOX.dg %d\r\n%s\r\n", subject, len(body), body))
}

func (d *directClient) next() rawMsg {
	d.rc.t.Helper()
	l := d.rc.line()
	f := strings.Fields(l)
	var m rawMsg
	switch {
	case len(f) == 5 && f[0] == "HMSG":
		hl, total := mustAtoi(d.rc.t, f[3]), mustAtoi(d.rc.t, f[4])
		buf := make([]byte, total+2)
		if _, err := ioReadFull(d.rc.br, buf); err != nil {
			d.rc.t.Fatalf("reading HMSG body: %v", err)
		}
		m.hdr, m.data = string(buf[:hl]), string(buf[hl:total])
	case len(f) == 4 && f[0] == "MSG":
		total := mustAtoi(d.rc.t, f[3])
		buf := make([]byte, total+2)
		if _, err := ioReadFull(d.rc.br, buf); err != nil {
			d.rc.t.Fatalf("reading MSG body: %v", err)
		}
		m.data = string(buf[:total])
	default:
		d.rc.t.Fatalf("expected a message, got %q", l)
	}
	return m
}

// get sends one request and reads one reply.
func (d *directClient) get(subject, body string) rawMsg {
	d.rc.t.Helper()
	d.request(subject, body)
	return d.next()
}

// wantDirect checks a direct get reply: stored headers first (storedHdr is
// the stored block without its final CRLF, "" for none), then the four
// server headers and extra, then payload.
func wantDirect(t testing.TB, m rawMsg, storedHdr, stream, subj string, seq uint64, data string, extra ...string) time.Time {
	t.Helper()
	if storedHdr == "" {
		storedHdr = "NATS/1.0\r\n"
	}
	ts := m.header("Nats-Time-Stamp")
	want := storedHdr + "Nats-Stream: " + stream + "\r\nNats-Subject: " + subj + "\r\nNats-Sequence: " + strconv.FormatUint(seq, 10) +
		"\r\nNats-Time-Stamp: " + ts + "\r\n"
	for i := 0; i+1 < len(extra); i += 2 {
		want += extra[i] + ": " + extra[i+1] + "\r\n"
	}
	want += "\r\n"
	if m.hdr != want || m.data != data {
		t.Fatalf("direct get reply\n got %q %q\nwant %q %q", m.hdr, m.data, want, data)
	}
	parsed, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil || !strings.HasSuffix(ts, "Z") {
		t.Fatalf("Nats-Time-Stamp %q is not RFC3339Nano UTC: %v", ts, err)
	}
	return parsed
}

func wantStatus(t testing.TB, m rawMsg, status string) {
	t.Helper()
	if want := "NATS/1.0 " + status + "\r\n\r\n"; m.hdr != want || m.data != "" {
		t.Fatalf("status reply %q %q, want %q", m.hdr, m.data, want)
	}
}

// directStream makes stream D (allow_direct) holding:
// 1 d.a (stored header X-H: 1) "one", 2 d.b "two", 3 d.a "three",
// 4 d.c.x "four", 5 d.c.y "five".
func directStream(t testing.TB, s *Server) *nats.Conn {
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "D", `{"name":"D","subjects":["d.>"],"storage":"memory","allow_direct":true}`)
	m := nats.NewMsg("d.a")
	m.Header.Set("X-H", "1")
	m.Data = []byte("one")
	if _, err := js.PublishMsg(ctx(t), m); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{{"d.b", "two"}, {"d.a", "three"}, {"d.c.x", "four"}, {"d.c.y", "five"}} {
		if _, err := js.Publish(ctx(t), p[0], []byte(p[1])); err != nil {
			t.Fatal(err)
		}
	}
	return nc
}

func TestJSDirectGet(t *testing.T) {
	s := runJSServer(t)
	nc := directStream(t, s)
	d := newDirectClient(t, s)

	ts := wantDirect(t, d.get("$JS.API.DIRECT.GET.D", `{"seq":1}`), "NATS/1.0\r\nX-H: 1\r\n", "D", "d.a", 1, "one")
	r := jsAPIReq(t, nc, "$JS.API.STREAM.MSG.GET.D", `{"seq":1}`)
	if mt, _ := time.Parse(time.RFC3339Nano, r.str("message.time")); !mt.Equal(ts) {
		t.Fatalf("direct get time %v, msg get time %v", ts, mt)
	}
	wantDirect(t, d.get("$JS.API.DIRECT.GET.D", `{"seq":2}`), "", "D", "d.b", 2, "two")
	wantDirect(t, d.get("$JS.API.DIRECT.GET.D", `{"last_by_subj":"d.a"}`), "", "D", "d.a", 3, "three")
	wantDirect(t, d.get("$JS.API.DIRECT.GET.D", `{"next_by_subj":"d.c.*","seq":5}`), "", "D", "d.c.y", 5, "five")

	// Last by subject in the request subject, literal and wildcard.
	wantDirect(t, d.get("$JS.API.DIRECT.GET.D.d.a", ""), "", "D", "d.a", 3, "three")
	wantDirect(t, d.get("$JS.API.DIRECT.GET.D.d.b", ""), "", "D", "d.b", 2, "two")
	wantDirect(t, d.get("$JS.API.DIRECT.GET.D.d.*", ""), "", "D", "d.a", 3, "three")
	wantDirect(t, d.get("$JS.API.DIRECT.GET.D.d.c.>", ""), "", "D", "d.c.y", 5, "five")
	wantDirect(t, d.get("$JS.API.DIRECT.GET.D.d.>", ""), "", "D", "d.c.y", 5, "five")
	wantDirect(t, d.get("$JS.API.DIRECT.GET.D.d.*.x", ""), "", "D", "d.c.x", 4, "four")

	// Errors.
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", ""), "408 Empty Request")
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{}`), "408 Empty Request")
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"seq":`), "408 Malformed Request")
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"seq":1,"last_by_subj":"d.a"}`), "408 Bad Request")
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"last_by_subj":"d.a","batch":2}`), "408 Bad Request")
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"next_by_subj":"d.a","multi_last":["d.a"]}`), "408 Bad Request")
	// The subject form takes no payload.
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D.d.a", `{"seq":1}`), "408 Bad Request")
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"seq":99}`), "404 Message Not Found")
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"last_by_subj":"d.zz"}`), "404 Message Not Found")
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D.d.zz", ""), "404 Message Not Found")
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.MSG.DELETE.D", `{"seq":2}`))
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"seq":2}`), "404 Message Not Found")

	// nats.go uses direct get for GetMsg / GetLastMsgForSubject when allowed.
	js, _ := jetstream.New(nc)
	st, err := js.Stream(ctx(t), "D")
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(ctx(t), 1)
	if err != nil || m.Header.Get("X-H") != "1" || string(m.Data) != "one" || m.Subject != "d.a" {
		t.Fatalf("nats.go GetMsg via direct get: %+v %v", m, err)
	}
	m, err = st.GetLastMsgForSubject(ctx(t), "d.c.>")
	if err != nil || m.Sequence != 5 {
		t.Fatalf("nats.go last for d.c.>: %+v %v", m, err)
	}
	if _, err := st.GetMsg(ctx(t), 2); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("nats.go direct get of a deleted message: %v", err)
	}
}

func TestJSDirectGetBatch(t *testing.T) {
	s := runJSServer(t)
	directStream(t, s)
	d := newDirectClient(t, s)

	// From seq 2, all subjects: 2, 3 then EOB. Nats-Num-Pending counts the
	// matching messages from this one on (nats-server's count), the EOB
	// those still left; Nats-Last-Sequence is the previous one sent.
	d.request("$JS.API.DIRECT.GET.D", `{"seq":2,"batch":2}`)
	wantDirect(t, d.next(), "", "D", "d.b", 2, "two", "Nats-Num-Pending", "4", "Nats-Last-Sequence", "0")
	wantDirect(t, d.next(), "", "D", "d.a", 3, "three", "Nats-Num-Pending", "3", "Nats-Last-Sequence", "2")
	wantStatus(t, d.next(), "204 EOB\r\nNats-Num-Pending: 2\r\nNats-Last-Sequence: 3")

	// Filtered, batch larger than what is there; stored headers come first.
	d.request("$JS.API.DIRECT.GET.D", `{"next_by_subj":"d.a","batch":10}`)
	wantDirect(t, d.next(), "NATS/1.0\r\nX-H: 1\r\n", "D", "d.a", 1, "one", "Nats-Num-Pending", "2", "Nats-Last-Sequence", "0")
	wantDirect(t, d.next(), "", "D", "d.a", 3, "three", "Nats-Num-Pending", "1", "Nats-Last-Sequence", "1")
	wantStatus(t, d.next(), "204 EOB\r\nNats-Num-Pending: 0\r\nNats-Last-Sequence: 3")

	d.request("$JS.API.DIRECT.GET.D", `{"next_by_subj":"d.c.>","seq":5,"batch":3}`)
	wantDirect(t, d.next(), "", "D", "d.c.y", 5, "five", "Nats-Num-Pending", "1", "Nats-Last-Sequence", "0")
	wantStatus(t, d.next(), "204 EOB\r\nNats-Num-Pending: 0\r\nNats-Last-Sequence: 5")

	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"next_by_subj":"d.zz","batch":3}`), "404 Message Not Found")
}

func TestJSDirectGetMultiLast(t *testing.T) {
	s := runJSServer(t)
	directStream(t, s)
	d := newDirectClient(t, s)

	// Last per subject, in stream order; Nats-Num-Pending counts the
	// results still to come.
	d.request("$JS.API.DIRECT.GET.D", `{"multi_last":["d.a","d.c.>"]}`)
	wantDirect(t, d.next(), "", "D", "d.a", 3, "three", "Nats-Num-Pending", "2", "Nats-Last-Sequence", "0")
	wantDirect(t, d.next(), "", "D", "d.c.x", 4, "four", "Nats-Num-Pending", "1", "Nats-Last-Sequence", "3")
	wantDirect(t, d.next(), "", "D", "d.c.y", 5, "five", "Nats-Num-Pending", "0", "Nats-Last-Sequence", "4")
	wantStatus(t, d.next(), "204 EOB\r\nNats-Num-Pending: 0\r\nNats-Last-Sequence: 5\r\nNats-UpTo-Sequence: 5")

	// As of sequence 2: d.a was then seq 1, d.b seq 2.
	d.request("$JS.API.DIRECT.GET.D", `{"multi_last":["d.*"],"up_to_seq":2}`)
	wantDirect(t, d.next(), "NATS/1.0\r\nX-H: 1\r\n", "D", "d.a", 1, "one", "Nats-Num-Pending", "1", "Nats-Last-Sequence", "0")
	wantDirect(t, d.next(), "", "D", "d.b", 2, "two", "Nats-Num-Pending", "0", "Nats-Last-Sequence", "1")
	wantStatus(t, d.next(), "204 EOB\r\nNats-Num-Pending: 0\r\nNats-Last-Sequence: 2\r\nNats-UpTo-Sequence: 2")

	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"multi_last":["x.>"]}`), "404 No Results")
	wantStatus(t, d.get("$JS.API.DIRECT.GET.D", `{"multi_last":["d.c.*"],"up_to_seq":3}`), "404 No Results")
}

func TestJSDirectGetNotAllowed(t *testing.T) {
	s := runJSServer(t)
	nc, js := jsClient(t, s)
	jsCreate(t, nc, "ND", `{"name":"ND","subjects":["nd"],"storage":"memory"}`)
	jsPubN(t, js, "nd", 1)
	for _, subj := range []string{"$JS.API.DIRECT.GET.ND", "$JS.API.DIRECT.GET.ND.nd"} {
		if _, err := nc.Request(subj, []byte(`{"seq":1}`), 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
			t.Fatalf("direct get on %s without allow_direct: %v", subj, err)
		}
	}
	// Turning allow_direct on (and off) by an update.
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.ND", `{"name":"ND","subjects":["nd"],"storage":"memory","allow_direct":true}`))
	if m, err := nc.Request("$JS.API.DIRECT.GET.ND", []byte(`{"seq":1}`), 2*time.Second); err != nil || m.Header.Get("Nats-Sequence") != "1" {
		t.Fatalf("direct get after enabling: %v %v", m, err)
	}
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.UPDATE.ND", `{"name":"ND","subjects":["nd"],"storage":"memory","allow_direct":false}`))
	if _, err := nc.Request("$JS.API.DIRECT.GET.ND", []byte(`{"seq":1}`), 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("direct get after disabling: %v", err)
	}
	// A deleted stream stops answering.
	jsCreate(t, nc, "GONE", `{"name":"GONE","subjects":["gone"],"storage":"memory","allow_direct":true}`)
	wantAPIOK(t, jsAPIReq(t, nc, "$JS.API.STREAM.DELETE.GONE", ""))
	if _, err := nc.Request("$JS.API.DIRECT.GET.GONE", []byte(`{"seq":1}`), 2*time.Second); !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("direct get on a deleted stream: %v", err)
	}
}

// pipeline sends msgs back to back on one connection without waiting and
// returns their PubAcks in the same order.
func pipeline(t testing.TB, nc *nats.Conn, msgs ...*nats.Msg) []string {
	t.Helper()
	inbox := nats.NewInbox()
	ch := make(chan *nats.Msg, len(msgs))
	sub, err := nc.ChanSubscribe(inbox+".*", ch)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	for i, m := range msgs {
		m.Reply = fmt.Sprintf("%s.%d", inbox, i)
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
	}
	acks := make([]string, len(msgs))
	timeout := time.After(5 * time.Second)
	for range msgs {
		select {
		case m := <-ch:
			i := mustAtoi(t, m.Subject[len(inbox)+1:])
			acks[i] = string(m.Data)
		case <-timeout:
			t.Fatalf("missing PubAcks: %q", acks)
		}
	}
	return acks
}

// A conditional publish pipelined right behind a plain publish it depends
// on is judged after it (expectations.md E3: one server must reject it,
// including when the condition names a wildcard), and a chain of dependent
// conditional publishes pipelined on one key is accepted in order (E5).
func TestJSPipelinedConditionals(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "P", `{"name":"P","subjects":["wa.>","wb.>","k.>"],"storage":"memory"}`)
	var seq uint64
	for i := 0; i < 50; i++ {
		plain := nats.NewMsg(fmt.Sprintf("wa.%d.bar", i))
		cond := nats.NewMsg(fmt.Sprintf("wb.%d", i))
		cond.Header.Set("Nats-Expected-Last-Subject-Sequence", "0")
		subj := fmt.Sprintf("wa.%d.*", i)
		if i%2 == 1 {
			subj = fmt.Sprintf("wa.%d.bar", i)
		}
		cond.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", subj)
		acks := pipeline(t, nc, plain, cond)
		seq++
		wantPubOK(t, acks[0], "P", seq)
		wantPubErr(t, acks[1], "P", 400, 10071, fmt.Sprintf("wrong last sequence: %d", seq))
	}
	for i := 0; i < 20; i++ {
		key := fmt.Sprintf("k.%d", i)
		var chain []*nats.Msg
		for j := 0; j < 5; j++ {
			m := nats.NewMsg(key)
			want := uint64(0)
			if j > 0 {
				want = seq + uint64(j)
			}
			m.Header.Set("Nats-Expected-Last-Subject-Sequence", strconv.FormatUint(want, 10))
			chain = append(chain, m)
		}
		for j, ack := range pipeline(t, nc, chain...) {
			wantPubOK(t, ack, "P", seq+uint64(j)+1)
		}
		seq += 5
	}
}

// restartJS shuts s down and starts a server on the same store directory.
func restartJS(t *testing.T, s *Server) *Server {
	t.Helper()
	dir := s.getOpts().StoreDir
	s.Shutdown()
	o := testOptions()
	o.JetStream = true
	o.StoreDir = dir
	return runServer(t, o)
}

// What the publish path remembers (the dedupe window, the last message id,
// sequences, per-subject lasts) survives a restart of a file stream.
func TestJSPublishStateSurvivesRestart(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	cfg := `{"name":"F","subjects":["f.*"],"storage":"file"}`
	jsCreate(t, nc, "F", cfg)
	jsCreate(t, nc, "M", `{"name":"M","subjects":["m"],"storage":"memory"}`)
	wantPubOK(t, jsPubRaw(t, nc, "f.a", "1", "Nats-Msg-Id", "a"), "F", 1)
	wantPubOK(t, jsPubRaw(t, nc, "f.b", "2", "Nats-Msg-Id", "b"), "F", 2)
	wantPubOK(t, jsPubRaw(t, nc, "f.a", "3", "Nats-Msg-Id", "c", "Nats-Expected-Last-Msg-Id", "b"), "F", 3)
	wantPubOK(t, jsPubRaw(t, nc, "m", "x"), "M", 1)
	nc.Close()

	s = restartJS(t, s)
	nc, _ = jsClient(t, s)
	if got := jsPubRaw(t, nc, "f.b", "again", "Nats-Msg-Id", "b"); got != `{"stream":"F","seq":2,"duplicate": true}` {
		t.Fatalf("duplicate after restart: %s", got)
	}
	wantPubErr(t, jsPubRaw(t, nc, "f.a", "4", "Nats-Expected-Last-Msg-Id", "b"), "F", 400, 10070, "wrong last msg ID: c")
	wantPubErr(t, jsPubRaw(t, nc, "f.a", "4", "Nats-Expected-Last-Subject-Sequence", "1"), "F", 400, 10071, "wrong last sequence: 3")
	wantPubErr(t, jsPubRaw(t, nc, "f.a", "4", "Nats-Expected-Last-Sequence", "2"), "F", 400, 10071, "wrong last sequence: 3")
	wantPubOK(t, jsPubRaw(t, nc, "f.a", "4", "Nats-Expected-Last-Msg-Id", "c", "Nats-Expected-Last-Subject-Sequence", "3",
		"Nats-Expected-Last-Sequence", "3"), "F", 4)
	// The recovered config is "the same config" for an idempotent create.
	if r := jsCreate(t, nc, "F", cfg); r.has("did_create") && r.get("did_create") != false {
		t.Fatalf("create after restart made a new stream: %v", r)
	}
	// A memory stream comes back, empty.
	if n, _, _ := streamMsgs(t, nc, "M"); n != 0 {
		t.Fatalf("memory stream after restart holds %d messages", n)
	}
	wantPubOK(t, jsPubRaw(t, nc, "m", "y"), "M", 1)
}

// A stream with no_ack stores what it gets and never answers.
func TestJSNoAckStream(t *testing.T) {
	s := runJSServer(t)
	nc, _ := jsClient(t, s)
	jsCreate(t, nc, "NA", `{"name":"NA","subjects":["na"],"storage":"memory","no_ack":true}`)
	if _, err := nc.Request("na", []byte("x"), 200*time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("request to a no_ack stream: %v", err)
	}
	if n, _, _ := streamMsgs(t, nc, "NA"); n != 1 {
		t.Fatalf("no_ack stream holds %d messages", n)
	}
}

// With a JetStream domain the PubAck names it, and the API answers on the
// domain's prefix too.
func TestJSDomainPubAckAndAPI(t *testing.T) {
	o := testOptions()
	o.JetStream = true
	o.StoreDir = t.TempDir()
	o.JetStreamDomain = "hub"
	s := runServer(t, o)
	nc, _ := jsClient(t, s)
	r := jsAPIReq(t, nc, "$JS.hub.API.STREAM.CREATE.S", `{"name":"S","subjects":["s"],"storage":"memory"}`)
	wantAPIOK(t, r)
	if got := jsPubRaw(t, nc, "s", "x"); got != `{"stream":"S","domain":"hub","seq":1}` {
		t.Fatalf("PubAck with a domain: %s", got)
	}
	if got := jsPubRaw(t, nc, "s", "x", "Nats-Expected-Last-Sequence", "0"); got != `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 1"},"stream":"S","seq":0}` {
		t.Fatalf("error PubAck with a domain: %s", got)
	}
	if r = jsAPIReq(t, nc, "$JS.hub.API.INFO", ""); r.str("domain") != "hub" || r.num("streams") != "1" {
		t.Fatalf("account info via the domain prefix: %v", r)
	}
	js, err := jetstream.NewWithDomain(nc, "hub")
	if err != nil {
		t.Fatal(err)
	}
	if ack, err := js.Publish(ctx(t), "s", []byte("y")); err != nil || ack.Domain != "hub" || ack.Sequence != 2 {
		t.Fatalf("nats.go publish with a domain: %+v %v", ack, err)
	}
}
