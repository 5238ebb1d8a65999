package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// routeReadLoop parses the peer's operations until the route closes.
func (s *Server) routeReadLoop(r *route) error {
	var payload []byte
	var armed time.Time
	defer r.frags.abortAll() // spool files of transfers the route cut short
	for {
		// A peer that sends nothing (not even PONGs to our PINGs) for three
		// ping intervals is gone: the read times out and the route closes.
		if now := time.Now(); now.Sub(armed) > routePingInterval/2 {
			_ = r.c.nc.SetReadDeadline(now.Add(3 * routePingInterval))
			armed = now
		}
		line, err := r.br.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		op, args, _ := bytes.Cut(line, []byte(" "))
		switch string(op) {
		case "RMSG":
			payload, err = s.routeMsg(r, args, payload)
		case "RS+":
			err = s.routeSub(r, args, true)
		case "RS-":
			err = s.routeSub(r, args, false)
		case "PING":
			r.c.queueProto([]byte("PONG\r\n"))
		case "PONG", "CONNECT": // CONNECT: credentials this server does not ask for
		case "-ERR":
			err = fmt.Errorf("peer refused the route: %s", args)
		case "INFO":
			err = s.routeGossip(r, args)
		case "RAFT":
			payload, err = s.routeRaft(r, args, payload)
		case "RAFTF":
			err = s.routeRaftFrag(r, args)
		default:
			s.Debugf("Route %s: ignoring unknown operation %q", r.remote.Name, op)
		}
		if err != nil {
			return err
		}
	}
}

// routeMsg reads an RMSG payload and delivers it to local subscribers.
// args points into the reader's buffer, which reading the payload may
// overwrite: every field is copied out first.
func (s *Server) routeMsg(r *route, args, buf []byte) ([]byte, error) {
	var fa [8][]byte
	f := splitFields(args, fa[:0])
	if len(f) != 7 {
		return buf, fmt.Errorf("bad RMSG %q", args)
	}
	hdrLen, err1 := strconv.Atoi(string(f[5]))
	size, err2 := strconv.Atoi(string(f[6]))
	if err1 != nil || err2 != nil || hdrLen > size || size > 64*1024*1024 {
		return buf, fmt.Errorf("bad RMSG sizes %q", args)
	}
	accName, subject, reply, mode := string(f[0]), string(f[1]), string(f[2]), string(f[3])
	var queues []string
	if string(f[4]) != "-" {
		queues = strings.Split(string(f[4]), ",")
	}
	if reply == "-" {
		reply = ""
	}
	if cap(buf) < size+2 {
		buf = make([]byte, size+2)
	}
	buf = buf[:size+2]
	if _, err := io.ReadFull(r.br, buf); err != nil {
		return buf, err
	}
	acc := s.accs.lookup(accName)
	if acc == nil {
		return buf, nil
	}
	msg := buf[:size]
	n := s.deliverLocal(acc, subject, reply, mode != "0", queues, msg[:hdrLen], msg[hdrLen:])
	if n == 0 && mode != "0" && reply != "" {
		s.rerouteStreamPublish(acc, subject, reply, msg[:hdrLen], msg[hdrLen:], mode == "1")
	}
	return buf, nil
}

// deliverLocal hands a routed message to this server's own subscribers
// and returns how many received it.
func (s *Server) deliverLocal(acc *Account, subject, reply string, plain bool, queues []string, hdr, msg []byte) int {
	if len(hdr) == 0 {
		hdr = nil
	}
	n := 0
	res := matchSubject(acc, subject)
	if plain {
		for _, sub := range res.Plain {
			if sub.route == nil && s.deliverTo(nil, nil, acc, sub, subject, reply, hdr, msg) {
				n++
			}
		}
	}
	for _, q := range queues {
		for i := range res.Queues {
			if res.Queues[i].Name != q {
				continue
			}
			if sub := pickLocalMember(res.Queues[i].Members); sub != nil && s.deliverTo(nil, nil, acc, sub, subject, reply, hdr, msg) {
				n++
			}
		}
	}
	return n
}

// rerouteStreamPublish handles a publish that was routed here for a
// replicated stream whose leadership moved while it was in flight: it is
// routed once more, by this server's current view of interest, so it
// reaches the new leader instead of vanishing. Re-routed copies carry
// mode "2" and are never re-routed again.
func (s *Server) rerouteStreamPublish(acc *Account, subject, reply string, hdr, msg []byte, forward bool) {
	js := s.js.Load()
	if js == nil || js.cluster == nil || !js.cluster.streamSubject(acc.Name, subject) {
		return
	}
	res := matchSubject(acc, subject)
	for _, sub := range res.Plain {
		if sub.route == nil {
			return // served here after all
		}
		if !forward {
			break
		}
		rc := sub.route
		rc.mu.Lock()
		if !rc.closing {
			rc.appendRMSGModeLocked(acc.Name, subject, reply, "2", nil, hdr, msg)
		}
		rc.mu.Unlock()
		rc.out.signal()
		return
	}
	// Nobody serves the stream right now (between leaders): the publish was
	// not stored anywhere, so say so and let the client retry.
	s.deliver(nil, acc, reply, "", []byte("NATS/1.0 503\r\nNats-Subject: "+subject+"\r\n\r\n"), nil)
}

func pickLocalMember(members []*subscription) *subscription {
	n := 0
	for _, m := range members {
		if m.route == nil {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	k := int(fastrand() % uint32(n))
	for _, m := range members {
		if m.route == nil {
			if k == 0 {
				return m
			}
			k--
		}
	}
	return nil
}

// routeRaft reads a RAFT payload and hands it to its group.
func (s *Server) routeRaft(r *route, args, buf []byte) ([]byte, error) {
	size, err := strconv.Atoi(string(args))
	if err != nil || size < 0 || size > 1<<30 {
		return buf, fmt.Errorf("bad RAFT size %q", args)
	}
	if cap(buf) < size+2 {
		buf = make([]byte, size+2)
	}
	buf = buf[:size+2]
	if _, err := io.ReadFull(r.br, buf); err != nil {
		return buf, err
	}
	if err := s.deliverRaft(buf[:size], false); err != nil {
		s.Debugf("Route %s: bad raft message: %v", r.remote.Name, err)
	}
	if cap(buf) > 1<<20 {
		return nil, nil // do not keep a snapshot-sized buffer
	}
	return buf, nil
}

// routeSub records or drops the peer's interest.
func (s *Server) routeSub(r *route, args []byte, add bool) error {
	f := strings.Fields(string(args))
	if len(f) < 2 || len(f) > 3 {
		return fmt.Errorf("bad interest %q", args)
	}
	acc := s.accs.lookup(f[0])
	if acc == nil {
		return nil
	}
	queue := ""
	if len(f) == 3 {
		queue = f[2]
	}
	if add {
		sub := &subscription{route: r.c, subject: f[1], queue: queue, sid: "route"}
		_ = acc.insertSub(sub)
		return nil
	}
	for _, e := range acc.sl.All() {
		if e.Value.route == r.c && e.Subject == f[1] && e.Queue == queue {
			_ = acc.sl.Remove(e.Subject, e.Queue, e.Value)
		}
	}
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
// "0" queue groups only, "1" plain subscribers too, "2" plain, re-routed.
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
			r.c.queueProto([]byte("PING\r\n"))
		case <-r.c.out.done:
			return
		}
	}
}

// splitFields appends the space- or tab-separated fields of b to f; it
// allocates only when f has no room left.
func splitFields(b []byte, f [][]byte) [][]byte {
	for len(b) > 0 {
		i := 0
		for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
			i++
		}
		b = b[i:]
		if len(b) == 0 {
			break
		}
		j := 0
		for j < len(b) && b[j] != ' ' && b[j] != '\t' {
			j++
		}
		f = append(f, b[:j])
		b = b[j:]
	}
	return f
}
