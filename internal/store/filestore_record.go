package store

import (
	"encoding/binary"

	"github.com/minio/highwayhash"
)

// Block files are a sequence of records. Every record is
//
//	off  size
//	0    4   total length of the record, checksum included (little endian)
//	4    1   kind (recMsg, recDel, recErased, recFirst, recBase)
//	5    1   reserved, 0
//	6    2   subject length
//	8    8   sequence
//	16   8   timestamp (unix ns; 0 when not a message)
//	24   4   header length
//	28   ..  subject, header, payload
//	end-8 8  highwayhash-64 of every byte before it, with fsHashKey
//
// A record is valid only when its length fits, its kind is known, its
// lengths add up and its checksum matches; nothing else is ever served.
const (
	recMsg    byte = 1 // a message
	recDel    byte = 2 // tombstone: message seq was removed
	recErased byte = 3 // a message whose header and payload were zeroed
	recFirst  byte = 4 // every sequence below seq is removed (last >= seq-1)
	recBase   byte = 5 // block header or skip marker: last >= seq

	recHdrLen   = 28
	recSumLen   = 8
	recOverhead = recHdrLen + recSumLen
	// recMaxLen bounds a record; larger length fields are corruption.
	recMaxLen = 1 << 30
)

// fsHashKey is the fixed highwayhash key of every checksum the file store
// writes (records, compressed chunks, index and checkpoint files).
var fsHashKey = []byte("tern-filestore-hash-key-v1-32by!")

func fsHash(b []byte) uint64 { return highwayhash.Sum64(b, fsHashKey) }

// record is a decoded view of one record; its slices point into the data.
type record struct {
	kind byte
	seq  uint64
	ts   int64
	subj []byte
	hdr  []byte
	msg  []byte
	size int // total length
}

const growBytesMin = 256

// recSize is the encoded length of a record.
func recSize(subj string, hdr, msg []byte) int {
	return recOverhead + len(subj) + len(hdr) + len(msg)
}

// appendRecord encodes a record at the end of buf.
func appendRecord(buf []byte, kind byte, seq uint64, ts int64, subj string, hdr, msg []byte) []byte {
	n := recSize(subj, hdr, msg)
	start := len(buf)
	buf = growBytes(buf, n)
	b := buf[start:]
	binary.LittleEndian.PutUint32(b[0:], uint32(n))
	b[4], b[5] = kind, 0
	binary.LittleEndian.PutUint16(b[6:], uint16(len(subj)))
	binary.LittleEndian.PutUint64(b[8:], seq)
	binary.LittleEndian.PutUint64(b[16:], uint64(ts))
	binary.LittleEndian.PutUint32(b[24:], uint32(len(hdr)))
	p := recHdrLen + copy(b[recHdrLen:], subj)
	p += copy(b[p:], hdr)
	p += copy(b[p:], msg)
	binary.LittleEndian.PutUint64(b[p:], fsHash(b[:p]))
	return buf
}

// growBytes extends b by n bytes, reallocating geometrically from
// growBytesMin: an idle stream's active block holding one small message
// kept 4 KiB (40 MB a server at 10,000 streams).
func growBytes(b []byte, n int) []byte {
	if len(b)+n > cap(b) {
		nb := make([]byte, len(b), max(2*cap(b), len(b)+n, growBytesMin))
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// decodeRecord decodes the record at off without verifying the checksum;
// ok is false when the framing does not fit in data.
func decodeRecord(data []byte, off int) (r record, ok bool) {
	if off < 0 || off > len(data)-recOverhead {
		return r, false
	}
	b := data[off:]
	n := int(binary.LittleEndian.Uint32(b))
	slen := int(binary.LittleEndian.Uint16(b[6:]))
	hlen := int(binary.LittleEndian.Uint32(b[24:]))
	if n < recOverhead || n > len(b) || n > recMaxLen || hlen > n || slen+hlen > n-recOverhead {
		return r, false
	}
	r.kind = b[4]
	if r.kind < recMsg || r.kind > recBase || b[5] != 0 {
		return r, false
	}
	r.seq = binary.LittleEndian.Uint64(b[8:])
	r.ts = int64(binary.LittleEndian.Uint64(b[16:]))
	r.subj = b[recHdrLen : recHdrLen+slen]
	r.hdr = b[recHdrLen+slen : recHdrLen+slen+hlen]
	r.msg = b[recHdrLen+slen+hlen : n-recSumLen]
	r.size = n
	return r, true
}

// checkRecord decodes and verifies the record at off.
func checkRecord(data []byte, off int) (record, bool) {
	r, ok := decodeRecord(data, off)
	if !ok {
		return r, false
	}
	end := off + r.size
	if binary.LittleEndian.Uint64(data[end-recSumLen:end]) != fsHash(data[off:end-recSumLen]) {
		return r, false
	}
	return r, true
}

// resync finds the first offset after off holding a valid record, or -1.
func resync(data []byte, off int) int {
	for p := off + 1; p <= len(data)-recOverhead; p++ {
		if _, ok := checkRecord(data, p); ok {
			return p
		}
	}
	return -1
}

// eraseRecord rewrites the message record at off in place as an erased
// record of the same length: subject kept, header and payload zeroed.
func eraseRecord(data []byte, off int) bool {
	r, ok := decodeRecord(data, off)
	if !ok || r.kind != recMsg {
		return false
	}
	b := data[off : off+r.size]
	b[4] = recErased
	clear(b[recHdrLen+len(r.subj) : r.size-recSumLen])
	binary.LittleEndian.PutUint64(b[r.size-recSumLen:], fsHash(b[:r.size-recSumLen]))
	return true
}

// msgSizeOfRecord is the accounted size (StoredMsgSize) of a message record
// of total length n.
func msgSizeOfRecord(n int) uint64 { return uint64(n - recOverhead + 30) }
