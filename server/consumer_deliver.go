package server

import "strings"

// deliverShown delivers a consumer's message to the subscribers of to (a
// pull request's reply subject) showing subject shown in the MSG line, as
// nats-server delivers a stream message to a pull request: the client sees
// the message's own subject. Route interest is forwarded on to, with the
// shown subject after an '@' at the end of the ack reply, as nats-server
// sends it (the receiving server splits it off: splitShownSubject).
// The receivers' write loops are woken now, or gathered in wake (non-nil)
// for the caller to wake once, as deliverBatch does.
func (s *Server) deliverShown(wake map[*client]struct{}, acc *Account, to, shown, reply string, hdr, msg []byte) int {
	if shown == to {
		return s.deliverWaking(nil, wake, acc, to, reply, hdr, msg)
	}
	r := matchSubject(acc, to)
	n := 0
	var fwd routeForwards
	for _, sub := range r.Plain {
		if sub.route != nil {
			fwd.plain(sub.route)
			continue
		}
		if s.deliverTo(nil, wake, acc, sub, shown, reply, hdr, msg) {
			n++
		}
	}
	for i := range r.Queues {
		sub := pickQueueMember(nil, r.Queues[i].Members)
		switch {
		case sub == nil:
		case sub.route != nil:
			fwd.queue(sub.route, r.Queues[i].Name)
		case s.deliverTo(nil, wake, acc, sub, shown, reply, hdr, msg):
			n++
		}
	}
	if fwd.n > 0 && isJSAckReply(reply) {
		reply += "@" + shown
	}
	return n + fwd.send(nil, wake, acc, to, reply, hdr, msg)
}

// isJSAckReply reports whether reply is a consumer's ack subject.
func isJSAckReply(reply string) bool { return strings.HasPrefix(reply, "$JS.ACK.") }

// splitShownSubject undoes deliverShown's route form: a routed message
// whose reply is "<ack subject>@<subject>" is shown with that subject and
// the ack subject as its reply (the '@' after at least 8 tokens of the
// ack subject, as nats-server looks for it); anything else as it came.
func splitShownSubject(subject, reply string) (string, string) {
	if !isJSAckReply(reply) {
		return subject, reply
	}
	dots := 0
	for i := 0; i < len(reply); i++ {
		switch reply[i] {
		case '.':
			dots++
		case '@':
			if dots >= 8 && i < len(reply)-1 {
				return reply[i+1:], reply[:i]
			}
		}
	}
	return subject, reply
}
