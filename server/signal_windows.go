package server

import "errors"

func (s *Server) handleSignals() {}

// ProcessSignal is not supported on Windows yet.
func ProcessSignal(string) error { return errors.New("signals are not supported on windows") }
