//go:build !windows

package logger

import (
	"fmt"
	"log"
	"log/syslog"
	"net/url"
)

// SysLogger sends log statements to a local or remote syslog daemon.
// All methods are safe for concurrent use.
type SysLogger struct {
	writer *syslog.Writer
	debug  bool
	trace  bool
}

// SetSyslogName sets the name used for the system log. It only has an
// effect on Windows and is a no-op here.
func SetSyslogName(name string) {}

// NewSysLogger creates a logger connected to the local syslog daemon
// (facility daemon), tagged with GetSysLoggerTag. The process exits if
// syslog cannot be reached.
func NewSysLogger(debug, trace bool) *SysLogger {
	w, err := syslog.New(syslog.LOG_DAEMON|syslog.LOG_NOTICE, GetSysLoggerTag())
	if err != nil {
		log.Fatalf("error connecting to syslog: %q", err.Error())
	}
	return &SysLogger{writer: w, debug: debug, trace: trace}
}

// NewRemoteSysLogger creates a logger connected to the syslog server
// described by fqn, one of "udp://host:port", "tcp://host:port" or
// "unix:///path/to/socket". The process exits if fqn is invalid or the
// server cannot be reached.
func NewRemoteSysLogger(fqn string, debug, trace bool) *SysLogger {
	network, addr, err := parseSyslogURL(fqn)
	if err != nil {
		log.Fatalf("error connecting to syslog: %v", err)
	}
	w, err := dialSyslog(network, addr)
	if err != nil {
		log.Fatalf("error connecting to syslog: %q", err.Error())
	}
	return &SysLogger{writer: w, debug: debug, trace: trace}
}

// dialSyslog connects to a remote syslog. The priority (no facility bits,
// debug severity) matches what nats-server puts on the wire. For "unix"
// a datagram socket, the usual kind for syslog, is tried before a stream
// socket.
func dialSyslog(network, addr string) (*syslog.Writer, error) {
	tag := GetSysLoggerTag()
	if network == "unix" {
		if w, err := syslog.Dial("unixgram", addr, syslog.LOG_DEBUG, tag); err == nil {
			return w, nil
		}
	}
	return syslog.Dial(network, addr, syslog.LOG_DEBUG, tag)
}

// parseSyslogURL splits a remote syslog URL into the network and address
// arguments of net.Dial.
func parseSyslogURL(fqn string) (network, addr string, err error) {
	u, err := url.Parse(fqn)
	if err != nil {
		return "", "", err
	}
	switch u.Scheme {
	case "udp", "tcp":
		if u.Host == "" {
			return "", "", fmt.Errorf("missing host in syslog address %q", fqn)
		}
		return u.Scheme, u.Host, nil
	case "unix", "unixgram":
		if u.Path == "" {
			return "", "", fmt.Errorf("missing path in syslog address %q", fqn)
		}
		return u.Scheme, u.Path, nil
	default:
		return "", "", fmt.Errorf("error invalid network type: %q", u.Scheme)
	}
}

// Noticef logs a notice statement.
func (l *SysLogger) Noticef(format string, v ...any) {
	l.writer.Notice(fmt.Sprintf(format, v...))
}

// Warnf logs a warning statement.
func (l *SysLogger) Warnf(format string, v ...any) {
	l.writer.Warning(fmt.Sprintf(format, v...))
}

// Fatalf logs a statement at critical severity. Like nats-server's
// SysLogger it does not terminate the process.
func (l *SysLogger) Fatalf(format string, v ...any) {
	l.writer.Crit(fmt.Sprintf(format, v...))
}

// Errorf logs an error statement.
func (l *SysLogger) Errorf(format string, v ...any) {
	l.writer.Err(fmt.Sprintf(format, v...))
}

// Debugf logs a debug statement if debug logging is enabled.
func (l *SysLogger) Debugf(format string, v ...any) {
	if l.debug {
		l.writer.Debug(fmt.Sprintf(format, v...))
	}
}

// Tracef logs a trace statement (at notice severity) if trace logging is
// enabled.
func (l *SysLogger) Tracef(format string, v ...any) {
	if l.trace {
		l.writer.Notice(fmt.Sprintf(format, v...))
	}
}

// Close closes the connection to the syslog daemon.
func (l *SysLogger) Close() error {
	return l.writer.Close()
}
