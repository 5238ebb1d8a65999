package server

import (
	"encoding/json"
	"strconv"
)

// A raft snapshot's data is of one of three kinds, told apart by its Go
// type, never by its bytes:
//
//   - full: raft.Snapshot.Data holds the whole state (a stream's metadata
//     and every message, or the meta group's assignments). The only kind
//     that travels between servers: the raft codec (raft_codec.go) writes
//     and reads Data alone, so a snapshot from a peer is always full.
//   - linked: Local is a linkedSnap, a stream snapshot whose messages are
//     in a directory of this server's group (stream_snapshot.go).
//   - spooled: Local is a spooledSnap, full data kept in a section of a
//     file on this server (raft_spool.go).
//
// Local is never encoded, so a file reference (a spool file's path, a
// snapshot directory's name) cannot come from a peer. The bytes of a
// linked snapshot exist only in the raft log's snapshot file (the format
// older servers refuse rather than misread), decoded once when the file is
// read (decodeLinkedSnap).

// linkedSnap is a linked stream snapshot: its metadata, naming the
// directory snaps/<meta.Linked> of the group.
type linkedSnap struct {
	raw  []byte // as in the raft log's snapshot file: linkedSnapTag, then the metadata
	meta streamSnapMeta
}

// newLinkedSnap makes the linked snapshot of meta (meta.Linked set).
func newLinkedSnap(meta streamSnapMeta) linkedSnap {
	mj, _ := json.Marshal(&meta)
	return linkedSnap{raw: appendBytes(appendBytes(nil, []byte(linkedSnapTag)), mj), meta: meta}
}

// linkedSnapKind is how a stream's raft log keeps linked snapshots in its
// snapshot file (raft_log.go localSnapKind).
type linkedSnapKind struct{}

func (linkedSnapKind) storedForm(local any) ([]byte, bool) {
	l, ok := local.(linkedSnap)
	return l.raw, ok
}

func (linkedSnapKind) isStoredForm(data []byte) bool { return hasLinkedTag(data) }

func (linkedSnapKind) decodeStored(data []byte) (any, error) { return decodeLinkedSnap(data) }

// snapshotRaw is the stored form, which is also what snapshotBytes
// (raft_spool.go) hands a reader of the snapshot in memory.
func (l linkedSnap) snapshotRaw() []byte { return l.raw }

// hasLinkedTag reports whether data (read from a raft log's snapshot
// file) starts as a linked snapshot does.
func hasLinkedTag(data []byte) bool {
	r := &raftReader{b: data}
	return string(r.view()) == linkedSnapTag && r.err == nil
}

// decodeLinkedSnap decodes a linked snapshot as read from a raft log's
// snapshot file. The directory's name is a snapshot index, nothing else.
func decodeLinkedSnap(data []byte) (linkedSnap, error) {
	r := &raftReader{b: data}
	var meta streamSnapMeta
	if string(r.view()) != linkedSnapTag {
		return linkedSnap{}, errBadRaftMsg
	}
	mj := r.view()
	if r.err != nil || len(r.b) > 0 || json.Unmarshal(mj, &meta) != nil {
		return linkedSnap{}, errBadRaftMsg
	}
	if _, err := strconv.ParseUint(meta.Linked, 10, 64); err != nil {
		return linkedSnap{}, errBadRaftMsg
	}
	return linkedSnap{raw: data, meta: meta}, nil
}

// decodeFullSnap reads a full stream snapshot's metadata; the returned
// reader holds its messages. A linked snapshot's bytes are not a full
// snapshot.
func decodeFullSnap(data []byte) (streamSnapMeta, *raftReader, error) {
	var meta streamSnapMeta
	r := &raftReader{b: data}
	mj := r.bytes()
	if r.err != nil || json.Unmarshal(mj, &meta) != nil || meta.Linked != "" {
		return meta, nil, errBadRaftMsg
	}
	return meta, r, nil
}
