package server

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testOptions are options for an in-process server on a random port.
func testOptions() *Options {
	return &Options{Host: "127.0.0.1", Port: RANDOM_PORT, NoSigs: true, NoLog: true}
}

// runServer starts an in-process server and shuts it down with the test.
func runServer(t testing.TB, o *Options) *Server {
	t.Helper()
	if o == nil {
		o = testOptions()
	}
	s, err := NewServer(o)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	fatal := &fatalLog{}
	if os.Getenv("TERN_TEST_LOG") != "" {
		s.ConfigureLogger()
	} else {
		s.SetLogger(fatal, false, false)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatalf("server not ready: %s", fatal.last())
	}
	t.Cleanup(s.Shutdown)
	return s
}

// fatalLog keeps the last fatal message of a server and drops the rest,
// so a test can say why a server did not start.
type fatalLog struct {
	mu  sync.Mutex
	msg string
}

func (l *fatalLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msg = fmt.Sprintf(format, v...)
}

func (l *fatalLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.msg
}

func (*fatalLog) Noticef(string, ...any) {}
func (*fatalLog) Warnf(string, ...any)   {}
func (*fatalLog) Errorf(string, ...any)  {}
func (*fatalLog) Debugf(string, ...any)  {}
func (*fatalLog) Tracef(string, ...any)  {}

// rawConn is a raw protocol connection for byte-exact assertions.
type rawConn struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t testing.TB, s *Server) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (r *rawConn) send(s string) {
	r.t.Helper()
	if _, err := r.nc.Write([]byte(s)); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// line reads one CRLF-terminated line (CRLF included).
func (r *rawConn) line() string {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	l, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("read line: %v (got %q)", err, l)
	}
	return l
}

// expect reads exactly len(want) bytes and compares them.
func (r *rawConn) expect(want string) {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, len(want))
	n, err := ioReadFull(r.br, buf)
	if err != nil || string(buf[:n]) != want {
		r.t.Fatalf("expected %q, got %q (err %v)", want, buf[:n], err)
	}
}

// expectClosed waits for the server to close the connection.
func (r *rawConn) expectClosed() {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := r.br.ReadByte()
	if err == nil {
		r.t.Fatalf("expected close, got byte %q", b)
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r.t.Fatalf("connection not closed")
	}
}

func ioReadFull(br *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := br.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// connect reads INFO and sends CONNECT with the given JSON.
func (r *rawConn) connect(connectJSON string) {
	r.t.Helper()
	if l := r.line(); !strings.HasPrefix(l, "INFO ") {
		r.t.Fatalf("expected INFO, got %q", l)
	}
	r.send("CONNECT " + connectJSON + "\r\n")
}

// waitFor polls cond until it is true; the test fails if d passes first.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if !pollUntil(d, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// pollUntil polls cond until it is true (true) or d passes (false): waitFor
// for a caller that says itself why it failed.
func pollUntil(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// serverBinary builds the root package once per test run.
func serverBinary(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tern-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "nats-server")
		out, err := exec.Command("go", "build", "-o", binPath, "..").CombinedOutput()
		if err != nil {
			binErr = err
			binPath = string(out)
		}
	})
	if binErr != nil {
		t.Fatalf("building nats-server: %v\n%s", binErr, binPath)
	}
	return binPath
}

// freePort returns a port that was free a moment ago, for a listener a
// test starts later. It is taken below the kernel's ephemeral range when
// it can: a port from that range (what listening on :0 gives) can be
// handed meanwhile to the local end of an outgoing connection, such as a
// route another server of the test is dialling, and the listener then
// fails to bind (a 5-server cluster start failed that way in CI).
// No port is handed out twice in one test process: two random draws for
// the servers of one cluster once came out equal, and the second server
// found its cluster port taken by the first (CI, TestJetStreamClusterMetaSnapshot).
func freePort(t testing.TB) int {
	t.Helper()
	if lo := ephemeralLow(); lo > 12000 {
		for range 200 {
			port := 10000 + rand.IntN(lo-10000)
			if !claimPort(port) {
				continue
			}
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
				l.Close()
				return port
			}
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var handedPorts struct {
	sync.Mutex
	m map[int]bool
}

// claimPort records port as handed out; false if it already was.
func claimPort(port int) bool {
	handedPorts.Lock()
	defer handedPorts.Unlock()
	if handedPorts.m == nil {
		handedPorts.m = make(map[int]bool)
	}
	if handedPorts.m[port] {
		return false
	}
	handedPorts.m[port] = true
	return true
}

// ephemeralLow is the lowest port the kernel gives outgoing connections
// (0 when unknown).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	lo, _ := strconv.Atoi(f[0])
	return lo
}

// serverProcess is the nats-server binary run as a separate process.
type serverProcess struct {
	cmd  *exec.Cmd
	port int
	log  *strings.Builder
	mu   sync.Mutex
}

// startProcess runs the binary with args and waits until the client port
// accepts connections.
func startProcess(t testing.TB, port int, args ...string) *serverProcess {
	t.Helper()
	return startProcessBinary(t, serverBinary(t), port, args...)
}

// startProcessBinary runs a given server binary (another Tern version).
func startProcessBinary(t testing.TB, binary string, port int, args ...string) *serverProcess {
	t.Helper()
	cmd := exec.Command(binary, args...)
	p := &serverProcess{cmd: cmd, port: port, log: &strings.Builder{}}
	cmd.Stdout = (*lockedWriter)(p)
	cmd.Stderr = (*lockedWriter)(p)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", itoa(port)), time.Second)
		if err == nil {
			nc.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("server process did not listen on %d: %s", port, p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type lockedWriter serverProcess

func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.log.Write(b)
}

func (p *serverProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

func (p *serverProcess) url() string { return "nats://127.0.0.1:" + itoa(p.port) }

func (p *serverProcess) stop() {
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}
