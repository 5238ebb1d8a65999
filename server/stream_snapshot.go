package server

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"io"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A replicated stream's raft snapshot is the exact state at an index:
// configuration, the messages, the sequence counters (so deleted tails and
// gaps survive), the duplicate window, the last message id and the outcome
// digest. A replica that installs it has precisely the state the others had
// at that index and then applies the entries that follow.
//
// The messages come in one of two forms. A file stream's own snapshots
// are linked: the store fixes its state in a directory of the group
// (snaps/<index>) by hard-linking its block files and writing its
// checkpoint (filestore_snapshot.go), so taking one costs in proportion to
// the stream's files, not its messages, and a restart
// restores the store from the directory by linking the files back. A
// snapshot sent to another replica is full: every message, encoded in the
// snapshot itself (a linked one is expanded when it is sent,
// stream_snapshot_send.go); memory streams only take full ones.

// snapshotEvery is the minimum number of applied entries between two
// snapshots. The interval also grows with what a snapshot costs: twice the
// messages the last full one held, or 16 entries per file the last linked
// one linked. A growing stream then snapshots at geometrically spaced
// indexes: a bounded amount of work per applied entry, amortised.
//
// 65536 (nats-server's compaction minimum too) rather than fewer: a linked
// snapshot of a growing file stream links and fsyncs every block file and
// copies the active block, which at 16384 took about 7% of the servers' CPU
// in a stream of fresh-subject publishes (1.56 against 0.39 us per entry,
// profiled). A restart replays at most this many entries.
var snapshotEvery uint64 = 65536

// snapshotKeepFactor times the stream's messages is how many entries the
// log keeps below a snapshot (raft_log.go keep); a variable for tests.
var snapshotKeepFactor uint64 = 2

// snapshotKeepMax bounds the entries kept below a snapshot (the log's
// disk use): a follower further behind gets a snapshot.
const snapshotKeepMax = 8 << 20

// linkedSnapshots turns linked snapshots on; a variable for tests.
var linkedSnapshots = true

type streamSnapMeta struct {
	Config   StreamConfig   `json:"config"`
	First    uint64         `json:"first"`
	Last     uint64         `json:"last"`
	LastID   string         `json:"last_msg_id"`
	Applied  uint64         `json:"applied"`
	Digest   uint64         `json:"digest"`
	Dedupe   []dedupeRecord `json:"dedupe,omitempty"`
	Messages uint64         `json:"messages"`
	// Linked names the snapshot directory that holds the messages; empty
	// when they follow the metadata.
	Linked string `json:"linked,omitempty"`
	// Consumers are the stream's consumers at the snapshot's index
	// (consumer_cluster_snap.go).
	Consumers []consumerSnap `json:"consumers,omitempty"`
}

type dedupeRecord struct {
	ID  string `json:"id"`
	Seq uint64 `json:"seq"`
	TS  int64  `json:"ts"`
}

// snapMetaLocked is the state at the last applied entry, without the
// messages; the caller holds mu.
func (mset *stream) snapMetaLocked() (streamSnapMeta, StreamState) {
	var st StreamState
	mset.st().FastState(&st)
	meta := streamSnapMeta{Config: mset.cfg, First: st.FirstSeq, Last: st.LastSeq, LastID: mset.lmsgID,
		Applied: mset.applied, Digest: mset.digest, Messages: st.Msgs, Consumers: mset.consumerSnapsLocked()}
	for _, dde := range mset.ddarr[mset.ddhead:] {
		if dde != nil && mset.ddmap[dde.id] == dde {
			meta.Dedupe = append(meta.Dedupe, dedupeRecord{dde.id, dde.seq, dde.ts})
		}
	}
	return meta, st
}

// fullSnapshot captures store's messages and returns the function that
// encodes them after meta.
func fullSnapshot(store StreamStore, meta *streamSnapMeta, st StreamState) func() (snapPayload, error) {
	mj, _ := json.Marshal(meta)
	size := len(mj) + binary.MaxVarintLen64 + int(st.Bytes) + int(st.Msgs)*16
	first, last := snapRange(st)
	c := captureMessages(store, first, last)
	return func() (snapPayload, error) {
		b, err := c.encode(store, appendBytes(make([]byte, 0, size), mj))
		return snapPayload{data: b}, err
	}
}

// writeFullSnapshot writes the full form of store's state (as fullSnapshot
// encodes it) to w, reading the messages a batch at a time.
func writeFullSnapshot(store StreamStore, meta *streamSnapMeta, st StreamState, w io.Writer) error {
	mj, _ := json.Marshal(meta)
	first, last := snapRange(st)
	return captureMessages(store, first, last).encodeTo(store, appendBytes(nil, mj), w)
}

// snapRange is the range of sequences a snapshot of st captures.
func snapRange(st StreamState) (first, last uint64) {
	if st.Msgs == 0 {
		return 1, 0
	}
	return st.FirstSeq, st.LastSeq
}

// linkedSnapshot fixes fs's state in snaps/<index>; false when that
// fails (and a full snapshot is taken instead). Called on the group
// goroutine, without mu: no entry is applied meanwhile.
func (mset *stream) linkedSnapshot(index uint64, meta *streamSnapMeta, fs linkableStore) (func() (snapPayload, error), uint64, bool) {
	mset.pruneSnapshotDirs(index)
	name := strconv.FormatUint(index, 10)
	dir := filepath.Join(mset.groupDir, snapsDir, name)
	snap, err := fs.SnapshotTo(dir)
	if err != nil {
		mset.jsa.js.fs.RemoveAll(dir)
		mset.jsa.js.srv.Warnf("JetStream stream '%s > %s': linked snapshot at %d failed, taking a full one: %v",
			mset.jsa.acc.Name, mset.name, index, err)
		return nil, 0, false
	}
	meta.Linked = name
	linked := newLinkedSnap(*meta)
	every := linkedSnapshotEvery(snap.Files())
	return func() (snapPayload, error) {
		if err := snap.Write(); err != nil {
			mset.jsa.js.fs.RemoveAll(dir)
			return snapPayload{}, err
		}
		return snapPayload{local: linked}, nil
	}, every, true
}

// linkedSnapshotEvery is the interval after a linked snapshot that linked
// files files: taking one links (and may sync) each of them.
func linkedSnapshotEvery(files int) uint64 { return 16 * uint64(files) }

// errLinkedRestore marks a linked snapshot that cannot be restored.
var errLinkedRestore = errors.New("cannot restore linked snapshot")

// linkedSnapTag starts a linked snapshot's data, before the metadata: a
// server older than linked snapshots fails to read one instead of taking
// it for a full snapshot without messages.
const linkedSnapTag = "tern-linked-snapshot-1"

// snapsDir is the directory of a group's linked snapshots.
const snapsDir = "snaps"

// pruneSnapshotDirs removes the snapshot directories no snapshot of the
// log refers to (the durable one, one being written, and keep stay).
func (mset *stream) pruneSnapshotDirs(keep uint64) {
	durable, pending := mset.wal.snapshotIndexes()
	dir := filepath.Join(mset.groupDir, snapsDir)
	ents, _ := mset.jsa.js.fs.ReadDir(dir)
	for _, e := range ents {
		idx, err := strconv.ParseUint(e.Name(), 10, 64)
		if err == nil && (idx == durable || idx == pending || idx == keep) {
			continue
		}
		mset.pins.ifUnpinned(e.Name(), func() { mset.jsa.js.fs.RemoveAll(filepath.Join(dir, e.Name())) })
	}
}

// snapPins counts the readers of each snapshot directory; pruning leaves
// a pinned one alone.
type snapPins struct {
	mu lockorder.Mutex[lockorder.SnapPins]
	n  map[string]int
}

func (p *snapPins) add(name string, delta int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == nil {
		p.n = map[string]int{}
	}
	if p.n[name] += delta; p.n[name] <= 0 {
		delete(p.n, name)
	}
}

// ifUnpinned runs f, holding off new pins, unless name is pinned.
func (p *snapPins) ifUnpinned(name string, f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n[name] == 0 {
		f()
	}
}

// snapshotRank returns this replica's rank among the stream's peers
// (sorted by name) and their number.
func (mset *stream) snapshotRank(name string) (rank, n uint64) {
	jc := mset.jsa.js.cluster
	if jc == nil {
		return 0, 1
	}
	sa := jc.assignment(mset.jsa.acc.Name, name)
	if sa == nil || len(sa.Peers) == 0 {
		return 0, 1
	}
	peers := slices.Clone(sa.Peers)
	slices.Sort(peers)
	return uint64(max(slices.Index(peers, jc.js.srv.Name()), 0)), uint64(len(peers))
}

// restoreSnapshot replaces the replica's state with a snapshot's.
func (mset *stream) restoreSnapshot(snap raft.Snapshot) error {
	switch local := snap.Local.(type) {
	case spooledSnap:
		return mset.restoreSpooled(local)
	case linkedSnap:
		return mset.restoreFrom(local.meta, nil)
	case nil:
		meta, r, err := decodeFullSnap(snap.Data)
		if err != nil {
			return err
		}
		return mset.restoreFrom(meta, bytesSnapMsgs(r))
	default:
		return fmt.Errorf("stream snapshot of unknown kind %T", snap.Local)
	}
}

// restoreSpooled restores a full snapshot whose data is in a file, reading
// its messages as a stream.
func (mset *stream) restoreSpooled(sp spooledSnap) error {
	f, sr, err := sp.open(mset.jsa.js.fs)
	if err != nil {
		return err
	}
	defer f.Close()
	br := bufio.NewReaderSize(sr, snapFlushBytes)
	mj, err := readSnapField(br, nil)
	if err != nil {
		return err
	}
	var meta streamSnapMeta
	if err := json.Unmarshal(mj, &meta); err != nil || meta.Linked != "" {
		return errBadRaftMsg // linked snapshots are read in, never spooled
	}
	if err := mset.restoreFrom(meta, streamSnapMsgs(br)); err != nil {
		return err
	}
	if sp.Index != 0 {
		mset.jsa.js.srv.raft.restoredFromLog.Add(1)
	}
	return nil
}

// restoreFrom replaces the replica's state with the snapshot of meta and,
// for a full one, the messages next yields (nil: a linked one). The new
// store is built beside the current one, without mu (restores and applies
// both run on the group's goroutine only, so nothing else writes the
// store meanwhile, and readers keep the old store until the swap); mu is
// held only to swap it in with the state that goes with it. The old store
// is deleted after. A failed restore leaves the old store in place.
func (mset *stream) restoreFrom(meta streamSnapMeta, next func() (snapMsg, bool, error)) error {
	jsa := mset.jsa
	consumers, err := decodeConsumerSnaps(meta.Consumers)
	if err != nil {
		return err
	}
	dir := filepath.Join(jsa.dir, mset.name)
	mset.storeGen++
	msgs := filepath.Join(dir, "msgs."+strconv.FormatUint(mset.storeGen, 10))
	jsa.js.fs.RemoveAll(msgs)
	var store StreamStore
	if next == nil {
		store, err = mset.restoreLinked(dir, msgs, &meta)
	} else {
		store, err = mset.restoreFull(dir, msgs, &meta, next)
	}
	if err != nil {
		if store != nil {
			_ = store.Delete()
		}
		jsa.js.fs.RemoveAll(msgs)
		return err
	}
	mset.mu.Lock()
	old := mset.st()
	mset.setStore(store)
	mset.cfg = meta.Config
	mset.lmsgID, mset.applied, mset.digest = meta.LastID, meta.Applied, meta.Digest
	mset.ddmap, mset.ddarr, mset.ddhead = map[string]*dedupeEntry{}, nil, 0
	for _, d := range meta.Dedupe {
		dde := &dedupeEntry{id: d.ID, seq: d.Seq, ts: d.TS}
		mset.ddmap[d.ID], mset.ddarr = dde, append(mset.ddarr, dde)
	}
	mset.restoreConsumersLocked(consumers)
	mset.mu.Unlock()
	_ = old.Delete()
	if mset.wal != nil {
		mset.pruneSnapshotDirs(0)
	}
	return nil
}

// restoreFull builds a store in msgs (a directory of the stream's dir)
// from the messages that follow a full snapshot's metadata. On an error
// it returns the partial store, for the caller to delete.
func (mset *stream) restoreFull(dir, msgs string, meta *streamSnapMeta, next func() (snapMsg, bool, error)) (StreamStore, error) {
	store, err := mset.jsa.openStoreIn(dir, msgs, &meta.Config)
	if err != nil {
		return nil, err
	}
	seq := uint64(1)
	for {
		m, ok, err := next()
		switch {
		case err != nil:
			return store, err
		case !ok:
			if meta.Last+1 > seq {
				_ = store.SkipMsgs(meta.Last + 1 - seq)
			}
			return store, nil
		case m.seq < seq:
			return store, errBadRaftMsg
		case m.seq > seq:
			_ = store.SkipMsgs(m.seq - seq)
		}
		if _, err := store.StoreMsg(m.subj, m.hdr, m.msg, m.ts); err != nil {
			return store, err
		}
		seq = m.seq + 1
	}
}

// restoreLinked makes the store in msgs from a linked snapshot's
// directory and checks it holds what the metadata says.
func (mset *stream) restoreLinked(dir, msgs string, meta *streamSnapMeta) (StreamStore, error) {
	if mset.groupDir == "" {
		return nil, fmt.Errorf("linked snapshot %s outside a raft group", meta.Linked)
	}
	snapDir := filepath.Join(mset.groupDir, snapsDir, meta.Linked)
	if err := restoreFileSnapshot(mset.jsa.js.fs, snapDir, msgs); err != nil {
		return nil, fmt.Errorf("%w %s: %w", errLinkedRestore, meta.Linked, err)
	}
	store, err := mset.jsa.openStoreIn(dir, msgs, &meta.Config)
	if err != nil {
		return nil, err
	}
	fs, ok := store.(linkableStore)
	if !ok {
		return store, fmt.Errorf("linked snapshot %s for a %v stream", meta.Linked, meta.Config.Storage)
	}
	fs.MarkShared()
	verifyStore(store) // every record's checksum (stream_repair.go)
	var st StreamState
	store.FastState(&st)
	ck, _ := store.(checkpointChecker)
	if st.Msgs != meta.Messages || st.LastSeq != meta.Last || (st.Msgs > 0 && st.FirstSeq != meta.First) ||
		ck != nil && ck.CheckpointMismatched() {
		err := fmt.Errorf("%w %s: it holds %d messages %d..%d, not %d messages %d..%d", errLinkedRestore,
			meta.Linked, st.Msgs, st.FirstSeq, st.LastSeq, meta.Messages, meta.First, meta.Last)
		if ck != nil && ck.CheckpointMismatched() {
			err = fmt.Errorf("%w %s: a block file its checkpoint lists is missing", errLinkedRestore, meta.Linked)
		}
		if mset.alone {
			return store, mset.keepDamaged(store, meta, st, err) // stream_repair.go
		}
		return store, err
	}
	return store, nil
}

// wantSnapshot is asked after every batch of applied entries: when a
// snapshot is due it returns the last applied index and the function that
// encodes the state at that index (stream_snapshot_capture.go).
//
// A snapshot costs CPU and disk work, so replicas take theirs at different
// points: the one of rank r among n peers when its applied index passes
// k*interval - r*interval/n, at least half an interval after its last
// snapshot. The phase holds whatever snapshot a replica installed.
func (mset *stream) wantSnapshot() (uint64, func() (snapPayload, error), bool) {
	mset.mu.Lock()
	due := !mset.closed && mset.lastIndex-mset.snapIndex >= snapshotEvery/2
	name := mset.cfg.Name
	mset.mu.Unlock()
	if !due {
		return 0, nil, false
	}
	rank, n := mset.snapshotRank(name)
	mset.mu.Lock()
	interval := max(snapshotEvery, mset.snapEvery)
	phase := interval * rank / n
	crossed := (mset.lastIndex+phase)/interval > (mset.snapIndex+phase)/interval
	if mset.closed || !crossed || mset.lastIndex-mset.snapIndex < interval/2 {
		mset.mu.Unlock()
		return 0, nil, false
	}
	index, prevIndex, prevEvery := mset.lastIndex, mset.snapIndex, mset.snapEvery
	meta, st := mset.snapMetaLocked()
	store := mset.st()
	fs, linkable := store.(linkableStore)
	linkable = linkable && linkedSnapshots && mset.groupDir != "" && mset.wal != nil
	// The log keeps twice the stream's messages in entries below the
	// snapshot: a follower back from a restart catches up from the log,
	// not from a snapshot of the whole stream.
	if mset.wal != nil {
		mset.wal.keep.Store(max(snapshotEvery, min(snapshotKeepFactor*st.Msgs, snapshotKeepMax)))
	}
	mset.snapIndex = index
	mset.mu.Unlock()
	// Applies run on this goroutine only, so the store stays at index
	// while the slower part (pruning, linking) runs without mu, which
	// publishes take.
	var encode func() (snapPayload, error)
	var every uint64
	ok := false
	if linkable {
		encode, every, ok = mset.linkedSnapshot(index, &meta, fs)
	}
	if !ok {
		encode, every = fullSnapshot(store, &meta, st), 2*st.Msgs
	}
	mset.mu.Lock()
	if mset.snapIndex == index {
		mset.snapEvery = every
	}
	mset.mu.Unlock()
	return index, func() (snapPayload, error) {
		b, err := encode()
		if err != nil { // not taken: the next batch of applies tries again
			mset.mu.Lock()
			if mset.snapIndex == index {
				mset.snapIndex, mset.snapEvery = prevIndex, prevEvery
			}
			mset.mu.Unlock()
		}
		return b, err
	}, true
}
