package wal

import (
	"encoding/binary"

	"github.com/minio/highwayhash"
)

// Frame layout, little endian:
//
//	off size field
//	  0    4 length   len(data)
//	  4    8 checksum highwayhash-64 of bytes [0,4) and [12,end) (header+data)
//	 12    8 index
//	 20    8 term
//	 28    1 type
//	 29    n data
const (
	offLen   = 0
	offSum   = 4
	offIndex = 12
	offTerm  = 20
	offType  = 28
	hdrSize  = 29
)

// MaxRecordSize is the largest Data an Append accepts. Recovery treats a
// length field above it as a damaged frame.
const MaxRecordSize = 1 << 30

// metaType is the reserved record type of a state record (see doc.go).
// Append refuses it.
const metaType = 0xFF

// metaSize is the length of a state record's data.
const metaSize = 7 * 8

// maxIndex bounds log indexes, far from overflow.
const maxIndex = 1 << 62

var le = binary.LittleEndian

// hashKey is the fixed highwayhash key of every WAL checksum. It differs from
// the file store's key so that a block record can never pass as a WAL record.
var hashKey = []byte("tern wal record checksum key v1!")

// hashTemplate is a keyed, reset digest; checksum copies it so that
// concurrent callers never share hash state.
var hashTemplate = func() *highwayhash.Digest64 {
	d, err := highwayhash.NewDigest64(hashKey)
	if err != nil {
		panic(err)
	}
	return d
}()

// checksum hashes a whole frame except its checksum field.
func checksum(frame []byte) uint64 {
	d := *hashTemplate
	d.Write(frame[offLen:offSum])
	d.Write(frame[offIndex:])
	return d.Sum64()
}

// frameLen is the encoded size of a record with n bytes of data.
func frameLen(n int) int64 { return hdrSize + int64(n) }

// appendFrame encodes one record at the end of buf.
func appendFrame(buf []byte, index, term uint64, typ uint8, data []byte) []byte {
	start := len(buf)
	buf = append(buf, make([]byte, hdrSize)...)
	h := buf[start:]
	le.PutUint32(h[offLen:], uint32(len(data)))
	le.PutUint64(h[offIndex:], index)
	le.PutUint64(h[offTerm:], term)
	h[offType] = typ
	buf = append(buf, data...)
	le.PutUint64(buf[start+offSum:], checksum(buf[start:]))
	return buf
}

// frame is a decoded record; data aliases the buffer it was parsed from.
type frame struct {
	index, term uint64
	typ         uint8
	data        []byte
	size        int64 // encoded length
}

// parseFrame decodes the frame at the start of b. It reports false unless b
// starts with a complete frame whose checksum is valid.
func parseFrame(b []byte) (frame, bool) {
	if len(b) < hdrSize {
		return frame{}, false
	}
	n := int64(le.Uint32(b[offLen:]))
	if n > MaxRecordSize || n > int64(len(b)-hdrSize) {
		return frame{}, false
	}
	end := hdrSize + n
	if checksum(b[:end]) != le.Uint64(b[offSum:]) {
		return frame{}, false
	}
	return frame{
		index: le.Uint64(b[offIndex:]),
		term:  le.Uint64(b[offTerm:]),
		typ:   b[offType],
		data:  b[hdrSize:end],
		size:  end,
	}, true
}

// metaState is everything a state record carries besides the last index.
type metaState struct {
	hs        HardState
	base      uint64 // last compacted index: FirstIndex() == base+1
	baseTerm  uint64 // term of entry base
	snapIndex uint64 // last SaveSnapshotMeta
	snapTerm  uint64
}

// appendMeta encodes a state record; its index field holds the last log
// index at the point it is written, its term field the hard state's term.
func appendMeta(buf []byte, last uint64, m metaState) []byte {
	var d [metaSize]byte
	for i, v := range [...]uint64{m.hs.Term, m.hs.Vote, m.hs.Commit,
		m.base, m.baseTerm, m.snapIndex, m.snapTerm} {
		le.PutUint64(d[8*i:], v)
	}
	return appendFrame(buf, last, m.hs.Term, metaType, d[:])
}

// decodeMeta reads the state carried by a frame of type metaType.
func decodeMeta(f frame) (metaState, bool) {
	if len(f.data) != metaSize {
		return metaState{}, false
	}
	u := func(i int) uint64 { return le.Uint64(f.data[8*i:]) }
	m := metaState{
		hs:        HardState{Term: u(0), Vote: u(1), Commit: u(2)},
		base:      u(3),
		baseTerm:  u(4),
		snapIndex: u(5),
		snapTerm:  u(6),
	}
	if f.index > maxIndex || m.hs.Term != f.term || m.base > f.index || m.snapIndex > f.index {
		return metaState{}, false
	}
	return m, true
}
