//go:build race && !nolockorder

package lockorder

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Each goroutine that holds locks has a slot in a fixed table (no maps,
// no growing slices: the runtime's race checks inside those would see
// the checker's accesses, whose synchronisation is hidden from the race
// detector). A slot is found by goroutine id, in the shard the id hashes
// to, and freed when its goroutine holds nothing.
const (
	shards      = 512
	slotsPer    = 32
	maxHeld     = 16
	stackPrefix = len("goroutine ")
)

type held struct {
	id classID
	p  unsafe.Pointer
}

type slot struct {
	gid  uint64 // 0: free
	n    int
	held [maxHeld]held
}

type shard struct {
	mu    sync.Mutex
	slots [slotsPer]slot
}

var table [shards]shard

// edge is the first observation of one class taken while holding another.
type edge struct{ stack string }

var (
	edgesMu sync.Mutex
	edges   [numClasses][numClasses]atomic.Pointer[edge]
)

// goidSlow is the current goroutine's id, read from the first line of its
// stack trace ("goroutine 42 [running]:").
//
//go:norace
func goidSlow() uint64 {
	var buf [32]byte
	n := runtime.Stack(buf[:], false)
	var id uint64
	for _, c := range buf[stackPrefix:n] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// acquire checks that the current goroutine may take lock p of class c
// and records that it holds it (before it blocks on it).
func acquire(c classID, p unsafe.Pointer) {
	runtime.RaceDisable()
	msg := acquireHidden(c, p)
	runtime.RaceEnable()
	if msg != "" {
		report(msg)
	}
}

// release forgets lock p for the goroutine that holds it.
func release(p unsafe.Pointer) {
	runtime.RaceDisable()
	releaseHidden(p)
	runtime.RaceEnable()
}

//go:norace
func acquireHidden(c classID, p unsafe.Pointer) string {
	gid := goid()
	sh := &table[gid%shards]
	sh.mu.Lock()
	s := findSlot(sh, gid, true)
	if s == nil {
		sh.mu.Unlock()
		return "lockorder: more than " + strconv.Itoa(slotsPer) + " goroutines of one shard hold locks at once; raise slotsPer"
	}
	var hs [maxHeld]held
	n := s.n
	hs = s.held
	if n < maxHeld {
		s.held[n] = held{c, p}
		s.n++
	}
	sh.mu.Unlock()
	if n >= maxHeld {
		return "lockorder: a goroutine holds more than " + strconv.Itoa(maxHeld) + " locks"
	}
	for _, h := range hs[:n] {
		if msg := checkEdge(h, c, p); msg != "" {
			return msg
		}
	}
	return ""
}

//go:norace
func findSlot(sh *shard, gid uint64, claim bool) *slot {
	var free *slot
	for i := range sh.slots {
		s := &sh.slots[i]
		if s.gid == gid {
			return s
		}
		if s.gid == 0 && free == nil {
			free = s
		}
	}
	if claim && free != nil {
		free.gid, free.n = gid, 0
		return free
	}
	return nil
}

//go:norace
func releaseHidden(p unsafe.Pointer) {
	gid := goid()
	if dropFrom(&table[gid%shards], gid, p) {
		return
	}
	// Unlocked by another goroutine than the one that locked it.
	for i := range table {
		if dropFrom(&table[i], 0, p) {
			return
		}
	}
}

// dropFrom removes p from goroutine gid's slot in sh (gid 0: any slot).
//
//go:norace
func dropFrom(sh *shard, gid uint64, p unsafe.Pointer) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i := range sh.slots {
		s := &sh.slots[i]
		if s.gid == 0 || (gid != 0 && s.gid != gid) {
			continue
		}
		for j := s.n - 1; j >= 0; j-- {
			if s.held[j].p != p {
				continue
			}
			copy(s.held[j:s.n], s.held[j+1:s.n])
			s.n--
			if s.n == 0 {
				s.gid = 0
			}
			return true
		}
		if gid != 0 {
			return false
		}
	}
	return false
}

// checkEdge checks taking lock p of class c while holding h, and records
// the edge the first time it is seen.
//
//go:norace
func checkEdge(h held, c classID, p unsafe.Pointer) string {
	a := h.id
	if edges[a][c].Load() == nil {
		edgesMu.Lock()
		if edges[a][c].Load() == nil {
			edges[a][c].Store(&edge{stack: stack()})
		}
		edgesMu.Unlock()
	}
	switch {
	case h.p == p:
		return "lockorder: " + classes[c].name + " taken again by the goroutine that holds it\n" + stack()
	case a == c:
		return "lockorder: " + classes[c].name + " taken while holding another " + classes[c].name +
			" (locks of one class are never nested)\n" + stack()
	case classes[a].rank >= classes[c].rank:
		return inversion(a, c)
	}
	return ""
}

// inversion describes taking c while holding a against the rank order,
// with the cycle it closes when the opposite path was seen before.
//
//go:norace
func inversion(a, c classID) string {
	msg := "lockorder: " + classes[c].name + " (rank " + strconv.Itoa(classes[c].rank) + ") taken while holding " +
		classes[a].name + " (rank " + strconv.Itoa(classes[a].rank) + "), against the rank order\n"
	path := pathBetween(c, a)
	if path != nil {
		cyc := classes[a].name
		for _, x := range path {
			cyc += " → " + classes[x].name
		}
		msg += "cycle: " + cyc + "\n"
	}
	msg += "\n" + classes[a].name + " → " + classes[c].name + " here:\n" + stack()
	for i := 0; i+1 < len(path); i++ {
		from, to := path[i], path[i+1]
		msg += "\n" + classes[from].name + " → " + classes[to].name + " first seen:\n" + edges[from][to].Load().stack
	}
	return msg
}

// pathBetween finds a path of observed edges from one class to another
// (both ends included), or nil.
//
//go:norace
func pathBetween(from, to classID) []classID {
	var prev [numClasses]classID
	var seen [numClasses]bool
	queue := []classID{from}
	seen[from] = true
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if x == to {
			path := []classID{to}
			for path[0] != from {
				path = append([]classID{prev[path[0]]}, path...)
			}
			return path
		}
		for y := classID(0); y < numClasses; y++ {
			if !seen[y] && edges[x][y].Load() != nil {
				seen[y], prev[y] = true, x
				queue = append(queue, y)
			}
		}
	}
	return nil
}

//go:norace
func stack() string {
	buf := make([]byte, 8192)
	return string(buf[:runtime.Stack(buf, false)])
}

var (
	handler    atomic.Pointer[func(string)]
	violations struct {
		sync.Mutex
		list []string
	}
)

// SetHandler makes f receive each violation instead of the default (print
// and exit with status 2), and returns a function restoring the previous.
func SetHandler(f func(msg string)) (restore func()) {
	old := handler.Swap(&f)
	return func() { handler.Store(old) }
}

// Violations lists the violations reported so far.
func Violations() []string {
	violations.Lock()
	defer violations.Unlock()
	return append([]string(nil), violations.list...)
}

func report(msg string) {
	violations.Lock()
	violations.list = append(violations.list, msg)
	violations.Unlock()
	if f := handler.Load(); f != nil && *f != nil {
		(*f)(msg)
		return
	}
	fmt.Fprintln(os.Stderr, msg)
	os.Exit(2)
}

// Edges lists the class→class edges seen so far, one a line: "held →
// taken  (first taken in function)".
func Edges() []string {
	runtime.RaceDisable()
	defer runtime.RaceEnable()
	return edgeLines()
}

//go:norace
func edgeLines() []string {
	var out []string
	for a := cNone + 1; a < numClasses; a++ {
		for c := cNone + 1; c < numClasses; c++ {
			if e := edges[a][c].Load(); e != nil {
				out = append(out, classes[a].name+" → "+classes[c].name+"  ("+takerOf(e.stack)+")")
			}
		}
	}
	return out
}

// takerOf is the first function in stack outside this package.
//
//go:norace
func takerOf(stack string) string {
	const self = "github.com/nats-io/nats-server/v2/internal/lockorder."
	for _, line := range strings.Split(stack, "\n") {
		if line == "" || line[0] == '\t' || strings.HasPrefix(line, "goroutine ") || strings.HasPrefix(line, self) {
			continue
		}
		if i := strings.LastIndexByte(line, '('); i > 0 {
			line = line[:i]
		}
		return strings.TrimPrefix(line, "github.com/nats-io/nats-server/v2/")
	}
	return "?"
}
