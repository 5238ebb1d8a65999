package server

import (
	"encoding/json"
	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/proto"
)

// ClientOpts are a client's CONNECT options (nats-server's name: an
// Authentication sees them through ClientAuthentication.GetOpts).
type ClientOpts struct {
	Echo          bool               `json:"echo"`
	Verbose       bool               `json:"verbose"`
	Pedantic      bool               `json:"pedantic"`
	TLSRequired   bool               `json:"tls_required"`
	Nkey          string             `json:"nkey,omitempty"`
	JWT           string             `json:"jwt,omitempty"`
	Sig           string             `json:"sig,omitempty"`
	Token         string             `json:"auth_token,omitempty"`
	Username      string             `json:"user,omitempty"`
	Password      string             `json:"pass,omitempty"`
	Name          string             `json:"name"`
	Lang          string             `json:"lang"`
	Version       string             `json:"version"`
	Protocol      int                `json:"protocol"`
	Account       string             `json:"account,omitempty"`
	AccountNew    bool               `json:"new_account,omitempty"`
	Headers       bool               `json:"headers,omitempty"`
	NoResponders  bool               `json:"no_responders,omitempty"`
	Import        *SubjectPermission `json:"import,omitempty"`
	Export        *SubjectPermission `json:"export,omitempty"`
	RemoteAccount string             `json:"remote_account,omitempty"`
	ProxySig      string             `json:"proxy_sig,omitempty"`
}

// defaultConnectOpts are nats-server's defaults for fields a CONNECT omits
// (and for clients that never send one): verbose, pedantic and echo.
var defaultConnectOpts = ClientOpts{Verbose: true, Pedantic: true, Echo: true}

// client is one client connection. Its read loop owns the parser and pcd;
// everything else is guarded by mu.
type client struct {
	mu     lockorder.Mutex[lockorder.Client]
	cid    uint64
	srv    *Server
	nc     net.Conn
	parser *proto.Parser
	start  time.Time
	host   string
	port   int
	nonce  string
	route  *route // set on route connections

	// set before the client is registered, read-only after
	inProc   bool // an InProcessConn: never TLS
	tlsFirst bool // the TLS handshake came before INFO

	// guarded by mu
	acc       *Account
	opts      ClientOpts
	connected bool // CONNECT accepted (or not required)
	user      string
	perms     *clientPerms
	subs      map[string]*subscription
	out       outbound
	closing   bool
	reason    ClosedState
	pingOut   int
	pingTimer *time.Timer
	authTimer *time.Timer
	lastAct   time.Time
	rtt       time.Duration
	rttStart  time.Time

	// owned by the read loop
	pcd        map[*client]struct{} // clients with output to flush after this read
	stallTimer *time.Timer
	rng        *rand.Rand

	// bound mirrors (acc, perms) for the read loop's lock-free use; both
	// change only in bindClient, which may run on a reload goroutine.
	bound atomic.Pointer[clientBound]

	stats     clientStats
	rstats    readStats       // read loop only
	readHooks []readBatchHook // read loop only: run after each read buffer
	// endingRead: endReadBatch is running the hooks (read loop only); work
	// a hook's end queues cannot wait for a later read's end
	// (propose_held.go).
	endingRead bool
}

// readBatchHook is how a layer above the client finishes, once a whole
// read buffer is parsed, work it queued while parsing it (a file stream's
// acks wait for the stream's one write, ack_defer.go). The layer keeps its
// own queue in its hook; the client only runs the hooks, in the order they
// were added, before it flushes its receivers.
type readBatchHook interface {
	readBatchEnd(c *client)
}

// readHook returns the client's hook of type *H, adding a new one the first
// time (read loop only). After the first call it allocates nothing.
func readHook[H any, PH interface {
	*H
	readBatchHook
}](c *client) PH {
	for _, h := range c.readHooks {
		if x, ok := h.(PH); ok {
			return x
		}
	}
	x := PH(new(H))
	c.readHooks = append(c.readHooks, x)
	return x
}

// endReadBatch runs the read batch hooks (read loop only).
func (c *client) endReadBatch() {
	c.endingRead = true
	for _, h := range c.readHooks {
		h.readBatchEnd(c)
	}
	c.endingRead = false
}

// clientStats are the connection's counters. The in counters and the
// server-wide totals are accumulated by the read loop in local (non-atomic)
// counters and published once per read buffer, so the per-message path
// does no contended atomic operations; the out counters are kept atomically
// by whoever delivers to this client.
type clientStats struct {
	inMsgs, inBytes, outMsgs, outBytes atomic.Int64
}

type clientBound struct {
	acc   *Account
	perms *clientPerms
}

// readStats accumulate during one read buffer (read loop only).
type readStats struct {
	inMsgs, inBytes, outMsgs, outBytes int64
}

// publishStats folds the read loop's accumulators into the shared counters.
func (c *client) publishStats() {
	rs := &c.rstats
	if rs.inMsgs > 0 {
		c.stats.inMsgs.Add(rs.inMsgs)
		c.stats.inBytes.Add(rs.inBytes)
		c.srv.stats.inMsgs.Add(rs.inMsgs)
		c.srv.stats.inBytes.Add(rs.inBytes)
	}
	if rs.outMsgs > 0 {
		c.srv.stats.outMsgs.Add(rs.outMsgs)
		c.srv.stats.outBytes.Add(rs.outBytes)
	}
	*rs = readStats{}
}

func newClient(s *Server, nc net.Conn, cid uint64) *client {
	c := &client{srv: s, nc: nc, cid: cid, start: time.Now(), subs: map[string]*subscription{}}
	c.lastAct = c.start
	c.opts = defaultConnectOpts // a client that never sends CONNECT (telnet)
	if addr, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		c.host, c.port = addr.IP.String(), addr.Port
	}
	c.pcd = map[*client]struct{}{}
	c.rng = rand.New(rand.NewPCG(cid, uint64(c.start.UnixNano())))
	c.out.init()
	return c
}

// readLoop parses what the client sends until the connection ends.
func (c *client) readLoop() {
	defer c.srv.wg.Done()
	defer c.teardown()
	buf := make([]byte, 32*1024)
	for {
		n, err := c.nc.Read(buf)
		if n > 0 {
			lattrace.Mark("c.read", n)
			perr := c.parser.Parse(buf[:n])
			c.endReadBatch()
			c.publishStats()
			c.flushPending()
			lattrace.Mark("c.readdone", n)
			if perr != nil {
				c.protocolError(perr)
				return
			}
			if n == len(buf) && len(buf) < 256*1024 {
				buf = make([]byte, len(buf)*2)
			}
		}
		if err != nil {
			c.closeConnection(ClientClosed)
			return
		}
	}
}

// protocolError sends the -ERR a parse error calls for and closes.
func (c *client) protocolError(err error) {
	if pe, ok := err.(*proto.Error); ok {
		if pe == proto.ErrAuthorization {
			c.srv.Errorf("%s - Authorization Violation", c)
			c.sendErrAndClose(pe.Text, AuthenticationViolation)
			return
		}
		c.srv.Debugf("%s - Parser error: %s", c, pe.Text)
		c.sendErrAndClose(pe.Text, reasonFor(pe))
		return
	}
	if err == errClosed {
		return
	}
	c.srv.Debugf("%s - %v", c, err)
	c.closeConnection(ProtocolViolation)
}

func reasonFor(pe *proto.Error) ClosedState {
	switch pe {
	case proto.ErrMaxPayload:
		return MaxPayloadExceeded
	case proto.ErrMaxControlLine:
		return MaxControlLineExceeded
	}
	return ProtocolViolation
}

// flushPending kicks the write loops of every client this read fed.
func (c *client) flushPending() {
	var behind *client
	for cl := range c.pcd {
		cl.out.signal()
		delete(c.pcd, cl)
		if cl != c && behind == nil && cl.out.pendingHint.Load() > stallBytes {
			behind = cl
		}
	}
	if behind != nil {
		c.stallFor(behind)
	}
}

// stallFor waits (bounded) until dst's writer has drained below the stall
// mark.
func (c *client) stallFor(dst *client) {
	dst.mu.Lock()
	if dst.closing || dst.out.pending < stallBytes {
		dst.mu.Unlock()
		return
	}
	if dst.out.stc == nil {
		dst.out.stc = make(chan struct{})
	}
	ch := dst.out.stc
	dst.mu.Unlock()
	if c.stallTimer == nil {
		c.stallTimer = time.NewTimer(stallMax)
	} else {
		c.stallTimer.Reset(stallMax)
	}
	select {
	case <-ch:
	case <-c.stallTimer.C:
	}
	c.stallTimer.Stop()
}

func (c *client) String() string {
	return c.host + ":" + itoa(c.port) + " - cid:" + itoa(int(c.cid))
}

// ProcessConnect handles CONNECT.
func (c *client) ProcessConnect(arg []byte) error {
	if c.tracing() {
		c.traceIn("CONNECT", redactConnect(arg))
	}
	co := defaultConnectOpts // CONNECT JSON is merged into the defaults
	if err := json.Unmarshal(arg, &co); err != nil {
		return &proto.Error{Text: "Parser Error", Close: true}
	}
	if co.Protocol < 0 || co.Protocol > PROTO {
		c.sendErrAndClose("invalid client protocol", BadClientProtocolVersion)
		return errClosed
	}
	if co.NoResponders && !co.Headers {
		c.sendErrAndClose("no responders requires headers support", ProtocolViolation)
		return errClosed
	}
	if co.Account != "" || co.AccountNew {
		c.sendErrAndClose("Authorization Violation", AuthenticationViolation)
		return errClosed
	}
	if !c.srv.authenticate(c, &co) {
		c.srv.Errorf("%s - authentication error", c)
		c.sendErrAndClose("Authorization Violation", AuthenticationViolation)
		return errClosed
	}
	c.mu.Lock()
	c.opts = co
	c.connected = true
	if c.authTimer != nil {
		c.authTimer.Stop()
		c.authTimer = nil
	}
	c.mu.Unlock()
	c.parser.RequireConnect = false
	c.parser.Headers = co.Headers && !c.srv.getOpts().NoHeaderSupport
	if co.Verbose {
		c.sendOK()
	}
	return nil
}

var (
	pongProto = []byte("PONG\r\n")
	okProto   = []byte("+OK\r\n")
)

// ProcessPing answers PING with PONG.
func (c *client) ProcessPing() error {
	if c.tracing() {
		c.traceIn("PING")
		c.traceOut("PONG")
	}
	c.mu.Lock()
	c.queueLocked(pongProto)
	c.mu.Unlock()
	c.pcd[c] = struct{}{}
	return nil
}

// ProcessPong resets the outstanding-ping count.
func (c *client) ProcessPong() error {
	if c.tracing() {
		c.traceIn("PONG")
	}
	c.mu.Lock()
	c.pingOut = 0
	if !c.rttStart.IsZero() {
		c.rtt = time.Since(c.rttStart)
		c.rttStart = time.Time{}
	}
	c.mu.Unlock()
	return nil
}

func (c *client) sendOK() {
	c.mu.Lock()
	c.queueLocked(okProto)
	c.mu.Unlock()
	c.pcd[c] = struct{}{}
}

// sendErr queues -ERR '<text>' and keeps the connection.
func (c *client) sendErr(text string) {
	if c.tracing() {
		c.traceOut("-ERR '" + text + "'")
	}
	c.mu.Lock()
	c.queueLocked([]byte("-ERR '" + text + "'\r\n"))
	c.mu.Unlock()
	c.out.signal()
}

func (c *client) sendErrAndClose(text string, reason ClosedState) {
	c.sendErr(text)
	c.closeConnection(reason)
}
