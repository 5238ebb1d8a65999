package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Raft snapshots larger than memory. A stream's full snapshot holds every
// message, so one sent to a replica that fell behind is as large as the
// stream. The route that receives such a transfer writes it to a spool
// file instead of memory (raft_frag.go), and the snapshot goes through raft
// with its data left there: its Local is then a spooled reference naming a
// section of a file (stream_snapshot_kind.go). The raft log copies the section into its own
// snapshot file, the stream restores from it and a leader sends from it,
// each reading it as a stream (spooledSnap.open); code that needs the
// bytes (the meta group's snapshots, which are small) reads them in
// (snapshotBytes). A raft log's snapshot file of spooledMin bytes or more
// is read back as a reference too, at start and when it is to be sent.

// spooledMin is the size from which a raft transfer is spooled and a raft
// log's snapshot file is read as a reference; a variable for tests.
var spooledMin int64 = 64 << 20

// spoolDirName is the directory, beside the raft groups' directories, of
// transfers being received; it is emptied at start.
const spoolDirName = "_spool_"

// spooledSnap is snapshot data kept in the section [Off, Off+Size) of the
// file at Path. A raft log's snapshot file is replaced when the next
// snapshot is taken, so a reference to one carries the snapshot's Index,
// and the file must still start with it when it is read.
type spooledSnap struct {
	Path      string
	Off, Size int64
	Index     uint64 // 0: a spool file, which nothing replaces
}

var errSpoolReplaced = errors.New("the snapshot file was replaced by a later snapshot")

// open returns the file (for the caller to close) and a reader of the data.
func (s spooledSnap) open(fsys vfs.FS) (vfs.File, *io.SectionReader, error) {
	f, err := fsys.OpenFile(s.Path, os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	if s.Index != 0 {
		var head [snapMarkerLen + binary.MaxVarintLen64]byte
		n, _ := f.ReadAt(head[:], 0)
		b := bytes.TrimPrefix(head[:n], snapMarker) // raft_snapfile.go
		if idx, k := binary.Uvarint(b); k <= 0 || idx != s.Index {
			f.Close()
			return nil, nil, fmt.Errorf("snapshot %d in %s: %w", s.Index, s.Path, errSpoolReplaced)
		}
	}
	st, err := f.Stat()
	if err == nil && st.Size() < s.Off+s.Size {
		err = fmt.Errorf("snapshot file %s holds %d bytes, not %d", s.Path, st.Size(), s.Off+s.Size)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, io.NewSectionReader(f, s.Off, s.Size), nil
}

// snapshotBytes returns snapshot data in memory, reading a spooled one.
func snapshotBytes(fsys vfs.FS, snap raft.Snapshot) ([]byte, error) {
	var s spooledSnap
	switch local := snap.Local.(type) {
	case nil:
		return snap.Data, nil
	case interface{ snapshotRaw() []byte }: // a local kind (linkedSnap)
		return local.snapshotRaw(), nil
	case spooledSnap:
		s = local
	default:
		return nil, fmt.Errorf("snapshot of unknown kind %T", snap.Local)
	}
	f, sr, err := s.open(fsys)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, s.Size)
	if _, err := io.ReadFull(sr, b); err != nil {
		return nil, err
	}
	return b, nil
}

// removeSpooled deletes the spool file a snapshot's data is in (nothing
// for data in memory or in a raft log's snapshot file).
func (s *Server) removeSpooled(snap raft.Snapshot) {
	if sp, ok := snap.Local.(spooledSnap); ok && sp.Index == 0 && filepath.Dir(sp.Path) == s.spoolDir() {
		s.jsFS().Remove(sp.Path)
	}
}

// spoolDir is the directory transfers are spooled to ("" without
// JetStream: the transfer is then reassembled in memory).
func (s *Server) spoolDir() string {
	js := s.js.Load()
	if js == nil || js.storeDir == "" {
		return ""
	}
	return filepath.Join(js.storeDir, "_raft_", spoolDirName)
}

// spoolFile is a transfer's spool file and the file system it is on.
type spoolFile struct {
	vfs.File
	fs vfs.FS
}

// discard closes and deletes the spool file.
func (f *spoolFile) discard() {
	f.Close()
	f.fs.Remove(f.Name())
}

// jsFS is the file system under JetStream (the OS without JetStream).
func (s *Server) jsFS() vfs.FS {
	if js := s.js.Load(); js != nil && js.fs != nil {
		return js.fs
	}
	return vfs.Default
}

// createSpool creates the spool file of transfer id.
func (s *Server) createSpool(id uint64) (*spoolFile, error) {
	dir := s.spoolDir()
	if dir == "" {
		return nil, errors.New("no spool directory")
	}
	fsys := s.jsFS()
	if err := fsys.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	f, err := fsys.OpenFile(filepath.Join(dir, "recv-"+strconv.FormatUint(id, 10)+"-"+strconv.FormatUint(raftFragIDs.Add(1), 10)),
		os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return nil, err
	}
	return &spoolFile{File: f, fs: fsys}, nil
}

// deliverSpooled hands the raft message received into spool (total bytes:
// the group's name, then the message) to its group. A snapshot keeps its
// data in the file; anything else is read into memory.
func (s *Server) deliverSpooled(spool *spoolFile, total int) error {
	name := spool.Name()
	defer spool.Close()
	head := make([]byte, min(total, 64<<10))
	if _, err := spool.ReadAt(head, 0); err != nil {
		spool.fs.Remove(name)
		return err
	}
	n, k := binary.Uvarint(head)
	if k <= 0 || uint64(len(head)-k) < n {
		spool.fs.Remove(name)
		return errBadRaftMsg
	}
	group := string(head[k : k+int(n)])
	m, r, err := decodeRaftMsgHead(head[k+int(n):])
	size := int64(r.uvarint())
	off := int64(len(head) - len(r.b))
	if err != nil || r.err != nil || m.Snapshot == nil || off+size != int64(total) {
		// Not a snapshot whose head fits in head: read it all in, if no
		// larger than such a message can be (a snapshot's head is short).
		if total > raftMaxMsg {
			spool.fs.Remove(name)
			return fmt.Errorf("%w: %d bytes, not a snapshot", errBadRaftMsg, total)
		}
		buf := make([]byte, total)
		_, rerr := spool.ReadAt(buf, 0)
		spool.fs.Remove(name)
		if rerr != nil {
			return rerr
		}
		return s.deliverRaft(buf, true)
	}
	m.Snapshot.Data, m.Snapshot.Local = nil, spooledSnap{Path: name, Off: off, Size: size}
	g := s.raftGroup(group)
	if g == nil {
		spool.fs.Remove(name)
		return nil // not (yet) a member here
	}
	if g.inbox.push(m) {
		s.raft.spooledIn.Add(1)
	} else { // full: drop, raft retries
		spool.fs.Remove(name)
	}
	return nil
}
