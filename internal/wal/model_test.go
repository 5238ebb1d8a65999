package wal

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// mstate is the logical content of a WAL in the model.
type mstate struct {
	base, baseTerm      uint64
	snapIndex, snapTerm uint64
	ents                []Record // base+1 ..; never written through once shared
	hs                  HardState
}

func (s *mstate) last() uint64 { return s.base + uint64(len(s.ents)) }

// walModel drives a WAL with random operations and knows which states a
// crash may leave: any state from the last completed fsync on.
type walModel struct {
	t       *testing.T
	rng     *rand.Rand
	fs      *vfs.MemFS
	pooled  bool // the WAL's files under a budget of one open file (vfs.Pool)
	w       *WAL
	opts    Options
	cur     mstate
	pending HardState
	since   []mstate
	term    uint64
	failing bool // an error is being injected
	trace   []string
}

func (m *walModel) logf(format string, args ...any) {
	m.trace = append(m.trace, fmt.Sprintf(format, args...))
	if len(m.trace) > 40 {
		m.trace = m.trace[1:]
	}
}

func (m *walModel) push()    { m.since = append(m.since, m.cur) }
func (m *walModel) durable() { m.since = append(m.since[:0], m.cur) }

func TestWALRandomModel(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModel(t, uint64(seed), 400) })
	}
}

// The same model with every segment file under an open-file budget of
// one: files closed by the budget between uses, opened again by the next
// read, write or sync, must change nothing the WAL promises.
func TestWALRandomModelPooled(t *testing.T) {
	for seed := range 20 {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runModelWith(t, uint64(seed), 400, true) })
	}
}

// files is the file system the WAL is opened on.
func (m *walModel) files() vfs.FS {
	if m.pooled {
		return vfs.NewPool(m.fs, 1)
	}
	return m.fs
}

func runModel(t *testing.T, seed uint64, steps int) { runModelWith(t, seed, steps, false) }

func runModelWith(t *testing.T, seed uint64, steps int, pooled bool) {
	rng := rand.New(rand.NewPCG(seed, 7))
	m := &walModel{t: t, rng: rng, fs: vfs.NewMem(), term: 1, pooled: pooled,
		opts: Options{SegmentSize: int64(300 + rng.IntN(4000)), Logf: func(string, ...any) {}}}
	m.w = mustOpen(t, m.files(), memDir, m.opts)
	m.durable()
	for step := 0; step < steps; step++ {
		if err := m.step(); err != nil {
			if !errors.Is(err, errInjected) {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
			m.crash()
		}
	}
	m.crash()
}

func (m *walModel) step() error {
	switch p := m.rng.IntN(100); {
	case p < 40:
		return m.appendBatch()
	case p < 52:
		return m.setHardState()
	case p < 70:
		return m.sync()
	case p < 78:
		return m.truncate()
	case p < 83:
		return m.compact()
	case p < 87:
		return m.snapshot()
	case p < 92:
		m.crash()
	case p < 95:
		m.reopen()
	default:
		m.inject()
	}
	return nil
}

func (m *walModel) appendBatch() error {
	var rs []Record
	for i := range 1 + m.rng.IntN(12) {
		data := make([]byte, m.rng.IntN(400)+m.rng.IntN(2)*m.rng.IntN(3000))
		for k := range data {
			data[k] = byte(m.rng.Uint32())
		}
		rs = append(rs, Record{Index: m.cur.last() + 1 + uint64(i), Term: m.term, Type: uint8(m.rng.IntN(3)), Data: data})
	}
	err := m.w.Append(rs)
	m.logf("append %d..%d term %d: %v", rs[0].Index, rs[len(rs)-1].Index, m.term, err)
	if err != nil && !m.failing {
		return err
	}
	for _, r := range rs {
		r.Data = bytes.Clone(r.Data)
		m.cur.ents = append(m.cur.ents, r)
		m.push()
	}
	return err
}

func (m *walModel) setHardState() error {
	hs := m.pending
	if m.rng.IntN(3) == 0 {
		m.term++
		hs = HardState{Term: m.term, Commit: hs.Commit}
	}
	if hs.Vote == 0 {
		hs.Vote = uint64(m.rng.IntN(4))
	}
	if last := m.cur.last(); last > hs.Commit {
		hs.Commit += uint64(m.rng.IntN(int(last-hs.Commit) + 1))
	}
	if err := m.w.SetHardState(hs); err != nil {
		return err
	}
	m.pending = hs
	return nil
}

func (m *walModel) sync() error {
	err := m.w.Sync()
	m.logf("sync (hs %+v): %v", m.pending, err)
	if err != nil && !m.failing {
		return err
	}
	if m.cur.hs != m.pending {
		m.cur.hs = m.pending
		m.push()
	}
	if err == nil {
		m.durable()
	}
	return err
}

func (m *walModel) truncate() error {
	low := max(m.pending.Commit, m.cur.hs.Commit, m.cur.snapIndex, m.cur.base) + 1
	if low > m.cur.last() {
		return nil
	}
	i := low + uint64(m.rng.IntN(int(m.cur.last()-low+1)))
	err := m.w.TruncateFrom(i)
	m.logf("truncate from %d: %v", i, err)
	if err != nil && !m.failing {
		return err
	}
	m.cur.ents = append([]Record(nil), m.cur.ents[:i-m.cur.base-1]...)
	m.push()
	m.term++
	return err
}

func (m *walModel) compact() error {
	upTo := m.cur.base + uint64(m.rng.IntN(len(m.cur.ents)+1))
	err := m.w.Compact(upTo)
	m.logf("compact %d: %v", upTo, err)
	if err != nil && !m.failing {
		return err
	}
	if upTo > m.cur.base {
		k := upTo - m.cur.base
		m.cur.baseTerm = m.cur.ents[k-1].Term
		m.cur.ents, m.cur.base = m.cur.ents[k:], upTo
		m.push()
		if err == nil {
			m.durable() // a new compaction point is fsynced
		}
	}
	return err
}

func (m *walModel) snapshot() error {
	index, term := m.cur.last()+1+uint64(m.rng.IntN(40)), m.term // installed from a leader
	if keep := max(m.cur.base, m.cur.snapIndex); m.rng.IntN(2) == 0 && keep <= m.cur.last() {
		index = keep + uint64(m.rng.IntN(int(m.cur.last()-keep+1)))
		term = m.cur.baseTerm
		if index > m.cur.base {
			term = m.cur.ents[index-m.cur.base-1].Term
		}
	}
	err := m.w.SaveSnapshotMeta(index, term)
	m.logf("snapshot %d/%d: %v", index, term, err)
	if err != nil && !m.failing {
		return err
	}
	if index > m.cur.last() {
		m.cur.ents, m.cur.base, m.cur.baseTerm = nil, index, term
	}
	m.cur.snapIndex, m.cur.snapTerm = index, term
	m.push()
	if err == nil {
		m.durable()
	}
	return err
}

// inject makes a random share of the coming writes, fsyncs and creations
// fail; the first failure ends in a crash.
func (m *walModel) inject() {
	m.failing = true
	m.logf("inject")
	odds := 2 + m.rng.IntN(20)
	r := rand.New(rand.NewPCG(m.rng.Uint64(), 1))
	m.fs.InjectError(func(op, name string) error {
		switch op {
		case "write", "sync", "syncdir", "open", "remove":
			if r.IntN(odds) == 0 {
				return errInjected
			}
		}
		return nil
	})
}

// crash drops what was not synced (or keeps a random torn part of it),
// reopens and checks the log is one of the states since the last fsync.
func (m *walModel) crash() {
	m.fs.InjectError(nil)
	m.failing = false
	m.logf("crash")
	if m.rng.IntN(2) == 0 {
		m.fs.Crash()
	} else {
		m.fs.CrashKeep(func(_ string, n int) int { return m.rng.IntN(n + 1) })
	}
	m.w = mustOpen(m.t, m.files(), memDir, m.opts)
	m.cur = m.match(m.since)
	m.pending = m.cur.hs
	m.durable()
}

// reopen closes cleanly (which syncs) and opens again: nothing may change.
func (m *walModel) reopen() {
	if m.failing {
		m.crash()
		return
	}
	m.logf("reopen")
	if err := m.w.Close(); err != nil {
		m.t.Fatalf("close: %v", err)
	}
	m.cur.hs = m.pending
	m.w = mustOpen(m.t, m.files(), memDir, m.opts)
	m.cur = m.match([]mstate{m.cur})
	m.durable()
}

// match returns the candidate the opened WAL equals, or fails the test.
func (m *walModel) match(cands []mstate) mstate {
	m.t.Helper()
	var why string
	for i := len(cands) - 1; i >= 0; i-- {
		if why = m.differs(&cands[i]); why == "" {
			return cands[i]
		}
	}
	for _, l := range m.trace {
		m.t.Log(l)
	}
	m.t.Fatalf("recovered log matches none of %d candidate states; vs the latest: %s", len(cands), why)
	return mstate{}
}

func (m *walModel) differs(s *mstate) string {
	w := m.w
	si, st := w.SnapshotMeta()
	switch {
	case w.FirstIndex() != s.base+1 || w.LastIndex() != s.last():
		return fmt.Sprintf("log %d..%d, want %d..%d", w.FirstIndex(), w.LastIndex(), s.base+1, s.last())
	case w.HardState() != s.hs:
		return fmt.Sprintf("hard state %+v, want %+v", w.HardState(), s.hs)
	case si != s.snapIndex || st != s.snapTerm:
		return fmt.Sprintf("snapshot %d/%d, want %d/%d", si, st, s.snapIndex, s.snapTerm)
	}
	if term, err := w.Term(s.base); err != nil || term != s.baseTerm {
		return fmt.Sprintf("term(%d) = %d, %v; want %d", s.base, term, err, s.baseTerm)
	}
	if len(s.ents) == 0 {
		return ""
	}
	got, err := w.Entries(s.base+1, s.last()+1, 1<<40)
	if err != nil || len(got) != len(s.ents) {
		return fmt.Sprintf("entries: %d, %v", len(got), err)
	}
	for i, r := range got {
		e := s.ents[i]
		if r.Index != e.Index || r.Term != e.Term || r.Type != e.Type || !bytes.Equal(r.Data, e.Data) {
			return fmt.Sprintf("entry %d differs", e.Index)
		}
	}
	return ""
}
