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

// locIndex is the in-memory index of the live entries, entry k of the log
// (counting from FirstIndex) at position k. It is stored in fixed chunks so
// that a long log grows without copying and compaction frees whole chunks.
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
	if c := len(x.chunks); c == 0 || len(x.chunks[c-1]) == locChunk {
		x.chunks = append(x.chunks, make([]entLoc, 0, locChunk))
	}
	c := len(x.chunks) - 1
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
}
