package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ccRoundTrip decodes raw into a fresh v and encodes it again: equal bytes
// mean Tern's type has nats-server's field names, order and omitempty.
func ccRoundTrip(t *testing.T, name, raw string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		t.Errorf("%s: decode: %v", name, err)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Errorf("%s: encode: %v", name, err)
		return
	}
	if string(b) != raw {
		t.Errorf("%s: bytes differ\nnats-server: %s\nTern:        %s", name, raw, b)
	}
}

// TestConsumerCreateResponseBytes: every recorded CONSUMER.CREATE
// response, success or error, is reproduced byte for byte by
// JSApiConsumerCreateResponse.
func TestConsumerCreateResponseBytes(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(ccGoldenDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	n := 0
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), "_") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g ccGoldenFile
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		ccRoundTrip(t, filepath.Base(f), g.Raw, &JSApiConsumerCreateResponse{})
		n++
	}
	t.Logf("%d create responses reproduced byte for byte", n)
}

// TestConsumerAPIResponseBytes does the same for NAMES, LIST, INFO, PAUSE,
// UNPIN, LEADER.STEPDOWN and DELETE responses.
func TestConsumerAPIResponseBytes(t *testing.T) {
	b, err := os.ReadFile(ccShapeFile)
	if err != nil {
		t.Fatal(err)
	}
	var shapes []ccShape
	if err := json.Unmarshal(b, &shapes); err != nil {
		t.Fatal(err)
	}
	if len(shapes) != len(ccShapeRequests()) {
		t.Fatalf("%s is stale: re-record with TERN_REF_NATS_SERVER", ccShapeFile)
	}
	for _, s := range shapes {
		var v any
		switch strings.Join(strings.SplitN(s.Req.Subject, ".", 3)[:2], ".") {
		case "CONSUMER.NAMES":
			v = &JSApiConsumerNamesResponse{}
		case "CONSUMER.LIST":
			v = &JSApiConsumerListResponse{}
		case "CONSUMER.INFO":
			v = &JSApiConsumerInfoResponse{}
		case "CONSUMER.PAUSE":
			v = &JSApiConsumerPauseResponse{}
		case "CONSUMER.UNPIN":
			v = &JSApiConsumerUnpinResponse{}
		case "CONSUMER.LEADER":
			v = &JSApiConsumerLeaderStepDownResponse{}
		case "CONSUMER.DELETE":
			v = &JSApiConsumerDeleteResponse{}
		default:
			t.Fatalf("no type for %s", s.Req.Subject)
		}
		ccRoundTrip(t, s.Name, s.Raw, v)
	}
}

// TestConsumerRequestJSON: the request types read what nats.go sends and
// write nats-server's names.
func TestConsumerRequestJSON(t *testing.T) {
	var next JSApiConsumerGetNextRequest
	in := `{"expires":3000000000,"batch":10,"max_bytes":1024,"no_wait":true,"idle_heartbeat":1000000000,"group":"A","min_pending":5,"min_ack_pending":6,"id":"pin","priority":3}`
	ccRoundTrip(t, "next", in, &next)
	if next.Batch != 10 || next.Group != "A" || next.Priority != 3 || next.Id != "pin" || next.MinAckPending != 6 {
		t.Fatalf("next request decoded as %+v", next)
	}
	ccRoundTrip(t, "next_empty", `{}`, &JSApiConsumerGetNextRequest{})
	ccRoundTrip(t, "unpin", `{"group":"A"}`, &JSApiConsumerUnpinRequest{})
	ccRoundTrip(t, "pause", `{"pause_until":"2099-01-02T03:04:05Z"}`, &JSApiConsumerPauseRequest{})
	ccRoundTrip(t, "paged", `{"offset":3}`, &JSApiConsumersRequest{})
	ccRoundTrip(t, "create", `{"stream_name":"S","config":{"deliver_policy":"all","ack_policy":"explicit","replay_policy":"instant","num_replicas":0},"action":"create","pedantic":true}`, &CreateConsumerRequest{})
	ccRoundTrip(t, "create_or_update", `{"stream_name":"S","config":{"deliver_policy":"last_per_subject","ack_policy":"none","replay_policy":"original","num_replicas":0,"priority_policy":"prioritized"},"action":""}`, &CreateConsumerRequest{})
}
