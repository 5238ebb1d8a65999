package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"testing"
	"time"
)

// ccTern replays CONSUMER.CREATE requests through Tern's pure create path
// against one stream, keeping the consumers it created.
type ccTern struct {
	streams   map[string]*StreamConfig
	limits    consumerLimits
	consumers map[string]*ConsumerConfig
}

func newCCTern(t *testing.T, server string) *ccTern {
	x := &ccTern{streams: map[string]*StreamConfig{}, consumers: map[string]*ConsumerConfig{}}
	for name, js := range ccStreams {
		var cfg StreamConfig
		if err := json.Unmarshal([]byte(js), &cfg); err != nil {
			t.Fatal(err)
		}
		cfg.normalize()
		x.streams[name] = &cfg
	}
	if server == "limits" {
		x.limits.Server.MaxAckPending = ccLimitsMaxAckPending
		x.limits.Server.MaxRequestBatch = ccLimitsMaxRequestBatch
	}
	return x
}

// create answers one request as a JSON object (nil: no answer).
func (x *ccTern) create(subject, body string) map[string]any {
	resp := func(v any) map[string]any {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			panic(err)
		}
		return m
	}
	typ := apiTypePrefix + consumerCreateResponseType
	req, ok, aerr := decodeConsumerCreate(subject, []byte(body), true)
	if !ok {
		return nil
	}
	if aerr != nil {
		return resp(&apiResponse{Type: typ, Error: aerr})
	}
	st := &consumerCreateState{Stream: x.streams[req.Stream], Limits: x.limits}
	name := consumerNameOf(&req.Config)
	for n, c := range x.consumers {
		if n == name {
			st.Existing = c
		} else {
			st.Others = append(st.Others, c)
		}
	}
	cfg, name, aerr := decideConsumerCreate(st, req)
	if aerr != nil {
		return resp(&apiResponse{Type: typ, Error: aerr})
	}
	x.consumers[name] = cfg
	// The streams are empty: a consumer starts at sequence 1 or its own.
	start := uint64(1)
	if cfg.DeliverPolicy == DeliverByStartSequence {
		start = cfg.OptStartSeq
	}
	now := time.Now()
	ci := newConsumerInfo(req.Stream, name, withServerMetadata(cfg, "2.15.2", 5), start, now, now)
	return resp(&JSApiConsumerCreateResponse{apiResponse: apiResponse{Type: typ}, ConsumerInfo: ci})
}

var ccGeneratedName = regexp.MustCompile(`^[0-9A-Za-z]{8}$`)

// TestConsumerGolden runs every recorded CONSUMER.CREATE case through
// Tern and compares the response with nats-server's, field by field
// (creation times, timestamps and the size of pause_remaining aside; a
// generated name only by its form).
func TestConsumerGolden(t *testing.T) {
	cases := ccCases()
	match := 0
	for _, c := range cases {
		if ccCompareCase(t, c) {
			match++
		}
	}
	t.Logf("%d/%d golden CONSUMER.CREATE cases match nats-server v2.15.2", match, len(cases))
}

func ccCompareCase(t *testing.T, c ccGoldenCase) bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(ccGoldenDir, c.Name+".json"))
	if err != nil {
		t.Errorf("%s: %v (re-record with TERN_REF_NATS_SERVER)", c.Name, err)
		return false
	}
	var g ccGoldenFile
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	if g.Request != c.Req || !reflect.DeepEqual(g.Pre, c.Pre) || g.Stream != c.Stream || g.Server != c.Server {
		t.Errorf("%s: golden file is stale: re-record with TERN_REF_NATS_SERVER", c.Name)
		return false
	}
	x := newCCTern(t, c.Server)
	for _, p := range c.Pre {
		if r := x.create(p.Subject, p.Body); r == nil || r["error"] != nil {
			t.Errorf("%s: pre request %s refused by Tern: %v", c.Name, p.Subject, r)
			return false
		}
	}
	got := x.create(c.Req.Subject, c.Req.Body)
	var want map[string]any
	if err := json.Unmarshal(g.Response, &want); err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	if diffs := ccDiff(want, got); len(diffs) > 0 {
		t.Errorf("%s: differs from nats-server:\n%s", c.Name, joinLines(diffs))
		return false
	}
	return true
}

// ccDiff lists the top-level and config fields that differ.
func ccDiff(want, got map[string]any) []string {
	if got == nil {
		return []string{"Tern gave no answer"}
	}
	for _, m := range []map[string]any{want, got} {
		delete(m, "created")
		delete(m, "ts")
		if _, ok := m["pause_remaining"]; ok {
			m["pause_remaining"] = "set"
		}
	}
	if n, _ := want["name"].(string); ccGeneratedName.MatchString(n) && want["config"] != nil {
		if cfg, _ := want["config"].(map[string]any); cfg["name"] == nil {
			gn, _ := got["name"].(string)
			if !ccGeneratedName.MatchString(gn) {
				return []string{fmt.Sprintf("generated name %q has not nats-server's form", gn)}
			}
			want["name"], got["name"] = "generated", "generated"
		}
	}
	var diffs []string
	wc, _ := want["config"].(map[string]any)
	gc, _ := got["config"].(map[string]any)
	for _, k := range unionKeys(wc, gc) {
		if !reflect.DeepEqual(wc[k], gc[k]) {
			diffs = append(diffs, fmt.Sprintf("  config.%s: nats-server %v, Tern %v", k, ccShow(wc[k]), ccShow(gc[k])))
		}
	}
	delete(want, "config")
	delete(got, "config")
	for _, k := range unionKeys(want, got) {
		if !reflect.DeepEqual(want[k], got[k]) {
			diffs = append(diffs, fmt.Sprintf("  %s: nats-server %v, Tern %v", k, ccShow(want[k]), ccShow(got[k])))
		}
	}
	return diffs
}

func unionKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	for k := range a {
		seen[k] = true
	}
	for k := range b {
		seen[k] = true
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func ccShow(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, _ := json.Marshal(v)
	if len(b) > 200 {
		b = append(b[:200], "…"...)
	}
	return string(b)
}

func joinLines(l []string) string {
	s := ""
	for _, x := range l {
		s += x + "\n"
	}
	return s
}
