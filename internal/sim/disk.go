package sim

import (
	"errors"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// errCrash is returned by a fake disk or state machine armed to crash: the
// node dies in the middle of processing a Ready.
var errCrash = errors.New("sim: node crashed")

// write is one persisted item, in the order the driver wrote it.
type write struct {
	snap *raft.Snapshot
	ent  *raft.Entry
	hs   *raft.HardState
}

// disk is a node's fake disk. Saved writes stay pending until Sync; a crash
// keeps a random prefix of the pending writes (a torn, unsynced tail) and
// loses the rest. The core reads the durable part only: everything it reads
// was synced before Advance.
type disk struct {
	durable *raft.MemoryStorage
	pending []write
	// crashOnSync makes the next Sync crash the node.
	crashOnSync bool
	// observe sees every Save (the checker's view of the node's log).
	observe func(snap *raft.Snapshot, ents []raft.Entry, hs *raft.HardState) error
}

func newDisk() *disk { return &disk{durable: raft.NewMemoryStorage()} }

func (d *disk) InitialState() (raft.HardState, []raft.ID, error) { return d.durable.InitialState() }
func (d *disk) Entries(lo, hi, max uint64) ([]raft.Entry, error) {
	return d.durable.Entries(lo, hi, max)
}
func (d *disk) Term(i uint64) (uint64, error)    { return d.durable.Term(i) }
func (d *disk) FirstIndex() (uint64, error)      { return d.durable.FirstIndex() }
func (d *disk) LastIndex() (uint64, error)       { return d.durable.LastIndex() }
func (d *disk) Snapshot() (raft.Snapshot, error) { return d.durable.Snapshot() }

// Save implements raft.LogStore.
func (d *disk) Save(snap *raft.Snapshot, ents []raft.Entry, hs *raft.HardState) error {
	if d.observe != nil {
		if err := d.observe(snap, ents, hs); err != nil {
			return err
		}
	}
	if snap != nil {
		s := *snap
		d.pending = append(d.pending, write{snap: &s})
	}
	for i := range ents {
		d.pending = append(d.pending, write{ent: &ents[i]})
	}
	if hs != nil {
		h := *hs
		d.pending = append(d.pending, write{hs: &h})
	}
	return nil
}

// Sync implements raft.LogStore.
func (d *disk) Sync() error {
	if d.crashOnSync {
		return errCrash
	}
	return d.flush(len(d.pending))
}

// Compact implements raft.LogStore: a local snapshot is written durably at once.
func (d *disk) Compact(snap raft.Snapshot) error {
	if err := d.flush(len(d.pending)); err != nil {
		return err
	}
	return d.durable.Compact(snap)
}

// crash keeps the first keep pending writes and forgets the rest.
func (d *disk) crash(keep int) error {
	err := d.flush(min(keep, len(d.pending)))
	d.pending = nil
	d.crashOnSync = false
	return err
}

// flush makes the first n pending writes durable, in order.
func (d *disk) flush(n int) error {
	for _, w := range d.pending[:n] {
		var err error
		switch {
		case w.snap != nil:
			err = d.durable.ApplySnapshot(*w.snap)
		case w.ent != nil:
			err = d.durable.Append([]raft.Entry{*w.ent})
		default:
			d.durable.SetHardState(*w.hs)
		}
		if err != nil {
			return err
		}
	}
	d.pending = d.pending[n:]
	return nil
}
