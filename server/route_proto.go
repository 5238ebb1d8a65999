package server

import (
	"encoding/json"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/routeproto"
)

// routeReadLoop parses the peer's operations until the route closes. A
// malformed operation (internal/routeproto) closes the route.
func (s *Server) routeReadLoop(r *route) error {
	var payload []byte
	var op routeproto.Op
	lim := s.routeLimits(r)
	defer r.frags.abortAll() // spool files of transfers the route cut short
	armed := time.Now()
	_ = r.c.nc.SetReadDeadline(armed.Add(3 * routePingInterval))
	for {
		r.busy.Store(false)
		line, err := r.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		r.busy.Store(true)
		// Whatever the peer sends shows it alive (node liveness,
		// raft_live.go): not only its PINGs and PONGs, which queue behind
		// its raft traffic. A peer that sends nothing (not even PONGs to
		// our PINGs) for three ping intervals is gone: the read times out
		// and the route closes.
		now := time.Now()
		r.heard.Store(now.UnixNano())
		if now.Sub(armed) > routePingInterval/2 {
			_ = r.c.nc.SetReadDeadline(now.Add(3 * routePingInterval))
			armed = now
		}
		lattrace.Mark("route.line", r.br.Buffered())
		if err := routeproto.Parse(line, &lim, &op); err != nil {
			err = fmt.Errorf("protocol error: %w in %q", err, protoSnippet(line))
			s.Errorf("Route %s: %v", r.remote.Name, err)
			return err
		}
		switch op.Kind {
		case routeproto.Msg:
			payload, err = s.routeMsg(r, &op, payload)
		case routeproto.Sub:
			err = s.routeSub(r, &op, true)
		case routeproto.Unsub:
			err = s.routeSub(r, &op, false)
		case routeproto.Ping:
			r.c.queueProto(pongProto)
		case routeproto.Pong:
		case routeproto.Info:
			err = s.routeGossip(r, op.Arg)
		case routeproto.Raft:
			payload, err = s.routeRaft(r, &op, payload)
		case routeproto.RaftFrag:
			err = s.routeRaftFrag(r, &op)
		case routeproto.RaftBatch:
			payload, err = s.routeRaftBatch(r, &op, payload)
		default:
			switch string(op.Name) {
			case "CONNECT": // credentials this server does not ask for
			case "-ERR":
				err = fmt.Errorf("peer refused the route")
			default:
				s.Debugf("Route %s: ignoring unknown operation %q", r.remote.Name, op.Name)
			}
		}
		if err != nil {
			return err
		}
	}
}

// routeMsg reads an RMSG payload and delivers it (route_deliver.go).
// op points into the reader's buffer, which reading the payload may
// overwrite: every field is copied out first.
func (s *Server) routeMsg(r *route, op *routeproto.Op, buf []byte) ([]byte, error) {
	accName, subject, reply, mode := string(op.Account), string(op.Subject), string(op.Reply), op.Mode
	var qa [2]string // room for the common case: one group, no allocation
	queues := qa[:0]
	for q, rest := routeproto.NextQueue(op.Queues); len(q) > 0; q, rest = routeproto.NextQueue(rest) {
		queues = append(queues, queueName(q))
	}
	hdrLen, size := op.Hdr, op.Size
	buf, err := readPayload(r.br, buf, size)
	if err != nil {
		return buf, err
	}
	acc := s.accs.lookup(accName)
	if acc == nil {
		return buf, nil
	}
	if clusterOnlySubject(reply) {
		// An older peer's client named it (a newer peer refuses that):
		// a responder here would answer there as this server.
		s.refuseClusterOnly("the route of "+r.remote.Name+" (as a reply subject)", reply) // cluster_only.go
		return buf, nil
	}
	msg := buf[:size]
	s.deliverRouted(r.c, acc, subject, reply, mode, queues, msg[:hdrLen], msg[hdrLen:])
	return buf, nil
}

// queueName copies a queue group's name out of the read buffer; the stream
// leaders' group, on every routed publish to a replicated stream, is not
// allocated again each time.
func queueName(q []byte) string {
	if string(q) == streamIngestQueue {
		return streamIngestQueue
	}
	return string(q)
}

// routeRaft reads a RAFT payload and hands it to its group. A message for
// a group this server does not run is skipped unread (nothing allocated),
// and the payload buffer grows only as bytes arrive.
func (s *Server) routeRaft(r *route, op *routeproto.Op, buf []byte) ([]byte, error) {
	size := op.Size
	if skip, why := s.skipRaftMessage(r, size, size, true); skip {
		if why != "" {
			s.Debugf("Route %s: raft message of %d bytes dropped: %s", r.remote.Name, size, why)
		}
		return buf, discardPayload(r.br, size)
	}
	buf, err := readPayload(r.br, buf, size)
	if err != nil {
		return buf, err
	}
	s.raft.msgs.noteFrameRecv(frameRAFT)
	if err := s.deliverRaft(buf[:size], false); err != nil {
		s.Debugf("Route %s: bad raft message: %v", r.remote.Name, err)
	}
	if cap(buf) > 1<<20 {
		return nil, nil // do not keep a snapshot-sized buffer
	}
	return buf, nil
}

// routeRaftBatch reads a RAFTB payload and hands each record to its
// group (raft_batch.go); a frame whose records are malformed closes the
// route.
func (s *Server) routeRaftBatch(r *route, op *routeproto.Op, buf []byte) ([]byte, error) {
	buf, err := readPayload(r.br, buf, op.Size)
	if err != nil {
		return buf, err
	}
	s.raft.msgs.noteFrameRecv(frameRAFTB)
	err = raftBatchRecords(buf[:op.Size], func(group []byte, m raft.Message, size int, err error) {
		if err != nil {
			s.Debugf("Route %s: bad raft message in a batch: %v", r.remote.Name, err)
			return
		}
		s.deliverRaftMsg(group, m, size)
	})
	if err != nil {
		s.Errorf("Route %s: %v of %d bytes", r.remote.Name, err, op.Size)
	}
	return buf, err
}

// routeSub records or drops the peer's interest.
func (s *Server) routeSub(r *route, op *routeproto.Op, add bool) error {
	acc := s.accs.lookup(string(op.Account))
	if acc == nil {
		return nil
	}
	subject, queue := string(op.Subject), string(op.Queue)
	key := interestKey(acc.Name, subject, queue)
	if add {
		sub := &subscription{route: r.c, subject: subject, queue: queue, sid: "route"}
		if acc.insertSub(sub) == nil {
			if r.subs == nil {
				r.subs = map[string][]*subscription{}
			}
			r.subs[key] = append(r.subs[key], sub)
		}
		return nil
	}
	// The route's own index, not a walk of every subscription: a server
	// holding thousands of streams hears an RS- for each leadership that
	// moves.
	for _, sub := range r.subs[key] {
		_ = acc.sl.Remove(subject, queue, sub)
	}
	delete(r.subs, key)
	acc.deliverInterestChanged(subject) // a push consumer's client on that server went
	return nil
}

// routeGossip dials peers we learn about from an INFO.
func (s *Server) routeGossip(r *route, args []byte) error {
	var ri routeInfo
	if err := json.Unmarshal(args, &ri); err != nil {
		return err
	}
	if ri.ID == r.remote.ID && ri.ClientURL != "" {
		// Its client port may be known only now. The INFO may also come
		// on a connection that a duplicate is replacing: update both.
		s.routes.mu.Lock()
		r.remote.ClientURL = ri.ClientURL
		if cur := s.routes.byID[ri.ID]; cur != nil {
			cur.remote.ClientURL = ri.ClientURL
		}
		s.routes.mu.Unlock()
	}
	mine := s.routeURL()
	for _, p := range ri.Peers {
		if p == "" || p == mine {
			continue
		}
		u, err := url.Parse(p)
		if err != nil || s.connectedTo(u.Host) {
			continue
		}
		s.dialRoute(u, false)
	}
	return nil
}

func (s *Server) connectedTo(host string) bool {
	for _, r := range s.routeList() {
		if u, err := url.Parse(r.remote.RouteURL); err == nil && u.Host == host {
			return true
		}
	}
	return false
}

func interestKey(acc, subject, queue string) string { return acc + " " + subject + " " + queue }

func interestProto(op, acc, subject, queue string) []byte {
	if queue != "" {
		return []byte(op + " " + acc + " " + subject + " " + queue + "\r\n")
	}
	return []byte(op + " " + acc + " " + subject + "\r\n")
}

// interestChanged reference-counts local interest and tells the peers
// when a (subject, queue) gains its first or loses its last subscriber.
// The RS+/RS- is queued while routes.mu is held, so the order the peers
// see is the order of the count changes: a concurrent unsubscribe and
// subscribe can never leave RS- after RS+ while a subscriber exists.
func (s *Server) interestChanged(acc *Account, sub *subscription, delta int) {
	if s.routes.interest == nil {
		return
	}
	key := interestKey(acc.Name, sub.subject, sub.queue)
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	n := s.routes.interest[key] + delta
	if n <= 0 {
		delete(s.routes.interest, key)
	} else {
		s.routes.interest[key] = n
	}
	var line []byte
	switch {
	case delta > 0 && n == 1:
		line = interestProto("RS+", acc.Name, sub.subject, sub.queue)
	case delta < 0 && n <= 0:
		line = interestProto("RS-", acc.Name, sub.subject, sub.queue)
	default:
		return
	}
	if testInterestQueueDelay != nil {
		testInterestQueueDelay()
	}
	for _, r := range s.routes.byID {
		r.c.queueProto(line)
	}
}

// testInterestQueueDelay, set only by tests, stretches the time between an
// interest count change and the queueing of its RS+/RS-.
var testInterestQueueDelay func()

// sendAllInterest tells a new peer everything we are interested in.
func (s *Server) sendAllInterest(r *route) {
	// Queued under routes.mu, like interestChanged: no RS- of a change
	// made meanwhile can overtake this snapshot.
	s.routes.mu.Lock()
	defer s.routes.mu.Unlock()
	var b []byte
	for key := range s.routes.interest {
		f := strings.SplitN(key, " ", 3)
		b = append(b, interestProto("RS+", f[0], f[1], f[2])...)
	}
	if len(b) > 0 {
		r.c.queueProto(b)
	}
}

// appendRMSGLocked queues a message for a route.
func (c *client) appendRMSGLocked(acc, subject, reply string, plain bool, queues []string, hdr, msg []byte) {
	mode := "0"
	if plain {
		mode = "1"
	}
	c.appendRMSGModeLocked(acc, subject, reply, mode, queues, hdr, msg)
}

// appendRMSGModeLocked queues a message with an explicit delivery mode:
// "0" queue groups only, "1" plain subscribers too, "3" queue groups
// only, re-routed (route_deliver.go; "2", plain re-routed, is sent only
// by servers older than route protocol 7).
func (c *client) appendRMSGModeLocked(acc, subject, reply, mode string, queues []string, hdr, msg []byte) {
	b := c.out.hdr[:0]
	b = append(b, "RMSG "...)
	b = append(b, acc...)
	b = append(b, ' ')
	b = append(b, subject...)
	b = append(b, ' ')
	if reply == "" {
		b = append(b, '-')
	} else {
		b = append(b, reply...)
	}
	b = append(b, ' ')
	b = append(b, mode...)
	b = append(b, ' ')
	if len(queues) == 0 {
		b = append(b, '-')
	} else {
		b = append(b, strings.Join(queues, ",")...)
	}
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(hdr)), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(len(hdr)+len(msg)), 10)
	b = append(b, "\r\n"...)
	c.out.writeMsg(b, hdr, msg)
}

// routePingInterval paces route PINGs, which keep routes alive and let a
// dead peer be detected (see routeReadLoop).
var routePingInterval = 30 * time.Second

// pingRoute sends PINGs until the route closes.
func (s *Server) pingRoute(r *route) {
	t := time.NewTicker(routePingInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			r.c.queueProto(pingLine)
		case <-r.c.out.done:
			return
		}
	}
}
