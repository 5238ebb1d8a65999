package server

import (
	"encoding/json"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzConsumerCreate feeds any subject and body to the CONSUMER.CREATE
// decoder and the create decision: nothing panics, an accepted config
// encodes and decodes to itself, and deciding again on the stored config
// (an update to the same values, as a replay or restart does) accepts it
// unchanged (its required API level aside).
func FuzzConsumerCreate(f *testing.F) {
	for _, c := range ccCases() {
		f.Add(c.Req.Subject, []byte(c.Req.Body))
	}
	f.Add("CONSUMER.CREATE.W.a.W.>", []byte(`{"stream_name":"W","config":{"filter_subject":"W.>","ack_policy":"explicit"}}`))
	f.Add("CONSUMER.CREATE.L", []byte(`{"stream_name":"L","config":{"deliver_subject":"x","ack_policy":"flow_control"}}`))
	streams := map[string]*StreamConfig{}
	for name, js := range ccStreams {
		var cfg StreamConfig
		if err := json.Unmarshal([]byte(js), &cfg); err != nil {
			f.Fatal(err)
		}
		cfg.normalize()
		streams[name] = &cfg
	}
	f.Fuzz(func(t *testing.T, subject string, body []byte) {
		if len(body) > 64*1024 {
			return // the client protocol bounds bodies by max_payload
		}
		// A name taken from a subject that is not UTF-8 is echoed with
		// U+FFFD in its place (so by nats-server too): no round trip.
		roundTrips := utf8.ValidString(subject)
		req, ok, aerr := decodeConsumerCreate(subject, body, true)
		if !ok || aerr != nil {
			return
		}
		st := &consumerCreateState{Stream: streams[req.Stream], NewName: func() string { return "gen00001" }}
		st.Limits.Server.MaxRequestBatch = 50
		cfg, name, aerr := decideConsumerCreate(st, req)
		if aerr != nil {
			return
		}
		if name == "" {
			t.Fatalf("accepted without a name: %+v", cfg)
		}
		b1, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("accepted config does not encode: %v", err)
		}
		var back ConsumerConfig
		if err := json.Unmarshal(b1, &back); err != nil {
			t.Fatalf("echoed config does not decode: %v\n%s", err, b1)
		}
		if b2, _ := json.Marshal(&back); roundTrips && string(b2) != string(b1) {
			t.Fatalf("config round trip changed it:\n%s\n%s", b1, b2)
		}
		again := &CreateConsumerRequest{Stream: req.Stream, Config: *back.clone(), Action: ActionUpdate}
		again.Config.Name = name
		stored := cfg.clone()
		if stored.Name == "" && !isDurableConsumer(stored) {
			stored.Name = name
		}
		st2 := &consumerCreateState{Stream: st.Stream, Limits: st.Limits, Existing: stored}
		cfg2, _, aerr := decideConsumerCreate(st2, again)
		if aerr != nil {
			t.Fatalf("stored config refused on update: %v\n%s", aerr, b1)
		}
		if cfg.PauseUntil != nil {
			utc := cfg.PauseUntil.UTC()
			stored.PauseUntil = &utc
		}
		// The required API level is stamped from the request before the
		// negatives are cleared (nats-server does too: a priority_timeout
		// of -1 asks for level 1, the cleared config for 0).
		delete(stored.Metadata, metaRequiredLevel)
		delete(cfg2.Metadata, metaRequiredLevel)
		s1, _ := json.Marshal(stored)
		s2, _ := json.Marshal(cfg2)
		if string(s1) != string(s2) {
			t.Fatalf("re-deciding the stored config changed it:\n%s\n%s", s1, s2)
		}
	})
}

// TestConsumerCreateDecodeBounded: a large body costs memory in proportion
// to its size only (no amplification in the decode).
func TestConsumerCreateDecodeBounded(t *testing.T) {
	big := `{"stream_name":"L","config":{"filter_subjects":[` + repeatJoin(`"L.a"`, ",", 50000) + `]}}`
	start := time.Now()
	_, ok, aerr := decodeConsumerCreate("CONSUMER.CREATE.L.x", []byte(big), true)
	if !ok || aerr != nil {
		t.Fatalf("decode: ok=%v err=%v", ok, aerr)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("decoding %d bytes took %v", len(big), d)
	}
}

func repeatJoin(s, sep string, n int) string {
	b := make([]byte, 0, n*(len(s)+len(sep)))
	for i := 0; i < n; i++ {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, s...)
	}
	return string(b)
}
