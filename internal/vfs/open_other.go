//go:build !linux

package vfs

import "os"

// openOS is os.OpenFile (open_linux.go says why Linux differs).
func openOS(name string, flag int, perm os.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
