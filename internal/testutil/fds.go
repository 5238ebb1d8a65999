// Package testutil holds helpers shared by the tests of several packages.
// Only test files import it.
package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// OpenFiles counts this process's descriptors open on files whose path
// keep accepts (from /proc/self/fd); it skips the test where there is no
// /proc/self/fd.
func OpenFiles(t testing.TB, keep func(path string) bool) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range ents {
		if p, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && keep(p) {
			n++
		}
	}
	return n
}
