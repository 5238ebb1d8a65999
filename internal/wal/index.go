package wal

// entLoc locates a live entry.
type entLoc struct {
	seg  *segment
	off  int64
	term uint64
	size uint32 // len(Data)
}

// locChunk is the number of locations per chunk of a locIndex.
const locChunk = 4096

// locFirst is the capacity a locIndex's first chunk starts with: a log that
// stays short (an idle group's, between snapshots) holds a few hundred bytes
// of index instead of a full chunk (128 KiB).
const locFirst = 16

// locIndex is the in-memory index of the live entries, entry k of the log
// (counting from FirstIndex) at position k. It is stored in chunks so that a
// long log grows without copying and compaction frees whole chunks; only a
// lone chunk grows by doubling up to locChunk, and a lone chunk that
// compaction left mostly empty is copied into a small one.
type locIndex struct {
	chunks [][]entLoc // every chunk but the last is full
	skip   int        // positions dropped from the front of chunks[0]
	n      int
}

func (x *locIndex) len() int { return x.n }

func (x *locIndex) at(k int) *entLoc {
	j := k + x.skip
	return &x.chunks[j/locChunk][j%locChunk]
}

func (x *locIndex) push(e entLoc) {
	c := len(x.chunks)
	switch {
	case c == 0:
		x.chunks = append(x.chunks, make([]entLoc, 0, locFirst))
	case len(x.chunks[c-1]) == locChunk:
		x.chunks = append(x.chunks, make([]entLoc, 0, locChunk))
	case len(x.chunks[c-1]) == cap(x.chunks[c-1]):
		grown := make([]entLoc, len(x.chunks[c-1]), min(2*cap(x.chunks[c-1]), locChunk))
		copy(grown, x.chunks[c-1])
		x.chunks[c-1] = grown
	}
	c = len(x.chunks) - 1
	x.chunks[c] = append(x.chunks[c], e)
	x.n++
}

// truncate keeps the first n positions.
func (x *locIndex) truncate(n int) {
	if n <= 0 {
		*x = locIndex{}
		return
	}
	j := n + x.skip // positions kept, counting the skipped ones
	full := (j + locChunk - 1) / locChunk
	for i := full; i < len(x.chunks); i++ {
		x.chunks[i] = nil
	}
	x.chunks = x.chunks[:full]
	x.chunks[full-1] = x.chunks[full-1][:j-(full-1)*locChunk]
	x.n = n
}

// dropFront removes the first k positions.
func (x *locIndex) dropFront(k int) {
	if k >= x.n {
		*x = locIndex{}
		return
	}
	x.skip += k
	x.n -= k
	drop := x.skip / locChunk
	for i := 0; i < drop; i++ {
		x.chunks[i] = nil
	}
	x.chunks = x.chunks[drop:]
	x.skip %= locChunk
	x.shrink()
}

// shrink copies a lone chunk whose live part is a small fraction of its
// capacity into a chunk sized for it (positions stay: skip becomes 0).
func (x *locIndex) shrink() {
	if len(x.chunks) != 1 || cap(x.chunks[0]) <= locFirst || 4*x.n > cap(x.chunks[0]) {
		return
	}
	small := make([]entLoc, x.n, max(locFirst, 2*x.n))
	copy(small, x.chunks[0][x.skip:])
	x.chunks[0], x.skip = small, 0
}
