package vfs

import (
	"os"
	"syscall"
)

// openOS opens name as os.OpenFile does, but without offering the
// descriptor to the runtime's network poller: os.OpenFile does that for
// every file (four fcntl calls and an epoll_ctl that fails with EPERM for
// a regular file or a directory), which was a third of the system calls
// of a stream's creation. os.NewFile reads the flags once (one fcntl) and
// leaves the descriptor blocking, as the poller's refusal does anyway.
func openOS(name string, flag int, perm os.FileMode) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}
