package logger

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// defaultLogPerms are the permissions used when creating a log file.
const defaultLogPerms = os.FileMode(0640)

// logFileFlags are the flags used to open (or create) a log file.
const logFileFlags = os.O_WRONLY | os.O_APPEND | os.O_CREATE

// backupLayout is the timestamp appended to a rotated log file name,
// e.g. "nats.log.2026.11.29.18.59.04.123456789".
const backupLayout = "2006.01.02.15.04.05.000000000"

// logFile is the subset of *os.File used by the file logger. It is an
// interface so tests can inject failures.
type logFile interface {
	io.Writer
	Close() error
	Name() string
}

// fileLog is the state of a file logger. It is protected by Logger.mu.
type fileLog struct {
	name      string  // path of the active log file
	f         logFile // active log file
	size      int64   // bytes in the active log file
	limit     int64   // rotate once size exceeds this (0: never)
	origLimit int64   // limit as configured by SetSizeLimit
	maxFiles  int     // total log files kept, active one included (<=0: all)
	closed    bool
}

// stderrSink is used as a last resort if the log file cannot be reopened
// after a rotation.
type stderrSink struct{ name string }

func (s stderrSink) Write(b []byte) (int, error) { return os.Stderr.Write(b) }
func (s stderrSink) Close() error                { return nil }
func (s stderrSink) Name() string                { return s.name }

// openLogFile opens filename for appending, creating it if necessary, and
// returns it together with its current size.
func openLogFile(filename string) (*os.File, int64, error) {
	f, err := os.OpenFile(filename, logFileFlags, defaultLogPerms)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// NewFileLogger creates a logger that appends to filename (created with
// mode 0640 if it does not exist). The flags have the same meaning as for
// NewStdLogger; labels are never coloured. If the file cannot be opened
// the error is printed and the process exits, as nats-server does.
func NewFileLogger(filename string, time, debug, trace, pid bool, opts ...LogOption) *Logger {
	f, size, err := openLogFile(filename)
	if err != nil {
		log.Fatalf("error opening file: %v", err)
		return nil
	}
	l := &Logger{
		fl:    &fileLog{name: filename, f: f, size: size},
		time:  time,
		debug: debug,
		trace: trace,
		lbl:   plainLabels,
	}
	if pid {
		l.prefix = pidPrefix()
	}
	l.applyOptions(opts)
	return l
}

// SetSizeLimit makes the file logger rotate its file once it grows beyond
// limit bytes: the file is renamed to "<name>.<yyyy.mm.dd.hh.mm.ss.nanos>"
// and a fresh file is started. A limit <= 0 disables rotation. If the
// file is already larger than limit it is rotated immediately.
// It returns an error for loggers that do not write to a file.
func (l *Logger) SetSizeLimit(limit int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	fl := l.fl
	if fl == nil {
		return errors.New("can set log size limit only for file logger")
	}
	if limit < 0 {
		limit = 0
	}
	fl.limit, fl.origLimit = limit, limit
	if limit > 0 && fl.size > limit && !fl.closed {
		// Goes through the normal write path, which performs the rotation.
		l.writeLocked(l.lbl.info, "Rotating logfile...")
	}
	return nil
}

// SetMaxNumFiles sets how many log files are retained: after a rotation
// the oldest backups are deleted so that, counting the active log file,
// at most max files remain (the same accounting as nats-server, so 1 keeps
// no backups at all). A value <= 0 keeps every backup.
// It returns an error for loggers that do not write to a file.
func (l *Logger) SetMaxNumFiles(max int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fl == nil {
		return errors.New("can set log max number of files only for file logger")
	}
	l.fl.maxFiles = max
	return nil
}

// close closes the log file once. l.mu must be held.
func (fl *fileLog) close() error {
	if fl.closed {
		return nil
	}
	fl.closed = true
	return fl.f.Close()
}

// writeFileLocked writes a formatted line to the log file and rotates it
// if it has grown beyond the limit. l.mu must be held.
func (l *Logger) writeFileLocked(b []byte) {
	fl := l.fl
	if fl.closed {
		return
	}
	n, err := fl.f.Write(b)
	fl.size += int64(n)
	if err != nil {
		return
	}
	if fl.limit > 0 && fl.size > fl.limit {
		l.rotateLocked()
	}
}

// directLocked writes a line straight to the current file, bypassing the
// rotation check. Used for the logger's own bookkeeping messages.
func (l *Logger) directLocked(label, format string, v ...any) {
	line := l.appendLine(nil, label, fmt.Sprintf(format, v...))
	n, _ := l.fl.f.Write(line)
	l.fl.size += int64(n)
}

// backupName returns a name for the rotated file that does not exist yet.
func backupName(name string, now time.Time) string {
	for {
		bak := name + "." + now.Format(backupLayout)
		if _, err := os.Lstat(bak); errors.Is(err, os.ErrNotExist) {
			return bak
		}
		now = now.Add(time.Nanosecond)
	}
}

// rotateLocked moves the active file aside and starts a new one. l.mu
// must be held.
func (l *Logger) rotateLocked() {
	fl := l.fl
	if err := fl.f.Close(); err != nil {
		// Keep writing to the current file and try again later.
		fl.limit *= 2
		l.directLocked(l.lbl.errr,
			"Unable to close logfile for rotation (%v), will attempt next rotation at size %d",
			err, fl.limit)
		return
	}
	bak := backupName(fl.name, time.Now())
	renameErr := os.Rename(fl.name, bak)

	f, size, err := openLogFile(fl.name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "logger: unable to re-open log file %q after rotation: %v\n", fl.name, err)
		fl.f, fl.size = stderrSink{name: fl.name}, 0
	} else {
		fl.f, fl.size = f, size
	}
	fl.limit = fl.origLimit
	if renameErr != nil {
		l.directLocked(l.lbl.errr, "Unable to rename logfile for rotation: %v", renameErr)
		return
	}
	l.directLocked(l.lbl.info, "Rotated log, backup saved as %q", bak)
	if fl.maxFiles > 0 {
		l.purgeLocked()
	}
}

// isBackupOf reports whether entry is a rotated copy of the log file base.
func isBackupOf(entry, base string) bool {
	stamp, ok := strings.CutPrefix(entry, base+".")
	if !ok || len(stamp) != len(backupLayout) {
		return false
	}
	_, err := time.Parse(backupLayout, stamp)
	return err == nil
}

// purgeLocked deletes the oldest backups so that at most maxFiles-1
// remain next to the active file. l.mu must be held.
func (l *Logger) purgeLocked() {
	fl := l.fl
	dir, base := filepath.Split(fl.name)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		l.directLocked(l.lbl.errr, "Unable to read directory %q for log purge (%v), will attempt next rotation", dir, err)
		return
	}
	var backups []string
	for _, e := range entries {
		if !e.IsDir() && isBackupOf(e.Name(), base) {
			backups = append(backups, e.Name())
		}
	}
	// Fixed-width timestamps sort chronologically.
	sort.Strings(backups)
	keep := fl.maxFiles - 1
	for i := 0; i < len(backups)-keep; i++ {
		if err := os.Remove(filepath.Join(dir, backups[i])); err != nil {
			l.directLocked(l.lbl.errr, "Unable to remove backup log file %q (%v), will attempt next rotation", backups[i], err)
			return
		}
		l.directLocked(l.lbl.info, "Purged log file %q", backups[i])
	}
}
