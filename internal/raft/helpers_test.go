package raft

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// recSM records what a node applies.
type recSM struct {
	applied []Entry
	snap    *Snapshot
}

func (s *recSM) Restore(snap Snapshot) error {
	s.snap = &snap
	s.applied = nil
	return nil
}

func (s *recSM) Apply(ents []Entry) error {
	s.applied = append(s.applied, ents...)
	return nil
}

func (s *recSM) data() []string {
	var out []string
	for _, e := range s.applied {
		if e.Type == EntryNormal {
			out = append(out, string(e.Data))
		}
	}
	return out
}

type queueNet struct{ q *[]Message }

func (n queueNet) Send(msgs []Message) { *n.q = append(*n.q, msgs...) }

// testNet runs a few nodes with synchronous, in-order message delivery.
type testNet struct {
	t     testing.TB
	ids   []ID
	drv   map[ID]*Driver
	st    map[ID]*MemoryStorage
	sm    map[ID]*recSM
	cfgs  map[ID]Config
	q     []Message
	cut   map[[2]ID]bool
	down  map[ID]bool
	drop  func(m Message) bool // drop matching messages
	edit  func(m *Message)     // rewrite messages before delivery
	sent  []Message            // every message handed to the network
	peers []ID
}

func testConfig(id ID, peers []ID) Config {
	c := DefaultConfig(id, peers)
	rng := rand.New(rand.NewPCG(uint64(id), 42))
	c.Rand = rng.IntN
	return c
}

func newTestNet(t testing.TB, mod func(*Config), ids ...ID) *testNet {
	n := &testNet{t: t, drv: map[ID]*Driver{}, st: map[ID]*MemoryStorage{}, sm: map[ID]*recSM{},
		cfgs: map[ID]Config{}, cut: map[[2]ID]bool{}, down: map[ID]bool{}, peers: slices.Clone(ids)}
	for _, id := range ids {
		n.add(id, ids, mod)
	}
	return n
}

// add starts a node with a fresh storage and the given initial peers.
func (n *testNet) add(id ID, peers []ID, mod func(*Config)) {
	c := testConfig(id, peers)
	if mod != nil {
		mod(&c)
	}
	n.cfgs[id] = c
	n.st[id] = NewMemoryStorage()
	n.ids = append(n.ids, id)
	slices.Sort(n.ids)
	n.start(id)
}

func (n *testNet) start(id ID) {
	n.sm[id] = &recSM{}
	d, err := NewDriver(n.cfgs[id], n.st[id], queueNet{&n.q}, n.sm[id])
	if err != nil {
		n.t.Fatalf("node %d: %v", id, err)
	}
	n.drv[id] = d
	delete(n.down, id)
}

// restart drops the node's volatile state and starts it again from storage.
func (n *testNet) restart(id ID) { n.start(id) }

func (n *testNet) node(id ID) *Node { return n.drv[id].Node }

func (n *testNet) raft(id ID) *raft { return n.drv[id].Node.r }

func (n *testNet) process() {
	for _, id := range n.ids {
		if n.down[id] {
			continue
		}
		if err := n.drv[id].ProcessAll(); err != nil {
			n.t.Fatalf("node %d: %v", id, err)
		}
	}
}

func (n *testNet) deliverable(m Message) bool {
	if n.down[m.To] || n.down[m.From] || n.cut[[2]ID{m.From, m.To}] {
		return false
	}
	return n.drop == nil || !n.drop(m)
}

// settle processes and delivers until no message is left.
func (n *testNet) settle() {
	for range 100000 {
		n.process()
		if len(n.q) == 0 {
			return
		}
		msgs := n.q
		n.q = nil
		n.sent = append(n.sent, msgs...)
		for _, m := range msgs {
			if n.edit != nil {
				n.edit(&m)
			}
			if d := n.drv[m.To]; d != nil && n.deliverable(m) {
				if err := d.Node.Step(m); err != nil {
					n.t.Fatalf("step %s: %v", m, err)
				}
			}
		}
	}
	n.t.Fatalf("network did not settle")
}

// tick ticks every live node k times, settling after each round.
func (n *testNet) tick(k int) {
	for range k {
		for _, id := range n.ids {
			if !n.down[id] {
				n.node(id).Tick()
			}
		}
		n.settle()
	}
}

func (n *testNet) isolate(id ID) {
	for _, o := range n.ids {
		if o != id {
			n.cut[[2]ID{id, o}] = true
			n.cut[[2]ID{o, id}] = true
		}
	}
}

func (n *testNet) heal() { n.cut = map[[2]ID]bool{} }

// elect makes id campaign and checks that it wins.
func (n *testNet) elect(id ID) {
	n.t.Helper()
	n.node(id).Campaign()
	n.settle()
	if r := n.raft(id); r.role != Leader {
		n.t.Fatalf("node %d did not win: role %s term %d", id, r.role, r.term)
	}
}

// leader returns the live leader with the highest term, or None.
func (n *testNet) leader() ID {
	var best ID
	var term uint64
	for _, id := range n.ids {
		if r := n.raft(id); !n.down[id] && r.role == Leader && r.term >= term {
			best, term = id, r.term
		}
	}
	return best
}

func (n *testNet) propose(id ID, data ...string) {
	n.t.Helper()
	for _, d := range data {
		if err := n.node(id).Propose([]byte(d)); err != nil {
			n.t.Fatalf("propose %q on %d: %v", d, id, err)
		}
	}
	n.settle()
}

// logTerms lists (index:term) of a node's whole log, for comparisons.
func (n *testNet) logTerms(id ID) []uint64 {
	l := n.raft(id).log
	var out []uint64
	for i := l.firstIndex(); i <= l.lastIndex(); i++ {
		t, err := l.term(i)
		if err != nil {
			n.t.Fatalf("term(%d): %v", i, err)
		}
		out = append(out, t)
	}
	return out
}

func ents(terms ...uint64) []Entry {
	out := make([]Entry, len(terms))
	for i, t := range terms {
		out[i] = Entry{Index: uint64(i + 1), Term: t}
	}
	return out
}

// storageWith returns a storage holding entries with the given terms.
func storageWith(terms ...uint64) *MemoryStorage {
	s := NewMemoryStorage()
	if err := s.Append(ents(terms...)); err != nil {
		panic(err)
	}
	return s
}

// persistAll does for a raft used without a driver what a driver's
// Ready, sync and Advance do for its log: every entry becomes durable.
func persistAll(r *raft) {
	handOut(r)
	r.persisted(r.log.lastIndex(), r.log.lastTerm())
}

// handOut does what a driver does with a Ready's entries before their
// sync: they are written (not yet durable) and in progress.
func handOut(r *raft) {
	if err := r.log.st.(*MemoryStorage).Append(r.log.u.unhanded()); err != nil {
		panic(err)
	}
	r.log.u.handAll()
}
