package logger

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a goroutine safe bytes.Buffer.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// capture redirects a std/test logger into a buffer.
func capture(l *Logger) *syncBuffer {
	buf := &syncBuffer{}
	l.mu.Lock()
	l.out = buf
	l.mu.Unlock()
	return buf
}

const tsPattern = `\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}\.\d{6}`

func TestStdLoggerLineFormat(t *testing.T) {
	l := NewStdLogger(true, true, true, false, true)
	buf := capture(l)
	l.Noticef("hello %s", "world")
	l.Warnf("warn %d", 1)
	l.Errorf("err")
	l.Debugf("dbg")
	l.Tracef("trc")

	pid := regexp.QuoteMeta(fmt.Sprintf("[%d] ", os.Getpid()))
	want := []string{
		`\[INF\] hello world`,
		`\[WRN\] warn 1`,
		`\[ERR\] err`,
		`\[DBG\] dbg`,
		`\[TRC\] trc`,
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("expected %d lines, got %d: %q", len(want), len(lines), buf.String())
	}
	for i, w := range want {
		re := regexp.MustCompile(`^` + pid + tsPattern + ` ` + w + `$`)
		if !re.MatchString(lines[i]) {
			t.Errorf("line %d %q does not match %s", i, lines[i], re)
		}
	}
}

func TestStdLoggerNoTimeNoPid(t *testing.T) {
	l := NewStdLogger(false, false, false, false, false)
	buf := capture(l)
	l.Noticef("foo")
	l.Warnf("bar %v", true)
	// A message that already ends in a newline does not get a second one.
	l.Errorf("baz\n")
	if got, want := buf.String(), "[INF] foo\n[WRN] bar true\n[ERR] baz\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestStdLoggerPidWithoutTime(t *testing.T) {
	l := NewStdLogger(false, false, false, false, true)
	buf := capture(l)
	l.Noticef("foo")
	want := fmt.Sprintf("[%d] [INF] foo\n", os.Getpid())
	if got := buf.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestStdLoggerWritesToStderr(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	orig := os.Stderr
	os.Stderr = w
	l := NewStdLogger(false, false, false, false, false)
	os.Stderr = orig

	l.Noticef("to stderr")
	w.Close()
	out, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out); got != "[INF] to stderr\n" {
		t.Fatalf("got %q", got)
	}
}

func TestStdLoggerColors(t *testing.T) {
	l := NewStdLogger(false, true, true, true, false)
	buf := capture(l)
	l.Noticef("n")
	l.Warnf("w")
	l.Errorf("e")
	l.Debugf("d")
	l.Tracef("t")
	want := "[\x1b[32mINF\x1b[0m] n\n" +
		"[\x1b[0;93mWRN\x1b[0m] w\n" +
		"[\x1b[31mERR\x1b[0m] e\n" +
		"[\x1b[36mDBG\x1b[0m] d\n" +
		"[\x1b[33mTRC\x1b[0m] t\n"
	if got := buf.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestDebugTraceGating(t *testing.T) {
	for _, tc := range []struct {
		debug, trace bool
		want         string
	}{
		{false, false, "[INF] i\n"},
		{true, false, "[DBG] d\n[INF] i\n"},
		{false, true, "[TRC] t\n[INF] i\n"},
		{true, true, "[DBG] d\n[TRC] t\n[INF] i\n"},
	} {
		t.Run(fmt.Sprintf("debug=%v,trace=%v", tc.debug, tc.trace), func(t *testing.T) {
			l := NewStdLogger(false, tc.debug, tc.trace, false, false)
			buf := capture(l)
			l.Debugf("d")
			l.Tracef("t")
			l.Noticef("i")
			if got := buf.String(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// parseStamp extracts and parses the timestamp of a single line written
// without pid prefix.
func parseStamp(t *testing.T, line string, loc *time.Location) time.Time {
	t.Helper()
	re := regexp.MustCompile(`^(` + tsPattern + `) \[INF\] x\n$`)
	m := re.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("unexpected line %q", line)
	}
	ts, err := time.ParseInLocation("2006/01/02 15:04:05.000000", m[1], loc)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func TestUTCOption(t *testing.T) {
	// Use a local zone far from UTC so local and UTC stamps differ.
	origLocal := time.Local
	zone := time.FixedZone("TERN", 5*3600+30*60)
	time.Local = zone
	defer func() { time.Local = origLocal }()

	before := time.Now()

	utcLog := NewStdLogger(true, false, false, false, false, LogUTC(true))
	utcBuf := capture(utcLog)
	utcLog.Noticef("x")

	localLog := NewStdLogger(true, false, false, false, false, LogUTC(false))
	localBuf := capture(localLog)
	localLog.Noticef("x")

	defLog := NewStdLogger(true, false, false, false, false)
	defBuf := capture(defLog)
	defLog.Noticef("x")

	after := time.Now()

	check := func(name string, got time.Time) {
		t.Helper()
		lo := before.Truncate(time.Microsecond)
		if got.Before(lo) || got.After(after) {
			t.Errorf("%s: stamp %v not within [%v, %v]", name, got, lo, after)
		}
	}
	check("utc", parseStamp(t, utcBuf.String(), time.UTC))
	check("local", parseStamp(t, localBuf.String(), zone))
	check("default", parseStamp(t, defBuf.String(), zone))

	// Reading the UTC stamp as local time must be off by the zone offset.
	if d := parseStamp(t, utcBuf.String(), zone).Sub(before); d > -5*time.Hour {
		t.Errorf("UTC stamp looks like local time (diff %v)", d)
	}
}

func TestNewTestLogger(t *testing.T) {
	l := NewTestLogger("[srv-A] ", false)
	buf := capture(l)
	l.Debugf("d")
	l.Tracef("t")
	want := "[srv-A] [\x1b[36mDBG\x1b[0m] d\n[srv-A] [\x1b[33mTRC\x1b[0m] t\n"
	if got := buf.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}

	l = NewTestLogger("p ", true)
	buf = capture(l)
	l.Noticef("n")
	re := regexp.MustCompile(`^p ` + tsPattern + ` \[\x1b\[32mINF\x1b\[0m\] n\n$`)
	if !re.MatchString(buf.String()) {
		t.Fatalf("unexpected line %q", buf.String())
	}
}

func TestFatalf(t *testing.T) {
	code := -1
	osExit = func(c int) { code = c }
	defer func() { osExit = os.Exit }()

	l := NewStdLogger(false, false, false, false, false)
	buf := capture(l)
	l.Fatalf("boom %d", 7)
	if code != 1 {
		t.Fatalf("expected exit code 1, got %d", code)
	}
	if got := buf.String(); got != "[FTL] boom 7\n" {
		t.Fatalf("got %q", got)
	}

	code = -1
	fl := NewFileLogger(filepath.Join(t.TempDir(), "f.log"), false, false, false, false)
	defer fl.Close()
	fl.Fatalf("file boom")
	if code != 1 {
		t.Fatalf("expected exit code 1, got %d", code)
	}
	content, err := os.ReadFile(fl.fl.name)
	if err != nil {
		t.Fatal(err)
	}
	if string(content) != "[FTL] file boom\n" {
		t.Fatalf("got %q", content)
	}
}

func TestStdLoggerClose(t *testing.T) {
	l := NewStdLogger(false, false, false, false, false)
	if err := l.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
}

func TestNonFileLoggerSettersFail(t *testing.T) {
	l := NewStdLogger(false, false, false, false, false)
	if err := l.SetSizeLimit(100); err == nil || !strings.Contains(err.Error(), "only for file logger") {
		t.Fatalf("SetSizeLimit: unexpected error %v", err)
	}
	if err := l.SetMaxNumFiles(3); err == nil || !strings.Contains(err.Error(), "only for file logger") {
		t.Fatalf("SetMaxNumFiles: unexpected error %v", err)
	}
}

func TestStdLoggerConcurrent(t *testing.T) {
	l := NewStdLogger(true, true, true, false, true)
	buf := capture(l)
	const workers, per = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				switch i % 3 {
				case 0:
					l.Noticef("w%d m%d", w, i)
				case 1:
					l.Debugf("w%d m%d", w, i)
				default:
					l.Tracef("w%d m%d", w, i)
				}
			}
		}(w)
	}
	wg.Wait()
	re := regexp.MustCompile(`^\[\d+\] ` + tsPattern + ` \[(INF|DBG|TRC)\] w\d+ m\d+$`)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != workers*per {
		t.Fatalf("expected %d lines, got %d", workers*per, len(lines))
	}
	for _, ln := range lines {
		if !re.MatchString(ln) {
			t.Fatalf("garbled line %q", ln)
		}
	}
}

func TestGetSysLoggerTag(t *testing.T) {
	orig := os.Args[0]
	defer func() { os.Args[0] = orig }()
	for _, tc := range []struct{ arg, want string }{
		{"nats-server", "nats-server"},
		{filepath.Join(".", "nats-server"), "nats-server"},
		{filepath.Join("home", "bin", "tern"), "tern"},
		{filepath.Join("..", "..", "nats-server"), "nats-server"},
		{"nats-server.service1", "nats-server.service1"},
		{"nats-server service1", "nats-server service1"},
	} {
		os.Args[0] = tc.arg
		if got := GetSysLoggerTag(); got != tc.want {
			t.Errorf("GetSysLoggerTag(%q) = %q, want %q", tc.arg, got, tc.want)
		}
	}
}
