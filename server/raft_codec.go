package server

import (
	"encoding/binary"
	"errors"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Raft messages travel between servers over routes in this binary form:
// a version byte, then fixed fields, entries and an optional snapshot,
// all little-endian with uvarint lengths.
const raftCodecVersion = 1

var errBadRaftMsg = errors.New("malformed raft message")

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// encodedRaftMsgSize bounds the size of m's encoding.
func encodedRaftMsgSize(m *raft.Message) int {
	n := 2 + 8*binary.MaxVarintLen64 + 1
	for i := range m.Entries {
		n += 3*binary.MaxVarintLen64 + 1 + len(m.Entries[i].Data)
	}
	if m.Snapshot != nil {
		n += (4+len(m.Snapshot.Peers))*binary.MaxVarintLen64 + len(m.Snapshot.Data)
	}
	return n
}

// encodeRaftMsg appends the encoding of m to b.
func encodeRaftMsg(b []byte, m *raft.Message) []byte {
	b = append(b, raftCodecVersion, byte(m.Type))
	b = appendUvarint(b, uint64(m.From))
	b = appendUvarint(b, uint64(m.To))
	return encodeRaftMsgBody(b, m)
}

// encodeRaftMsgBody appends all of m's encoding after its sender and
// receiver (a RAFTB record carries those once per frame: raft_batch.go).
func encodeRaftMsgBody(b []byte, m *raft.Message) []byte {
	for _, v := range [...]uint64{m.Term, m.LogTerm, m.Index, m.Commit, m.RejectHint} {
		b = appendUvarint(b, v)
	}
	var flags byte
	if m.Reject {
		flags |= 1
	}
	if m.Transfer {
		flags |= 2
	}
	if m.Snapshot != nil {
		flags |= 4
	}
	if m.Quiesce {
		flags |= 8 // older servers ignore it: sent only to those that know it
	}
	b = append(b, flags)
	b = appendUvarint(b, uint64(len(m.Entries)))
	for i := range m.Entries {
		e := &m.Entries[i]
		b = appendUvarint(b, e.Term)
		b = appendUvarint(b, e.Index)
		b = append(b, byte(e.Type))
		b = appendBytes(b, e.Data)
	}
	if m.Snapshot != nil {
		b = appendUvarint(b, m.Snapshot.Index)
		b = appendUvarint(b, m.Snapshot.Term)
		b = appendUvarint(b, uint64(len(m.Snapshot.Peers)))
		for _, p := range m.Snapshot.Peers {
			b = appendUvarint(b, uint64(p))
		}
		b = appendBytes(b, m.Snapshot.Data)
	}
	return b
}

// raftReader decodes with bounds checks; the first error sticks.
type raftReader struct {
	b   []byte
	err error
}

func (r *raftReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadRaftMsg
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *raftReader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errBadRaftMsg
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// view returns the next length-prefixed byte string without copying.
func (r *raftReader) view() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errBadRaftMsg
		return nil
	}
	if n == 0 {
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

// bytes returns a copy of the next length-prefixed byte string.
func (r *raftReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errBadRaftMsg
		return nil
	}
	if n == 0 {
		r.b = r.b[0:]
		return nil
	}
	out := append([]byte(nil), r.b[:n]...)
	r.b = r.b[n:]
	return out
}

// decodeRaftMsg parses a message encoded by encodeRaftMsg. The message
// does not keep b: entry and snapshot data share one copy of it, made
// only when there is such data (votes, heartbeats and responses carry
// none and are decoded without an allocation).
func decodeRaftMsg(b []byte) (raft.Message, error) {
	if raftMsgCarriesData(b, 7) {
		b = append([]byte(nil), b...)
	}
	return decodeOwnedRaftMsg(b)
}

// raftMsgCarriesData tells from the fixed fields (fixed uvarints of them:
// 7 in a message, 5 in a RAFTB record's, which has no sender and
// receiver) whether a message has entries or a snapshot (a malformed one
// says yes: decoding reports it).
func raftMsgCarriesData(b []byte, fixed int) bool {
	r := raftReader{b: b}
	r.byte()
	r.byte()
	for range fixed {
		r.uvarint()
	}
	flags := r.byte()
	n := r.uvarint()
	return r.err != nil || flags&4 != 0 || n > 0
}

// decodeOwnedRaftMsg is decodeRaftMsg for a b the message may keep (a
// reassembled snapshot is not copied a second time).
func decodeOwnedRaftMsg(b []byte) (raft.Message, error) {
	r := raftReader{b: b}
	m, err := decodeRaftMsgFields(&r)
	if err != nil || m.Snapshot == nil {
		return m, err
	}
	m.Snapshot.Data = r.view()
	if r.err != nil {
		return m, r.err
	}
	return m, nil
}

// decodeRaftMsgHead decodes all of a message in b but its snapshot's data
// (the last field, which r holds next when m has a snapshot).
func decodeRaftMsgHead(b []byte) (m raft.Message, r *raftReader, err error) {
	r = &raftReader{b: b}
	m, err = decodeRaftMsgFields(r)
	return m, r, err
}

// decodeRaftMsgFields reads all of a message but its snapshot's data.
func decodeRaftMsgFields(r *raftReader) (m raft.Message, err error) {
	if r.byte() != raftCodecVersion {
		return m, errBadRaftMsg
	}
	m.Type = raft.MessageType(r.byte())
	m.From, m.To = raft.ID(r.uvarint()), raft.ID(r.uvarint())
	return m, decodeRaftMsgBody(r, &m)
}

// decodeRaftMsgBody reads what encodeRaftMsgBody wrote but a snapshot's
// data.
func decodeRaftMsgBody(r *raftReader, m *raft.Message) error {
	m.Term, m.LogTerm, m.Index, m.Commit, m.RejectHint = r.uvarint(), r.uvarint(), r.uvarint(), r.uvarint(), r.uvarint()
	flags := r.byte()
	m.Reject, m.Transfer, m.Quiesce = flags&1 != 0, flags&2 != 0, flags&8 != 0
	// Counts are claims: the slices grow by the entries and peers decoded,
	// not by what the count says (an entry is 48 bytes in memory and can
	// be 4 on the wire).
	n := r.uvarint()
	if n > uint64(len(r.b)) {
		return errBadRaftMsg
	}
	if n > 0 {
		m.Entries = make([]raft.Entry, 0, min(n, 64))
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		e := raft.Entry{Term: r.uvarint(), Index: r.uvarint()}
		e.Type = raft.EntryType(r.byte())
		e.Data = r.view()
		m.Entries = append(m.Entries, e)
	}
	if flags&4 != 0 {
		snap := &raft.Snapshot{Index: r.uvarint(), Term: r.uvarint()}
		np := r.uvarint()
		if np > uint64(len(r.b)) {
			return errBadRaftMsg
		}
		for i := uint64(0); i < np && r.err == nil; i++ {
			snap.Peers = append(snap.Peers, raft.ID(r.uvarint()))
		}
		m.Snapshot = snap
	}
	return r.err
}
