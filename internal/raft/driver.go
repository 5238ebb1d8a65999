package raft

import (
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"runtime/debug"
)

// LogStore is the durable side of a group: the log the core reads (Storage)
// plus the writes the driver makes.
type LogStore interface {
	Storage
	// Save writes, in this order, a snapshot received from the leader
	// (replacing the log), entries (truncating any conflicting tail) and
	// the hard state. The writes need not be durable until Sync.
	Save(snap *Snapshot, ents []Entry, hs *HardState) error
	// Sync makes everything saved so far durable (one fsync per batch).
	Sync() error
	// Compact durably records a snapshot taken locally (Node.Compact) and
	// drops the entries it covers.
	Compact(snap Snapshot) error
}

// Transport sends messages to peers. It must not block: a message that
// cannot be delivered is dropped (raft retries).
type Transport interface {
	Send(msgs []Message)
}

// StateMachine is the replicated state machine. Apply must be deterministic:
// the same entries in the same order give the same state on every replica.
type StateMachine interface {
	// Restore replaces the state with a snapshot's.
	Restore(snap Snapshot) error
	// Apply applies committed entries in order (NoOp and ConfChange entries
	// included, so the machine can track the applied index).
	Apply(ents []Entry) error
}

// Driver runs one node: it is the single place where a Ready is processed,
// in the order persist → sync → send → apply → advance. The simulator and
// the server both use it. Tick and Step go through the Driver (which turns a
// broken invariant into an error); Propose and the other calls go to Node
// directly, from the same goroutine.
type Driver struct {
	Node *Node
	Log  LogStore
	Net  Transport
	SM   StateMachine
	// Observe, if set, sees every Ready before it is processed (leader
	// changes, metrics, test invariants).
	Observe func(rd *Ready)
	// Reads, if set, receives each Ready's ReadStates once its committed
	// entries are applied (the state machine may still be behind a
	// ReadState's Index: wait for it before serving the read).
	Reads func(rs []ReadState)
	// SyncAside, if set, runs sync and apply at the same time and returns
	// both results (a leader's log syncs while the state machine applies
	// entries committed before; the two touch different state). Unset,
	// apply runs first, then sync: the simulator stays deterministic.
	SyncAside func(sync, apply func() error) (syncErr, applyErr error)
	// SyncBehind, if set, starts a sync of the log that runs behind the
	// driver (behind.go): a leader's Ready is then processed without
	// waiting for its own sync, and the leader counts itself for the
	// entries once the job ended and Reap saw it. The owner calls Reap
	// when a job ends. Unset, every sync is waited for.
	SyncBehind func(sync func() error) SyncJob

	behind behindSync
}

// NewDriver restores the state machine from the stored snapshot and starts
// the node on log.
func NewDriver(cfg Config, log LogStore, net Transport, sm StateMachine) (d *Driver, err error) {
	defer halted(&err)
	snap, err := log.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("raft: reading snapshot: %w", err)
	}
	if !snap.IsEmpty() {
		if err := sm.Restore(snap); err != nil {
			return nil, fmt.Errorf("raft: restoring snapshot %d: %w", snap.Index, err)
		}
	}
	n, err := NewNode(cfg, log)
	if err != nil {
		return nil, err
	}
	return &Driver{Node: n, Log: log, Net: net, SM: sm}, nil
}

// Process handles one Ready if there is one and reports whether it did. An
// error (a storage or state-machine failure, or a broken invariant in the
// core) means the group must stop: the node's state is no longer trustworthy.
func (d *Driver) Process() (done bool, err error) {
	defer halted(&err)
	done = true
	if err := d.Reap(false); err != nil {
		return true, err
	}
	if !d.Node.HasReady() {
		return false, nil
	}
	rd := d.Node.Ready()
	lattrace.Mark("ready", len(rd.Entries)*1000+len(rd.CommittedEntries))
	if lattrace.On {
		defer lattrace.Mark("ready.done", 0)
	}
	if d.Observe != nil {
		d.Observe(&rd)
	}
	if d.mayGoBehind(&rd) {
		return true, d.processBehind(rd)
	}
	if err := d.catchUp(); err != nil {
		return true, err
	}
	if rd.Snapshot != nil || len(rd.Entries) > 0 || rd.HardState != nil {
		if err := d.Log.Save(rd.Snapshot, rd.Entries, rd.HardState); err != nil {
			return true, fmt.Errorf("raft: persisting: %w", err)
		}
	}
	early := rd.LeaderMayPipeline() // sent while the leader's own log syncs
	if early {
		d.Net.Send(rd.Messages)
	}
	committed := rd.CommittedEntries
	if early && rd.MustSync {
		// The committed entries already durable here need not wait for
		// this batch's sync: the state machine goes on while it runs.
		n := durableCommitted(&rd)
		if err := d.applyAndSync(committed[:n]); err != nil {
			return true, err
		}
		committed = committed[n:]
	} else if rd.MustSync {
		if err := d.Log.Sync(); err != nil {
			return true, fmt.Errorf("raft: syncing: %w", err)
		}
	}
	if rd.Snapshot != nil {
		if err := d.SM.Restore(*rd.Snapshot); err != nil {
			return true, fmt.Errorf("raft: installing snapshot %d: %w", rd.Snapshot.Index, err)
		}
	}
	if len(rd.Messages) > 0 && !early {
		d.Net.Send(rd.Messages)
	}
	if len(committed) > 0 {
		if err := d.SM.Apply(committed); err != nil {
			return true, fmt.Errorf("raft: applying: %w", err)
		}
	}
	if len(rd.ReadStates) > 0 && d.Reads != nil {
		d.Reads(rd.ReadStates)
	}
	d.Node.Advance(rd)
	return true, nil
}

// durableCommitted is how many of rd's committed entries were durable
// here before rd: those below its first new entry (a snapshot replaces
// the log, so with one none is).
func durableCommitted(rd *Ready) int {
	if rd.Snapshot != nil {
		return 0
	}
	if len(rd.Entries) == 0 {
		return len(rd.CommittedEntries)
	}
	first := rd.Entries[0].Index
	n := 0
	for n < len(rd.CommittedEntries) && rd.CommittedEntries[n].Index < first {
		n++
	}
	return n
}

// applyAndSync applies ents (committed and durable here) and syncs the
// log: at once when SyncAside runs the sync, else the apply first.
func (d *Driver) applyAndSync(ents []Entry) error {
	apply := func() error {
		if len(ents) == 0 {
			return nil
		}
		if err := d.SM.Apply(ents); err != nil {
			return fmt.Errorf("raft: applying: %w", err)
		}
		return nil
	}
	var serr, aerr error
	if d.SyncAside != nil && len(ents) > 0 {
		serr, aerr = d.SyncAside(d.Log.Sync, apply)
	} else {
		aerr = apply()
		if aerr == nil {
			serr = d.Log.Sync()
		}
	}
	if aerr != nil {
		return aerr
	}
	if serr != nil {
		return fmt.Errorf("raft: syncing: %w", serr)
	}
	return nil
}

// halted converts a panic of the core into an error.
func halted(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("raft: group halted: %v\n%s", p, debug.Stack())
	}
}

// Step hands a peer's message to the node.
func (d *Driver) Step(m Message) (err error) {
	defer halted(&err)
	return d.Node.Step(m)
}

// Tick advances the node's clock.
func (d *Driver) Tick() (err error) {
	defer halted(&err)
	d.Node.Tick()
	return nil
}

// ProcessAll handles Readys until there are none left.
func (d *Driver) ProcessAll() error {
	for {
		done, err := d.Process()
		if err != nil || !done {
			return err
		}
	}
}

// Compact snapshots the state machine at index (already applied) with
// state data and drops the log entries before it.
func (d *Driver) Compact(index uint64, data []byte) error {
	return d.CompactLocal(index, data, nil)
}

// CompactLocal is Compact for a snapshot whose data the embedding server
// holds as local (Snapshot.Local) rather than, or besides, data.
func (d *Driver) CompactLocal(index uint64, data []byte, local any) error {
	if err := d.catchUp(); err != nil {
		return err
	}
	snap, err := d.Node.Compact(index, data)
	if err != nil {
		return err
	}
	snap.Local = local
	return d.Log.Compact(snap)
}
