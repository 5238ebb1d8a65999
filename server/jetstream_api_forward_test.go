package server

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/clock"
)

// forwardTestJS is a jetStream with one account and no streams: enough
// for the forward's bookkeeping, no server running.
func forwardTestJS() (*jetStream, *jsAccount) {
	js := &jetStream{srv: &Server{name: "S1", clock: clock.Real}, accounts: map[string]*jsAccount{}}
	jsa := &jsAccount{js: js, acc: &Account{Name: "A"}, streams: map[string]*stream{}}
	js.accounts["A"] = jsa
	js.cluster = &jsCluster{js: js}
	return js, jsa
}

// A forward reaches every server, and most hold no replica of its stream:
// those dropped it after taking back a slot they had not taken, so the
// count of waiting forwards went below zero with each, and the bound of
// apiForwardsMax waiting forwards stopped holding.
func TestAPIForwardNoReplicaKeepsCount(t *testing.T) {
	js, _ := forwardTestJS()
	msg, err := json.Marshal(&apiForward{Account: "A", Subject: "STREAM.PURGE.ORDERS", Reply: "_INBOX.x", Term: 2})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		js.cluster.apiForwarded(nil, nil, nil, apiForwardSubject, "", nil, msg)
	}
	if n := js.forwardsWaiting.Load(); n != 0 {
		t.Fatalf("forwards waiting after three for a stream not here: %d, want 0", n)
	}
}

// A leader's dispatch checks for an answered forward, then marks the call
// answered directly, with its leadership checks between: a forward of the
// same call that claimed it between the two (apiForwarded, once the
// replica served) ran it too, a purge or stepdown twice. The direct mark
// must fail once a forward holds the call, and the reverse.
func TestAPIAnswerClaimedOnce(t *testing.T) {
	js, jsa := forwardTestJS()
	r := &apiRequest{jsa: jsa, subject: "STREAM.PURGE.ORDERS", reply: "_INBOX.a", body: []byte(`{}`)}
	key := r.answerKey()
	if !js.answerForwarded(key) {
		t.Fatal("a fresh forward was not answered")
	}
	if js.answeredDirect(key) {
		t.Fatal("the direct copy of a call its forward answered ran too")
	}

	r.reply = "_INBOX.b"
	key = r.answerKey()
	if !js.answeredDirect(key) {
		t.Fatal("a fresh direct call was not answered")
	}
	if js.answerForwarded(key) {
		t.Fatal("the forward of a call answered directly ran too")
	}
}
