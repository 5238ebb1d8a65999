package consumer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// model drives one consumer through random histories: a leader proposes
// entries from the applied state into a queue (so some apply after others
// made them stale), the stream publishes, deletes and purges in between,
// and three replicas apply the same log: a applies the entries, b their
// encoding decoded, c is restored from a's snapshot now and then and goes
// on from there. After every apply the replicas' digests must agree and
// the invariants hold.
type model struct {
	t        *testing.T
	r        *rand.Rand
	src      *memSource
	a, b, c  *State
	queue    []Entry
	ts       int64
	index    uint64
	acked    map[uint64]bool // acknowledged in this incarnation: never delivered or pending again
	pending  map[uint64]bool // delivered, not acknowledged/retired/removed, by the outcomes
	floor    SeqPair
	restores int
}

func newModel(t *testing.T, seed uint64) *model {
	return &model{t: t, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), src: &memSource{},
		a: &State{}, b: &State{}, c: &State{}, ts: 1000 * sec}
}

var modelSubjects = []string{"a.0", "a.1", "b.0"}

func (m *model) randConfig() *Config {
	c := &Config{AckPolicy: AckPolicy(m.r.IntN(3)), AckWait: int64(1+m.r.IntN(5)) * sec,
		DeliverPolicy: []DeliverPolicy{DeliverAll, DeliverNew, DeliverLast, DeliverByStartSequence}[m.r.IntN(4)]}
	if c.DeliverPolicy == DeliverByStartSequence {
		c.OptStartSeq = uint64(1 + m.r.IntN(20))
	}
	if m.r.IntN(3) == 0 {
		c.BackOff = []int64{sec, 3 * sec}
	}
	if m.r.IntN(2) == 0 {
		c.MaxDeliver = int64(1 + m.r.IntN(4))
	}
	if m.r.IntN(3) == 0 {
		c.MaxAckPending = int64(1 + m.r.IntN(8))
	}
	if m.r.IntN(2) == 0 {
		c.FilterSubjects = []string{"a.*"}
	}
	return c
}

func (m *model) step() {
	m.ts += int64(m.r.IntN(700)) * 1_000_000
	switch k := m.r.IntN(100); {
	case k < 15:
		m.src.add(modelSubjects[m.r.IntN(3)], m.ts)
	case k < 17 && m.src.last() > 0:
		seq := 1 + uint64(m.r.IntN(int(m.src.last())))
		if m.src.Contains(seq) {
			m.src.remove(seq)
			m.applyNow(Entry{Op: OpStreamRemoved, Seqs: []uint64{seq}, Text: "Unacknowledged message was deleted"})
		}
	case k < 18 && m.src.last() > 0:
		cut := 1 + uint64(m.r.IntN(int(m.src.last())))
		for seq := uint64(1); seq < cut; seq++ {
			m.src.remove(seq)
		}
		m.applyNow(Entry{Op: OpStreamPurged, Seq: cut})
	case k < 50:
		m.proposeDeliver()
	case k < 75:
		m.proposeAck()
	case k < 80:
		m.propose(Entry{Op: OpRedeliverDue})
	case k < 82:
		m.propose(Entry{Op: OpPause, Until: m.ts + int64(m.r.IntN(3))*sec})
	case k < 84:
		m.propose(Entry{Op: OpResume, Until: []int64{m.a.paused, 0}[m.r.IntN(2)]}) // the timer's, the API's
	case k < 86:
		m.propose(Entry{Op: []Op{OpPin, OpUnpin}[m.r.IntN(2)], Text: []string{"", "X", "Y"}[m.r.IntN(3)]})
	case k < 88:
		cfg := *m.a.Config()
		cfg.AckWait, cfg.MaxDeliver = int64(1+m.r.IntN(5))*sec, int64(m.r.IntN(4))
		m.propose(Entry{Op: OpUpdate, Config: &cfg})
	case k < 89:
		m.propose(Entry{Op: OpDelete})
	case k < 92 && !m.a.Exists():
		m.propose(Entry{Op: OpCreate, Config: m.randConfig()})
	default:
		m.applyQueued()
	}
	if m.r.IntN(40) == 0 {
		m.restore()
	}
}

func (m *model) propose(e Entry) {
	e.TS, e.Consumer = m.ts, "C"
	if len(m.queue) < 8 && m.r.IntN(3) > 0 {
		m.queue = append(m.queue, e)
		return
	}
	m.applyQueued()
	m.applyNow(e)
}

func (m *model) applyQueued() {
	if len(m.queue) > 0 {
		e := m.queue[0]
		m.queue = m.queue[1:]
		m.applyNow(e)
	}
}

// proposeDeliver: due redeliveries first, then the next matching stored
// messages after what is delivered, as a leader picks them.
func (m *model) proposeDeliver() {
	s := m.a
	e := Entry{Op: OpDeliver, Gen: s.gen, Tag: m.index}
	for _, seq := range s.sortedPending() {
		if s.due(s.pending[seq], m.ts) {
			e.Seqs = append(e.Seqs, seq)
		}
	}
	for seq := s.delivered.Stream + 1; seq <= m.src.last() && len(e.Seqs) < 6; seq++ {
		if subj, ok := m.src.subject(seq); ok && s.Matches(subj) {
			e.Seqs = append(e.Seqs, seq)
		}
	}
	m.propose(e)
}

func (m *model) proposeAck() {
	var seq uint64
	if ps := m.a.sortedPending(); len(ps) > 0 && m.r.IntN(5) > 0 {
		seq = ps[m.r.IntN(len(ps))]
	} else {
		seq = uint64(m.r.IntN(int(m.src.last()) + 2))
	}
	var cseq uint64
	if p, ok := m.a.pending[seq]; ok {
		cseq = p.CSeq
	}
	op := []Op{OpAck, OpAck, OpAckAll, OpNak, OpTerm, OpProgress}[m.r.IntN(6)]
	m.propose(Entry{Op: op, Seq: seq, CSeq: cseq, Delay: int64(m.r.IntN(3)) * sec, Text: "why"})
}

func (m *model) restore() {
	c, err := RestoreSnapshot(m.a.AppendSnapshot(nil))
	if err != nil {
		m.t.Fatalf("restore: %v", err)
	}
	m.c = c
	m.restores++
}

func (m *model) applyNow(e Entry) {
	m.index++
	if e.Op == OpCreate || e.Op == OpUpdate {
		e.Gen = m.index
	}
	enc := AppendEntry(nil, &e)
	d, err := DecodeEntry(enc)
	if err != nil {
		m.t.Fatalf("decode %v: %v", e.Op, err)
	}
	d.Gen = e.Gen
	queued, before := len(m.queue) > 0, m.a.delivered.Stream
	ec := e
	if e.Op == OpPause || (e.Op == OpResume && e.Until == 0) {
		// The pause API's config, derived at apply by each replica from
		// its own state, as the server does.
		e.Config, d.Config, ec.Config = pauseConfig(m.a, &e), pauseConfig(m.b, &d), pauseConfig(m.c, &ec)
	}
	var oa, ob, oc Outcome
	m.a.Apply(&e, m.src, &oa)
	m.b.Apply(&d, m.src, &ob)
	m.c.Apply(&ec, m.src, &oc)
	if da, db, dc := m.a.Digest(), m.b.Digest(), m.c.Digest(); da != db || da != dc {
		m.t.Fatalf("step %d %v: digests a %x b %x c %x", m.index, e.Op, da, db, dc)
	}
	if fmt.Sprint(oa) != fmt.Sprint(ob) || fmt.Sprint(oa) != fmt.Sprint(oc) {
		m.t.Fatalf("step %d %v: outcomes differ\n%+v\n%+v\n%+v", m.index, e.Op, oa, ob, oc)
	}
	m.check(&e, &oa, queued, before)
}

func (m *model) check(e *Entry, out *Outcome, queued bool, before uint64) {
	s := m.a
	if out.Err != nil {
		return
	}
	if e.Op == OpCreate || e.Op == OpDelete {
		m.acked, m.pending, m.floor = map[uint64]bool{}, map[uint64]bool{}, s.floor
	}
	if got := ackFloorOf(s); got != s.floor {
		m.t.Fatalf("step %d %v: floor cache %+v, by definition %+v", m.index, e.Op, s.floor, got)
	}
	if s.floor.Stream < m.floor.Stream || s.floor.Consumer < m.floor.Consumer {
		m.t.Fatalf("step %d %v: floor went back from %+v to %+v", m.index, e.Op, m.floor, s.floor)
	}
	m.floor = s.floor
	for _, d := range out.Deliveries {
		if m.acked[d.SSeq] {
			m.t.Fatalf("step %d: acknowledged message %d delivered again", m.index, d.SSeq)
		}
		if d.Deliveries == 1 && s.cfg.AckPolicy != AckNone {
			m.pending[d.SSeq] = true
		}
	}
	if s.cfg.AckPolicy != AckNone {
		for _, seq := range out.Acked {
			m.acked[seq] = true
			delete(m.pending, seq)
		}
	}
	for _, ev := range out.Events {
		if ev.Kind == EventMaxDeliveries || ev.Kind == EventTerminated {
			delete(m.pending, ev.SSeq)
		}
	}
	if e.Op == OpStreamPurged {
		for seq := range m.pending {
			if seq < e.Seq {
				delete(m.pending, seq)
			}
		}
	}
	if s.NumAckPending() != len(m.pending) {
		m.t.Fatalf("step %d %v: num_ack_pending %d, outcomes say %d", m.index, e.Op, s.NumAckPending(), len(m.pending))
	}
	for seq := range m.acked {
		if _, ok := s.pending[seq]; ok {
			m.t.Fatalf("step %d: acknowledged %d pending again", m.index, seq)
		}
	}
	if !queued {
		m.checkPendingCounts(out, before)
	}
}

// checkPendingCounts: a delivery entry applied as soon as it was made
// numbers each message exactly, by a brute-force count of the stream:
// what is left to deliver after the last first delivery so far (a
// redelivery counts what is left at its point of the batch, as
// nats-server's num_pending at the moment it sends it).
func (m *model) checkPendingCounts(out *Outcome, cursor uint64) {
	s := m.a
	for _, d := range out.Deliveries {
		if d.Deliveries == 1 {
			cursor = d.SSeq
		}
		want := m.src.NumPending(cursor+1, s.cfg.FilterSubjects, false)
		if d.Pending != want {
			m.t.Fatalf("step %d: delivery %+v pending %d, brute force %d", m.index, d, d.Pending, want)
		}
	}
}

func TestModelReplicasAgree(t *testing.T) {
	seeds, steps := 300, 400
	if testing.Short() {
		seeds = 50
	}
	restores := 0
	for seed := range seeds {
		m := newModel(t, uint64(seed))
		m.propose(Entry{Op: OpCreate, Config: m.randConfig()})
		for range steps {
			m.step()
		}
		for len(m.queue) > 0 {
			m.applyQueued()
		}
		restores += m.restores
	}
	if restores == 0 {
		t.Fatal("no snapshot restore exercised")
	}
}

// TestSnapshotContinueEqualsContinue: restoring a snapshot and applying the
// rest of the log gives the state of applying the whole log.
func TestSnapshotContinueEqualsContinue(t *testing.T) {
	for seed := range 50 {
		m := newModel(t, uint64(1000+seed))
		m.propose(Entry{Op: OpCreate, Config: m.randConfig()})
		for range 200 {
			m.step()
		}
		snap := m.a.AppendSnapshot(nil)
		again, err := RestoreSnapshot(snap)
		if err != nil {
			t.Fatal(err)
		}
		if again.Digest() != m.a.Digest() || !slices.Equal(again.AppendSnapshot(nil), snap) {
			t.Fatalf("seed %d: restored state differs", seed)
		}
	}
}

// pauseConfig is what the server derives for a pause API entry: the
// configuration in force with the new pause_until, in Raw too.
func pauseConfig(s *State, e *Entry) *Config {
	c := s.cfg.clone()
	c.PauseUntil = 0
	if e.Op == OpPause {
		c.PauseUntil = e.Until
	}
	c.Raw = fmt.Appendf(c.Raw[:len(c.Raw):len(c.Raw)], `{"pause_until":%d}`, c.PauseUntil)
	return &c
}
