package server

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// readJSHeaders must read exactly what getHeader reads, key by key.
func checkJSHeadersAgree(t *testing.T, hdr []byte) {
	t.Helper()
	h := readJSHeaders(hdr)
	for j, name := range jsHdrNames {
		if got, want := h.val[j], getHeader(name, hdr); !bytes.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("%s in %q: one pass read %q, getHeader %q", name, hdr, got, want)
		}
	}
}

func TestReadJSHeadersMatchesGetHeader(t *testing.T) {
	keys := append(jsHdrNames[:], "nats-msg-id", "NATS-ROLLUP", "Nats-Msg-Ids", "Nats-Msg", "X-Other", "", "nats-expected-last-subject-sequence")
	vals := []string{"1", " 2 ", "", "  ", "abc", "sub", "a:b"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b bytes.Buffer
		b.WriteString(hdrLine)
		for range r.IntN(6) {
			b.WriteString(keys[r.IntN(len(keys))])
			if r.IntN(10) > 0 {
				b.WriteString(":")
			}
			b.WriteString(vals[r.IntN(len(vals))])
			if r.IntN(8) > 0 {
				b.WriteString("\r")
			}
			b.WriteString("\n")
		}
		if r.IntN(2) == 0 {
			b.WriteString("\r\n")
		}
		checkJSHeadersAgree(t, b.Bytes())
	}
}

func FuzzReadJSHeaders(f *testing.F) {
	f.Add([]byte("NATS/1.0\r\nNats-Msg-Id: 1\r\nnats-msg-id: 2\r\n\r\n"))
	f.Add([]byte("NATS/1.0\r\nnats-rollup:sub\r\nNats-Rollup: \r\n\r\n"))
	f.Add([]byte("NATS/1.0\r\nNats-Expected-Last-Subject-Sequence:0\r\nNats-Expected-Last-Subject-Sequence-Subject: a.*\r\n\r\n"))
	f.Fuzz(checkJSHeadersAgree)
}
