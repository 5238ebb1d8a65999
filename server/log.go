package server

import (
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"io"
	"os"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/logger"
)

// Logger is the logging interface, as nats-server's.
type Logger interface {
	Noticef(format string, v ...any)
	Warnf(format string, v ...any)
	Fatalf(format string, v ...any)
	Errorf(format string, v ...any)
	Debugf(format string, v ...any)
	Tracef(format string, v ...any)
}

type logging struct {
	mu     lockorder.Mutex[lockorder.Logging]
	logger Logger
	debug  atomic.Bool
	trace  atomic.Bool
}

// SetLogger sets the logger and the debug/trace flags.
func (s *Server) SetLogger(l Logger, debugFlag, traceFlag bool) {
	s.SetLoggerV2(l, debugFlag, traceFlag, false)
}

// SetLoggerV2 is SetLogger with the system-account trace flag (ignored).
func (s *Server) SetLoggerV2(l Logger, debugFlag, traceFlag, sysTrace bool) {
	s.logging.debug.Store(debugFlag)
	s.logging.trace.Store(traceFlag)
	s.logging.mu.Lock()
	old := s.logging.logger
	s.logging.logger = l
	s.logging.mu.Unlock()
	if c, ok := old.(io.Closer); ok && old != l {
		_ = c.Close()
	}
}

// ConfigureLogger sets up logging as the options ask.
func (s *Server) ConfigureLogger() {
	o := s.getOpts()
	if o.NoLog {
		return
	}
	var l Logger
	switch {
	case o.LogFile != "":
		fl := logger.NewFileLogger(o.LogFile, o.Logtime, o.Debug, o.Trace, true, logger.LogUTC(o.LogtimeUTC))
		if o.LogSizeLimit > 0 {
			_ = fl.SetSizeLimit(o.LogSizeLimit)
		}
		if o.LogMaxFiles > 0 {
			_ = fl.SetMaxNumFiles(int(o.LogMaxFiles))
		}
		l = fl
	case o.RemoteSyslog != "":
		l = logger.NewRemoteSysLogger(o.RemoteSyslog, o.Debug, o.Trace)
	case o.Syslog:
		l = logger.NewSysLogger(o.Debug, o.Trace)
	default:
		colors := isTerminal(os.Stderr)
		l = logger.NewStdLogger(o.Logtime, o.Debug, o.Trace, colors, true, logger.LogUTC(o.LogtimeUTC))
	}
	s.SetLoggerV2(l, o.Debug, o.Trace, false)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (s *Server) log() Logger {
	s.logging.mu.Lock()
	defer s.logging.mu.Unlock()
	return s.logging.logger
}

// Noticef logs a notice.
func (s *Server) Noticef(format string, v ...any) {
	if l := s.log(); l != nil {
		l.Noticef(format, v...)
	}
}

// Warnf logs a warning.
func (s *Server) Warnf(format string, v ...any) {
	if l := s.log(); l != nil {
		l.Warnf(format, v...)
	}
}

// Errorf logs an error.
func (s *Server) Errorf(format string, v ...any) {
	if l := s.log(); l != nil {
		l.Errorf(format, v...)
	}
}

// Fatalf logs a fatal error (the standard loggers exit the process).
func (s *Server) Fatalf(format string, v ...any) {
	if l := s.log(); l != nil {
		l.Fatalf(format, v...)
	}
}

// Debugf logs when debug is on.
func (s *Server) Debugf(format string, v ...any) {
	if !s.logging.debug.Load() {
		return
	}
	if l := s.log(); l != nil {
		l.Debugf(format, v...)
	}
}

// Tracef logs when trace is on.
func (s *Server) Tracef(format string, v ...any) {
	if !s.logging.trace.Load() {
		return
	}
	if l := s.log(); l != nil {
		l.Tracef(format, v...)
	}
}
