//go:build race

package sim

// The race detector slows the simulator about tenfold; TestSimSeeds runs
// fewer seeds under it.
const raceEnabled = true
