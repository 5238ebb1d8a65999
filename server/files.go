package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

func (s *Server) writePidFile() {
	o := s.getOpts()
	if o.PidFile == "" {
		return
	}
	if err := os.WriteFile(o.PidFile, []byte(strconv.Itoa(os.Getpid())), 0o660); err != nil {
		s.Errorf("Could not write pidfile: %v", err)
	}
}

func (s *Server) removePidFile() {
	if o := s.getOpts(); o.PidFile != "" {
		_ = os.Remove(o.PidFile)
	}
	if p := s.portsFilePath(); p != "" {
		_ = os.Remove(p)
	}
}

// Ports lists the URLs the server listens on, as the ports file writes them.
type Ports struct {
	Nats       []string `json:"nats,omitempty"`
	Monitoring []string `json:"monitoring,omitempty"`
	Cluster    []string `json:"cluster,omitempty"`
}

// PortsInfo returns the listening URLs.
func (s *Server) PortsInfo() *Ports {
	p := &Ports{Nats: []string{s.ClientURL()}}
	if a := s.MonitorAddr(); a != nil {
		p.Monitoring = []string{"http://" + a.String()}
	}
	return p
}

func (s *Server) portsFilePath() string {
	o := s.getOpts()
	if o.PortsFileDir == "" {
		return ""
	}
	exe := filepath.Base(os.Args[0])
	return filepath.Join(o.PortsFileDir, fmt.Sprintf("%s_%d.ports", exe, os.Getpid()))
}

func (s *Server) writePortsFile() {
	path := s.portsFilePath()
	if path == "" {
		return
	}
	b, _ := json.Marshal(s.PortsInfo())
	if err := os.WriteFile(path, b, 0o666); err != nil {
		s.Errorf("Error writing ports file (%s): %v", path, err)
	}
}
