package server

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/routeproto"
	"github.com/nats-io/nats.go"
)

// dialRawRoute connects to s's cluster port as a peer named name would:
// it reads the server's INFO and sends its own.
func dialRawRoute(t *testing.T, s *Server, name string) *rawConn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", s.ClusterAddr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { nc.Close() })
	rc := &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
	if l := rc.line(); !strings.HasPrefix(l, "INFO ") {
		t.Fatalf("expected INFO, got %q", l)
	}
	rc.send(`INFO {"server_id":"` + name + `","server_name":"` + name + `","cluster":"TEST","tern_route_proto":4}` + "\r\n")
	waitFor(t, 5*time.Second, "route registered", func() bool { return s.NumRoutes() == 1 })
	return rc
}

func clusterOptions() *Options {
	o := testOptions()
	o.ServerName = "S1"
	o.Cluster.Name = "TEST"
	o.Cluster.Host = "127.0.0.1"
	o.Cluster.Port = RANDOM_PORT
	return o
}

// expectServing checks that s still routes messages between clients.
func expectServing(t *testing.T, s *Server) {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer nc.Close()
	sub, err := nc.SubscribeSync("alive")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Publish("alive", []byte("yes")); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(5 * time.Second); err != nil || string(m.Data) != "yes" {
		t.Fatalf("server not serving: %v", err)
	}
}

// Each line is a malformed operation from a peer: the route is closed
// and the server goes on (a negative size used to panic the server).
func TestRouteMalformedOperationsCloseTheRoute(t *testing.T) {
	s := runServer(t, clusterOptions())
	for i, line := range []string{
		"RMSG $G x - 1 - -1 0\r\n\r\n",
		"RMSG B x - 1 - -1 0\r\n\r\n",
		"RMSG $G x - 1 - 0 -1\r\n",
		"RMSG $G x - 1 - 5 2\r\nxx\r\n",
		"RMSG $G x - 1 - 0 +2\r\nxx\r\n",
		"RMSG $G x - 1 - 0 999999999999\r\n",
		"RMSG $G x..y - 1 - 0 2\r\nxx\r\n",
		"RMSG $G x - 1 - 0 2\r\nxxyy",
		"RAFT -5\r\n",
		"RAFT 99999999999\r\n",
		"RAFTF 1 10 -1 5\r\n",
		"RAFTF 1 10 8 5\r\n",
		"RS+ $G\r\n",
	} {
		rc := dialRawRoute(t, s, "P"+string(rune('A'+i)))
		rc.send(line)
		expectRouteClosed(t, rc)
		waitFor(t, 5*time.Second, "route removed", func() bool { return s.NumRoutes() == 0 })
	}
	expectServing(t, s)
}

// expectRouteClosed reads (and drops) what the server sends until it
// closes the connection.
func expectRouteClosed(t *testing.T, rc *rawConn) {
	t.Helper()
	_ = rc.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	for {
		if _, err := rc.br.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("route not closed")
			}
			return
		}
	}
}

// readOp parses the next control line of r.
func readOp(t *testing.T, r *route) *routeproto.Op {
	t.Helper()
	line, err := r.br.ReadSlice('\n')
	if err != nil {
		t.Fatal(err)
	}
	lim := routeLimitsFor(MAX_PAYLOAD_SIZE, r.remote.Proto)
	var op routeproto.Op
	if err := routeproto.Parse(line, &lim, &op); err != nil {
		t.Fatal(err)
	}
	return &op
}

// A size in a control line is a claim: a RAFT frame or an RMSG that says
// it is large and then stops costs what arrived, not what it claimed
// (1 GiB for a RAFT frame of an old peer, 65 MiB for an RMSG).
func TestRoutePayloadsAllocateWhatArrives(t *testing.T) {
	s := serverWithGroup()
	for _, in := range []string{
		"RAFT 1073741000\r\n" + raftTestHead("G", raft.MsgSnap) + strings.Repeat("x", 1000),
		"RMSG $G foo - 1 - 0 67108864\r\n" + strings.Repeat("x", 1000),
	} {
		r := &route{br: bufio.NewReaderSize(strings.NewReader(in), 64*1024)}
		r.remote.Proto = 1
		op := readOp(t, r)
		n := allocated(func() {
			var err error
			if op.Kind == routeproto.Raft {
				_, err = s.routeRaft(r, op, nil)
			} else {
				_, err = s.routeMsg(r, op, nil)
			}
			if err == nil {
				t.Fatalf("%.20q: no error at the end of the input", in)
			}
		})
		if n > 4<<20 {
			t.Fatalf("%.20q: %d bytes allocated for 1000 that arrived", in, n)
		}
	}
}

// A RAFT frame for a group this server does not run is skipped unread.
func TestRouteRaftForUnknownGroupSkipped(t *testing.T) {
	s := serverWithGroup()
	body := raftTestHead("H", raft.MsgApp) + strings.Repeat("x", 4<<20)
	in := fmt.Sprintf("RAFT %d\r\n%s\r\nPING\r\n", len(body), body)
	r := &route{br: bufio.NewReaderSize(strings.NewReader(in), 64*1024)}
	r.remote.Proto = routeProto
	op := readOp(t, r)
	var buf []byte
	n := allocated(func() {
		var err error
		if buf, err = s.routeRaft(r, op, nil); err != nil {
			t.Fatal(err)
		}
	})
	if n > 1<<20 || cap(buf) != 0 {
		t.Fatalf("%d bytes allocated, buffer of %d", n, cap(buf))
	}
	if op := readOp(t, r); op.Kind != routeproto.Ping {
		t.Fatalf("stream out of step: %q", op.Name)
	}
}
