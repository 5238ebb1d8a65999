package server

import (
	"encoding/json"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"runtime/debug"
	"sync/atomic"
)

// Requests from clients and peers are answered by handlers that run on
// the reader's goroutine (internal subscriptions: $JS.API, $SYS.REQ,
// imports, stream subjects). A handler that panics must not end the
// process: it is recovered, logged (with its stack the first time for
// each kind of request) and answered with a 500 error.

// panicLog counts recovered panics and remembers which kinds of request
// already logged a stack.
type panicLog struct {
	count  atomic.Int64
	mu     lockorder.Mutex[lockorder.PanicLog]
	logged map[string]bool
}

// panicKindsMax bounds the kinds remembered; beyond it stacks are not logged.
const panicKindsMax = 1024

// firstOf reports whether kind had no stack logged yet, and records it.
func (p *panicLog) firstOf(kind string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logged[kind] || len(p.logged) >= panicKindsMax {
		return false
	}
	if p.logged == nil {
		p.logged = map[string]bool{}
	}
	p.logged[kind] = true
	return true
}

// recovered logs a panic a handler of kind recovered from.
func (s *Server) recovered(kind string, v any) {
	s.panics.count.Add(1)
	if s.panics.firstOf(kind) {
		s.Errorf("Recovered from a panic answering %s: %v\n%s", kind, v, debug.Stack())
		return
	}
	s.Errorf("Recovered from a panic answering %s: %v", kind, v)
}

// RecoveredPanics is how many request handlers panicked and were recovered.
func (s *Server) RecoveredPanics() int64 { return s.panics.count.Load() }

// internalErrorText is the description of the 500 error a panic answers.
const internalErrorText = "internal server error"

// internalErrorJSON is the answer to a request whose handler panicked,
// in the shape of nats-server's API errors (code, description).
func internalErrorJSON() []byte {
	type apiError struct {
		Code        int    `json:"code"`
		Description string `json:"description"`
	}
	b, _ := json.Marshal(struct {
		Error apiError `json:"error"`
	}{apiError{Code: 500, Description: internalErrorText}})
	return b
}

// callInternal runs an internal subscription's handler; a panic is
// recovered, logged and, when the message asked for an answer, answered
// with a 500 error. Handlers with an answer of their own shape (the
// JetStream API, the system account's requests) recover first.
func (s *Server) callInternal(sub *subscription, c *client, acc *Account, subject, reply string, hdr, msg []byte) {
	defer func() {
		if v := recover(); v != nil {
			s.recovered("a message on "+sub.subject, v)
			if reply != "" {
				s.deliver(nil, acc, reply, "", nil, internalErrorJSON())
			}
		}
	}()
	sub.icb(sub, c, acc, subject, reply, hdr, msg)
}
