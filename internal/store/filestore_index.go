package store

import (
	"encoding/binary"
	"errors"
	"os"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A block's subject index file (NNNNNNNNNN.idx) is written when the block
// is sealed and rebuilt from the block when missing or damaged:
//
//	header: "TIX2" | u32 block index | u64 first | u64 last | u32 n | u32 0
//	table:  n × (u32 record offset in the raw data or 0xFFFFFFFF, u32 accounted size)
//	uvarint subjects, each: uvarint length, bytes, uvarint count,
//	    count uvarint deltas of offsets (seq-first, ascending)
//	u64 hash of everything before
//
// The fixed-width table lets a random read find one record with an 8-byte
// read, without loading the index (the record's own checksum and sequence
// are checked; on any doubt the whole block is loaded).
const (
	idxMagic  = "TIX2"
	idxHdrLen = 32
)

var errBadIndex = errors.New("bad index file")

func encodeIndex(b *msgBlock, x *blockIndex) []byte {
	var n uint64
	if b.first != 0 {
		n = b.last - b.first + 1
	}
	out := make([]byte, idxHdrLen, idxHdrLen+8*n+16*uint64(len(x.subjs))+4*n+8)
	copy(out, idxMagic)
	binary.LittleEndian.PutUint32(out[4:], b.index)
	binary.LittleEndian.PutUint64(out[8:], b.first)
	binary.LittleEndian.PutUint64(out[16:], b.last)
	binary.LittleEndian.PutUint32(out[24:], uint32(n))
	for i := uint64(0); i < n; i++ {
		off, size := noOff, uint32(0)
		if i < uint64(len(x.recOff)) && i < uint64(len(x.sizes)) {
			off, size = x.recOff[i], x.sizes[i]
		}
		out = binary.LittleEndian.AppendUint32(out, off)
		out = binary.LittleEndian.AppendUint32(out, size)
	}
	out = binary.AppendUvarint(out, uint64(len(x.subjs)))
	for id, s := range x.subjs {
		out = binary.AppendUvarint(out, uint64(len(s)))
		out = append(out, s...)
		posts := x.posts[id]
		for len(posts) > 0 && uint64(posts[len(posts)-1]) >= n {
			posts = posts[:len(posts)-1]
		}
		out = binary.AppendUvarint(out, uint64(len(posts)))
		prev := uint32(0)
		for _, p := range posts {
			out = binary.AppendUvarint(out, uint64(p-prev))
			prev = p
		}
	}
	return binary.LittleEndian.AppendUint64(out, fsHash(out))
}

// decodeIndex parses an index file for block b; it must describe exactly
// b's message range.
func decodeIndex(b *msgBlock, data []byte) (*blockIndex, error) {
	if len(data) < idxHdrLen+8 || string(data[:4]) != idxMagic ||
		binary.LittleEndian.Uint64(data[len(data)-8:]) != fsHash(data[:len(data)-8]) {
		return nil, errBadIndex
	}
	n := uint64(binary.LittleEndian.Uint32(data[24:]))
	if binary.LittleEndian.Uint32(data[4:]) != b.index || binary.LittleEndian.Uint64(data[8:]) != b.first ||
		binary.LittleEndian.Uint64(data[16:]) != b.last || b.first == 0 || n != b.last-b.first+1 ||
		uint64(len(data)) < idxHdrLen+8*n+8 {
		return nil, errBadIndex
	}
	x := &blockIndex{byName: map[string]uint32{}} // the name map finds duplicates
	x.ids, x.sizes, x.recOff = make([]uint32, n), make([]uint32, n), make([]uint32, n)
	for i := range x.ids {
		t := data[idxHdrLen+8*i:]
		x.ids[i], x.recOff[i], x.sizes[i] = noID, binary.LittleEndian.Uint32(t), binary.LittleEndian.Uint32(t[4:])
	}
	r := &byteReader{b: data[idxHdrLen+8*n : len(data)-8]}
	nsubj := r.uvarint()
	for s := uint64(0); s < nsubj && !r.bad; s++ {
		name := string(r.bytes(r.uvarint()))
		if _, dup := x.byName[name]; dup || r.bad {
			return nil, errBadIndex
		}
		id := x.newSubject(name)
		cnt, off := r.uvarint(), uint64(0)
		if cnt > n {
			return nil, errBadIndex
		}
		x.posts[id] = make([]uint32, 0, cnt)
		for k := uint64(0); k < cnt && !r.bad; k++ {
			d := r.uvarint()
			off += d
			if (k > 0 && d == 0) || off >= n || x.ids[off] != noID {
				return nil, errBadIndex
			}
			x.ids[off] = id
			x.posts[id] = append(x.posts[id], uint32(off))
		}
	}
	if r.bad || len(r.b) != 0 {
		return nil, errBadIndex
	}
	return x, nil
}

// indexEntry reads the table entry of offset i from b's index file without
// loading the index: the record offset and accounted size.
func (fs *fileStore) indexEntry(b *msgBlock, i uint64) (uint32, uint32, bool) {
	f, err := fs.rdx.open(fs, b.index, func() string { return indexName(fs.dir, b.index) })
	if err != nil {
		return 0, 0, false
	}
	var e [8]byte
	if _, err := f.ReadAt(e[:], int64(idxHdrLen+8*i)); err != nil {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint32(e[:]), binary.LittleEndian.Uint32(e[4:]), true
}

// byteReader decodes varints and byte strings, remembering any overrun.
type byteReader struct {
	b   []byte
	bad bool
}

func (r *byteReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *byteReader) bytes(n uint64) []byte {
	if n > uint64(len(r.b)) {
		r.bad = true
		r.b = nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

// readIndexFile loads b's index file; nil when missing or not matching.
func (fs *fileStore) readIndexFile(b *msgBlock) *blockIndex {
	if b.first == 0 {
		return nil
	}
	data, err := vfs.ReadFile(fs.fsys, indexName(fs.dir, b.index))
	if err != nil {
		return nil
	}
	x, err := decodeIndex(b, data)
	if err != nil {
		fs.logf("index of block %d ignored: %v", b.index, err)
		return nil
	}
	return x
}

// writeIndexFile writes b's index file; with sync it is synced with the
// block files at the next Sync (a block being sealed), else not (an index
// rebuilt from its block). A lost or torn index is detected by its hash
// and rebuilt from the block.
func (fs *fileStore) writeIndexFile(b *msgBlock, sync bool) error {
	if b.first == 0 || b.idx == nil {
		return nil
	}
	// Written aside and renamed into place: a snapshot directory may link
	// the old file (filestore_snapshot.go), which must not change.
	name := indexName(fs.dir, b.index)
	if fs.rdx.index == b.index {
		fs.rdx.drop() // it would read the replaced file
	}
	f, err := fs.fsys.OpenFile(name+".tmp", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	_, err = f.Write(encodeIndex(b, b.idx))
	if err == nil {
		err = fs.fsys.Rename(name+".tmp", name)
	}
	fs.disk.dirDirty = true
	if err != nil || !sync {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	fs.disk.unsynced = append(fs.disk.unsynced, f)
	return nil
}
