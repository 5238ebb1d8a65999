package server

import (
	"encoding/json"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"path/filepath"
)

// On a clean stop a stream writes its duplicate window and last message id
// beside its store, so a restart need not read back every message of the
// window. The file is removed as it is loaded: after a crash it is absent
// (or stale) and the window is rebuilt by scanning the stored messages.

const dedupeStateFile = "dedupe.json"

type dedupeState struct {
	LastSeq uint64         `json:"last_seq"`
	LastID  string         `json:"last_msg_id"`
	Entries []dedupeRecord `json:"entries,omitempty"`
}

func (mset *stream) dedupeStatePath() string {
	return filepath.Join(mset.jsa.dir, mset.name, dedupeStateFile)
}

// saveDedupeState runs at a clean stop, after the store's final sync.
func (mset *stream) saveDedupeState() {
	mset.mu.Lock()
	var st StreamState
	mset.st().FastState(&st)
	ds := dedupeState{LastSeq: st.LastSeq, LastID: mset.lmsgID}
	for _, dde := range mset.ddarr[mset.ddhead:] {
		if dde != nil && mset.ddmap[dde.id] == dde {
			ds.Entries = append(ds.Entries, dedupeRecord{dde.id, dde.seq, dde.ts})
		}
	}
	mset.mu.Unlock()
	b, _ := json.Marshal(&ds)
	if err := mset.jsa.js.writeFileSync(mset.dedupeStatePath(), b); err != nil {
		mset.jsa.js.srv.Warnf("JetStream: stream %q: saving the duplicate window: %v", mset.name, err)
	}
}

// loadDedupeState restores the window saved at the last clean stop; it
// reports false when the state must be rebuilt from the messages.
func (mset *stream) loadDedupeState() bool {
	path := mset.dedupeStatePath()
	b, err := vfs.ReadFile(mset.jsa.js.fs, path)
	if err != nil {
		return false
	}
	mset.jsa.js.fs.Remove(path)
	var ds dedupeState
	var st StreamState
	mset.st().FastState(&st)
	if json.Unmarshal(b, &ds) != nil || ds.LastSeq != st.LastSeq {
		return false
	}
	mset.lmsgID = ds.LastID
	for _, d := range ds.Entries {
		dde := &dedupeEntry{id: d.ID, seq: d.Seq, ts: d.TS}
		mset.ddmap[d.ID] = dde
		mset.ddarr = append(mset.ddarr, dde)
	}
	return true
}
