package server

import (
	"fmt"
	"os"
)

// Run starts the server and its signal handling.
func Run(s *Server) error {
	s.handleSignals()
	for _, w := range s.getOpts().configWarnings {
		s.Warnf("%s", w)
	}
	s.Start()
	if !s.Running() {
		return fmt.Errorf("server failed to start")
	}
	return nil
}

// PrintServerAndExit prints the version and exits.
func PrintServerAndExit() {
	fmt.Printf("nats-server: v%s (tern %s)\n", VERSION, TernVersion)
	os.Exit(0)
}

// PrintAndDie prints msg to stderr and exits with status 1.
func PrintAndDie(msg string) {
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(1)
}

// PrintTLSHelpAndDie explains that TLS is not supported yet.
func PrintTLSHelpAndDie() {
	fmt.Println("TLS options are not supported by this version of Tern yet.")
	os.Exit(0)
}
