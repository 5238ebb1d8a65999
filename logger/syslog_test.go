//go:build !windows

package logger

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseSyslogURL(t *testing.T) {
	for _, tc := range []struct {
		in, network, addr string
		ok                bool
	}{
		{"udp://foo.com:1000", "udp", "foo.com:1000", true},
		{"tcp://foo.com:1000", "tcp", "foo.com:1000", true},
		{"unix:///foo.sock", "unix", "/foo.sock", true},
		{"unixgram:///dev/log", "unixgram", "/dev/log", true},
		{"http://foo.com", "", "", false},
		{"udp://", "", "", false},
		{"unix://", "", "", false},
		{"::bad", "", "", false},
	} {
		n, a, err := parseSyslogURL(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("%q: unexpected error %v", tc.in, err)
			continue
		}
		if n != tc.network || a != tc.addr {
			t.Errorf("%q: got (%q, %q), want (%q, %q)", tc.in, n, a, tc.network, tc.addr)
		}
	}
}

// readPacket reads one datagram or fails after a timeout.
func readPacket(t *testing.T, c net.PacketConn) string {
	t.Helper()
	buf := make([]byte, 4096)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := c.ReadFrom(buf)
	if err != nil {
		t.Fatalf("no syslog packet received: %v", err)
	}
	return string(buf[:n])
}

// payload returns the message after the "tag[pid]: " header.
func payload(t *testing.T, pkt string) string {
	t.Helper()
	_, msg, ok := strings.Cut(pkt, "]: ")
	if !ok {
		t.Fatalf("unexpected syslog packet %q", pkt)
	}
	return msg
}

func TestRemoteSysLoggerUDP(t *testing.T) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	l := NewRemoteSysLogger("udp://"+c.LocalAddr().String(), false, false)
	defer l.Close()

	l.Noticef("hello %d", 42)
	pkt := readPacket(t, c)
	// Severity notice (5), no facility bits.
	if !strings.HasPrefix(pkt, "<5>") {
		t.Errorf("unexpected priority in %q", pkt)
	}
	if !strings.Contains(pkt, GetSysLoggerTag()+"[") {
		t.Errorf("tag %q missing from %q", GetSysLoggerTag(), pkt)
	}
	if got := payload(t, pkt); got != "hello 42\n" {
		t.Errorf("got payload %q", got)
	}

	// Debug and trace are disabled: the next packet must be the warning.
	l.Debugf("no debug")
	l.Tracef("no trace")
	l.Warnf("warned")
	pkt = readPacket(t, c)
	if !strings.HasPrefix(pkt, "<4>") || payload(t, pkt) != "warned\n" {
		t.Errorf("unexpected packet %q", pkt)
	}

	for _, tc := range []struct {
		log  func(string, ...any)
		prio string
	}{
		{l.Errorf, "<3>"},
		{l.Fatalf, "<2>"},
	} {
		tc.log("level %s", tc.prio)
		pkt = readPacket(t, c)
		if !strings.HasPrefix(pkt, tc.prio) || payload(t, pkt) != "level "+tc.prio+"\n" {
			t.Errorf("unexpected packet %q", pkt)
		}
	}
}

func TestRemoteSysLoggerDebugTrace(t *testing.T) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	l := NewRemoteSysLogger("udp://"+c.LocalAddr().String(), true, true)
	defer l.Close()
	if !l.debug || !l.trace {
		t.Fatal("debug/trace flags not set")
	}
	l.Debugf("foo %s", "qux")
	if pkt := readPacket(t, c); !strings.HasPrefix(pkt, "<7>") || payload(t, pkt) != "foo qux\n" {
		t.Errorf("unexpected debug packet %q", pkt)
	}
	l.Tracef("bar %s", "baz")
	if pkt := readPacket(t, c); !strings.HasPrefix(pkt, "<5>") || payload(t, pkt) != "bar baz\n" {
		t.Errorf("unexpected trace packet %q", pkt)
	}
}

func TestRemoteSysLoggerTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	lines := make(chan string, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			close(lines)
			return
		}
		defer conn.Close()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		s, _ := bufio.NewReader(conn).ReadString('\n')
		lines <- s
	}()

	l := NewRemoteSysLogger("tcp://"+ln.Addr().String(), false, false)
	l.Errorf("over %s", "tcp")
	l.Close()
	got := <-lines
	if !strings.HasPrefix(got, "<3>") || !strings.HasSuffix(got, "]: over tcp\n") {
		t.Fatalf("unexpected tcp syslog line %q", got)
	}
}

func TestRemoteSysLoggerUnixgram(t *testing.T) {
	// Socket paths are length limited, so avoid the long t.TempDir path.
	dir, err := os.MkdirTemp("", "tl")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "log.sock")
	c, err := net.ListenPacket("unixgram", path)
	if err != nil {
		t.Skipf("unixgram not available: %v", err)
	}
	defer c.Close()

	l := NewRemoteSysLogger("unix://"+path, false, false)
	defer l.Close()
	l.Noticef("via unix")
	if got := payload(t, readPacket(t, c)); got != "via unix\n" {
		t.Fatalf("got payload %q", got)
	}
}
