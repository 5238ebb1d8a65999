package server

import "testing"

// TestFreePortNeverRepeats: a port handed out once is not handed out again
// in the same process. With independent random draws, 1,000 ports out of
// the ~22,000 below the ephemeral range repeat almost surely (birthday
// bound), which once gave two servers of one cluster the same route port.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := make(map[int]bool)
	for range 1000 {
		p := freePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
