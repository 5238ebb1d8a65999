package server

import (
	"errors"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	"github.com/nats-io/nats-server/v2/internal/proto"
	"github.com/nats-io/nkeys"
	"github.com/nats-io/nuid"
)

// Server is a Tern server.
type Server struct {
	mu         lockorder.Mutex[lockorder.Server]
	id         string
	name       string
	opts       atomic.Pointer[Options]
	auth       atomic.Pointer[authConfig]
	accs       accounts
	gacc       *Account
	sysAcc     atomic.Pointer[Account]
	clients    map[uint64]*client
	closed     *closedRing
	listener   net.Listener
	http       *httpServer
	prof       *httpServer
	running    atomic.Bool
	shutdown   atomic.Bool
	ldm        atomic.Bool
	start      time.Time
	cidGen     atomic.Uint64
	wg         sync.WaitGroup
	ready      chan struct{}
	done       chan struct{}
	quit       chan struct{} // closed when Shutdown begins
	stats      serverStats
	maxPending atomic.Int64
	configTime atomic.Int64 // unix nanos of the last config load
	logging    logging
	sysSubs    []*subscription
	js         atomic.Pointer[jetStream]
	jsToggling atomic.Bool // EnableJetStream or DisableJetStream running
	// metaHeld: this server holds meta group state (its meta log existed
	// at start, or its meta group applied an entry of a term past the
	// bootstrap's); its route INFO says so (jetstream_meta_wiped.go).
	metaHeld atomic.Bool

	panics        panicLog                        // request handlers that panicked (recover.go)
	blockedRoutes atomic.Pointer[map[string]bool] // partition tests only
	routes        routeTable
	routeHooks    atomic.Pointer[routeHooks] // set by a layer above routes (route_hooks.go)
	raft          raftGroups
	raftClock     raftClock
	raftLive      atomic.Pointer[raftLiveness] // peers' health for quiescent groups (raft_live.go)
	quiesces      bool                         // raftQuiesces, fixed by NewServer (raft_live.go)
	asides        atomic.Int64                 // stepdowns waiting for their outcome (jetstream_stepdown.go)
	clock         clock.Clock                  // JetStream's and raft's (Options.clock; clock.Real by default)
	clusterOnly   clusterOnlyGuard             // refused messages to cluster-only subjects (cluster_only.go)
}

type serverStats struct {
	inMsgs, inBytes, outMsgs, outBytes          atomic.Int64
	totalConns, slowConsumers, staleConnections atomic.Int64
}

// NewServer validates opts and creates a server (not yet listening).
func NewServer(opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	o := opts.Clone()
	setBaselineOptions(o)
	if err := validateOptions(o); err != nil {
		return nil, err
	}
	kp, err := nkeys.CreateServer()
	if err != nil {
		return nil, err
	}
	id, _ := kp.PublicKey()
	s := &Server{id: id, name: o.ServerName, clients: map[uint64]*client{},
		ready: make(chan struct{}), done: make(chan struct{}), quit: make(chan struct{})}
	if s.name == "" {
		s.name = id
	}
	s.accs.byName = map[string]*Account{}
	if s.clock = o.clock; s.clock == nil {
		s.clock = clock.Real
	}
	s.configTime.Store(time.Now().UnixNano())
	s.closed = newClosedRing(o.MaxClosedClients)
	s.opts.Store(o)
	s.quiesces = o.routeProto == 0 || o.routeProto >= routeProtoQuiesce
	s.maxPending.Store(o.MaxPending)
	s.auth.Store(buildAuth(o))
	s.gacc = s.accs.register(NewAccount(globalAccountName))
	if err := s.configureAccounts(o); err != nil {
		return nil, err
	}
	return s, nil
}

func validateOptions(o *Options) error {
	if err := checkUnsupportedOptions(o); err != nil {
		return err
	}
	if err := validateLimits(o); err != nil {
		return err
	}
	if err := validateConnTypes(o); err != nil {
		return err
	}
	if err := validateTLS(o); err != nil {
		return err
	}
	if o.MaxPayload > 64*1024*1024 {
		return fmt.Errorf("max_payload (%d) cannot be higher than 64MB", o.MaxPayload)
	}
	if int64(o.MaxPayload) > o.MaxPending {
		return fmt.Errorf("max_payload (%d) cannot be higher than max_pending (%d)", o.MaxPayload, o.MaxPending)
	}
	if err := checkUsersPermissions(o); err != nil {
		return err
	}
	if err := checkDuplicateUsers(o); err != nil {
		return err
	}
	if o.NoAuthUser != "" {
		found := false
		for _, u := range o.Users {
			found = found || u.Username == o.NoAuthUser
		}
		if !found {
			return fmt.Errorf("no_auth_user: %q not present as user or nkey in authorization block or account configuration", o.NoAuthUser)
		}
	}
	return nil
}

func (s *Server) getOpts() *Options       { return s.opts.Load() }
func (s *Server) getAuth() *authConfig    { return s.auth.Load() }
func (s *Server) globalAccount() *Account { return s.gacc }

// ID returns the server's public id.
func (s *Server) ID() string { return s.id }

// Name returns the server name.
func (s *Server) Name() string { return s.name }

// ClusterName returns the configured cluster name.
func (s *Server) ClusterName() string { return s.getOpts().Cluster.Name }

// Running reports whether the server accepts connections.
func (s *Server) Running() bool { return s.running.Load() }

// JetStreamEnabled reports whether JetStream is serving.
func (s *Server) JetStreamEnabled() bool { return s.jetStreamReady() }

func (s *Server) jetStreamReady() bool { return s.js.Load() != nil }

// NumClients returns the number of connected clients.
func (s *Server) NumClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// Start opens the listeners and starts accepting clients. Like nats-server's
// it does not return an error: failures are logged as fatal.
func (s *Server) Start() {
	o := s.getOpts()
	s.start = time.Now()
	s.Noticef("Starting nats-server")
	s.Noticef("  Version:  %s (tern %s)", VERSION, TernVersion)
	s.Noticef("  Name:     %s", s.name)
	s.Noticef("  ID:       %s", s.id)
	if o.ConfigFile != "" {
		s.Noticef("Using configuration file: %s", o.ConfigFile)
	}
	if systemJetStream(o) { // opts_validate.go; before anything listens, as in nats-server
		s.Fatalf(sysJetStreamRefusal)
		return
	}
	if o.Cluster.Port != 0 {
		s.initRouteTable()
	}
	if err := s.startSystemAccount(); err != nil {
		s.Fatalf("Error starting system account: %v", err)
		return
	}
	if o.Cluster.Port != 0 {
		s.metaHeld.Store(o.JetStream && metaWALExists(o)) // before any route hears of it
		if err := s.startCluster(); err != nil {
			s.Fatalf("Error listening on cluster port: %v", err)
			return
		}
	}
	if o.JetStream {
		if err := s.enableJetStream(); err != nil {
			s.Fatalf("Can't start JetStream: %v", err)
			return
		}
	}
	if o.ProfPort != 0 {
		if err := s.startProfiling(); err != nil {
			s.Fatalf("Error starting profiler: %v", err)
			return
		}
	}
	if o.HTTPPort != 0 || o.HTTPSPort != 0 {
		if err := s.startMonitoring(); err != nil {
			s.Fatalf("Error starting monitoring: %v", err)
			return
		}
	}
	if o.DontListen {
		s.Noticef("Not listening for client connections (in-process connections only)")
	} else if err := s.startClientListener(); err != nil {
		s.Fatalf("Error listening on port: %s:%d, %q", o.Host, o.Port, err)
		return
	}
	s.writePidFile()
	s.writePortsFile()
	if s.routes.byID != nil {
		s.gossip() // peers learn our client port, now that it is bound
	}
	s.running.Store(true)
	close(s.ready)
	s.Noticef("Server is ready")
}

func (s *Server) startClientListener() error {
	o := s.getOpts()
	addr := net.JoinHostPort(o.Host, strconv.Itoa(o.Port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.listener = l
	s.mu.Unlock()
	s.Noticef("Listening for client connections on %s", l.Addr())
	s.wg.Add(1)
	go s.acceptLoop(l)
	return nil
}

func (s *Server) acceptLoop(l net.Listener) {
	defer s.wg.Done()
	delay := 10 * time.Millisecond
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.shutdown.Load() || s.ldm.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.Errorf("Temporary accept error: %v", err)
			time.Sleep(delay)
			delay = min(delay*2, time.Second)
			continue
		}
		delay = 10 * time.Millisecond
		s.createClient(nc)
	}
}

// createClient registers a connection, sends INFO and starts its loops.
// With TLS the handshake runs first, on its own goroutine (tls_conn.go).
func (s *Server) createClient(nc net.Conn) { s.createClientConn(nc, false) }

func (s *Server) createClientConn(nc net.Conn, inProc bool) {
	o := s.getOpts()
	c := newClient(s, nc, s.cidGen.Add(1))
	c.inProc = inProc
	a := s.getAuth()
	if a.needsNonce() {
		c.nonce = nuid.Next()
	}
	c.parser = proto.New(c, proto.Limits{MaxControlLine: int(o.MaxControlLine), MaxPayload: int(o.MaxPayload)})
	c.parser.RequireConnect = a.required && a.noAuth == ""
	if o.TLSConfig != nil && !inProc {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if info, ok := s.tlsAcceptClient(c, o); ok {
				s.startClient(c, info)
			}
		}()
		return
	}
	s.startClient(c, s.infoFor(c))
}

// startClient registers c, queues info (nil when already sent) and starts
// the client's loops.
func (s *Server) startClient(c *client, info []byte) {
	o := s.getOpts()
	a := s.getAuth()
	nc := c.nc
	s.mu.Lock()
	if s.shutdown.Load() {
		s.mu.Unlock()
		nc.Close()
		return
	}
	tooMany := len(s.clients) >= o.MaxConn
	if !tooMany {
		s.clients[c.cid] = c
	}
	s.mu.Unlock()
	s.stats.totalConns.Add(1)
	c.mu.Lock()
	c.out.write(info)
	c.mu.Unlock()
	s.wg.Add(2)
	go c.writeLoop()
	if tooMany {
		s.Errorf("%s - maximum connections exceeded", c)
		c.sendErrAndClose("maximum connections exceeded", MaxConnectionsExceeded)
		go func() { defer s.wg.Done(); <-c.out.done; s.closed.add(c.connInfo(time.Now().UTC(), true)) }()
		return
	}
	if !a.required {
		s.bindClient(c, s.globalAccount(), "", nil)
	} else {
		c.startAuthTimer(time.Duration(o.AuthTimeout * float64(time.Second)))
	}
	c.setPingTimer()
	c.out.signal()
	s.Debugf("%s - Client connection created", c)
	go c.readLoop()
}

func (s *Server) removeClient(c *client, closed *ConnInfo) {
	s.mu.Lock()
	delete(s.clients, c.cid)
	s.mu.Unlock()
	s.closed.add(closed)
	s.Debugf("%s - Client connection closed: %s", c, c.reason)
}

// ReadyForConnections waits until the server listens (or, with
// DontListen, takes in-process connections) or d passes.
func (s *Server) ReadyForConnections(d time.Duration) bool {
	select {
	case <-s.ready:
		return s.Addr() != nil || s.getOpts().DontListen
	case <-time.After(d):
		return false
	}
}

// Addr returns the client listener address, nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}

func (s *Server) clientPort() int {
	if a, ok := s.Addr().(*net.TCPAddr); ok {
		return a.Port
	}
	return s.getOpts().Port
}

// ClientURL returns the URL clients connect to.
func (s *Server) ClientURL() string {
	o := s.getOpts()
	host := o.Host
	if host == "0.0.0.0" || host == "::" || host == "" {
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, strconv.Itoa(s.clientPort()))
}

func (s *Server) connectURLs() []string {
	o := s.getOpts()
	if o.ClientAdvertise != "" {
		return []string{o.ClientAdvertise}
	}
	if s.routes.byID == nil {
		return nil
	}
	// In a cluster, clients learn every server's client address.
	urls := []string{strings.TrimPrefix(s.ClientURL(), "nats://")}
	s.routes.mu.Lock()
	for _, r := range s.routes.byID {
		if u := strings.TrimPrefix(r.remote.ClientURL, "nats://"); u != "" && !strings.HasSuffix(u, ":0") {
			urls = append(urls, u)
		}
	}
	s.routes.mu.Unlock()
	sort.Strings(urls)
	return urls
}

// Shutdown closes listeners and connections and waits for every goroutine.
func (s *Server) Shutdown() {
	if s.shutdown.Swap(true) {
		<-s.done
		return
	}
	close(s.quit)
	s.Noticef("Initiating Shutdown...")
	s.running.Store(false)
	s.mu.Lock()
	if s.listener != nil {
		s.listener.Close()
	}
	clients := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	s.stopMonitoring()
	s.stopProfiling()
	if js := s.js.Load(); js != nil {
		js.shutdown()
	}
	s.stopRaftGroups()
	s.stopCluster()
	for _, c := range clients {
		c.closeConnection(ServerShutdown)
	}
	s.wg.Wait()
	s.removePidFile()
	s.Noticef("Server Exiting..")
	close(s.done)
}

// WaitForShutdown blocks until Shutdown has completed.
func (s *Server) WaitForShutdown() { <-s.done }
