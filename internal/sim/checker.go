package sim

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// logView is the checker's copy of one node's log (terms and prefix
// hashes), kept in step with what the node saves.
type logView struct {
	base     uint64 // snapshot index; entries start at base+1
	baseHash uint64
	terms    []uint64
	hashes   []uint64 // hashes[k] covers the log up to index base+1+k
	commit   uint64
}

func (v *logView) last() uint64 { return v.base + uint64(len(v.terms)) }

func (v *logView) term(i uint64) (uint64, bool) {
	if i <= v.base || i > v.last() {
		return 0, false
	}
	return v.terms[i-v.base-1], true
}

func (v *logView) hash(i uint64) uint64 {
	if i == v.base {
		return v.baseHash
	}
	return v.hashes[i-v.base-1]
}

func (v *logView) truncate(after uint64) {
	k := after - v.base
	v.terms, v.hashes = v.terms[:k], v.hashes[:k]
}

// prefixHash extends the hash of a log prefix with entry (index, term). Two
// logs with equal prefix hashes at an index hold the same entries up to it.
func prefixHash(prev, index, term uint64) uint64 {
	x := prev ^ (index * 0x9e3779b97f4a7c15) ^ (term * 0xc2b2ae3d27d4eb4f)
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	x *= 0x94d049bb133111eb
	return x ^ x>>32
}

type termIndex struct{ index, term uint64 }

// checker holds the cluster-wide facts that every step is checked against:
//   - at most one leader per term;
//   - a committed entry (index, term) never changes on a node that has it
//     (nor do two nodes commit different entries at one index);
//   - log matching: equal (index, term) means equal prefixes;
//   - replicas' apply digests agree at every index;
//   - no node applies beyond its commit index, nor skips an index;
//   - a leader reports LeaderReady only once it applied an entry of its term;
//   - a read never returns a value older than the last write to its key
//     acknowledged (first applied anywhere) before the read was requested.
type checker struct {
	leaders   map[uint64]raft.ID   // term → leader
	committed map[uint64]uint64    // index → term of the committed entry
	prefix    map[termIndex]uint64 // (index, term) → prefix hash
	digests   map[uint64]uint64    // index → apply digest
	applied   map[string]uint64    // normal entry payload → index (first applier)
	views     map[raft.ID]*logView // per node
	kvs       map[raft.ID]*KV      // per node, for the LeaderReady check
	maxCommit uint64
	// confChanges counts membership changes applied (after bootstrap).
	confChanges int
	// Reads (reads.go): successful writes per key in log order, the index
	// that set each key=value, and a total order of write acknowledgements
	// and read requests.
	writes  map[string][]kvWrite
	valueAt map[string]uint64
	seq     uint64
}

func newChecker() *checker {
	return &checker{
		leaders:   map[uint64]raft.ID{},
		committed: map[uint64]uint64{},
		prefix:    map[termIndex]uint64{{0, 0}: 0},
		digests:   map[uint64]uint64{},
		applied:   map[string]uint64{},
		views:     map[raft.ID]*logView{},
		kvs:       map[raft.ID]*KV{},
	}
}

func (c *checker) view(id raft.ID) *logView {
	v := c.views[id]
	if v == nil {
		v = &logView{}
		c.views[id] = v
	}
	return v
}

// onReady checks the roles a node reports.
func (c *checker) onReady(id raft.ID, rd *raft.Ready) error {
	ss := rd.SoftState
	if ss.Role == raft.Leader {
		if l, ok := c.leaders[ss.Term]; ok && l != id {
			return fmt.Errorf("two leaders in term %d: %d and %d", ss.Term, l, id)
		}
		c.leaders[ss.Term] = id
	}
	if ss.LeaderReady {
		if kv := c.kvs[id]; kv == nil || kv.appliedTerm != ss.Term {
			return fmt.Errorf("node %d LeaderReady in term %d before applying an entry of its term", id, ss.Term)
		}
	}
	return nil
}

// onSave checks and records what a node writes to its log.
func (c *checker) onSave(id raft.ID, snap *raft.Snapshot, ents []raft.Entry, hs *raft.HardState) error {
	v := c.view(id)
	if snap != nil {
		if err := c.installSnapshot(id, v, snap); err != nil {
			return err
		}
	}
	if len(ents) > 0 {
		if err := c.appendEntries(id, v, ents); err != nil {
			return err
		}
	}
	if hs != nil {
		return c.commitTo(id, v, hs.Commit)
	}
	return nil
}

func (c *checker) installSnapshot(id raft.ID, v *logView, s *raft.Snapshot) error {
	if t, ok := c.committed[s.Index]; ok && t != s.Term {
		return fmt.Errorf("node %d installs snapshot (%d,%d) but (%d,%d) is committed", id, s.Index, s.Term, s.Index, t)
	}
	for i := max(v.base, s.Index) + 1; i <= v.last(); i++ {
		if t, _ := v.term(i); c.committed[i] == t {
			return fmt.Errorf("node %d: snapshot at %d discards committed entry (%d,%d)", id, s.Index, i, t)
		}
	}
	h, ok := c.prefix[termIndex{s.Index, s.Term}]
	if !ok {
		return fmt.Errorf("node %d: snapshot at (%d,%d), an entry no node ever wrote", id, s.Index, s.Term)
	}
	*v = logView{base: s.Index, baseHash: h, commit: s.Index}
	c.committed[s.Index] = s.Term
	return nil
}

func (c *checker) appendEntries(id raft.ID, v *logView, ents []raft.Entry) error {
	for len(ents) > 0 && ents[0].Index <= v.base {
		ents = ents[1:]
	}
	if len(ents) == 0 {
		return nil
	}
	first := ents[0].Index
	if first > v.last()+1 {
		return fmt.Errorf("node %d writes entry %d after a gap (last %d)", id, first, v.last())
	}
	for i := first; i <= v.last(); i++ {
		old, _ := v.term(i)
		var now uint64
		if k := i - first; k < uint64(len(ents)) {
			now = ents[k].Term
		}
		if t, ok := c.committed[i]; ok && t == old && now != old {
			return fmt.Errorf("node %d overwrites committed entry (%d,%d) with term %d", id, i, old, now)
		}
	}
	v.truncate(first - 1)
	prev := v.hash(first - 1)
	for i := range ents {
		e := &ents[i]
		h := prefixHash(prev, e.Index, e.Term)
		key := termIndex{e.Index, e.Term}
		if known, ok := c.prefix[key]; ok && known != h {
			return fmt.Errorf("log matching violated on node %d at (%d,%d)", id, e.Index, e.Term)
		}
		c.prefix[key] = h
		v.terms = append(v.terms, e.Term)
		v.hashes = append(v.hashes, h)
		prev = h
	}
	return nil
}

func (c *checker) commitTo(id raft.ID, v *logView, commit uint64) error {
	if commit < v.commit {
		return fmt.Errorf("node %d commit went back from %d to %d", id, v.commit, commit)
	}
	if commit > v.last() {
		return fmt.Errorf("node %d commits %d beyond its log (last %d)", id, commit, v.last())
	}
	for i := max(v.commit, v.base) + 1; i <= commit; i++ {
		t, _ := v.term(i)
		if ct, ok := c.committed[i]; ok && ct != t {
			return fmt.Errorf("node %d commits (%d,%d) but (%d,%d) was committed", id, i, t, i, ct)
		}
		c.committed[i] = t
	}
	v.commit = commit
	c.maxCommit = max(c.maxCommit, commit)
	return nil
}

// onApply checks one applied entry against the node's commit and the other
// replicas' digests.
func (c *checker) onApply(id raft.ID, e *raft.Entry, kv *KV) error {
	if v := c.view(id); e.Index > v.commit {
		return fmt.Errorf("node %d applies %d beyond its commit %d", id, e.Index, v.commit)
	}
	if t := c.committed[e.Index]; t != e.Term {
		return fmt.Errorf("node %d applies (%d,%d) but (%d,%d) is committed", id, e.Index, e.Term, e.Index, t)
	}
	d, ok := c.digests[e.Index]
	if ok && d != kv.digest {
		return fmt.Errorf("node %d digest at %d differs: %x vs %x", id, e.Index, kv.digest, d)
	}
	if !ok && e.Type == raft.EntryConfChange && e.Term > 1 {
		c.confChanges++ // not counting the bootstrap entries
	}
	c.digests[e.Index] = kv.digest
	if e.Type == raft.EntryNormal {
		if _, ok := c.applied[string(e.Data)]; !ok {
			c.applied[string(e.Data)] = e.Index
			c.recordWrite(e, kv)
		}
	}
	return nil
}

// onRestore checks a state machine restored from a snapshot.
func (c *checker) onRestore(id raft.ID, s *raft.Snapshot, kv *KV) error {
	if kv.applied != s.Index {
		return fmt.Errorf("node %d: snapshot at %d holds state applied to %d", id, s.Index, kv.applied)
	}
	if d, ok := c.digests[s.Index]; ok && d != kv.digest {
		return fmt.Errorf("node %d: snapshot digest at %d differs: %x vs %x", id, s.Index, kv.digest, d)
	}
	c.digests[s.Index] = kv.digest
	return nil
}

// rebuild resets a node's view from its durable storage after a crash.
func (c *checker) rebuild(id raft.ID, st *raft.MemoryStorage) error {
	v := c.view(id)
	snap, _ := st.Snapshot()
	h, ok := c.prefix[termIndex{snap.Index, snap.Term}]
	if !ok {
		return fmt.Errorf("node %d restarts from unknown snapshot (%d,%d)", id, snap.Index, snap.Term)
	}
	*v = logView{base: snap.Index, baseHash: h, commit: snap.Index}
	first, _ := st.FirstIndex()
	last, _ := st.LastIndex()
	if last >= first {
		ents, err := st.Entries(first, last+1, 1<<62)
		if err != nil {
			return err
		}
		if err := c.appendEntries(id, v, ents); err != nil {
			return err
		}
	}
	if hs := st.HardState(); hs.Commit > v.commit {
		return c.commitTo(id, v, hs.Commit)
	}
	return nil
}
