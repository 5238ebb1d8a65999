package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
)

// Raw-socket protocol tests. Every assertion is on exact bytes; "the
// connection stays open" is always proven with a PING/PONG round trip and
// "the connection closes" with expectClosed.

// protoQuiet is the CONNECT most tests use: no +OK noise, echo on.
const protoQuiet = `{"verbose":false,"pedantic":false}`

// protoDial opens a raw connection, sends CONNECT with connectJSON and waits
// for the PONG that proves the CONNECT was processed.
func protoDial(t *testing.T, s *Server, connectJSON string) *rawConn {
	t.Helper()
	r := dialRaw(t, s)
	r.connect(connectJSON)
	protoFlush(r)
	return r
}

// protoFlush is a PING/PONG barrier: it fails if anything but PONG arrives
// first, so it also proves nothing unexpected was queued before it.
func protoFlush(r *rawConn) {
	r.t.Helper()
	r.send("PING\r\n")
	r.expect("PONG\r\n")
}

// protoReadInfo reads the INFO line and decodes its JSON.
func protoReadInfo(t *testing.T, r *rawConn) (string, map[string]any) {
	t.Helper()
	l := r.line()
	if !strings.HasPrefix(l, "INFO {") || !strings.HasSuffix(l, "}\r\n") {
		t.Fatalf("bad INFO line %q", l)
	}
	m := map[string]any{}
	body := strings.TrimSuffix(strings.TrimPrefix(l, "INFO "), "\r\n")
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("INFO JSON %q: %v", body, err)
	}
	return l, m
}

// protoDrainToClose discards everything the server still sends and asserts
// the stream ends (EOF or reset) rather than timing out.
func protoDrainToClose(t *testing.T, r *rawConn, d time.Duration) {
	t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, r.br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection not closed within %v", d)
	}
}

// protoWaitClosedReason waits until a closed connection with reason shows
// up in the server's closed-connections list.
func protoWaitClosedReason(t *testing.T, s *Server, reason string) {
	t.Helper()
	waitFor(t, 2*time.Second, "closed connection with reason "+reason, func() bool {
		for _, ci := range s.connz(&ConnzOptions{State: ConnClosed}).Conns {
			if ci.Reason == reason {
				return true
			}
		}
		return false
	})
}

// protoCountMsgsUntilPong sends PING and reads MSG frames on subject until
// the PONG, returning how many arrived. Any other line fails the test.
func protoCountMsgsUntilPong(t *testing.T, r *rawConn, subject, sid, payload string) int {
	t.Helper()
	r.send("PING\r\n")
	want := "MSG " + subject + " " + sid + " " + strconv.Itoa(len(payload)) + "\r\n"
	n := 0
	for {
		l := r.line()
		switch l {
		case "PONG\r\n":
			return n
		case want:
			r.expect(payload + "\r\n")
			n++
		default:
			t.Fatalf("unexpected line %q after %d messages", l, n)
		}
	}
}

func TestProtoInfo(t *testing.T) {
	t.Run("no auth", func(t *testing.T) {
		s := runServer(t, nil)
		r := dialRaw(t, s)
		_, m := protoReadInfo(t, r)

		id, _ := m["server_id"].(string)
		if len(id) != 56 || id[0] != 'N' || id != s.ID() {
			t.Fatalf("server_id %q (server says %q)", id, s.ID())
		}
		if name, _ := m["server_name"].(string); name == "" || name != s.Name() {
			t.Fatalf("server_name %q", name)
		}
		ver, _ := m["version"].(string)
		if !protoVersionAtLeast(ver, 2, 10, 0) {
			t.Fatalf("version %q is below 2.10.0", ver)
		}
		if p, ok := m["proto"].(float64); !ok || p != 1 {
			t.Fatalf("proto %v", m["proto"])
		}
		if g, _ := m["go"].(string); !strings.HasPrefix(g, "go") {
			t.Fatalf("go %q", g)
		}
		if h, _ := m["host"].(string); h != "127.0.0.1" {
			t.Fatalf("host %q", h)
		}
		port := s.Addr().(*net.TCPAddr).Port
		if p, ok := m["port"].(float64); !ok || int(p) != port {
			t.Fatalf("port %v, listening on %d", m["port"], port)
		}
		if h, ok := m["headers"].(bool); !ok || !h {
			t.Fatalf("headers %v", m["headers"])
		}
		if mp, ok := m["max_payload"].(float64); !ok || mp != 1048576 {
			t.Fatalf("max_payload %v", m["max_payload"])
		}
		if cid, ok := m["client_id"].(float64); !ok || cid < 1 {
			t.Fatalf("client_id %v", m["client_id"])
		}
		if ip, _ := m["client_ip"].(string); ip != "127.0.0.1" {
			t.Fatalf("client_ip %q", ip)
		}
		if _, ok := m["auth_required"]; ok {
			t.Fatalf("auth_required present without auth: %v", m["auth_required"])
		}
		if _, ok := m["nonce"]; ok {
			t.Fatalf("nonce present without nkey users: %v", m["nonce"])
		}

		// A second connection gets a different client id.
		r2 := dialRaw(t, s)
		_, m2 := protoReadInfo(t, r2)
		if m2["client_id"] == m["client_id"] {
			t.Fatalf("client_id reused: %v", m2["client_id"])
		}
	})

	t.Run("user auth", func(t *testing.T) {
		o := testOptions()
		o.Users = []*User{{Username: "u", Password: "p"}}
		s := runServer(t, o)
		_, m := protoReadInfo(t, dialRaw(t, s))
		if ar, ok := m["auth_required"].(bool); !ok || !ar {
			t.Fatalf("auth_required %v", m["auth_required"])
		}
		if _, ok := m["nonce"]; ok {
			t.Fatalf("nonce present without nkey users: %v", m["nonce"])
		}
	})

	t.Run("nkey auth", func(t *testing.T) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := kp.PublicKey()
		o := testOptions()
		o.Nkeys = []*NkeyUser{{Nkey: pub}}
		s := runServer(t, o)
		r := dialRaw(t, s)
		_, m := protoReadInfo(t, r)
		if ar, ok := m["auth_required"].(bool); !ok || !ar {
			t.Fatalf("auth_required %v", m["auth_required"])
		}
		nonce, _ := m["nonce"].(string)
		if nonce == "" {
			t.Fatalf("nonce missing with nkey users: %v", m)
		}
		// The nonce is usable: signing it authenticates.
		sig, err := kp.Sign([]byte(nonce))
		if err != nil {
			t.Fatal(err)
		}
		co, _ := json.Marshal(map[string]any{"verbose": false, "nkey": pub, "sig": base64.RawURLEncoding.EncodeToString(sig)})
		r.send("CONNECT " + string(co) + "\r\n")
		protoFlush(r)
	})
}

// protoVersionAtLeast compares the numeric part of a semver string.
func protoVersionAtLeast(v string, major, minor, patch int) bool {
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return false
	}
	want := []int{major, minor, patch}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		if n != want[i] {
			return n > want[i]
		}
	}
	return true
}

func TestProtoVersionCompare(t *testing.T) {
	for _, c := range []struct {
		v  string
		ok bool
	}{{"2.10.0", true}, {"2.10.24", true}, {"2.11.0-dev", true}, {"3.0.0", true},
		{"2.9.25", false}, {"1.99.99", false}, {"2.10", false}, {"x", false}} {
		if got := protoVersionAtLeast(c.v, 2, 10, 0); got != c.ok {
			t.Fatalf("%q: got %v", c.v, got)
		}
	}
}

// A client that never sends CONNECT works when no auth is configured, with
// nats-server's defaults for an absent CONNECT: verbose, pedantic, echo.
func TestProtoTelnetStyle(t *testing.T) {
	s := runServer(t, nil)
	r := dialRaw(t, s)
	protoReadInfo(t, r)
	r.send("PING\r\n")
	r.expect("PONG\r\n")
	r.send("SUB foo 1\r\n")
	r.expect("+OK\r\n")
	r.send("PUB foo 5\r\nhello\r\n")
	r.expect("+OK\r\nMSG foo 1 5\r\nhello\r\n")
	r.send("PUB foo bar 5\r\nhello\r\n")
	r.expect("+OK\r\nMSG foo 1 bar 5\r\nhello\r\n")
	// Lower-case operations are accepted too.
	r.send("ping\r\n")
	r.expect("PONG\r\n")

	// A quiet subscriber sees exactly the MSG frames of the telnet publisher.
	sub := protoDial(t, s, protoQuiet)
	sub.send("SUB foo 7\r\n")
	protoFlush(sub)
	r.send("PUB foo 5\r\nhello\r\n")
	r.expect("+OK\r\nMSG foo 1 5\r\nhello\r\n")
	sub.expect("MSG foo 7 5\r\nhello\r\n")
	r.send("PUB foo bar 5\r\nhello\r\n")
	r.expect("+OK\r\nMSG foo 1 bar 5\r\nhello\r\n")
	sub.expect("MSG foo 7 bar 5\r\nhello\r\n")
	protoFlush(sub)
}

// CONNECT {} merges into the same defaults: verbose, so +OK is sent.
func TestProtoConnectEmptyDefaults(t *testing.T) {
	s := runServer(t, nil)
	r := dialRaw(t, s)
	r.connect("{}")
	r.expect("+OK\r\n")
	r.send("SUB foo 1\r\nPUB foo 2\r\nhi\r\nPING\r\n")
	r.expect("+OK\r\n+OK\r\nMSG foo 1 2\r\nhi\r\nPONG\r\n")
}

func TestProtoPubSubExact(t *testing.T) {
	s := runServer(t, nil)
	sub := protoDial(t, s, protoQuiet)
	pub := protoDial(t, s, protoQuiet)
	sub.send("SUB foo 1\r\n")
	protoFlush(sub)

	pub.send("PUB foo 5\r\nhello\r\n")
	sub.expect("MSG foo 1 5\r\nhello\r\n")
	pub.send("PUB foo bar 5\r\nhello\r\n")
	sub.expect("MSG foo 1 bar 5\r\nhello\r\n")
	// Empty payload and a payload that contains CRLF.
	pub.send("PUB foo 0\r\n\r\n")
	sub.expect("MSG foo 1 0\r\n\r\n")
	pub.send("PUB foo 4\r\n\r\n\r\n\r\n")
	sub.expect("MSG foo 1 4\r\n\r\n\r\n\r\n")
	// Blanks and tabs between arguments.
	pub.send("PUB  foo\t bar   3\r\nabc\r\n")
	sub.expect("MSG foo 1 bar 3\r\nabc\r\n")
	protoFlush(pub)
	protoFlush(sub)
}

func TestProtoHeaders(t *testing.T) {
	s := runServer(t, nil)
	hsub := protoDial(t, s, `{"verbose":false,"headers":true}`)
	plain := protoDial(t, s, protoQuiet)
	pub := protoDial(t, s, `{"verbose":false,"headers":true}`)
	hsub.send("SUB foo 1\r\n")
	protoFlush(hsub)
	plain.send("SUB foo 2\r\n")
	protoFlush(plain)

	hdr := "NATS/1.0\r\nK: V\r\n\r\n" // 18 bytes
	pub.send("HPUB foo 18 23\r\n" + hdr + "hello\r\n")
	hsub.expect("HMSG foo 1 18 23\r\n" + hdr + "hello\r\n")
	plain.expect("MSG foo 2 5\r\nhello\r\n")

	pub.send("HPUB foo bar 18 23\r\n" + hdr + "hello\r\n")
	hsub.expect("HMSG foo 1 bar 18 23\r\n" + hdr + "hello\r\n")
	plain.expect("MSG foo 2 bar 5\r\nhello\r\n")

	// Headers only, no payload.
	pub.send("HPUB foo 18 18\r\n" + hdr + "\r\n")
	hsub.expect("HMSG foo 1 18 18\r\n" + hdr + "\r\n")
	plain.expect("MSG foo 2 0\r\n\r\n")

	// A plain PUB reaches a headers subscriber as MSG.
	pub.send("PUB foo 2\r\nhi\r\n")
	hsub.expect("MSG foo 1 2\r\nhi\r\n")
	plain.expect("MSG foo 2 2\r\nhi\r\n")

	for _, r := range []*rawConn{hsub, plain, pub} {
		protoFlush(r)
	}
}

// HPUB from a client that did not negotiate headers is a protocol error.
func TestProtoHPubWithoutHeaders(t *testing.T) {
	s := runServer(t, nil)
	r := protoDial(t, s, protoQuiet)
	r.send("HPUB foo 12 12\r\nNATS/1.0\r\n\r\n\r\n")
	r.expect("-ERR 'Unknown Protocol Operation'\r\n")
	r.expectClosed()
}

func TestProtoVerbose(t *testing.T) {
	s := runServer(t, nil)
	r := dialRaw(t, s)
	r.connect(`{"verbose":true}`)
	r.expect("+OK\r\n")
	r.send("SUB foo 1\r\n")
	r.expect("+OK\r\n")
	r.send("PUB foo 2\r\nhi\r\n")
	r.expect("+OK\r\nMSG foo 1 2\r\nhi\r\n")
	r.send("UNSUB 1\r\n")
	r.expect("+OK\r\n")
	r.send("PUB foo 2\r\nhi\r\n")
	r.expect("+OK\r\n")
	// PING gets PONG, not +OK.
	r.send("PING\r\n")
	r.expect("PONG\r\n")
	// Pipelined operations get one +OK each, in order.
	r.send("SUB bar 2\r\nPUB bar 1\r\nx\r\nUNSUB 2\r\nPING\r\n")
	r.expect("+OK\r\n+OK\r\nMSG bar 2 1\r\nx\r\n+OK\r\nPONG\r\n")
}

func TestProtoErrUnknownOperation(t *testing.T) {
	s := runServer(t, nil)
	for _, garbage := range []string{"FOO bar\r\n", "MSG foo 1 1\r\nx\r\n", "+OK\r\n", "PING x\r\n", "\x00\x01\x02\r\n"} {
		r := protoDial(t, s, protoQuiet)
		r.send(garbage)
		r.expect("-ERR 'Unknown Protocol Operation'\r\n")
		r.expectClosed()
	}
	// A payload longer than declared: the bytes after it are not CRLF.
	r := protoDial(t, s, protoQuiet)
	r.send("PUB foo 3\r\nhello\r\n")
	r.expect("-ERR 'Unknown Protocol Operation'\r\n")
	r.expectClosed()
}

func TestProtoErrMaxPayload(t *testing.T) {
	o := testOptions()
	o.MaxPayload = 16
	s := runServer(t, o)
	r := dialRaw(t, s)
	_, m := protoReadInfo(t, r)
	if mp, _ := m["max_payload"].(float64); mp != 16 {
		t.Fatalf("INFO max_payload %v", m["max_payload"])
	}
	r.send("CONNECT " + protoQuiet + "\r\nSUB foo 1\r\n")
	protoFlush(r)
	// Exactly max_payload is fine.
	r.send("PUB foo 16\r\n0123456789abcdef\r\n")
	r.expect("MSG foo 1 16\r\n0123456789abcdef\r\n")
	// One byte more is refused before the payload is read.
	r.send("PUB foo 17\r\n")
	r.expect("-ERR 'Maximum Payload Violation'\r\n")
	r.expectClosed()

	// HPUB counts headers and payload together.
	h := protoDial(t, s, `{"verbose":false,"headers":true}`)
	h.send("HPUB foo 12 17\r\n")
	h.expect("-ERR 'Maximum Payload Violation'\r\n")
	h.expectClosed()
}

func TestProtoErrMaxControlLine(t *testing.T) {
	o := testOptions()
	o.MaxControlLine = 32
	s := runServer(t, o)
	r := protoDial(t, s, `{"verbose":false}`)
	r.send("SUB " + strings.Repeat("a", 64) + " 1\r\n")
	r.expect("-ERR 'maximum control line exceeded'\r\n")
	r.expectClosed()

	// The limit applies before the line is complete.
	r = dialRaw(t, s)
	protoReadInfo(t, r)
	r.send("PUB " + strings.Repeat("b", 64))
	r.expect("-ERR 'maximum control line exceeded'\r\n")
	r.expectClosed()
}

func TestProtoErrAuthorization(t *testing.T) {
	o := testOptions()
	o.Users = []*User{{Username: "u", Password: "p"}}
	s := runServer(t, o)

	t.Run("wrong password", func(t *testing.T) {
		r := dialRaw(t, s)
		r.connect(`{"verbose":false,"user":"u","pass":"nope"}`)
		r.expect("-ERR 'Authorization Violation'\r\n")
		r.expectClosed()
	})
	t.Run("unknown user", func(t *testing.T) {
		r := dialRaw(t, s)
		r.connect(`{"verbose":false,"user":"x","pass":"p"}`)
		r.expect("-ERR 'Authorization Violation'\r\n")
		r.expectClosed()
	})
	t.Run("no credentials", func(t *testing.T) {
		r := dialRaw(t, s)
		r.connect(`{"verbose":false}`)
		r.expect("-ERR 'Authorization Violation'\r\n")
		r.expectClosed()
	})
	t.Run("PING before CONNECT", func(t *testing.T) {
		r := dialRaw(t, s)
		protoReadInfo(t, r)
		r.send("PING\r\n")
		r.expect("-ERR 'Authorization Violation'\r\n")
		r.expectClosed()
	})
	t.Run("SUB before CONNECT", func(t *testing.T) {
		r := dialRaw(t, s)
		protoReadInfo(t, r)
		r.send("SUB foo 1\r\n")
		r.expect("-ERR 'Authorization Violation'\r\n")
		r.expectClosed()
	})
	t.Run("good password", func(t *testing.T) {
		r := dialRaw(t, s)
		r.connect(`{"verbose":false,"user":"u","pass":"p"}`)
		protoFlush(r)
	})
}

func TestProtoErrAuthTimeout(t *testing.T) {
	o := testOptions()
	o.Users = []*User{{Username: "u", Password: "p"}}
	o.AuthTimeout = 0.2
	s := runServer(t, o)
	r := dialRaw(t, s)
	start := time.Now()
	protoReadInfo(t, r)
	r.expect("-ERR 'Authentication Timeout'\r\n")
	r.expectClosed()
	protoWaitClosedReason(t, s, "Authentication Timeout")
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("timed out after only %v", el)
	}

	// Authenticating in time disarms the timer: the connection keeps
	// answering PINGs for twice the timeout. (A negative check has no event
	// to wait for, so it polls over a fixed window.)
	ok := dialRaw(t, s)
	ok.connect(`{"verbose":false,"user":"u","pass":"p"}`)
	protoFlush(ok)
	deadline := time.Now().Add(400 * time.Millisecond)
	for time.Now().Before(deadline) {
		protoFlush(ok)
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProtoErrStaleConnection(t *testing.T) {
	o := testOptions()
	o.PingInterval = 50 * time.Millisecond
	o.MaxPingsOut = 2
	s := runServer(t, o)

	r := protoDial(t, s, protoQuiet)
	r.expect("PING\r\n")
	r.expect("PING\r\n")
	r.expect("-ERR 'Stale Connection'\r\n")
	r.expectClosed()
	waitFor(t, 2*time.Second, "stale connection counted", func() bool {
		return s.varz().StaleConnections > 0
	})
	protoWaitClosedReason(t, s, "Stale Connection")

	// A client that answers every PING stays connected well past the point
	// where the silent one was dropped.
	good := protoDial(t, s, protoQuiet)
	for i := 0; i < 6; i++ {
		good.expect("PING\r\n")
		good.send("PONG\r\n")
	}
	good.send("PING\r\n")
	for {
		l := good.line()
		if l == "PONG\r\n" {
			break
		}
		if l != "PING\r\n" {
			t.Fatalf("unexpected %q", l)
		}
		good.send("PONG\r\n")
	}
}

func TestProtoErrInvalidSubject(t *testing.T) {
	s := runServer(t, nil)
	r := protoDial(t, s, protoQuiet)
	for _, subj := range []string{"foo..bar", "foo.", ".foo", "foo.>.bar"} {
		r.send("SUB " + subj + " 1\r\n")
		r.expect("-ERR 'Invalid Subject'\r\n")
		protoFlush(r)
	}
	// The failed sid was never registered, so it can be reused.
	r.send("SUB foo 1\r\nPUB foo 2\r\nhi\r\n")
	r.expect("MSG foo 1 2\r\nhi\r\n")
	protoFlush(r)
}

func TestProtoErrInvalidPublishSubject(t *testing.T) {
	s := runServer(t, nil)
	watcher := protoDial(t, s, protoQuiet)
	watcher.send("SUB > 9\r\n")
	protoFlush(watcher)

	r := protoDial(t, s, `{"verbose":false,"pedantic":true}`)
	for _, subj := range []string{"foo.*", "foo.>", "foo..bar"} {
		r.send("PUB " + subj + " 2\r\nhi\r\n")
		r.expect("-ERR 'Invalid Publish Subject'\r\n")
		protoFlush(r)
	}
	r.send("PUB ok 2\r\nhi\r\n")
	protoFlush(r)
	// Only the valid publish was delivered.
	watcher.expect("MSG ok 9 2\r\nhi\r\n")
	protoFlush(watcher)
}

func TestProtoErrPermissions(t *testing.T) {
	o := testOptions()
	o.Users = []*User{
		{Username: "u", Password: "p", Permissions: &Permissions{
			Publish:   &SubjectPermission{Deny: []string{"secret"}},
			Subscribe: &SubjectPermission{Deny: []string{"secret"}},
		}},
		{Username: "admin", Password: "p"},
	}
	s := runServer(t, o)
	admin := protoDial(t, s, `{"verbose":false,"user":"admin","pass":"p"}`)
	admin.send("SUB secret 1\r\nSUB open 2\r\n")
	protoFlush(admin)

	r := protoDial(t, s, `{"verbose":false,"user":"u","pass":"p"}`)
	r.send("PUB secret 2\r\nhi\r\n")
	r.expect("-ERR 'Permissions Violation for Publish to \"secret\"'\r\n")
	protoFlush(r)
	r.send("SUB secret 1\r\n")
	r.expect("-ERR 'Permissions Violation for Subscription to \"secret\"'\r\n")
	protoFlush(r)
	r.send("SUB secret q 2\r\n")
	r.expect("-ERR 'Permissions Violation for Subscription to \"secret\" using queue \"q\"'\r\n")
	protoFlush(r)

	// Allowed operations still work on the same connection.
	r.send("SUB open 3\r\nPUB open 2\r\nok\r\n")
	r.expect("MSG open 3 2\r\nok\r\n")
	protoFlush(r)
	// The denied publish never reached anyone; the allowed one did.
	admin.expect("MSG open 2 2\r\nok\r\n")
	protoFlush(admin)
}

func TestProtoErrMaxConnections(t *testing.T) {
	o := testOptions()
	o.MaxConn = 1
	s := runServer(t, o)
	first := protoDial(t, s, protoQuiet)

	second := dialRaw(t, s)
	protoReadInfo(t, second)
	second.expect("-ERR 'maximum connections exceeded'\r\n")
	second.expectClosed()

	protoFlush(first)
	// Once the first leaves, a new connection is accepted.
	first.nc.Close()
	waitFor(t, 2*time.Second, "first client gone", func() bool { return s.NumClients() == 0 })
	protoDial(t, s, protoQuiet)
}

func TestProtoErrMaxSubscriptions(t *testing.T) {
	o := testOptions()
	o.MaxSubs = 1
	s := runServer(t, o)
	r := protoDial(t, s, protoQuiet)
	r.send("SUB foo 1\r\nSUB bar 2\r\n")
	r.expect("-ERR 'maximum subscriptions exceeded'\r\n")
	protoFlush(r)
	r.send("PUB bar 1\r\nb\r\nPUB foo 1\r\nf\r\n")
	r.expect("MSG foo 1 1\r\nf\r\n")
	protoFlush(r)
	// Freeing the slot allows a new subscription.
	r.send("UNSUB 1\r\nSUB bar 2\r\nPUB bar 1\r\nb\r\n")
	r.expect("MSG bar 2 1\r\nb\r\n")
	protoFlush(r)
}

func TestProtoErrInvalidClientProtocol(t *testing.T) {
	s := runServer(t, nil)
	r := dialRaw(t, s)
	r.connect(`{"verbose":false,"protocol":2}`)
	r.expect("-ERR 'invalid client protocol'\r\n")
	r.expectClosed()

	for _, p := range []string{"0", "1"} {
		ok := dialRaw(t, s)
		ok.connect(`{"verbose":false,"protocol":` + p + `}`)
		protoFlush(ok)
	}
}

func TestProtoErrNoRespondersNeedsHeaders(t *testing.T) {
	s := runServer(t, nil)
	r := dialRaw(t, s)
	r.connect(`{"verbose":false,"no_responders":true}`)
	r.expect("-ERR 'no responders requires headers support'\r\n")
	r.expectClosed()
}

func TestProtoErrParserError(t *testing.T) {
	s := runServer(t, nil)
	for _, bad := range []string{"PUB foo bar\r\n", "PUB foo\r\n", "SUB foo\r\n", "UNSUB 1 x\r\n"} {
		r := protoDial(t, s, protoQuiet)
		r.send(bad)
		r.expect("-ERR 'Parser Error'\r\n")
		r.expectClosed()
	}
}

func TestProtoNoResponders(t *testing.T) {
	s := runServer(t, nil)
	r := protoDial(t, s, `{"verbose":false,"headers":true,"no_responders":true}`)
	r.send("SUB _INBOX.x 1\r\nPUB nobody _INBOX.x 0\r\n\r\n")
	r.expect("HMSG _INBOX.x 1 38 38\r\nNATS/1.0 503\r\nNats-Subject: nobody\r\n\r\n\r\n")
	protoFlush(r)

	// With a responder there is no 503: the request is delivered instead.
	resp := protoDial(t, s, protoQuiet)
	resp.send("SUB somebody 5\r\n")
	protoFlush(resp)
	r.send("PUB somebody _INBOX.x 2\r\nrq\r\n")
	resp.expect("MSG somebody 5 _INBOX.x 2\r\nrq\r\n")
	protoFlush(r)

	// Without no_responders nothing comes back.
	quiet := protoDial(t, s, `{"verbose":false,"headers":true}`)
	quiet.send("SUB _INBOX.y 1\r\nPUB nobody _INBOX.y 0\r\n\r\n")
	protoFlush(quiet)
}

func TestProtoEchoOff(t *testing.T) {
	s := runServer(t, nil)
	noEcho := protoDial(t, s, `{"verbose":false,"echo":false}`)
	other := protoDial(t, s, protoQuiet)
	noEcho.send("SUB foo 1\r\n")
	protoFlush(noEcho)
	other.send("SUB foo 2\r\n")
	protoFlush(other)

	noEcho.send("PUB foo 2\r\nhi\r\n")
	other.expect("MSG foo 2 2\r\nhi\r\n")
	// The message was routed (other has it) yet noEcho gets only PONG.
	protoFlush(noEcho)

	// Messages from others are still delivered to the echo:false client.
	other.send("PUB foo 2\r\nyo\r\n")
	noEcho.expect("MSG foo 1 2\r\nyo\r\n")
	other.expect("MSG foo 2 2\r\nyo\r\n")
	protoFlush(noEcho)
	protoFlush(other)
}

func TestProtoQueueGroups(t *testing.T) {
	s := runServer(t, nil)
	m1 := protoDial(t, s, protoQuiet)
	m2 := protoDial(t, s, protoQuiet)
	plain := protoDial(t, s, protoQuiet)
	pub := protoDial(t, s, protoQuiet)
	m1.send("SUB work q 1\r\n")
	protoFlush(m1)
	m2.send("SUB work q 1\r\n")
	protoFlush(m2)
	plain.send("SUB work 1\r\n")
	protoFlush(plain)

	const n = 100
	var sb strings.Builder
	for i := 0; i < n; i++ {
		sb.WriteString("PUB work 3\r\njob\r\n")
	}
	pub.send(sb.String())
	// After the publisher's PONG every delivery has been queued, so each
	// subscriber's own PONG comes after all of its messages.
	protoFlush(pub)

	if got := protoCountMsgsUntilPong(t, plain, "work", "1", "job"); got != n {
		t.Fatalf("plain subscriber got %d, want %d", got, n)
	}
	a := protoCountMsgsUntilPong(t, m1, "work", "1", "job")
	b := protoCountMsgsUntilPong(t, m2, "work", "1", "job")
	if a+b != n || a == 0 || b == 0 {
		t.Fatalf("queue members got %d + %d, want %d with both > 0", a, b, n)
	}
}

func TestProtoUnsubMax(t *testing.T) {
	s := runServer(t, nil)
	r := protoDial(t, s, protoQuiet)
	r.send("SUB foo 1\r\nUNSUB 1 2\r\n")
	for i := 0; i < 5; i++ {
		r.send("PUB foo 1\r\n" + strconv.Itoa(i) + "\r\n")
	}
	r.expect("MSG foo 1 1\r\n0\r\nMSG foo 1 1\r\n1\r\n")
	protoFlush(r)

	// max counts deliveries that already happened: after 2 messages,
	// UNSUB 3 2 removes the subscription at once.
	r.send("SUB bar 3\r\nPUB bar 1\r\na\r\nPUB bar 1\r\nb\r\nUNSUB 3 2\r\nPUB bar 1\r\nc\r\n")
	r.expect("MSG bar 3 1\r\na\r\nMSG bar 3 1\r\nb\r\n")
	protoFlush(r)

	// Plain UNSUB stops delivery immediately; unknown sids are ignored.
	r.send("SUB baz 4\r\nPUB baz 1\r\nx\r\nUNSUB 4\r\nUNSUB 99\r\nPUB baz 1\r\ny\r\n")
	r.expect("MSG baz 4 1\r\nx\r\n")
	protoFlush(r)
}

func TestProtoWildcards(t *testing.T) {
	s := runServer(t, nil)
	star := protoDial(t, s, protoQuiet)
	gt := protoDial(t, s, protoQuiet)
	mid := protoDial(t, s, protoQuiet)
	all := protoDial(t, s, protoQuiet)
	star.send("SUB foo.* 1\r\n")
	gt.send("SUB foo.> 2\r\n")
	mid.send("SUB *.bar.* 3\r\n")
	all.send("SUB > 4\r\n")
	for _, r := range []*rawConn{star, gt, mid, all} {
		protoFlush(r)
	}

	pub := protoDial(t, s, protoQuiet)
	for _, subj := range []string{"foo", "foo.bar", "foo.bar.baz", "x.bar.y", "bar"} {
		pub.send("PUB " + subj + " 1\r\nx\r\n")
	}
	protoFlush(pub)

	msg := func(subj, sid string) string { return "MSG " + subj + " " + sid + " 1\r\nx\r\n" }
	star.expect(msg("foo.bar", "1"))
	gt.expect(msg("foo.bar", "2") + msg("foo.bar.baz", "2"))
	mid.expect(msg("foo.bar.baz", "3") + msg("x.bar.y", "3"))
	all.expect(msg("foo", "4") + msg("foo.bar", "4") + msg("foo.bar.baz", "4") + msg("x.bar.y", "4") + msg("bar", "4"))
	for _, r := range []*rawConn{star, gt, mid, all} {
		protoFlush(r)
	}

	// Overlapping subscriptions on one connection each get a copy.
	one := protoDial(t, s, protoQuiet)
	one.send("SUB a.b 1\r\nSUB a.* 2\r\nSUB a.> 3\r\nSUB a..b 4\r\n")
	one.expect("-ERR 'Invalid Subject'\r\n")
	one.send("PUB a.b 1\r\nz\r\n")
	got := map[string]bool{}
	for i := 0; i < 3; i++ {
		l := one.line()
		one.expect("z\r\n")
		got[l] = true
	}
	for _, sid := range []string{"1", "2", "3"} {
		if !got["MSG a.b "+sid+" 1\r\n"] {
			t.Fatalf("sid %s missing from %v", sid, got)
		}
	}
	protoFlush(one)
}

func TestProtoGarbageIsolation(t *testing.T) {
	s := runServer(t, nil)
	sub := protoDial(t, s, protoQuiet)
	pub := protoDial(t, s, protoQuiet)
	sub.send("SUB foo 1\r\n")
	protoFlush(sub)

	bad := protoDial(t, s, protoQuiet)
	bad.send("SUB foo 9\r\n")
	protoFlush(bad)
	// Start a publish, then send garbage where its payload terminator goes.
	bad.send("PUB foo 5\r\nhelloXX\xff\xfe garbage\r\n")
	bad.expect("-ERR 'Unknown Protocol Operation'\r\n")
	bad.expectClosed()

	pub.send("PUB foo 2\r\nok\r\n")
	sub.expect("MSG foo 1 2\r\nok\r\n")
	protoFlush(sub)
	protoFlush(pub)
	// The broken connection's subscription is gone with it.
	waitFor(t, 2*time.Second, "garbage client removed", func() bool { return s.NumClients() == 2 })
}

func TestProtoSplitWrites(t *testing.T) {
	s := runServer(t, nil)
	sub := protoDial(t, s, `{"verbose":false,"headers":true}`)
	sub.send("SUB foo.* 1\r\n")
	protoFlush(sub)
	pub := dialRaw(t, s)
	protoReadInfo(t, pub)

	stream := `CONNECT {"verbose":false,"headers":true}` + "\r\n" +
		"PUB foo.a reply 11\r\nhello world\r\n" +
		"HPUB foo.b 18 20\r\nNATS/1.0\r\nK: V\r\n\r\nhi\r\n" +
		"PUB foo.c 0\r\n\r\n" +
		"PING\r\n"
	for i := 0; i < len(stream); i++ {
		pub.send(stream[i : i+1])
	}
	pub.expect("PONG\r\n")
	sub.expect("MSG foo.a 1 reply 11\r\nhello world\r\n" +
		"HMSG foo.b 1 18 20\r\nNATS/1.0\r\nK: V\r\n\r\nhi\r\n" +
		"MSG foo.c 1 0\r\n\r\n")
	protoFlush(sub)
}

func TestProtoSlowConsumer(t *testing.T) {
	o := testOptions()
	o.MaxPending = 64 * 1024
	o.MaxPayload = 32 * 1024
	s := runServer(t, o)

	slow := protoDial(t, s, protoQuiet)
	if tc, ok := slow.nc.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	slow.send("SUB big 1\r\n")
	protoFlush(slow)
	pub := protoDial(t, s, protoQuiet)

	payload := strings.Repeat("x", 16*1024)
	frame := "PUB big " + strconv.Itoa(len(payload)) + "\r\n" + payload + "\r\n"
	batch := strings.Repeat(frame, 64) // 1 MiB per write
	deadline := time.Now().Add(5 * time.Second)
	sent := 0
	for s.varz().SlowConsumers == 0 {
		if time.Now().After(deadline) || sent > 256 {
			t.Fatalf("no slow consumer after %d MiB", sent)
		}
		pub.send(batch)
		sent++
		protoFlush(pub)
	}

	waitFor(t, 2*time.Second, "slow consumer removed", func() bool { return s.NumClients() == 1 })
	protoWaitClosedReason(t, s, "Slow Consumer (Pending Bytes)")
	protoDrainToClose(t, slow, 2*time.Second)
	// The publisher is unaffected.
	protoFlush(pub)
	pub.send("SUB big 2\r\nPUB big 2\r\nok\r\n")
	pub.expect("MSG big 2 2\r\nok\r\n")
	protoFlush(pub)
}

// With no_auth_user, a client that skips CONNECT is not authenticated: a
// PUB or SUB before CONNECT is an Authorization Violation, not a crash.
func TestProtoNoAuthUserWithoutConnect(t *testing.T) {
	o := testOptions()
	o.Users = []*User{{Username: "dflt", Password: "x"}}
	o.NoAuthUser = "dflt"
	s := runServer(t, o)
	for _, op := range []string{"PUB foo 1\r\nx\r\n", "SUB foo 1\r\n"} {
		r := dialRaw(t, s)
		r.line() // INFO
		r.send(op)
		r.expect("-ERR 'Authorization Violation'\r\n")
		r.expectClosed()
	}
	r := dialRaw(t, s)
	r.connect(`{"verbose":false}`)
	r.send("SUB foo 1\r\nPUB foo 2\r\nhi\r\n")
	r.expect("MSG foo 1 2\r\nhi\r\n")
}
