package server

import (
	"encoding/binary"
	"errors"
	"os"

	"github.com/tern-mq/nats-server/internal/vfs"
)

// A block's subject index file (NNNNNNNNNN.idx) is written when the block
// is sealed and rebuilt from the block when missing or damaged:
//
//	"TIX1" | u32 block index | uvarint first, last
//	uvarint subjects, each: uvarint length, bytes, uvarint count,
//	    count uvarint offset deltas (offset = seq-first, ascending)
//	last-first+1 uvarint accounted sizes
//	u64 hash of everything before
const idxMagic = "TIX1"

var errBadIndex = errors.New("bad index file")

func encodeIndex(b *msgBlock, x *blockIndex) []byte {
	var n uint64
	if b.first != 0 {
		n = b.last - b.first + 1
	}
	out := append([]byte(idxMagic), 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(out[4:], b.index)
	out = binary.AppendUvarint(out, b.first)
	out = binary.AppendUvarint(out, b.last)
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
	for i := uint64(0); i < n; i++ {
		var size uint32
		if i < uint64(len(x.sizes)) {
			size = x.sizes[i]
		}
		out = binary.AppendUvarint(out, uint64(size))
	}
	return binary.LittleEndian.AppendUint64(out, fsHash(out))
}

// decodeIndex parses an index file for block b; it must describe exactly
// b's message range.
func decodeIndex(b *msgBlock, data []byte) (*blockIndex, error) {
	if len(data) < 16 || string(data[:4]) != idxMagic ||
		binary.LittleEndian.Uint64(data[len(data)-8:]) != fsHash(data[:len(data)-8]) {
		return nil, errBadIndex
	}
	r := &byteReader{b: data[8 : len(data)-8]}
	if binary.LittleEndian.Uint32(data[4:]) != b.index || r.uvarint() != b.first || r.uvarint() != b.last || b.first == 0 {
		return nil, errBadIndex
	}
	n := b.last - b.first + 1
	x := newBlockIndex()
	x.ids, x.sizes = make([]uint32, n), make([]uint32, n)
	for i := range x.ids {
		x.ids[i] = noID
	}
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
	for i := range x.sizes {
		x.sizes[i] = uint32(r.uvarint())
	}
	if r.bad || len(r.b) != 0 {
		return nil, errBadIndex
	}
	return x, nil
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

func (r *byteReader) u64() uint64 {
	b := r.bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
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
	f, err := fs.fsys.OpenFile(indexName(fs.dir, b.index), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return err
	}
	_, err = f.Write(encodeIndex(b, b.idx))
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
