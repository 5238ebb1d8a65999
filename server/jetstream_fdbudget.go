package server

import (
	"syscall"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// The open-file budget of the stores and raft logs (Tern only; nats-server
// has no such setting): every file JetStream opens through its file
// system counts against jetstream { max_open_files }, and when more are
// open the least recently used ones that no operation is using and that
// hold no unsynced write are closed, and opened again on their next use
// (internal/vfs Pool, policy internal/fdlru). Busy streams keep their
// files; the limit is soft (files in use or with unsynced writes stay
// open over it).
var (
	minDefaultOpenFiles uint64 = 256  // floor of the derived default
	maxDefaultOpenFiles uint64 = 1024 // ceiling of the derived default (tests lower both)
)

// maxOpenFiles is the budget: the configured one, or a quarter of the
// process's descriptor limit (the rest for clients, routes and others)
// between minDefaultOpenFiles and maxDefaultOpenFiles.
func (o *Options) maxOpenFiles() int {
	if o.JetStreamMaxOpenFiles > 0 {
		return o.JetStreamMaxOpenFiles
	}
	return defaultMaxOpenFiles(rlimitNoFile())
}

func defaultMaxOpenFiles(nofile uint64) int {
	return int(min(max(nofile/4, minDefaultOpenFiles), maxDefaultOpenFiles))
}

// rlimitNoFile is the soft RLIMIT_NOFILE (Go raises it to the hard limit
// at start), 0 when unknown.
func rlimitNoFile() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}

// budgetFS puts JetStream's file system under the open-file budget. The
// deterministic simulator (a raft host) keeps its file system as it is.
func budgetFS(base vfs.FS, o *Options) vfs.FS {
	if o.raftHost != nil {
		return base
	}
	return vfs.NewPool(base, o.maxOpenFiles())
}

// openFilesStats fills /jsz's open-file figures (Tern only).
func (js *jetStream) openFilesStats(info *JSInfo) {
	if p, ok := js.fs.(*vfs.Pool); ok {
		info.MaxOpenFiles, info.OpenFiles, info.FileReopens = p.Stats()
	}
}

// reloadOpenFiles applies a reloaded max_open_files.
func (s *Server) reloadOpenFiles(o *Options) {
	if js := s.js.Load(); js != nil {
		if p, ok := js.fs.(*vfs.Pool); ok {
			p.SetLimit(o.maxOpenFiles())
		}
	}
}
