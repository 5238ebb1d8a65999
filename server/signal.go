//go:build !windows

package server

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

var signalsByName = map[string]syscall.Signal{
	"stop": syscall.SIGKILL, "quit": syscall.SIGINT, "term": syscall.SIGTERM,
	"reopen": syscall.SIGUSR1, "reload": syscall.SIGHUP, "ldm": syscall.SIGUSR2,
}

// handleSignals wires SIGINT/SIGTERM (shutdown), SIGHUP (reload), SIGUSR1
// (reopen log) and SIGUSR2 (lame duck mode).
func (s *Server) handleSignals() {
	if s.getOpts().NoSigs {
		return
	}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for {
			select {
			case sig := <-ch:
				s.onSignal(sig)
			case <-s.done:
				signal.Stop(ch)
				return
			}
		}
	}()
}

func (s *Server) onSignal(sig os.Signal) {
	switch sig {
	case syscall.SIGINT, syscall.SIGTERM:
		if sig == syscall.SIGTERM && s.ldm.Load() {
			return
		}
		s.Noticef("Trapped %q signal", sig)
		go func() {
			s.Shutdown()
			os.Exit(0)
		}()
	case syscall.SIGHUP:
		s.Noticef("Trapped %q signal", sig)
		if err := s.Reload(); err != nil {
			s.Errorf("Failed to reload server configuration: %s", err)
		}
	case syscall.SIGUSR1:
		s.ConfigureLogger()
		s.Noticef("Reopened log file")
	case syscall.SIGUSR2:
		go s.lameDuckMode()
	}
}

// ProcessSignal sends the named signal to a running nats-server, as
// `nats-server --signal <cmd>[=<pid|pidfile>]` does.
func ProcessSignal(arg string) error {
	cmd, target, _ := strings.Cut(arg, "=")
	sig, ok := signalsByName[cmd]
	if !ok {
		return fmt.Errorf("unknown signal %q", cmd)
	}
	pids, err := resolvePids(target)
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			errs = append(errs, fmt.Errorf("signal %q %d: %v", cmd, pid, err))
		}
	}
	return errors.Join(errs...)
}

// resolvePids reads a pid, a pid file, or finds the running nats-server.
func resolvePids(target string) ([]int, error) {
	if target != "" {
		if pid, err := strconv.Atoi(target); err == nil {
			return []int{pid}, nil
		}
		b, err := os.ReadFile(target)
		if err != nil {
			return nil, fmt.Errorf("could not read pid file: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil, fmt.Errorf("invalid pid file %q", target)
		}
		return []int{pid}, nil
	}
	out, err := exec.Command("pgrep", "-x", "nats-server").Output()
	if err != nil {
		return nil, errors.New("no nats-server processes running")
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	switch len(pids) {
	case 0:
		return nil, errors.New("no nats-server processes running")
	case 1:
		return pids, nil
	}
	return nil, fmt.Errorf("multiple nats-server processes running: %v; specify a pid", pids)
}
