// Package fdlru is the policy of a budget of open files, with no I/O: an
// LRU of handles, each open or closed, pinned while an operation uses it
// and dirty while it holds writes not yet synced. When more handles are
// open than the limit, the least recently used ones that are neither
// pinned nor dirty are chosen to be closed; a pinned or dirty handle is
// never chosen, so the limit is soft: it is exceeded only by handles in
// use or holding unsynced writes. The caller serializes every call (one
// mutex around the LRU) and does the opening and closing itself.
package fdlru

// LRU is a budget of open handles. The zero value is not usable: New.
type LRU[T any] struct {
	limit int
	open  int
	// idle is a ring of the open handles that are neither pinned nor
	// dirty, most recently used after the sentinel; victims come from the
	// other end.
	idle Entry[T]
}

// Entry is one handle of an LRU.
type Entry[T any] struct {
	Value      T
	prev, next *Entry[T] // in the idle ring, or nil
	pins       int
	isOpen     bool
	dirty      bool
	removed    bool
	gen        uint64 // writes so far; a sync clears dirty only if none came since it began
}

// New returns an LRU that keeps at most limit handles open (limit < 1 is
// taken as 1).
func New[T any](limit int) *LRU[T] {
	l := &LRU[T]{}
	l.idle.prev, l.idle.next = &l.idle, &l.idle
	l.SetLimit(limit)
	return l
}

// SetLimit changes the limit; the next Opened or Unpin enforces it.
func (l *LRU[T]) SetLimit(limit int) { l.limit = max(limit, 1) }

// Limit is the limit.
func (l *LRU[T]) Limit() int { return l.limit }

// Open counts the open handles.
func (l *LRU[T]) Open() int { return l.open }

// Add returns a new handle for v, closed and unpinned.
func (l *LRU[T]) Add(v T) *Entry[T] { return &Entry[T]{Value: v} }

// Pin marks e in use: it is not chosen as a victim until the matching
// Unpin. It reports whether e is closed and must be opened (then Opened
// or, if the open failed, Unpin).
func (l *LRU[T]) Pin(e *Entry[T]) (mustOpen bool) {
	if e.removed {
		panic("fdlru: Pin after Remove")
	}
	l.unlink(e)
	e.pins++
	return !e.isOpen
}

// Opened records that the pinned handle e was opened, and returns the
// handles to close to get back under the limit (now marked closed).
func (l *LRU[T]) Opened(e *Entry[T]) []T {
	if !e.isOpen {
		e.isOpen = true
		l.open++
	}
	return l.evict(nil)
}

// Unpin ends one use of e and returns the handles to close to get back
// under the limit (now marked closed); e itself is among them only when
// it is the least recently used idle handle.
func (l *LRU[T]) Unpin(e *Entry[T]) []T {
	if e.removed { // closed by its owner while in use
		return nil
	}
	if e.pins == 0 {
		panic("fdlru: Unpin without Pin")
	}
	e.pins--
	if e.pins == 0 && e.isOpen && !e.dirty {
		l.pushFront(e)
	}
	return l.evict(nil)
}

// Wrote records a write through the pinned handle e: it is dirty until a
// sync begun after it succeeds.
func (l *LRU[T]) Wrote(e *Entry[T]) {
	e.gen++
	e.dirty = true
}

// SyncBegin is called with e pinned as a sync of it starts; pass what it
// returns to Synced once the sync succeeded.
func (l *LRU[T]) SyncBegin(e *Entry[T]) uint64 { return e.gen }

// Synced records a successful sync of e begun at gen: e is clean unless
// it was written since.
func (l *LRU[T]) Synced(e *Entry[T], gen uint64) {
	if e.gen == gen {
		e.dirty = false
	}
}

// Remove forgets e (its file is being closed by its owner) and reports
// whether it was open.
func (l *LRU[T]) Remove(e *Entry[T]) (wasOpen bool) {
	l.unlink(e)
	wasOpen = e.isOpen
	if wasOpen {
		e.isOpen = false
		l.open--
	}
	e.pins, e.dirty, e.removed = 0, false, true
	return wasOpen
}

// IsOpen reports whether e is open.
func (e *Entry[T]) IsOpen() bool { return e.isOpen }

// Pinned reports whether e is in use.
func (e *Entry[T]) Pinned() bool { return e.pins > 0 }

// Dirty reports whether e holds writes not yet synced.
func (e *Entry[T]) Dirty() bool { return e.dirty }

// evict closes idle handles, least recently used first, while more than
// the limit are open; it appends their values to out.
func (l *LRU[T]) evict(out []T) []T {
	for l.open > l.limit && l.idle.prev != &l.idle {
		v := l.idle.prev
		l.unlink(v)
		v.isOpen = false
		l.open--
		out = append(out, v.Value)
	}
	return out
}

func (l *LRU[T]) pushFront(e *Entry[T]) {
	e.prev, e.next = &l.idle, l.idle.next
	l.idle.next.prev = e
	l.idle.next = e
}

func (l *LRU[T]) unlink(e *Entry[T]) {
	if e.next == nil {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}
