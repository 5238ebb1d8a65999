package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// captureLog keeps every line a server logs.
type captureLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *captureLog) add(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, v...))
}

func (l *captureLog) Noticef(f string, v ...any) { l.add(f, v...) }
func (l *captureLog) Warnf(f string, v ...any)   { l.add(f, v...) }
func (l *captureLog) Errorf(f string, v ...any)  { l.add(f, v...) }
func (l *captureLog) Fatalf(f string, v ...any)  { l.add(f, v...) }
func (l *captureLog) Debugf(f string, v ...any)  { l.add(f, v...) }
func (l *captureLog) Tracef(f string, v ...any)  { l.add(f, v...) }

func (l *captureLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// A traced (-V) server logs CONNECT with its secrets redacted whatever the
// JSON spacing, key order, letter case or escapes (issue 16: {"pass": "x"}
// was logged in clear).
func TestTraceRedactsConnectSecrets(t *testing.T) {
	o := testOptions()
	o.Trace = true
	o.Users = []*User{{Username: "u", Password: "s3cr3t-ok"}}
	s, err := NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	logs := &captureLog{}
	s.SetLogger(logs, true, true)
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	t.Cleanup(s.Shutdown)

	connects := []string{
		`{"verbose":false,"user":"u","pass":"s3cr3t-ok"}`,
		`{"verbose":false,"pass": "s3cr3t-a","user":"u"}`,
		`{ "auth_token" :	"s3cr3t-b" , "verbose":false}`,
		`{"PASS":"s3cr3t-c","Auth_Token":"s3cr3t-d"}`,
		`{"pass":"s3cr3t-e\"s3cr3t-f","user":"u"}`,
		`{"p\u0061ss":"s3cr3t-g","user":"u"}`,
		`{"nkey":"s3cr3t-h","sig":"s3cr3t-i","jwt":"s3cr3t-j","proxy_sig":"s3cr3t-k"}`,
		`{"password":"s3cr3t-l","pass":12345678}`,
	}
	for _, cj := range connects {
		r := dialRaw(t, s)
		r.connect(cj)
		r.send("PING\r\n")
		if l := r.line(); l != "PONG\r\n" && !strings.HasPrefix(l, "-ERR") {
			t.Fatalf("CONNECT %s: got %q", cj, l)
		}
	}
	waitFor(t, 5*time.Second, "every CONNECT traced", func() bool {
		return strings.Count(logs.text(), "<<- [CONNECT") == len(connects)
	})
	text := logs.text()
	if strings.Contains(text, "s3cr3t") || strings.Contains(text, "12345678") {
		t.Fatalf("a secret was logged:\n%s", text)
	}
	for _, want := range []string{`"pass": "[REDACTED]"`, `"auth_token" :	"[REDACTED]"`, `"PASS":"[REDACTED]"`,
		`"p\u0061ss":"[REDACTED]"`, `"jwt":"[REDACTED]"`, `"pass":[REDACTED]}`, `"user":"u"`} {
		if !strings.Contains(text, want) {
			t.Fatalf("log lacks %s:\n%s", want, text)
		}
	}
}

func TestRedactConnect(t *testing.T) {
	for in, want := range map[string]string{
		`{"user":"u","pass":"x"}`:           `{"user":"u","pass":"[REDACTED]"}`,
		`{"name":"a\",\"pass\":\"b"}`:       `{"name":"a\",\"pass\":\"b"}`, // a value, not a key
		`{"pass":"unterminated`:             `{"pass":"[REDACTED]"`,
		`{"pass" : true ,"x":1}`:            `{"pass" : [REDACTED] ,"x":1}`,
		`{"passwd":"x","auth_token_2":"y"}`: `{"passwd":"[REDACTED]","auth_token_2":"[REDACTED]"}`,
		`{"pa\u017fs":"x"}`:                 `{"pa\u017fs":"[REDACTED]"}`,
		`{"signature":"keep"}`:              `{"signature":"keep"}`,
		`garbage "pass":"x`:                 `garbage "pass":"[REDACTED]"`,
	} {
		if got := string(redactConnect([]byte(in))); got != want {
			t.Errorf("redactConnect(%s) = %s, want %s", in, got, want)
		}
	}
}
