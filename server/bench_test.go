package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkPubSub pushes messages from one raw publisher to one raw
// subscriber through an in-process server; b.N messages end to end.
func BenchmarkPubSub(b *testing.B) {
	for _, size := range []int{16, 128} {
		b.Run(strconv.Itoa(size), func(b *testing.B) { benchPubSub(b, size) })
	}
}

func benchPubSub(b *testing.B, size int) {
	s := runServer(b, nil)
	sub := rawDial(b, s)
	rawHandshake(b, sub, "SUB bench 1\r\nPING\r\n")
	pub := rawDial(b, s)
	rawHandshake(b, pub, "PING\r\n")
	msg := "PUB bench " + strconv.Itoa(size) + "\r\n" + strings.Repeat("x", size) + "\r\n"
	batch := []byte(strings.Repeat(msg, 256))
	want := int64(b.N) * int64(len("MSG bench 1 \r\n")+len(strconv.Itoa(size))+size+2)
	done := make(chan error, 1)
	go func() {
		_, err := io.CopyN(io.Discard, sub, want)
		done <- err
	}()
	b.SetBytes(int64(size))
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
