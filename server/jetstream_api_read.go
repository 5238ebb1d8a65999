package server

import "slices"

// STREAM.INFO and CONSUMER.INFO of a replicated stream are reads of the
// group's state like STREAM.MSG.GET (stream_read.go): the leader answers
// once it has confirmed with a read index that it still leads and has
// applied everything committed when the request came. A leader paused
// (SIGSTOP, a long GC, a frozen VM) wakes up believing it leads; without
// the read index it answered requests queued during the pause from its
// old state (last_seq, num_pending, ack floor) although a new leader had
// taken writes meanwhile. nats-server answers INFO from the leader's
// local state at once, so its answers can be stale the same way.

// readRoutes are the stream calls answered after a read index.
var readRoutes = []string{"STREAM.INFO.", "CONSUMER.INFO."}

// answersAfterRead reports whether the call under prefix is a read that
// waits for a read index.
func answersAfterRead(prefix string) bool { return slices.Contains(readRoutes, prefix) }

// readOnlyRoutes are the stream calls that change nothing. Only those are
// answered "temporarily unavailable" by a replica that has just stopped
// leading (jetstream_resign.go): the new leader may have received the same
// request and answered it, and for a call that changes the state a 10008
// that came first would tell the client it did not happen when it did.
// A change that falls between the two leaders goes unanswered instead,
// and its client times out.
var readOnlyRoutes = append(slices.Clone(readRoutes), "STREAM.MSG.GET.", "CONSUMER.NAMES.", "CONSUMER.LIST.")

// readOnly reports whether the call under prefix changes nothing.
func readOnly(prefix string) bool { return slices.Contains(readOnlyRoutes, prefix) }

// answerAfterRead runs handler once mset's state is linearizable and
// delivers its answer. The handler runs on a goroutine of its own, started
// once the read is served: never on the read loop that brought the
// request (the read index may come in through that same route), nor on
// the group's goroutine (the answer's replica status asks that goroutine).
// The state only moves forward, so an answer made a moment after the read
// is served is still linearizable. A read that cannot be made
// linearizable is answered 10008 to a client connected here, and not at
// all to one routed here (another server, or the client's retry, answers).
func (r *apiRequest) answerAfterRead(mset *stream, typ string, handler apiHandler) {
	cp := r.detached()
	local := r.c != nil && r.c.route == nil
	s := r.jsa.js.srv
	mset.readLinearizable(func(err error, _ map[*client]struct{}) {
		switch {
		case err == nil:
			if s.shutdown.Load() {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer cp.recoverPanic()
				cp.respond(nil, typ, handler(cp))
			}()
		case local:
			cp.respond(nil, typ, &apiResponse{Error: errClusterNotAvail()})
		}
	})
}
