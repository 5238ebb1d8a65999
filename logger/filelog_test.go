package logger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

var backupRe = regexp.MustCompile(`^nats\.log\.\d{4}\.\d{2}\.\d{2}\.\d{2}\.\d{2}\.\d{2}\.\d{9}$`)

// listDir returns the sorted names of the files in dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

// backups returns the rotated copies of nats.log found in dir.
func backups(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range listDir(t, dir) {
		if backupRe.MatchString(n) {
			out = append(out, n)
		}
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFileLoggerFormatAndAppend(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "nats.log")
	if err := os.WriteFile(name, []byte("existing\n"), 0600); err != nil {
		t.Fatal(err)
	}

	l := NewFileLogger(name, true, false, true, true)
	l.Noticef("first %d", 1)
	l.Debugf("hidden")
	l.Tracef("traced")
	l.Errorf("oops")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	content := readFile(t, name)
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	if len(lines) != 4 || lines[0] != "existing" {
		t.Fatalf("unexpected content %q", content)
	}
	pid := regexp.QuoteMeta(fmt.Sprintf("[%d] ", os.Getpid()))
	for i, w := range []string{`\[INF\] first 1`, `\[TRC\] traced`, `\[ERR\] oops`} {
		re := regexp.MustCompile(`^` + pid + tsPattern + ` ` + w + `$`)
		if !re.MatchString(lines[i+1]) {
			t.Errorf("line %q does not match %s", lines[i+1], re)
		}
	}
}

func TestFileLoggerCreatesWith0640(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix permissions")
	}
	name := filepath.Join(t.TempDir(), "nats.log")
	l := NewFileLogger(name, false, false, false, false)
	defer l.Close()
	st, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	// The umask can only remove bits.
	if perm := st.Mode().Perm(); perm&^0640 != 0 || perm&0600 != 0600 {
		t.Fatalf("unexpected permissions %v", perm)
	}
	l.Warnf("w")
	if got := readFile(t, name); got != "[WRN] w\n" {
		t.Fatalf("got %q", got)
	}
}

func TestFileLoggerNoColors(t *testing.T) {
	name := filepath.Join(t.TempDir(), "nats.log")
	l := NewFileLogger(name, false, true, false, false)
	l.Debugf("d")
	l.Close()
	if got := readFile(t, name); got != "[DBG] d\n" {
		t.Fatalf("got %q", got)
	}
}

func TestFileLoggerUTC(t *testing.T) {
	name := filepath.Join(t.TempDir(), "nats.log")
	l := NewFileLogger(name, true, false, false, false, LogUTC(true))
	if !l.utc {
		t.Fatal("LogUTC(true) not applied to file logger")
	}
	l.Noticef("x")
	l.Close()
	line := readFile(t, name)
	if !regexp.MustCompile(`^` + tsPattern + ` \[INF\] x\n$`).MatchString(line) {
		t.Fatalf("unexpected line %q", line)
	}
}

func TestFileLoggerCloseTwiceAndWriteAfterClose(t *testing.T) {
	name := filepath.Join(t.TempDir(), "nats.log")
	l := NewFileLogger(name, false, false, false, false)
	l.Noticef("before")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	l.Noticef("after")
	if err := l.SetSizeLimit(1); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, name); got != "[INF] before\n" {
		t.Fatalf("got %q", got)
	}
}

// msgCount counts occurrences of "msg <n>" payload lines in all files of dir
// and fails on duplicates.
func msgCount(t *testing.T, dir string) int {
	t.Helper()
	seen := map[string]bool{}
	re := regexp.MustCompile(`\[INF\] (msg \d+(?: w\d+)?)$`)
	for _, n := range listDir(t, dir) {
		for _, ln := range strings.Split(readFile(t, filepath.Join(dir, n)), "\n") {
			if m := re.FindStringSubmatch(ln); m != nil {
				if seen[m[1]] {
					t.Fatalf("duplicate line %q", m[1])
				}
				seen[m[1]] = true
			}
		}
	}
	return len(seen)
}

func TestFileLoggerRotation(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "nats.log")
	l := NewFileLogger(name, true, false, false, true)
	defer l.Close()
	const limit = 300
	if err := l.SetSizeLimit(limit); err != nil {
		t.Fatal(err)
	}
	const n = 60
	line := ""
	for i := 0; i < n; i++ {
		l.Noticef("msg %d", i)
		if i == 0 {
			line = readFile(t, name)
		}
	}
	l.Close()

	baks := backups(t, dir)
	if len(baks) < 2 {
		t.Fatalf("expected several rotated files, got %v", listDir(t, dir))
	}
	if got := len(listDir(t, dir)); got != len(baks)+1 {
		t.Fatalf("unexpected files in dir: %v", listDir(t, dir))
	}
	// A file is rotated right after the write that took it past the limit.
	for _, b := range baks {
		st, err := os.Stat(filepath.Join(dir, b))
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() <= limit || st.Size() > limit+int64(2*len(line))+200 {
			t.Errorf("backup %s has unexpected size %d", b, st.Size())
		}
	}
	// The active file says where the last backup went.
	content := readFile(t, name)
	last := baks[len(baks)-1]
	if !strings.Contains(content, "[INF] Rotated log, backup saved as ") ||
		!strings.Contains(content, last) {
		t.Fatalf("active log lacks rotation statement for %s: %q", last, content)
	}
	// Nothing is lost or duplicated.
	if got := msgCount(t, dir); got != n {
		t.Fatalf("expected %d messages across files, got %d", n, got)
	}
}

func TestFileLoggerRotateOnSetSizeLimit(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "nats.log")
	l := NewFileLogger(name, false, false, false, false)
	defer l.Close()
	for i := 0; i < 20; i++ {
		l.Noticef("msg %d", i)
	}
	if len(listDir(t, dir)) != 1 {
		t.Fatalf("rotated without a limit: %v", listDir(t, dir))
	}
	if err := l.SetSizeLimit(50); err != nil {
		t.Fatal(err)
	}
	baks := backups(t, dir)
	if len(baks) != 1 {
		t.Fatalf("expected an immediate rotation, got %v", listDir(t, dir))
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, baks[0])), "Rotating logfile") {
		t.Fatal("backup lacks the rotating statement")
	}
	if got := msgCount(t, dir); got != 20 {
		t.Fatalf("expected 20 messages, got %d", got)
	}
	// Disabling the limit stops rotation.
	if err := l.SetSizeLimit(0); err != nil {
		t.Fatal(err)
	}
	for i := 20; i < 40; i++ {
		l.Noticef("msg %d", i)
	}
	if got := len(backups(t, dir)); got != 1 {
		t.Fatalf("rotated with limit disabled: %d backups", got)
	}
}

func TestFileLoggerMaxNumFiles(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "nats.log")
	// Files that must survive pruning.
	for _, other := range []string{"other.txt", "nats.log.bak", "nats.log.2020.01.01"} {
		if err := os.WriteFile(filepath.Join(dir, other), []byte("x"), 0600); err != nil {
			t.Fatal(err)
		}
	}
	l := NewFileLogger(name, true, false, false, false)
	defer l.Close()
	if err := l.SetSizeLimit(200); err != nil {
		t.Fatal(err)
	}
	if err := l.SetMaxNumFiles(3); err != nil {
		t.Fatal(err)
	}

	var allBackups = map[string]bool{}
	for i := 0; i < 80; i++ {
		l.Noticef("msg %d", i)
		for _, b := range backups(t, dir) {
			allBackups[b] = true
		}
	}
	l.Close()

	baks := backups(t, dir)
	// Active file plus two backups: three log files in total.
	if len(baks) != 2 {
		t.Fatalf("expected 2 backups, got %v", listDir(t, dir))
	}
	if len(allBackups) <= 2 {
		t.Fatalf("expected more rotations than retained files, saw %d", len(allBackups))
	}
	// The survivors are the newest backups.
	var seen []string
	for b := range allBackups {
		seen = append(seen, b)
	}
	sort.Strings(seen)
	if seen[len(seen)-1] != baks[1] || seen[len(seen)-2] != baks[0] {
		t.Fatalf("kept %v, newest were %v", baks, seen[len(seen)-2:])
	}
	for _, other := range []string{"other.txt", "nats.log.bak", "nats.log.2020.01.01"} {
		if _, err := os.Stat(filepath.Join(dir, other)); err != nil {
			t.Fatalf("unrelated file %s removed: %v", other, err)
		}
	}
	content := readFile(t, name)
	if !strings.Contains(content, "Purged log file") {
		t.Fatalf("expected purge statement, got %q", content)
	}

	// max 1 keeps no backups at all.
	dir2 := t.TempDir()
	l2 := NewFileLogger(filepath.Join(dir2, "nats.log"), false, false, false, false)
	l2.SetSizeLimit(100)
	l2.SetMaxNumFiles(1)
	for i := 0; i < 30; i++ {
		l2.Noticef("msg %d", i)
	}
	l2.Close()
	if got := listDir(t, dir2); len(got) != 1 || got[0] != "nats.log" {
		t.Fatalf("expected only the active file, got %v", got)
	}
}

// failClose wraps a log file and fails Close while fail is set.
type failClose struct {
	logFile
	fail bool
}

func (f *failClose) Close() error {
	if f.fail {
		return errors.New("close failed on purpose")
	}
	return f.logFile.Close()
}

func TestFileLoggerRotationCloseFailure(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "nats.log")
	l := NewFileLogger(name, false, false, false, false)
	defer l.Close()
	l.SetSizeLimit(1000)

	l.mu.Lock()
	fc := &failClose{logFile: l.fl.f, fail: true}
	l.fl.f = fc
	l.mu.Unlock()

	l.Noticef("big %s", strings.Repeat("a", 1000))
	if got := len(backups(t, dir)); got != 0 {
		t.Fatalf("rotated although close failed: %d", got)
	}
	l.mu.Lock()
	limit := l.fl.limit
	fc.fail = false
	l.mu.Unlock()
	if limit != 2000 {
		t.Fatalf("expected limit bumped to 2000, got %d", limit)
	}

	l.Noticef("big %s", strings.Repeat("b", 1000))
	baks := backups(t, dir)
	if len(baks) != 1 {
		t.Fatalf("expected one rotation, got %v", listDir(t, dir))
	}
	content := readFile(t, filepath.Join(dir, baks[0]))
	if !strings.Contains(content, "on purpose") || !strings.Contains(content, "size 2000") {
		t.Fatalf("backup lacks close failure statement: %q", content)
	}
	l.mu.Lock()
	limit = l.fl.limit
	l.mu.Unlock()
	if limit != 1000 {
		t.Fatalf("limit not restored after rotation: %d", limit)
	}
}

func TestFileLoggerConcurrentRotation(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "nats.log")
	l := NewFileLogger(name, true, true, true, true)
	defer l.Close()
	l.SetSizeLimit(4096)

	const workers, per = 8, 250
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; i++ {
				l.Noticef("msg %d w%d", i, w)
				l.Debugf("debug %d", i)
			}
		}(w)
	}
	// Concurrent reconfiguration must be safe too.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 50; i++ {
			l.SetSizeLimit(int64(2048 + i*64))
			l.SetMaxNumFiles(0)
		}
	}()
	wg.Wait()
	l.Close()

	if len(backups(t, dir)) == 0 {
		t.Fatal("expected rotations")
	}
	if got := msgCount(t, dir); got != workers*per {
		t.Fatalf("expected %d messages, got %d", workers*per, got)
	}
	lineRe := regexp.MustCompile(`^\[\d+\] ` + tsPattern + ` \[(INF|DBG)\] `)
	for _, n := range listDir(t, dir) {
		for _, ln := range strings.Split(strings.TrimSuffix(readFile(t, filepath.Join(dir, n)), "\n"), "\n") {
			if !lineRe.MatchString(ln) {
				t.Fatalf("garbled line in %s: %q", n, ln)
			}
		}
	}
}

func TestIsBackupOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"nats.log.2026.11.29.18.59.04.123456789", true},
		{"nats.log.2026.11.29.18.59.04.12345678", false},
		{"nats.log.2026.13.29.18.59.04.123456789", false},
		{"nats.log", false},
		{"nats.logx2026.11.29.18.59.04.123456789", false},
		{"other.log.2026.11.29.18.59.04.123456789", false},
	} {
		if got := isBackupOf(tc.name, "nats.log"); got != tc.want {
			t.Errorf("isBackupOf(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
