//go:build !race

package server

import "testing"

// TestNoRaceSimStream runs the stream simulator over 2,000 seeds (about
// three minutes on two cores); scripts/sim runs as many as asked.
func TestNoRaceSimStream(t *testing.T) {
	runSimSeeds(t, 1001, 2000)
}
