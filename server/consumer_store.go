package server

import (
	"encoding/json"
	"path/filepath"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A durable consumer of a file stream keeps, in <stream dir>/obs/<name>/:
// meta.json (its config and creation time, written atomically at create
// and update) and state (its cstate snapshot, written atomically). The
// state is saved consumerSaveEvery after a change, before an ack that
// asked for a reply is answered, and when the stream stops. See
// ARCHITECTURE.md for what kill -9 loses.
const (
	consumersDir      = "obs"
	consumerStateFile = "state"
	consumerSaveEvery = time.Second
)

type consumerMeta struct {
	Config  *ConsumerConfig `json:"config"`
	Created time.Time       `json:"created"`
}

// persists reports whether the consumer's state goes to disk.
func (o *consumer) persists() bool {
	// A replicated stream's consumers are kept by its log and snapshots.
	return !o.mset.replicated && o.mset.cfg.Storage == FileStorage && isDurableConsumer(o.cfg)
}

func (o *consumer) dir() string {
	return filepath.Join(o.mset.jsa.dir, o.mset.name, consumersDir, o.name)
}

// saveMetaLocked writes meta.json and the state.
func (o *consumer) saveMetaLocked() error {
	if !o.persists() {
		return nil
	}
	js := o.mset.jsa.js
	if err := vfs.MkdirAllSynced(js.fs, o.dir(), 0o750); err != nil {
		return err
	}
	b, _ := json.Marshal(consumerMeta{Config: o.cfg, Created: o.created})
	if err := js.writeFileSync(filepath.Join(o.dir(), streamMetaFile), b); err != nil {
		return err
	}
	return o.saveStateLocked()
}

// saveStateLocked writes the state snapshot now.
func (o *consumer) saveStateLocked() error {
	if !o.persists() {
		return nil
	}
	o.dirty = false
	return o.mset.jsa.js.writeFileSync(filepath.Join(o.dir(), consumerStateFile), o.state.AppendSnapshot(nil))
}

// markDirtyLocked schedules a save of a changed state.
func (o *consumer) markDirtyLocked() {
	if !o.persists() || o.dirty || o.closed {
		return
	}
	o.dirty = true
	if o.saveT != nil {
		o.saveT.Reset(consumerSaveEvery)
		return
	}
	o.saveT = o.mset.jsa.js.srv.clock.AfterFunc(consumerSaveEvery, o.saveFired)
}

func (o *consumer) saveFired() {
	o.mset.mu.Lock()
	defer o.mset.mu.Unlock()
	if o.closed || !o.dirty {
		return
	}
	if err := o.saveStateLocked(); err != nil {
		o.mset.jsa.js.srv.Errorf("JetStream: saving consumer %q > %q: %v", o.mset.name, o.name, err)
	}
}

// recoverConsumers loads the durable consumers of a file stream at start.
func (mset *stream) recoverConsumers() {
	js := mset.jsa.js
	base := filepath.Join(mset.jsa.dir, mset.name, consumersDir)
	entries, err := js.fs.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(base, e.Name())
		b, err := vfs.ReadFile(js.fs, filepath.Join(dir, streamMetaFile))
		var meta consumerMeta
		if err == nil {
			err = json.Unmarshal(b, &meta)
		}
		if err != nil || meta.Config == nil {
			js.srv.Errorf("JetStream: consumer %q > %q not recovered: bad meta (%v)", mset.name, e.Name(), err)
			continue
		}
		o := &consumer{mset: mset, name: e.Name(), cfg: meta.Config, created: meta.Created}
		st, err := loadConsumerState(js.fs, filepath.Join(dir, consumerStateFile))
		mset.mu.Lock()
		if err == nil {
			o.state = *st
		} else {
			js.srv.Warnf("JetStream: consumer %q > %q state not recovered (%v): starting it afresh", mset.name, o.name, err)
			o.applyLocked(&cstate.Entry{Op: cstate.OpCreate, Gen: 1, TS: meta.Created.UnixNano(), Config: stateConfig(o.cfg)})
			o.outq = nil // recovered, not created: no advisory
		}
		mset.addConsumerLocked(o)
		o.armAckTimerLocked()
		o.startLocked()
		o.armPauseLocked()
		if pin, _ := o.state.Pinned(); pin != "" {
			o.armPinLocked(pin) // a recovered pin times out like a new one
		}
		o.queueOutLocked(o.pumpLocked(nil))
		mset.mu.Unlock()
		mset.ensureAckSub()
		mset.ensureFCSub()
		mset.flushConsumerNamed(o.name)
	}
}

func loadConsumerState(fs vfs.FS, path string) (*cstate.State, error) {
	b, err := vfs.ReadFile(fs, path)
	if err != nil {
		return nil, err
	}
	return cstate.RestoreSnapshot(b)
}
