package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// BenchmarkPubSub pushes 128-byte messages from one raw publisher to one raw
// subscriber through an in-process server; b.N messages end to end.
func BenchmarkPubSub(b *testing.B) {
	s := runServer(b, nil)
	sub := rawDial(b, s)
	rawHandshake(b, sub, "SUB bench 1\r\nPING\r\n")
	pub := rawDial(b, s)
	rawHandshake(b, pub, "PING\r\n")
	msg := "PUB bench 128\r\n" + strings.Repeat("x", 128) + "\r\n"
	batch := []byte(strings.Repeat(msg, 256))
	want := int64(b.N) * int64(len("MSG bench 1 128\r\n")+130)
	done := make(chan error, 1)
	go func() {
		_, err := io.CopyN(io.Discard, sub, want)
		done <- err
	}()
	b.SetBytes(128)
	b.ResetTimer()
	for sent := 0; sent < b.N; sent += 256 {
		n := min(256, b.N-sent)
		if _, err := pub.Write(batch[:n*len(msg)]); err != nil {
			b.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			b.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		b.Fatal("subscriber did not receive everything")
	}
}

func rawDial(b *testing.B, s *Server) net.Conn {
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	return nc
}

// rawHandshake reads INFO, sends ops (ending in PING) and waits for PONG.
func rawHandshake(b *testing.B, nc net.Conn, ops string) {
	br := bufio.NewReader(nc)
	if l, _ := br.ReadString('\n'); !strings.HasPrefix(l, "INFO") {
		b.Fatalf("no INFO: %q", l)
	}
	nc.Write([]byte("CONNECT {\"verbose\":false}\r\n" + ops))
	if l, _ := br.ReadString('\n'); !bytes.Equal([]byte(l), []byte("PONG\r\n")) {
		b.Fatalf("no PONG: %q", l)
	}
	if br.Buffered() > 0 {
		b.Fatal("unexpected data after PONG")
	}
}
