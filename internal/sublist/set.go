package sublist

import "strings"

// Thresholds for set: an index map is built once a set grows past
// indexAbove members and dropped again when it shrinks to indexBelow, so
// small sets (the common case) stay a plain slice.
const (
	indexAbove = 16
	indexBelow = 8
)

// set holds distinct values. Members live in a dense slice, so building a
// match result is a plain copy; large sets also keep a value->position map
// so add and remove stay O(1) for subjects with huge fan-out.
type set[T comparable] struct {
	items []T
	idx   map[T]int // nil unless len(items) > indexBelow
}

func (s *set[T]) len() int { return len(s.items) }

func (s *set[T]) find(v T) int {
	if s.idx != nil {
		if i, ok := s.idx[v]; ok {
			return i
		}
		return -1
	}
	for i, x := range s.items {
		if x == v {
			return i
		}
	}
	return -1
}

// add inserts v and reports whether it was absent.
func (s *set[T]) add(v T) bool {
	if s.find(v) >= 0 {
		return false
	}
	s.items = append(s.items, v)
	switch {
	case s.idx != nil:
		s.idx[v] = len(s.items) - 1
	case len(s.items) > indexAbove:
		s.idx = make(map[T]int, 2*len(s.items))
		for i, x := range s.items {
			s.idx[x] = i
		}
	}
	return true
}

// remove deletes v and reports whether it was present. Member order is not
// preserved.
func (s *set[T]) remove(v T) bool {
	i := s.find(v)
	if i < 0 {
		return false
	}
	s.removeAt(i)
	return true
}

// removeAt deletes the member at position i by moving the last member into
// its place; callers keeping parallel slices must mirror that move.
func (s *set[T]) removeAt(i int) {
	v := s.items[i]
	last := len(s.items) - 1
	moved := s.items[last]
	s.items[i] = moved
	var zero T
	s.items[last] = zero // do not pin the removed value
	s.items = s.items[:last]
	if s.idx != nil {
		delete(s.idx, v)
		if i != last {
			s.idx[moved] = i
		}
		if len(s.items) <= indexBelow {
			s.idx = nil
		}
	}
	s.shrink()
}

// shrink releases the backing array of a set that lost most of its members.
func (s *set[T]) shrink() {
	n, c := len(s.items), cap(s.items)
	switch {
	case n == 0:
		s.items = nil
	case c > 64 && n < c/4:
		s.items = append(make([]T, 0, 2*n), s.items...)
	}
}

// groups holds the queue groups of one trie node. Names and member sets
// live in parallel dense slices so building a match result never iterates
// a map; the name set gains an index once a node has many groups.
type groups[T comparable] struct {
	names   set[string]
	members []set[T] // members[i] belongs to names.items[i]
}

func (g *groups[T]) len() int { return len(g.members) }

// add inserts v into group name, creating the group if needed.
func (g *groups[T]) add(name string, v T) bool {
	i := g.names.find(name)
	if i < 0 {
		g.names.add(strings.Clone(name)) // do not pin the caller's string
		g.members = append(g.members, set[T]{})
		i = len(g.members) - 1
	}
	return g.members[i].add(v)
}

// remove deletes v from group name, dropping the group once it is empty.
func (g *groups[T]) remove(name string, v T) bool {
	i := g.names.find(name)
	if i < 0 || !g.members[i].remove(v) {
		return false
	}
	if g.members[i].len() == 0 {
		g.names.removeAt(i)
		last := len(g.members) - 1
		g.members[i] = g.members[last]
		g.members[last] = set[T]{}
		g.members = g.members[:last]
		if last == 0 {
			g.members = nil
		}
	}
	return true
}
