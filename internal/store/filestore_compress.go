package store

import (
	"encoding/binary"

	"github.com/klauspost/compress/s2"
)

// A compressed block file (.blz) holds a sealed block's raw data in
// independently compressed chunks, so a damaged chunk loses only the
// records it covers:
//
//	header: "TBZ1" | 4 reserved | u64 raw length | u64 hash of the 16 bytes before
//	chunk:  u64 raw offset | u32 raw length | u32 compressed length |
//	        S2 block | u64 hash of the chunk bytes before it
const (
	blzMagic     = "TBZ1"
	blzHdrLen    = 24
	blzChunkHdr  = 16
	blzChunkRaw  = 64 << 10
	blzMaxRawLen = 1 << 31
)

// compressBlock encodes raw block data as a .blz file.
func compressBlock(raw []byte) []byte {
	out := make([]byte, blzHdrLen, blzHdrLen+len(raw)/2+64)
	copy(out, blzMagic)
	binary.LittleEndian.PutUint64(out[8:], uint64(len(raw)))
	binary.LittleEndian.PutUint64(out[16:], fsHash(out[:16]))
	var scratch []byte
	for off := 0; off < len(raw); off += blzChunkRaw {
		chunk := raw[off:min(off+blzChunkRaw, len(raw))]
		scratch = s2.Encode(scratch[:cap(scratch)], chunk)
		start := len(out)
		out = growBytes(out, blzChunkHdr+len(scratch)+8)
		binary.LittleEndian.PutUint64(out[start:], uint64(off))
		binary.LittleEndian.PutUint32(out[start+8:], uint32(len(chunk)))
		binary.LittleEndian.PutUint32(out[start+12:], uint32(len(scratch)))
		copy(out[start+blzChunkHdr:], scratch)
		end := start + blzChunkHdr + len(scratch)
		binary.LittleEndian.PutUint64(out[end:], fsHash(out[start:end]))
	}
	return out
}

// decompressBlock recovers the raw data of a .blz file. Damaged chunks are
// skipped and leave zeros in their place (which record parsing then treats
// as corruption); bad counts the compressed bytes skipped.
func decompressBlock(file []byte) (raw []byte, bad uint64) {
	total := -1
	pos := 0
	if len(file) >= blzHdrLen && string(file[:4]) == blzMagic &&
		binary.LittleEndian.Uint64(file[16:]) == fsHash(file[:16]) {
		if n := binary.LittleEndian.Uint64(file[8:]); n <= blzMaxRawLen {
			total = int(n)
		}
		pos = blzHdrLen
	}
	var tmp []byte
	for pos+blzChunkHdr+8 <= len(file) {
		off, n, next, ok := checkChunk(file, pos)
		if ok {
			tmp, ok = decodeChunk(tmp, file[pos+blzChunkHdr:next-8], n)
		}
		if !ok || (total >= 0 && off+n > total) {
			pos++
			bad++
			continue
		}
		if len(raw) < off+n {
			raw = append(raw, make([]byte, off+n-len(raw))...)
		}
		copy(raw[off:], tmp)
		pos = next
	}
	if total > len(raw) {
		raw = append(raw, make([]byte, total-len(raw))...)
	}
	return raw, bad
}

// checkChunk validates the chunk framing and hash at pos.
func checkChunk(file []byte, pos int) (off, n, next int, ok bool) {
	h := file[pos:]
	off64 := binary.LittleEndian.Uint64(h)
	n = int(binary.LittleEndian.Uint32(h[8:]))
	clen := int(binary.LittleEndian.Uint32(h[12:]))
	if off64 > blzMaxRawLen || n == 0 || n > 4*blzChunkRaw || clen > s2.MaxEncodedLen(n) || clen > len(h)-blzChunkHdr-8 {
		return 0, 0, 0, false
	}
	end := blzChunkHdr + clen
	if binary.LittleEndian.Uint64(h[end:]) != fsHash(h[:end]) {
		return 0, 0, 0, false
	}
	return int(off64), n, pos + end + 8, int(off64)+n <= blzMaxRawLen
}

func decodeChunk(dst, src []byte, n int) ([]byte, bool) {
	if dn, err := s2.DecodedLen(src); err != nil || dn != n {
		return dst, false
	}
	out, err := s2.Decode(dst[:cap(dst)], src)
	if err != nil || len(out) != n {
		return dst, false
	}
	return out, true
}
