package server

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// watchReply runs run on a goroutine of its own with a channel that is
// closed once anything is delivered on the request's reply subject on this
// server (a local-only subscription: it makes no interest on the routes),
// counting the watch in n while it runs (at most max at once). It reports
// false, having started nothing, when the reply subject is not a literal
// subject, the server is shutting down, max watches run already or the
// subscription fails. The leader grace (jetstream_leader_grace.go) and the
// meta hold (jetstream_meta_hold.go) watch for a leader's answer this way.
func (r *apiRequest) watchReply(n *atomic.Int32, max int32, run func(seen <-chan struct{})) bool {
	s, acc := r.jsa.js.srv, r.jsa.acc
	r.reply = strings.Clone(r.reply)
	if !sublist.ValidLiteralSubject(r.reply) || s.shutdown.Load() {
		return false
	}
	if n.Add(1) > max {
		n.Add(-1)
		return false
	}
	seen := make(chan struct{})
	var once sync.Once // answers may come from several routes at once
	sub, err := acc.subscribeLocalOnly(r.reply, func(*subscription, *client, *Account, string, string, []byte, []byte) {
		once.Do(func() { close(seen) })
	})
	if err != nil {
		n.Add(-1)
		return false
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer n.Add(-1)
		defer acc.unsubscribe(sub)
		run(seen)
	}()
	return true
}
