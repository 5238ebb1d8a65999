package server

import (
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A new stream's group starts on its servers at about the same moment,
// each once it applies the meta entry that creates it; the first leader's
// vote request often reached a server a moment before that server started
// the group, was dropped, and the campaign was retried two ticks (100 ms)
// later: most of a slow create. Messages for a group not running here are
// kept a short while instead (a few, small ones, under s.raft.mu, so a
// group that starts takes every message kept for it and none arrives
// between), and handed to the group as it starts. Raft copes with
// delayed messages; one kept for a group that never starts here expires.

const (
	earlyMailMax    = 256       // messages kept
	earlyMailBytes  = 256 << 10 // their bytes
	earlyMailMsgMax = 16 << 10  // a larger message is not kept
	earlyMailFor    = time.Second
)

type earlyMsg struct {
	group string
	m     raft.Message
	size  int
	at    time.Time
}

// earlyMail is the messages kept, oldest first (guarded by raftGroups.mu).
type earlyMail struct {
	msgs  []earlyMsg
	bytes int
}

// expire drops the messages older than earlyMailFor.
func (e *earlyMail) expire(now time.Time) {
	n := 0
	for n < len(e.msgs) && now.Sub(e.msgs[n].at) > earlyMailFor {
		e.bytes -= e.msgs[n].size
		n++
	}
	if n > 0 {
		clear(e.msgs[:n])
		e.msgs = append(e.msgs[:0], e.msgs[n:]...)
	}
	if len(e.msgs) == 0 && cap(e.msgs) > 16 {
		e.msgs = nil
	}
}

// room reports whether a message of size bytes would be kept.
func (e *earlyMail) room(size int, now time.Time) bool {
	e.expire(now)
	return size <= earlyMailMsgMax && len(e.msgs) < earlyMailMax && e.bytes+size <= earlyMailBytes
}

// keep adds a message for group (the caller checked room).
func (e *earlyMail) keep(group string, m raft.Message, size int, now time.Time) {
	e.msgs = append(e.msgs, earlyMsg{group: group, m: m, size: size, at: now})
	e.bytes += size
}

// take removes and returns the messages kept for group, oldest first.
func (e *earlyMail) take(group string) []raft.Message {
	var out []raft.Message
	n := 0
	for _, em := range e.msgs {
		if em.group == group {
			out = append(out, em.m)
			e.bytes -= em.size
			continue
		}
		e.msgs[n] = em
		n++
	}
	clear(e.msgs[n:])
	e.msgs = e.msgs[:n]
	return out
}

// raftGroupOrKeep returns the group named name, or keeps m (of size bytes
// on the wire) for it when it does not run here and there is room.
func (s *Server) raftGroupOrKeep(name []byte, m raft.Message, size int) *raftGroup {
	if g := s.raftGroupNamed(name); g != nil {
		return g // the common case: no clock read per message
	}
	now := s.clock.Now()
	s.raft.mu.Lock()
	defer s.raft.mu.Unlock()
	if g := s.raft.groups[string(name)]; g != nil {
		return g
	}
	s.raft.notRunning.Add(1)
	if !s.raft.closed && s.raft.early.room(size, now) {
		s.raft.early.keep(string(name), m, size, now)
	}
	return nil
}

// keepsEarly reports whether a message of size bytes for a group not
// running here would be kept (the route reads it instead of skipping it).
func (s *Server) keepsEarly(size int) bool {
	if size > earlyMailMsgMax {
		return false
	}
	now := s.clock.Now()
	s.raft.mu.Lock()
	defer s.raft.mu.Unlock()
	return !s.raft.closed && s.raft.early.room(size, now)
}
