package server

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A create holds a claim on its name and subjects while it opens the
// store and subscribes, without jsAccount.mu: meanwhile a create of a
// stream with overlapping subjects is refused at once, creates of the same
// name wait for the first and then decide (the same config answers the
// stream, another config "already in use"), and other requests of the
// account are answered.
func TestStreamCreateClaim(t *testing.T) {
	s := runJSServer(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	testHookMakeStream = func(name string) {
		if name == "CLAIM" {
			once.Do(func() { close(entered); <-release })
		}
	}
	var released sync.Once
	letGo := func() { released.Do(func() { close(release) }) }
	t.Cleanup(func() { letGo(); testHookMakeStream = nil })
	type answer struct {
		DidCreate bool `json:"did_create"`
		Error     *struct {
			ErrCode int `json:"err_code"`
		} `json:"error"`
	}
	create := func(name, subject string, maxMsgs int) answer {
		nc := connectNATS(t, s.ClientURL())
		cfg := fmt.Sprintf(`{"name":%q,"subjects":[%q],"max_msgs":%d}`, name, subject, maxMsgs)
		m, err := nc.Request("$JS.API.STREAM.CREATE."+name, []byte(cfg), 10*time.Second)
		if err != nil {
			t.Errorf("create %s: %v", name, err)
			return answer{}
		}
		var a answer
		if err := json.Unmarshal(m.Data, &a); err != nil {
			t.Errorf("create %s: %v %s", name, err, m.Data)
		}
		return a
	}
	code := func(a answer) int {
		if a.Error == nil {
			return 0
		}
		return a.Error.ErrCode
	}
	first := make(chan answer, 1)
	go func() { first <- create("CLAIM", "claim.>", 10) }()
	<-entered
	// While the first create is held: an overlapping stream is refused,
	// and the account answers other requests.
	if a := create("OTHER", "claim.x", 10); code(a) != 10065 {
		t.Fatalf("overlapping create during the claim: %+v", a)
	}
	nc := connectNATS(t, s.ClientURL())
	if _, err := nc.Request("$JS.API.STREAM.NAMES", nil, 5*time.Second); err != nil {
		t.Fatalf("stream names during the claim: %v", err)
	}
	var wg sync.WaitGroup
	same := make([]answer, 4)
	var other answer
	for i := range same {
		wg.Add(1)
		go func() { defer wg.Done(); same[i] = create("CLAIM", "claim.>", 10) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); other = create("CLAIM", "claim.>", 20) }()
	// All five are in the API handler (where they wait on the claim)
	// before the first create goes on.
	js := s.js.Load()
	waitFor(t, 10*time.Second, "the creates to reach the API", func() bool { return js.apiTotal.Load() >= 8 })
	letGo()
	wg.Wait()
	if a := <-first; code(a) != 0 || !a.DidCreate {
		t.Fatalf("first create: %+v", a)
	}
	for i, a := range same {
		if code(a) != 0 || a.DidCreate {
			t.Errorf("identical create %d: %+v (want the existing stream)", i, a)
		}
	}
	if code(other) != 10058 {
		t.Errorf("create with another config: %+v (want 10058)", other)
	}
}
