package raft

import (
	"encoding/binary"
	"errors"
	"slices"
)

// ConfChangeType says whether a peer joins or leaves.
type ConfChangeType uint8

const (
	// AddPeer adds a voting member.
	AddPeer ConfChangeType = iota + 1
	// RemovePeer removes a member.
	RemovePeer
)

// ConfChange is a single-server membership change (Raft dissertation §4.1).
//
// Tern applies a membership change when its entry is appended to a log, not
// when it commits: each node always uses the latest configuration in its log
// (committed or not), and falls back to the previous one if that entry is
// truncated away. A leader accepts a new change only when the previous one is
// committed and when an entry of its own term is committed (the fix to
// single-server changes described on raft-dev in 2015). A leader that removes
// itself keeps leading, without counting itself, until the entry commits, then
// hands leadership to the most up-to-date peer and steps down.
type ConfChange struct {
	Type ConfChangeType
	ID   ID
}

// Marshal encodes cc as an entry payload.
func (cc ConfChange) Marshal() []byte {
	b := make([]byte, 1, 1+binary.MaxVarintLen64)
	b[0] = byte(cc.Type)
	return binary.AppendUvarint(b, uint64(cc.ID))
}

// UnmarshalConfChange decodes an entry payload written by Marshal.
func UnmarshalConfChange(b []byte) (ConfChange, error) {
	if len(b) < 2 {
		return ConfChange{}, errors.New("raft: short conf change")
	}
	id, n := binary.Uvarint(b[1:])
	if n <= 0 || 1+n != len(b) {
		return ConfChange{}, errors.New("raft: malformed conf change")
	}
	cc := ConfChange{Type: ConfChangeType(b[0]), ID: ID(id)}
	if cc.Type != AddPeer && cc.Type != RemovePeer || cc.ID == None {
		return ConfChange{}, errors.New("raft: invalid conf change")
	}
	return cc, nil
}

// applyTo returns the member list that results from cc, or an error if cc
// does not make sense for peers (adding a member, removing a stranger, or
// removing the last member).
func (cc ConfChange) applyTo(peers []ID) ([]ID, error) {
	i, found := slices.BinarySearch(peers, cc.ID)
	switch {
	case cc.Type == AddPeer && !found:
		return slices.Insert(slices.Clone(peers), i, cc.ID), nil
	case cc.Type == RemovePeer && found && len(peers) > 1:
		return slices.Delete(slices.Clone(peers), i, i+1), nil
	}
	return nil, ErrInvalidConfChange
}

// confPoint is a configuration taking effect at a log index.
type confPoint struct {
	index uint64
	peers []ID
}

// confTracker knows the configuration at every index of the log: a base
// (from the snapshot or bootstrap) plus the configuration entries after it.
type confTracker struct {
	base   confPoint
	points []confPoint // ascending by index, all > base.index
}

func sortedPeers(peers []ID) []ID {
	p := slices.Clone(peers)
	slices.Sort(p)
	return slices.Compact(p)
}

func (c *confTracker) reset(index uint64, peers []ID) {
	c.base = confPoint{index: index, peers: sortedPeers(peers)}
	c.points = nil
}

// current is the latest configuration in the log.
func (c *confTracker) current() []ID {
	if n := len(c.points); n > 0 {
		return c.points[n-1].peers
	}
	return c.base.peers
}

// at is the configuration in force at index i.
func (c *confTracker) at(i uint64) []ID {
	for k := len(c.points) - 1; k >= 0; k-- {
		if c.points[k].index <= i {
			return c.points[k].peers
		}
	}
	return c.base.peers
}

func (c *confTracker) contains(id ID) bool {
	_, ok := slices.BinarySearch(c.current(), id)
	return ok
}

// lastIndex is the index of the latest configuration entry (or the base).
func (c *confTracker) lastIndex() uint64 {
	if n := len(c.points); n > 0 {
		return c.points[n-1].index
	}
	return c.base.index
}

// truncateFrom forgets configuration entries at index i and later; it
// reports whether the current configuration changed.
func (c *confTracker) truncateFrom(i uint64) bool {
	k := len(c.points)
	for k > 0 && c.points[k-1].index >= i {
		k--
	}
	changed := k != len(c.points)
	c.points = c.points[:k]
	return changed
}

// add records a configuration entry appended to the log. An entry that does
// not apply to the current configuration (which a correct leader never
// writes) leaves the configuration as it is.
func (c *confTracker) add(e *Entry) {
	peers := c.current()
	if cc, err := UnmarshalConfChange(e.Data); err == nil {
		if next, err := cc.applyTo(peers); err == nil {
			peers = next
		}
	}
	c.points = append(c.points, confPoint{index: e.Index, peers: peers})
}

// compact folds every configuration at or before index into the base.
func (c *confTracker) compact(index uint64) {
	if index <= c.base.index {
		return
	}
	peers := c.at(index)
	k := 0
	for k < len(c.points) && c.points[k].index <= index {
		k++
	}
	c.base = confPoint{index: index, peers: peers}
	c.points = slices.Clone(c.points[k:])
}

func quorum(n int) int { return n/2 + 1 }
