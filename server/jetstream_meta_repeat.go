package server

import "time"

// A request id is a hash of account, reply subject, API subject and body,
// so a client that reuses one reply subject (legal NATS: PublishRequest
// with its own subscription) repeats an id: create, delete, create again
// with the same body. Each original is applied (only copies are skipped),
// but a copy of the second create would find the first one's record and
// be answered "created" with nothing applied. The client's server
// therefore remembers the ids of the stream writes its clients sent
// lately, and does not hold a write that repeats one: it is left to the
// leader, as in nats-server (a timeout if the leader dies). A client that
// reconnects to another server between the two is not seen (rare: a
// fixed reply subject, the same body and a meta failover together).

// maxRecentWrites bounds the ids remembered.
const maxRecentWrites = 1024

// recentWrites are the ids of stream writes sent by this server's
// clients within metaReqWindow (under jsCluster.mu), oldest first.
type recentWrites struct {
	order []string
	at    map[string]time.Time
}

// note records id sent at now and reports whether it repeats one sent
// within metaReqWindow.
func (w *recentWrites) note(id string, now time.Time) bool {
	if w.at == nil {
		w.at = map[string]time.Time{}
	}
	for len(w.order) > 0 && (len(w.order) >= maxRecentWrites || now.Sub(w.at[w.order[0]]) > metaReqWindow) {
		delete(w.at, w.order[0])
		w.order = w.order[1:]
	}
	prev, seen := w.at[id]
	if !seen {
		w.order = append(w.order, id)
	}
	w.at[id] = now
	return seen && now.Sub(prev) <= metaReqWindow
}

// repeatedWrite notes a stream write from a client of this server and
// reports whether its id repeats one of the last metaReqWindow.
func (r *apiRequest) repeatedWrite(prefix string) bool {
	if !heldWrite(prefix) {
		return false
	}
	id := r.requestID()
	if id == "" {
		return false
	}
	jc := r.jsa.js.cluster
	now := jc.js.srv.clock.Now()
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return jc.recent.note(id, now)
}
