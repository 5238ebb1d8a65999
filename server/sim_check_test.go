package server

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"strconv"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// simChecker holds what every replica showed, and fails the run as soon
// as two of them disagree:
//   - at most one leader per group and term;
//   - an entry applied at an index is the same (term and data) everywhere,
//     and is never replaced;
//   - the state after applying index i (or installing a snapshot at i) has
//     the same digest on every replica;
//   - each publish entry has the same outcome (stored at a sequence, or
//     rejected) on every replica.
//
// At the end (final) it checks every acknowledged publish is stored with
// its sequence, the compare-and-set history is explained by the state,
// and the replicas' stores are identical.
type simChecker struct {
	w         *simWorld
	leaders   map[string]map[uint64]string // group → term → leader
	committed map[string]map[uint64]uint64 // group → index → entry hash
	digests   map[string]map[uint64]uint64 // group → index → state digest
	// pubs are the publish entries of each stream group by index.
	pubs map[string]map[uint64]*simPub
}

// simPub is one applied publish entry.
type simPub struct {
	subj   string
	expect int64  // Nats-Expected-Last-Subject-Sequence, -1 without
	seq    uint64 // stored at; 0 when rejected
	op     int    // the client operation (its reply subject), -1 if none
}

func newSimChecker(w *simWorld) *simChecker {
	return &simChecker{w: w, leaders: map[string]map[uint64]string{}, committed: map[string]map[uint64]uint64{},
		digests: map[string]map[uint64]uint64{}, pubs: map[string]map[uint64]*simPub{}}
}

// simSM stands between a group's driver and its state machine and shows
// the checker each entry applied and each snapshot installed.
type simSM struct {
	c     *simChecker
	n     *simNode
	g     *raftGroup
	inner raft.StateMachine
}

func (c *simChecker) wrap(n *simNode, g *raftGroup) raft.StateMachine {
	return &simSM{c: c, n: n, g: g, inner: g.drv.SM}
}

func (s *simSM) Apply(ents []raft.Entry) error {
	if simDebugGroup != "" && len(ents) > 0 {
		s.c.w.logf("%s %s: apply %d..%d (at %d)", s.n.name, s.g.name, ents[0].Index, ents[len(ents)-1].Index, s.appliedIndex())
	}
	for i := range ents {
		before := s.lastSeq()
		if sab := s.c.w.opts.sabotage; sab != nil && sab(s.n, &ents[i]) {
			continue
		}
		if err := s.inner.Apply(ents[i : i+1]); err != nil {
			return err
		}
		s.c.applied(s, &ents[i], before)
	}
	return nil
}

func (s *simSM) Restore(snap raft.Snapshot) error {
	if simDebugGroup != "" {
		s.c.w.logf("%s %s: restore snapshot %d (%T)", s.n.name, s.g.name, snap.Index, snap.Local)
	}
	if err := s.inner.Restore(snap); err != nil {
		return err
	}
	if !snap.IsEmpty() {
		s.c.w.stats.Installs++
	}
	if !snap.IsEmpty() {
		s.c.stateAt(s, snap.Index, "snapshot installed at")
	}
	return nil
}

func (s *simSM) stream() *stream {
	if sm, ok := s.inner.(*streamSM); ok {
		return sm.mset
	}
	return nil
}

func (s *simSM) lastSeq() uint64 {
	mset := s.stream()
	if mset == nil {
		return 0
	}
	var st StreamState
	mset.st().FastState(&st)
	return st.LastSeq
}

// appliedIndex is the index the state machine's state is at.
func (s *simSM) appliedIndex() uint64 {
	switch sm := s.inner.(type) {
	case *streamSM:
		sm.mset.mu.Lock()
		defer sm.mset.mu.Unlock()
		return sm.mset.lastIndex
	case *metaSM:
		return sm.applied
	}
	return 0
}

func (c *simChecker) applied(s *simSM, e *raft.Entry, before uint64) {
	name := s.g.name
	h := fnv.New64a()
	var b [17]byte
	binary.BigEndian.PutUint64(b[:], e.Term)
	b[8] = byte(e.Type)
	h.Write(b[:9])
	h.Write(e.Data)
	if m := c.committed[name]; m == nil {
		c.committed[name] = map[uint64]uint64{}
	}
	if prev, ok := c.committed[name][e.Index]; ok && prev != h.Sum64() {
		c.w.fail("%s: group %s applied a different entry at index %d (term %d) than another replica", s.n.name, name, e.Index, e.Term)
		return
	}
	c.committed[name][e.Index] = h.Sum64()
	if s.appliedIndex() != e.Index {
		return // already in an installed snapshot: not applied again
	}
	c.stateAt(s, e.Index, "after applying")
	if mset := s.stream(); mset != nil && e.Type == raft.EntryNormal && len(e.Data) > 0 {
		c.publishApplied(s, e, before)
	}
}

// stateAt compares the state digest at index with the other replicas'.
func (c *simChecker) stateAt(s *simSM, index uint64, what string) {
	var d uint64
	switch sm := s.inner.(type) {
	case *streamSM:
		d = simStreamDigest(sm.mset, false)
	case *metaSM:
		d = simMetaDigest(sm.jc)
	default:
		return
	}
	name := s.g.name
	if c.digests[name] == nil {
		c.digests[name] = map[uint64]uint64{}
	}
	if prev, ok := c.digests[name][index]; ok && prev != d {
		c.w.fail("%s: group %s: state %s %d differs from another replica's", s.n.name, name, what, index)
		return
	}
	c.digests[name][index] = d
}

func (c *simChecker) publishApplied(s *simSM, e *raft.Entry, before uint64) {
	var se streamEntry
	if err := decodeStreamEntryAt(&se, e.Data, ""); err != nil || se.op != streamOpMsg {
		return
	}
	p := &simPub{subj: se.m.subj, expect: -1, op: -1}
	if v := getHeader(JSExpectedLastSubjSeq, se.m.hdr); v != nil {
		if x, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			p.expect = x
		}
	}
	if id, ok := simOpID(se.reply); ok {
		p.op = id
	}
	if after := s.lastSeq(); after > before {
		p.seq = after
	}
	name := s.g.name
	if c.pubs[name] == nil {
		c.pubs[name] = map[uint64]*simPub{}
	}
	if prev := c.pubs[name][e.Index]; prev != nil && *prev != *p {
		c.w.fail("%s: group %s: the publish at index %d came out %+v here, %+v on another replica", s.n.name, name, e.Index, *p, *prev)
		return
	}
	c.pubs[name][e.Index] = p
}

// observe checks that no two replicas lead a group in the same term.
func (c *simChecker) observe(n *simNode) {
	for _, g := range n.liveGroups() {
		st := g.softState()
		if st.Role != raft.Leader {
			continue
		}
		if c.leaders[g.name] == nil {
			c.leaders[g.name] = map[uint64]string{}
		}
		if other, ok := c.leaders[g.name][st.Term]; ok && other != n.name {
			c.w.fail("group %s: %s and %s both lead in term %d", g.name, other, n.name, st.Term)
			return
		}
		c.leaders[g.name][st.Term] = n.name
	}
}

// simStreamDigest hashes a replica's store: its counts and bounds and
// the last message (cheap, for every step), or every message (full).
func simStreamDigest(mset *stream, full bool) uint64 {
	st := mset.st()
	var ss StreamState
	st.FastState(&ss)
	h := fnv.New64a()
	var b [32]byte
	binary.BigEndian.PutUint64(b[0:], ss.Msgs)
	binary.BigEndian.PutUint64(b[8:], ss.Bytes)
	binary.BigEndian.PutUint64(b[16:], ss.FirstSeq)
	binary.BigEndian.PutUint64(b[24:], ss.LastSeq)
	h.Write(b[:])
	from := ss.LastSeq
	if full {
		from = ss.FirstSeq
	}
	var sm StoreMsg
	mset.mu.Lock()
	binary.BigEndian.PutUint64(b[0:], mset.consumersDigestLocked()) // the consumers' states
	mset.mu.Unlock()
	h.Write(b[:8])
	for seq := from; seq <= ss.LastSeq && seq > 0; seq++ {
		m, err := st.LoadMsg(seq, &sm)
		if err != nil {
			continue
		}
		binary.BigEndian.PutUint64(b[0:], m.Seq)
		binary.BigEndian.PutUint64(b[8:], uint64(m.TS))
		h.Write(b[:16])
		h.Write([]byte(m.Subj))
		h.Write(m.Hdr)
		h.Write(m.Msg)
	}
	return h.Sum64()
}

// simMetaDigest hashes a server's stream assignments.
func simMetaDigest(jc *jsCluster) uint64 {
	jc.mu.Lock()
	b, _ := json.Marshal(jc.streams) // map keys are sorted
	jc.mu.Unlock()
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
