package server

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
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

// snapshotLocked fixes the stream's state at the last applied entry and
// returns the function that serialises it; the caller holds mu and must
// call the function (on any goroutine) for the capture to end.
func (mset *stream) snapshotLocked() func() ([]byte, error) {
	var st StreamState
	store := mset.st()
	store.FastState(&st)
	meta := streamSnapMeta{Config: mset.cfg, First: st.FirstSeq, Last: st.LastSeq, LastID: mset.lmsgID,
		Applied: mset.applied, Digest: mset.digest, Messages: st.Msgs}
	for _, dde := range mset.ddarr[mset.ddhead:] {
		if dde != nil && mset.ddmap[dde.id] == dde {
			meta.Dedupe = append(meta.Dedupe, dedupeRecord{dde.id, dde.seq, dde.ts})
		}
	}
	mj, _ := json.Marshal(&meta)
	size := len(mj) + binary.MaxVarintLen64 + int(st.Bytes) + int(st.Msgs)*16
	first, last := st.FirstSeq, st.LastSeq
	if st.Msgs == 0 {
		first, last = 1, 0
	}
	c := captureMessages(store, first, last)
	return func() ([]byte, error) {
		return c.encode(store, appendBytes(make([]byte, 0, size), mj))
	}
}

// restoreSnapshot replaces the replica's state with a snapshot's.
// snapshotStagger returns this replica's snapshot point as a follower, in
// eighths of the interval (8, 12, 16, ... by its rank among the stream's
// peers), and as the leader (after every follower's).
func (mset *stream) snapshotStagger(name string) (follower, leader uint64) {
	jc := mset.jsa.js.cluster
	if jc == nil {
		return 8, 8
	}
	sa := jc.assignment(mset.jsa.acc.Name, name)
	if sa == nil {
		return 8, 8
	}
	peers := slices.Clone(sa.Peers)
	slices.Sort(peers)
	rank := uint64(max(slices.Index(peers, jc.js.srv.Name()), 0))
	return 8 + 4*rank, 8 + 4*uint64(len(peers))
}

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

// wantSnapshot is asked after every batch of applied entries: when a
// snapshot is due it returns the last applied index and the function that
// encodes the state at that index (stream_snapshot_capture.go).
//
// Encoding reads every message, which takes CPU and disk reads, so
// replicas take theirs at different points: each follower at 1, 1.5, 2,
// ... times the interval by its rank in the placement, and the leader
// only after all of them (2.5 times on R3).
func (mset *stream) wantSnapshot() (uint64, func() ([]byte, error), bool) {
	mset.mu.Lock()
	due := !mset.closed && mset.lastIndex-mset.snapIndex >= snapshotEvery
	name := mset.cfg.Name
	mset.mu.Unlock()
	if !due {
		return 0, nil, false
	}
	eighths, leaderEighths := mset.snapshotStagger(name)
	mset.mu.Lock()
	defer mset.mu.Unlock()
	if mset.leader {
		eighths = leaderEighths
	}
	interval := max(snapshotEvery, 2*mset.snapMsgs)
	if mset.closed || mset.lastIndex-mset.snapIndex < interval*eighths/8 {
		return 0, nil, false
	}
	var st StreamState
	mset.st().FastState(&st)
	index, prevIndex, prevMsgs := mset.lastIndex, mset.snapIndex, mset.snapMsgs
	mset.snapIndex, mset.snapMsgs = index, st.Msgs
	encode := mset.snapshotLocked()
	return index, func() ([]byte, error) {
		b, err := encode()
		if err != nil { // not taken: the next batch of applies tries again
			mset.mu.Lock()
			if mset.snapIndex == index {
				mset.snapIndex, mset.snapMsgs = prevIndex, prevMsgs
			}
			mset.mu.Unlock()
		}
		return b, err
	}, true
}
