//go:build linux

// Package memfuse mounts a vfs.MemFS as a real file system (FUSE), so that
// whole server processes can run on storage that keeps a write only once it
// was fsynced: a test kills every process, calls MemFS.Crash (a power cut)
// and mounts again to see what a machine would find after the cut.
//
// Every open is direct I/O (no kernel page cache) and attributes and names
// are not cached by the kernel, so what the processes see is exactly the
// MemFS. fsync of a file syncs its content; fsync of a directory syncs the
// creations, renames and removals in it (vfs.MemFS's model).
//
// It is test equipment: nothing in the server imports it.
package memfuse

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Mount is a mounted MemFS.
type Mount struct {
	Dir string
	srv *fuse.Server
}

// New mounts mem at dir (which must exist) and returns once the kernel
// serves it. The caller needs CAP_SYS_ADMIN (root) and /dev/fuse.
func New(dir string, mem *vfs.MemFS) (*Mount, error) {
	zero := time.Duration(0)
	root := &node{mem: mem}
	srv, err := gofs.Mount(dir, root, &gofs.Options{
		MountOptions: fuse.MountOptions{
			DirectMount: true,
			FsName:      "memfuse",
			Name:        "memfuse",
			MaxWrite:    1 << 20,
			// Reads are served from memory: splicing them buys nothing
			// and logs a complaint for every read larger than a pipe.
			DisableSplice: true,
		},
		EntryTimeout:    &zero,
		AttrTimeout:     &zero,
		NegativeTimeout: &zero,
	})
	if err != nil {
		return nil, err
	}
	return &Mount{Dir: dir, srv: srv}, nil
}

// Unmount detaches the file system; every process using it must have
// ended (or be killed) first.
func (m *Mount) Unmount() error {
	var err error
	for range 50 {
		if err = m.srv.Unmount(); err == nil {
			m.srv.Wait()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Available reports why FUSE cannot be used here (nil when it can).
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("memfuse: needs root to mount without fusermount")
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// node is one name in the MemFS; its path is its place in the tree.
type node struct {
	gofs.Inode
	mem *vfs.MemFS
}

var (
	_ gofs.NodeLookuper  = (*node)(nil)
	_ gofs.NodeGetattrer = (*node)(nil)
	_ gofs.NodeSetattrer = (*node)(nil)
	_ gofs.NodeReaddirer = (*node)(nil)
	_ gofs.NodeMkdirer   = (*node)(nil)
	_ gofs.NodeCreater   = (*node)(nil)
	_ gofs.NodeOpener    = (*node)(nil)
	_ gofs.NodeUnlinker  = (*node)(nil)
	_ gofs.NodeRmdirer   = (*node)(nil)
	_ gofs.NodeRenamer   = (*node)(nil)
	_ gofs.NodeLinker    = (*node)(nil)
	_ gofs.NodeFsyncer   = (*node)(nil)
)

func (n *node) path() string { return "/" + n.Path(nil) }

func (n *node) child(name string) string { return filepath.Join(n.path(), name) }

// errno maps a MemFS error to the errno a kernel file system would give.
func errno(err error) syscall.Errno {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, vfs.ErrCrashed):
		return syscall.EIO
	case errors.Is(err, os.ErrClosed):
		return syscall.EBADF
	}
	var se syscall.Errno
	if errors.As(err, &se) {
		return se
	}
	if strings.Contains(err.Error(), "not empty") {
		return syscall.ENOTEMPTY
	}
	return syscall.EIO
}

func fill(out *fuse.Attr, fi os.FileInfo) {
	out.Size = uint64(fi.Size())
	out.Blocks = (out.Size + 511) / 512
	out.Nlink = 1
	if fi.IsDir() {
		out.Mode = fuse.S_IFDIR | 0o755
		out.Nlink = 2
	} else {
		out.Mode = fuse.S_IFREG | 0o644
	}
}

func mode(fi os.FileInfo) uint32 {
	if fi.IsDir() {
		return fuse.S_IFDIR
	}
	return fuse.S_IFREG
}

func (n *node) newChild(ctx context.Context, name string, fi os.FileInfo) *gofs.Inode {
	if ch := n.GetChild(name); ch != nil && ch.StableAttr().Mode == mode(fi) {
		return ch
	}
	return n.NewInode(ctx, &node{mem: n.mem}, gofs.StableAttr{Mode: mode(fi)})
}

// entry describes the child name in out and returns its inode.
func (n *node) entry(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	fi, err := n.mem.Stat(n.child(name))
	if err != nil {
		return nil, errno(err)
	}
	fill(&out.Attr, fi)
	return n.newChild(ctx, name, fi), 0
}

// withFile runs f on a handle of this node's file opened for it.
func (n *node) withFile(f func(vfs.File) error) syscall.Errno {
	vf, err := n.mem.OpenFile(n.path(), os.O_RDWR, 0)
	if err != nil {
		return errno(err)
	}
	defer vf.Close()
	return errno(f(vf))
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	return n.entry(ctx, name, out)
}

func (n *node) Getattr(ctx context.Context, f gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fi, err := n.mem.Stat(n.path())
	if err != nil {
		return errno(err)
	}
	fill(&out.Attr, fi)
	return 0
}

// Setattr supports what the servers use: truncation (mode, owner and time
// changes are accepted and ignored).
func (n *node) Setattr(ctx context.Context, f gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		if h, ok := f.(*handle); ok && h.f != nil && !h.appnd {
			if err := h.f.Truncate(int64(size)); err != nil {
				return errno(err)
			}
		} else {
			if e := n.withFile(func(f vfs.File) error { return f.Truncate(int64(size)) }); e != 0 {
				return e
			}
		}
	}
	return n.Getattr(ctx, f, out)
}

func (n *node) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	ents, err := n.mem.ReadDir(n.path())
	if err != nil {
		return nil, errno(err)
	}
	list := make([]fuse.DirEntry, 0, len(ents))
	for _, e := range ents {
		m := uint32(fuse.S_IFREG)
		if e.IsDir() {
			m = fuse.S_IFDIR
		}
		list = append(list, fuse.DirEntry{Name: e.Name(), Mode: m})
	}
	return gofs.NewListDirStream(list), 0
}

func (n *node) Mkdir(ctx context.Context, name string, m uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	p := n.child(name)
	if _, err := n.mem.Stat(p); err == nil {
		return nil, syscall.EEXIST
	}
	if err := n.mem.MkdirAll(p, 0o755); err != nil {
		return nil, errno(err)
	}
	return n.entry(ctx, name, out)
}

func (n *node) Create(ctx context.Context, name string, flags, m uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	p := n.child(name)
	h, e := openHandle(n.mem, p, int(flags)|os.O_CREATE)
	if e != 0 {
		return nil, nil, 0, e
	}
	ino, e := n.entry(ctx, name, out)
	if e != 0 {
		h.f.Close()
		return nil, nil, 0, e
	}
	return ino, h, fuse.FOPEN_DIRECT_IO, 0
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	h, e := openHandle(n.mem, n.path(), int(flags))
	if e != 0 {
		return nil, 0, e
	}
	return h, fuse.FOPEN_DIRECT_IO, 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return errno(n.mem.Remove(n.child(name)))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	return errno(n.mem.Remove(n.child(name)))
}

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if flags != 0 {
		return syscall.EINVAL // no RENAME_NOREPLACE / EXCHANGE
	}
	to := filepath.Join("/"+newParent.EmbeddedInode().Path(nil), newName)
	if fi, err := n.mem.Stat(n.child(name)); err == nil && fi.IsDir() {
		return syscall.EXDEV // MemFS renames files only; callers fall back or fail visibly
	}
	return errno(n.mem.Rename(n.child(name), to))
}

func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	from := "/" + target.EmbeddedInode().Path(nil)
	p := n.child(name)
	if err := n.mem.Link(from, p); err != nil {
		return nil, errno(err)
	}
	return n.entry(ctx, name, out)
}

// Fsync syncs a file's content through its handle, or a directory's
// entries.
func (n *node) Fsync(ctx context.Context, f gofs.FileHandle, flags uint32) syscall.Errno {
	if h, ok := f.(*handle); ok && h.f != nil {
		return errno(h.f.Sync())
	}
	fi, err := n.mem.Stat(n.path())
	if err != nil {
		return errno(err)
	}
	if fi.IsDir() {
		return errno(n.mem.SyncDir(n.path()))
	}
	return n.withFile(vfs.File.Sync)
}

// handle is an open file.
type handle struct {
	f     vfs.File
	appnd bool
}

var (
	_ gofs.FileReader   = (*handle)(nil)
	_ gofs.FileWriter   = (*handle)(nil)
	_ gofs.FileFsyncer  = (*handle)(nil)
	_ gofs.FileReleaser = (*handle)(nil)
	_ gofs.FileFlusher  = (*handle)(nil)
)

func openHandle(mem *vfs.MemFS, p string, flags int) (*handle, syscall.Errno) {
	acc := flags & syscall.O_ACCMODE
	if acc == os.O_WRONLY {
		// Reads through a write-only descriptor never reach us; MemFS
		// refuses them anyway, and the kernel may read for itself.
		flags = flags&^syscall.O_ACCMODE | os.O_RDWR
	}
	keep := flags & (os.O_RDWR | os.O_WRONLY | os.O_CREATE | os.O_EXCL | os.O_TRUNC | os.O_APPEND)
	f, err := mem.OpenFile(p, keep, 0o644)
	if err != nil {
		return nil, errno(err)
	}
	return &handle{f: f, appnd: flags&os.O_APPEND != 0}, 0
}

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := h.f.ReadAt(dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, errno(err)
	}
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	var n int
	var err error
	if h.appnd {
		n, err = h.f.Write(data)
	} else {
		n, err = h.f.WriteAt(data, off)
	}
	if err != nil {
		return uint32(n), errno(err)
	}
	return uint32(n), 0
}

func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno { return errno(h.f.Sync()) }

func (h *handle) Flush(ctx context.Context) syscall.Errno { return 0 }

func (h *handle) Release(ctx context.Context) syscall.Errno {
	err := h.f.Close()
	if errors.Is(err, vfs.ErrCrashed) || errors.Is(err, os.ErrClosed) {
		return 0
	}
	return errno(err)
}
