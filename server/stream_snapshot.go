package server

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
)

// A replicated stream's raft snapshot is the exact state at an index:
// configuration, every message with its sequence and timestamp, the
// sequence counters (so deleted tails and gaps survive), the duplicate
// window, the last message id and the outcome digest. A replica that
// installs it has precisely the state the others had at that index and
// then applies the entries that follow.

// snapshotEvery is the minimum number of applied entries between two
// snapshots. A snapshot encodes every message, so the interval also grows
// with the stream: at least twice the messages the last snapshot held.
// A growing stream then snapshots at geometrically spaced indexes, and a
// bounded one every 2×its size: at most 1.5 message encodings per applied
// entry, amortised.
var snapshotEvery uint64 = 16384

type streamSnapMeta struct {
	Config   StreamConfig   `json:"config"`
	First    uint64         `json:"first"`
	Last     uint64         `json:"last"`
	LastID   string         `json:"last_msg_id"`
	Applied  uint64         `json:"applied"`
	Digest   uint64         `json:"digest"`
	Dedupe   []dedupeRecord `json:"dedupe,omitempty"`
	Messages uint64         `json:"messages"`
}

type dedupeRecord struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
	TS  int64  `json:"ts"`
}

// encodeSnapshotLocked serialises the stream; the caller holds mu.
func (mset *stream) encodeSnapshotLocked() []byte {
	var st StreamState
	mset.st().FastState(&st)
	meta := streamSnapMeta{Config: mset.cfg, First: st.FirstSeq, Last: st.LastSeq, LastID: mset.lmsgID,
		Applied: mset.applied, Digest: mset.digest, Messages: st.Msgs}
	for _, dde := range mset.ddarr[mset.ddhead:] {
		if dde != nil && mset.ddmap[dde.id] == dde {
			meta.Dedupe = append(meta.Dedupe, dedupeRecord{dde.id, dde.seq, dde.ts})
		}
	}
	mj, _ := json.Marshal(&meta)
	b := make([]byte, 0, len(mj)+binary.MaxVarintLen64+int(st.Bytes)+int(st.Msgs)*3*binary.MaxVarintLen64)
	b = appendBytes(b, mj)
	var sm StoreMsg
	for seq := st.FirstSeq; st.Msgs > 0 && seq <= st.LastSeq; seq++ {
		m, err := mset.st().LoadMsg(seq, &sm)
		if err != nil {
			continue
		}
		b = binary.AppendUvarint(b, m.Seq)
		b = binary.AppendVarint(b, m.TS)
		b = appendBytes(b, []byte(m.Subj))
		b = appendBytes(b, m.Hdr)
		b = appendBytes(b, m.Msg)
	}
	return b
}

// restoreSnapshot replaces the replica's state with a snapshot's.
func (mset *stream) restoreSnapshot(data []byte) error {
	r := &raftReader{b: data}
	var meta streamSnapMeta
	if err := json.Unmarshal(r.bytes(), &meta); err != nil || r.err != nil {
		return errBadRaftMsg
	}
	mset.mu.Lock()
	defer mset.mu.Unlock()
	jsa := mset.jsa
	_ = mset.st().Delete()
	dir := filepath.Join(jsa.dir, mset.name)
	os.RemoveAll(dir)
	store, err := jsa.openStore(dir, &meta.Config)
	if err != nil {
		return err
	}
	mset.setStore(store)
	mset.cfg = meta.Config
	next := uint64(1)
	for r.err == nil && len(r.b) > 0 {
		seq, ts := r.uvarint(), r.varint()
		subj, hdr, msg := string(r.bytes()), r.bytes(), r.bytes()
		if r.err != nil || seq < next {
			return errBadRaftMsg
		}
		if seq > next {
			_ = store.SkipMsgs(seq - next)
		}
		if _, err := store.StoreMsg(subj, hdr, msg, ts); err != nil {
			return err
		}
		next = seq + 1
	}
	if meta.Last+1 > next {
		_ = store.SkipMsgs(meta.Last + 1 - next)
	}
	mset.lmsgID, mset.applied, mset.digest = meta.LastID, meta.Applied, meta.Digest
	mset.ddmap, mset.ddarr, mset.ddhead = map[string]*dedupeEntry{}, nil, 0
	for _, d := range meta.Dedupe {
		dde := &dedupeEntry{id: d.ID, seq: d.Seq, ts: d.TS}
		mset.ddmap[d.ID], mset.ddarr = dde, append(mset.ddarr, dde)
	}
	return r.err
}

// wantSnapshot is asked after every batch of applied entries: it returns
// the state to snapshot at the last applied index when one is due.
func (mset *stream) wantSnapshot() (uint64, []byte, bool) {
	mset.mu.Lock()
	defer mset.mu.Unlock()
	if mset.closed || mset.lastIndex-mset.snapIndex < snapshotEvery {
		return 0, nil, false
	}
	if mset.lastIndex-mset.snapIndex < 2*mset.snapMsgs {
		return 0, nil, false
	}
	var st StreamState
	mset.st().FastState(&st)
	mset.snapIndex, mset.snapMsgs = mset.lastIndex, st.Msgs
	return mset.lastIndex, mset.encodeSnapshotLocked(), true
}
