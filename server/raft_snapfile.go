package server

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash"
	"io"

	"github.com/minio/highwayhash"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A raft snapshot file (raft_log.go) starts with a marker and ends with a
// trailer: the highwayhash of every byte before it and a fixed tag,
//
//	"\x00TS1" | [index][term][npeers][peers...][data] | u64 hash | "TSNAPv1\n"
//
// so that a flipped bit, a truncation or a file cut short is found when the
// file is loaded (issue 19), not when its data fails to decode or, worse,
// decodes to a different state. The marker's zero byte would be index 0,
// which no snapshot has, so a file written before the checksum existed
// (neither marker nor tag) is told apart and read as before, unverified
// (an upgraded server keeps its snapshots); a file with only one of the
// two is damaged. A damaged file is errSnapshotCorrupt: a stream replica
// discards its state and catches up from the other replicas
// (stream_repair.go damagedLog).

var (
	snapMarker     = []byte("\x00TS1")
	snapTrailerTag = []byte("TSNAPv1\n")
	snapSumKey     = []byte("tern-raft-snapshot-file-sum-key!")
	// errSnapshotCorrupt: a raft snapshot file whose trailer is missing
	// or does not match its content.
	errSnapshotCorrupt = errors.New("raft snapshot file damaged")
)

const (
	snapMarkerLen  = 4
	snapTrailerLen = 16
)

func newSnapHash() hash.Hash64 {
	h, err := highwayhash.New64(snapSumKey)
	if err != nil {
		panic(err) // the key is 32 bytes
	}
	return h
}

// snapTrailer is the trailer of a file made of parts.
func snapTrailer(parts ...[]byte) []byte {
	h := newSnapHash()
	for _, p := range parts {
		h.Write(p)
	}
	return appendSnapTrailer(nil, h)
}

func appendSnapTrailer(b []byte, h hash.Hash64) []byte {
	b = binary.LittleEndian.AppendUint64(b, h.Sum64())
	return append(b, snapTrailerTag...)
}

// summingReader yields r's bytes and then their trailer.
type summingReader struct {
	r    io.Reader
	h    hash.Hash64
	tail []byte // the trailer, once r is exhausted
	done bool
}

func newSummingReader(head []byte, r io.Reader) *summingReader {
	h := newSnapHash()
	h.Write(head)
	return &summingReader{r: r, h: h}
}

func (s *summingReader) Read(p []byte) (int, error) {
	if !s.done {
		n, err := s.r.Read(p)
		s.h.Write(p[:n])
		if err == io.EOF {
			s.done, s.tail = true, appendSnapTrailer(nil, s.h)
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	if len(s.tail) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.tail)
	s.tail = s.tail[n:]
	return n, nil
}

// verifySnapshotFile reads the whole snapshot file f of size bytes and
// checks its trailer; it returns the length of the marker before the head
// and of the content before the trailer. A file written before the
// checksum (no marker, no tag) is returned whole, unverified.
func verifySnapshotFile(f vfs.File, size int64) (skip int, n int64, err error) {
	var mk [snapMarkerLen]byte
	k, _ := f.ReadAt(mk[:], 0)
	marked := k == len(mk) && bytes.Equal(mk[:], snapMarker)
	var tr [snapTrailerLen]byte
	tagged := false
	if size >= int64(len(mk)+snapTrailerLen) {
		k, _ := f.ReadAt(tr[:], size-snapTrailerLen)
		tagged = k == len(tr) && bytes.Equal(tr[8:], snapTrailerTag)
	}
	switch {
	case !marked && !tagged && size > 0 && mk[0] != 0:
		return 0, size, nil // written before the checksum
	case !marked || !tagged:
		return 0, 0, errSnapshotCorrupt
	}
	n = size - snapTrailerLen
	h := newSnapHash()
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, n), make([]byte, 256<<10)); err != nil {
		return 0, 0, err
	}
	if h.Sum64() != binary.LittleEndian.Uint64(tr[:8]) {
		return 0, 0, errSnapshotCorrupt
	}
	return len(snapMarker), n, nil
}
