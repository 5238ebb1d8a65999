//go:build windows

package logger

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// syslogName is the event source name, settable with SetSyslogName.
var (
	syslogNameMu sync.Mutex
	syslogName   = "NATS-Server"
)

// SetSyslogName sets the name used to tag system log statements.
func SetSyslogName(name string) {
	syslogNameMu.Lock()
	syslogName = name
	syslogNameMu.Unlock()
}

func currentSyslogName() string {
	syslogNameMu.Lock()
	defer syslogNameMu.Unlock()
	return syslogName
}

// SysLogger is, on Windows, a stand-in for the event log: it writes tagged
// statements to standard error. All methods are safe for concurrent use.
type SysLogger struct {
	mu    sync.Mutex
	out   io.Writer
	name  string
	debug bool
	trace bool
}

// NewSysLogger creates a system logger. On Windows it writes to stderr.
func NewSysLogger(debug, trace bool) *SysLogger {
	return &SysLogger{out: os.Stderr, name: currentSyslogName(), debug: debug, trace: trace}
}

// NewRemoteSysLogger creates a system logger. On Windows the remote
// address is ignored and statements are written to stderr.
func NewRemoteSysLogger(fqn string, debug, trace bool) *SysLogger {
	return NewSysLogger(debug, trace)
}

func (l *SysLogger) emit(level, format string, v []any) string {
	msg := fmt.Sprintf("%s: pid[%d][%s]: %s\n", l.name, os.Getpid(), level, fmt.Sprintf(format, v...))
	l.mu.Lock()
	io.WriteString(l.out, msg)
	l.mu.Unlock()
	return msg
}

// Noticef logs a notice statement.
func (l *SysLogger) Noticef(format string, v ...any) { l.emit("NOTICE", format, v) }

// Warnf logs a warning statement.
func (l *SysLogger) Warnf(format string, v ...any) { l.emit("WARN", format, v) }

// Errorf logs an error statement.
func (l *SysLogger) Errorf(format string, v ...any) { l.emit("ERROR", format, v) }

// Fatalf logs a fatal statement and panics, as nats-server does on
// Windows.
func (l *SysLogger) Fatalf(format string, v ...any) {
	panic(l.emit("FATAL", format, v))
}

// Debugf logs a debug statement if debug logging is enabled.
func (l *SysLogger) Debugf(format string, v ...any) {
	if l.debug {
		l.emit("DEBUG", format, v)
	}
}

// Tracef logs a trace statement if trace logging is enabled.
func (l *SysLogger) Tracef(format string, v ...any) {
	if l.trace {
		l.emit("TRACE", format, v)
	}
}

// Close is a no-op on Windows.
func (l *SysLogger) Close() error { return nil }
