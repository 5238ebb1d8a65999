package server

// deliverShown delivers a consumer's message to the subscribers of to (a
// pull request's reply subject) showing subject shown in the MSG line, as
// nats-server delivers a stream message to a pull request: the client sees
// the message's own subject. Route interest is forwarded on to (the
// original subject is lost there: consumers run on non-clustered servers
// only for now).
func (s *Server) deliverShown(acc *Account, to, shown, reply string, hdr, msg []byte) int {
	if shown == to {
		return s.deliver(nil, acc, to, reply, hdr, msg)
	}
	r := matchSubject(acc, to)
	n := 0
	var fwd routeForwards
	for _, sub := range r.Plain {
		if sub.route != nil {
			fwd.plain(sub.route)
			continue
		}
		if s.deliverTo(nil, nil, acc, sub, shown, reply, hdr, msg) {
			n++
		}
	}
	for i := range r.Queues {
		sub := pickQueueMember(nil, r.Queues[i].Members)
		switch {
		case sub == nil:
		case sub.route != nil:
			fwd.queue(sub.route, r.Queues[i].Name)
		case s.deliverTo(nil, nil, acc, sub, shown, reply, hdr, msg):
			n++
		}
	}
	return n + fwd.send(nil, nil, acc, to, reply, hdr, msg)
}
