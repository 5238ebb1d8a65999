package server

import (
	"net"
	"net/http"
	"net/http/pprof"
	"runtime"
	"strconv"
)

// startProfiling serves Go's pprof endpoints on prof_port (--profile), as
// nats-server does, on the monitoring host.
func (s *Server) startProfiling() error {
	o := s.getOpts()
	l, err := net.Listen("tcp", net.JoinHostPort(o.HTTPHost, strconv.Itoa(max(o.ProfPort, 0))))
	if err != nil {
		return err
	}
	s.Noticef("profiling port: %d", l.Addr().(*net.TCPAddr).Port)
	if o.ProfBlockRate > 0 {
		runtime.SetBlockProfileRate(o.ProfBlockRate) // prof_block_rate, as nats-server
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	h := s.serveHTTP(l, mux)
	s.mu.Lock()
	s.prof = h
	s.mu.Unlock()
	return nil
}

func (s *Server) stopProfiling() {
	s.mu.Lock()
	p := s.prof
	s.prof = nil
	s.mu.Unlock()
	if p != nil {
		_ = p.srv.Close()
	}
}
