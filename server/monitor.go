package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type httpServer struct {
	srv *http.Server
	l   net.Listener
}

// startMonitoring serves the monitoring endpoints on http_port.
func (s *Server) startMonitoring() error {
	o := s.getOpts()
	port, scheme := o.HTTPPort, "http"
	if o.HTTPSPort != 0 {
		port, scheme = o.HTTPSPort, "https"
	}
	if port == RANDOM_PORT {
		port = 0
	}
	l, err := net.Listen("tcp", net.JoinHostPort(o.HTTPHost, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	s.Noticef("Starting %s monitor on %s", scheme, l.Addr())
	if scheme == "https" {
		l = s.monitorTLSListener(l)
	}
	mux := http.NewServeMux()
	base := strings.TrimSuffix(o.HTTPBasePath, "/")
	routes := map[string]http.HandlerFunc{
		"/":               s.handleRoot,
		"/varz":           s.jsonHandler(func(*http.Request) (any, int) { return s.varz(), 200 }),
		"/connz":          s.jsonHandler(s.handleConnz),
		"/subsz":          s.jsonHandler(s.handleSubsz),
		"/subscriptionsz": s.jsonHandler(s.handleSubsz),
		"/accountz":       s.jsonHandler(func(*http.Request) (any, int) { return s.accountz(), 200 }),
		"/routez":         s.jsonHandler(func(*http.Request) (any, int) { return s.routez(), 200 }),
		"/healthz":        s.jsonHandler(s.handleHealthz),
		"/jsz":            s.jsonHandler(s.handleJsz),
	}
	for path, h := range routes {
		mux.HandleFunc(base+path, h)
	}
	h := s.serveHTTP(l, mux)
	s.mu.Lock()
	s.http = h
	s.mu.Unlock()
	return nil
}

// serveHTTP serves mux on l until the server stops (monitoring, profiling).
func (s *Server) serveHTTP(l net.Listener, mux *http.ServeMux) *httpServer {
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: s.httpErrorLog()}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = hs.Serve(l)
	}()
	return &httpServer{srv: hs, l: l}
}

func (s *Server) stopMonitoring() {
	s.mu.Lock()
	h := s.http
	s.mu.Unlock()
	if h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = h.srv.Shutdown(ctx)
	}
}

// MonitorAddr returns the monitoring listener address, nil when off.
func (s *Server) MonitorAddr() *net.TCPAddr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.http == nil {
		return nil
	}
	a, _ := s.http.l.Addr().(*net.TCPAddr)
	return a
}

func (s *Server) jsonHandler(f func(*http.Request) (any, int)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, code := f(r)
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if cb := r.URL.Query().Get("callback"); cb != "" {
			w.Header().Set("Content-Type", "application/javascript")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(cb + "("))
			_, _ = w.Write(b)
			_, _ = w.Write([]byte(")"))
			return
		}
		w.WriteHeader(code)
		_, _ = w.Write(b)
	}
}

func (s *Server) handleRoot(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" && r.URL.Path != s.getOpts().HTTPBasePath {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html")
	_, _ = w.Write([]byte("<html><body><h1>Tern (nats-server " + VERSION + ")</h1><ul>" +
		"<li><a href=\"varz\">varz</a></li><li><a href=\"connz\">connz</a></li><li><a href=\"subsz\">subsz</a></li>" +
		"<li><a href=\"accountz\">accountz</a></li><li><a href=\"routez\">routez</a></li><li><a href=\"healthz\">healthz</a></li>" +
		"</ul></body></html>"))
}

// HealthStatus is /healthz's answer.
type HealthStatus struct {
	Status     string `json:"status"`
	StatusCode int    `json:"status_code,omitempty"`
	Error      string `json:"error,omitempty"`
}

func (s *Server) healthz() *HealthStatus {
	if !s.Running() {
		return &HealthStatus{Status: "unavailable", StatusCode: 503, Error: "server not running"}
	}
	return &HealthStatus{Status: "ok", StatusCode: 200}
}

func (s *Server) handleHealthz(r *http.Request) (any, int) {
	h := s.healthz()
	if h.StatusCode == 200 {
		if jh := s.jsHealth(r); jh != nil {
			h = jh
		}
	}
	code := h.StatusCode
	h.StatusCode = 0
	return h, code
}
