// Package logger provides the logging back ends used by the Tern server:
// a standard (stderr) logger, a file logger with size based rotation and
// a syslog logger. Its exported API mirrors the logger package of
// nats-server so that programs embedding the server can switch over
// without code changes.
package logger

import (
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// timeLayout is the timestamp layout used at the start of each log line.
const timeLayout = "2006/01/02 15:04:05.000000 "

// LogOption is an option that can be passed to NewStdLogger and
// NewFileLogger.
type LogOption interface {
	isLoggerOption()
}

// LogUTC controls whether timestamps in the log output are written in UTC
// (true) or in local time (false, the default).
type LogUTC bool

func (LogUTC) isLoggerOption() {}

// labels holds the level tags printed in front of every message.
type labels struct {
	info, warn, errr, fatal, debug, trace string
}

var plainLabels = labels{
	info:  "[INF] ",
	warn:  "[WRN] ",
	errr:  "[ERR] ",
	fatal: "[FTL] ",
	debug: "[DBG] ",
	trace: "[TRC] ",
}

// colorLabel wraps a level tag in an ANSI SGR colour sequence.
func colorLabel(sgr, tag string) string {
	return "[\x1b[" + sgr + "m" + tag + "\x1b[0m] "
}

var colorLabels = labels{
	info:  colorLabel("32", "INF"),   // green
	warn:  colorLabel("0;93", "WRN"), // bright yellow
	errr:  colorLabel("31", "ERR"),   // red
	fatal: colorLabel("31", "FTL"),   // red
	debug: colorLabel("36", "DBG"),   // cyan
	trace: colorLabel("33", "TRC"),   // yellow
}

// osExit is replaced in tests so Fatalf can be exercised in-process.
var osExit = os.Exit

// Logger is the server logger. It writes either to standard error (see
// NewStdLogger and NewTestLogger) or to a file (see NewFileLogger).
// All methods are safe for concurrent use.
type Logger struct {
	mu     lockorder.Mutex[lockorder.Logger]
	out    io.Writer // destination for the std logger; unused by the file logger
	fl     *fileLog  // non-nil for a file logger
	prefix string    // written first on every line ("[pid] " or test prefix)
	time   bool      // include a timestamp
	utc    bool      // timestamp in UTC
	debug  bool
	trace  bool
	lbl    labels
	buf    []byte // scratch buffer reused under mu
}

// applyOptions processes the LogOption values.
func (l *Logger) applyOptions(opts []LogOption) {
	for _, o := range opts {
		switch v := o.(type) {
		case LogUTC:
			l.utc = bool(v)
		}
	}
}

// pidPrefix returns the "[pid] " prefix.
func pidPrefix() string {
	return "[" + strconv.Itoa(os.Getpid()) + "] "
}

// NewStdLogger creates a logger writing to standard error.
// time adds a timestamp, debug and trace enable Debugf and Tracef, colors
// uses ANSI coloured level labels and pid prefixes every line with the
// process id.
func NewStdLogger(time, debug, trace, colors, pid bool, opts ...LogOption) *Logger {
	l := &Logger{
		out:   os.Stderr,
		time:  time,
		debug: debug,
		trace: trace,
		lbl:   plainLabels,
	}
	if pid {
		l.prefix = pidPrefix()
	}
	if colors {
		l.lbl = colorLabels
	}
	l.applyOptions(opts)
	return l
}

// NewTestLogger creates a logger writing to standard error with the given
// line prefix and with debug and trace enabled. It is handy in tests that
// run several servers in the same process.
func NewTestLogger(prefix string, time bool) *Logger {
	return &Logger{
		out:    os.Stderr,
		prefix: prefix,
		time:   time,
		debug:  true,
		trace:  true,
		lbl:    colorLabels,
	}
}

// Close releases the resources held by the logger. For a file logger it
// closes the log file; further messages are discarded. It is a no-op for
// the standard logger. Close may be called more than once.
func (l *Logger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fl == nil {
		return nil
	}
	return l.fl.close()
}

// appendLine appends a complete log line to dst.
func (l *Logger) appendLine(dst []byte, label, msg string) []byte {
	dst = append(dst, l.prefix...)
	if l.time {
		now := time.Now()
		if l.utc {
			now = now.UTC()
		}
		dst = now.AppendFormat(dst, timeLayout)
	}
	dst = append(dst, label...)
	dst = append(dst, msg...)
	if len(msg) == 0 || msg[len(msg)-1] != '\n' {
		dst = append(dst, '\n')
	}
	return dst
}

// writeLocked formats and emits one line. l.mu must be held.
func (l *Logger) writeLocked(label, msg string) {
	l.buf = l.appendLine(l.buf[:0], label, msg)
	if l.fl != nil {
		l.writeFileLocked(l.buf)
	} else if l.out != nil {
		l.out.Write(l.buf)
	}
	// Do not keep an unusually large buffer alive.
	if cap(l.buf) > 64*1024 {
		l.buf = nil
	}
}

// logf formats the message outside of the lock and writes it.
func (l *Logger) logf(label, format string, v []any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	l.writeLocked(label, msg)
	l.mu.Unlock()
}

// Noticef logs a notice (info) statement.
func (l *Logger) Noticef(format string, v ...any) {
	l.logf(l.lbl.info, format, v)
}

// Warnf logs a warning statement.
func (l *Logger) Warnf(format string, v ...any) {
	l.logf(l.lbl.warn, format, v)
}

// Errorf logs an error statement.
func (l *Logger) Errorf(format string, v ...any) {
	l.logf(l.lbl.errr, format, v)
}

// Fatalf logs a fatal error and terminates the process with exit status 1.
func (l *Logger) Fatalf(format string, v ...any) {
	l.logf(l.lbl.fatal, format, v)
	osExit(1)
}

// Debugf logs a debug statement if debug logging is enabled.
func (l *Logger) Debugf(format string, v ...any) {
	if l.debug {
		l.logf(l.lbl.debug, format, v)
	}
}

// Tracef logs a trace statement if trace logging is enabled.
func (l *Logger) Tracef(format string, v ...any) {
	if l.trace {
		l.logf(l.lbl.trace, format, v)
	}
}

// GetSysLoggerTag returns the tag used in syslog statements: the base name
// of the running executable as invoked (so a symlink's name is used when
// the server was started through one).
func GetSysLoggerTag() string {
	name := os.Args[0]
	parts := strings.FieldsFunc(name, func(r rune) bool {
		return r == os.PathSeparator
	})
	if len(parts) == 0 {
		return name
	}
	return parts[len(parts)-1]
}
