package server

import "github.com/nats-io/nats-server/v2/internal/sublist"

// Delivery of a message a peer routed here (RMSG), and the one re-route a
// queue group's copy may take.
//
// A routing server sends each queue group one copy, to the member it
// picked. That member may be gone by the time the copy arrives (a stream
// leader that stepped down unsubscribed meanwhile): the copy then goes on
// once, in mode 3, to another member of the group this server knows of.
// Mode 3 names only the queue groups that were not served, so the
// receiver's plain subscribers, which the first copy's sender reached on
// its own, are not given it twice, and it is never routed again, so a
// copy travels at most two hops. A copy nobody took is handed to the
// route hook (route_hooks.go), which answers a stream publish 503.

// routeProtoQueueReroute is the first route protocol that knows delivery
// mode 3. An older peer is sent mode 0 for a re-route instead: it delivers
// to its local member and, at that version, never re-routes a mode 0
// copy, so the copy still stops there.
const routeProtoQueueReroute = 7

// deliverRouted hands a routed message to this server's subscribers:
// plain ones in modes 1 and 2 (2 comes only from peers older than route
// protocol 7: a plain copy re-routed), one member of each listed queue
// group. hdr and msg are views of the route's read buffer; from is the
// route's connection, given to internal subscribers that ask for it
// (subscribeInternalRouteOrigin).
func (s *Server) deliverRouted(from *client, acc *Account, subject, reply string, mode byte, queues []string, hdr, msg []byte) {
	if len(hdr) == 0 {
		hdr = nil
	}
	res := matchSubject(acc, subject)
	shown, shownReply := splitShownSubject(subject, reply)
	if mode == '1' || mode == '2' {
		for _, sub := range res.Plain {
			switch {
			case sub.route != nil:
			case sub.routeOrigin:
				s.callInternal(sub, from, acc, shown, shownReply, hdr, msg)
			default:
				s.deliverTo(nil, nil, acc, sub, shown, shownReply, hdr, msg)
			}
		}
	}
	for _, q := range queues {
		members := queueMembers(res.Queues, q)
		if s.deliverQueueLocal(acc, members, shown, shownReply, hdr, msg) {
			continue
		}
		if mode != '3' && rerouteQueue(acc, members, subject, reply, q, hdr, msg) {
			continue
		}
		if h := s.routeHooks.Load(); h != nil {
			h.unserved(acc, subject, reply, q, hdr, msg)
		}
	}
}

// queueMembers is the members of queue group q in groups (a match result
// names each group once: the sublist merges a group's members), shared
// with the result, not copied.
func queueMembers(groups []sublist.Queue[*subscription], q string) []*subscription {
	for i := range groups {
		if groups[i].Name == q {
			return groups[i].Members
		}
	}
	return nil
}

// deliverQueueLocal gives the message to one local member of a queue
// group, trying the others when the one picked refuses it (closed, or at
// its delivery limit). It reports whether one took it.
func (s *Server) deliverQueueLocal(acc *Account, members []*subscription, subject, reply string, hdr, msg []byte) bool {
	n := len(members)
	if n == 0 {
		return false
	}
	start := int(fastrand() % uint32(n))
	for i := range n {
		sub := members[(start+i)%n]
		if sub.route == nil && s.deliverTo(nil, nil, acc, sub, subject, reply, hdr, msg) {
			return true
		}
	}
	return false
}

// rerouteQueue sends a copy of queue group q that found no local member
// to one member on another route, picked at random, and reports whether
// one was there.
func rerouteQueue(acc *Account, members []*subscription, subject, reply, q string, hdr, msg []byte) bool {
	n := len(members)
	if n == 0 {
		return false
	}
	start := int(fastrand() % uint32(n))
	for i := range n {
		rc := members[(start+i)%n].route
		if rc == nil {
			continue
		}
		mode := "3"
		if rc.route != nil && rc.route.remote.Proto < routeProtoQueueReroute {
			mode = "0"
		}
		rc.mu.Lock()
		if rc.closing {
			rc.mu.Unlock()
			continue
		}
		rc.appendRMSGModeLocked(acc.Name, subject, reply, mode, []string{q}, hdr, msg)
		rc.mu.Unlock()
		rc.out.signal()
		return true
	}
	return false
}

// olderPlainInterest reports whether a peer older than route protocol 7
// has plain interest in subject: such a peer's stream leader subscribes
// plainly, so it may have been sent its own copy of a publish.
func olderPlainInterest(acc *Account, subject string) bool {
	for _, sub := range matchSubject(acc, subject).Plain {
		if rc := sub.route; rc != nil && rc.route != nil && rc.route.remote.Proto < routeProtoQueueReroute {
			return true
		}
	}
	return false
}
