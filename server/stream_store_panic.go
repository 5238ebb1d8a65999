package server

import (
	"fmt"
	"runtime/debug"
)

// A panic in a stream's store (a bug in its write path) must not end the
// process from a path that has to go on: stopping or deleting a stream
// (Shutdown stops every stream), syncing it, and a publish to a stream on
// one server, stored and flushed on the publisher's goroutine. The store
// has released its locks and turned read-only by then (internal/store
// unlock); here the panic is logged and becomes the call's error, and a
// stream on one server refuses writes from then on (storeBroken: the
// publisher gets 10077, /healthz reports it) while the server and the
// other streams go on. A replicated stream's store is written only by its
// group's apply: a panic there halts the group, and so does a write after
// a panic elsewhere (its group commit's sync) broke the store, which would
// otherwise fail on this replica alone (streamSM.Apply); never an answer
// "not stored" for an entry the other replicas stored. The replica is then
// restarted from its log (stream_halt_restart.go).

// storeSafely runs call (a call into mset's store), a panic logged and
// returned as its error.
func (mset *stream) storeSafely(what string, call func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = mset.storePanicked(what, p)
		}
	}()
	return call()
}

// storePanicked logs a store panic and marks the stream's store broken.
func (mset *stream) storePanicked(what string, p any) error {
	err := fmt.Errorf("store %s panicked: %v", what, p)
	mset.jsa.js.srv.Errorf("JetStream: stream %q: %v\n%s", mset.name, err, debug.Stack())
	mset.markStoreBroken(err) // stream_store_failure.go
	return err
}

// storeFailure is the store panic that made the stream refuse writes.
func (mset *stream) storeFailure() error {
	if p := mset.storeBroken.Load(); p != nil {
		return *p
	}
	return nil
}

// storeMsgLocked stores m (or skips its sequence: interest retention, and
// nobody would ever read it). A replicated stream's panic goes on to its
// group as it is (mset.mu is released by applyEntry's deferred
// releaseOnPanic); a stream on one server's becomes the error.
func (mset *stream) storeMsgLocked(m *inMsg) (uint64, error) {
	if mset.replicated {
		return mset.storeOrSkipLocked(m)
	}
	return mset.storeMsgRecoveredLocked(m)
}

func (mset *stream) storeMsgRecoveredLocked(m *inMsg) (seq uint64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = mset.storePanicked("write", p)
		}
	}()
	return mset.storeOrSkipLocked(m)
}

func (mset *stream) storeOrSkipLocked(m *inMsg) (uint64, error) {
	if mset.noInterestLocked(m.subj) {
		return mset.skipNoInterestLocked()
	}
	return mset.st().StoreMsg(m.subj, m.hdr, m.msg, m.ts)
}

// releaseOnPanic unlocks mset.mu when a panic leaves it held (*locked),
// then lets the panic go on (deferred by applyEntry: the group halts, and
// the replica's restart and Shutdown stop it without waiting on mu).
func (mset *stream) releaseOnPanic(locked *bool) {
	if p := recover(); p != nil {
		if *locked {
			mset.mu.Unlock()
		}
		panic(p)
	}
}

// storeFailed is /healthz's error for a stream whose store failed
// (storeBroken: a panic or a write error); "" when none.
func (js *jetStream) storeFailed() string {
	if js.brokenStores.Load() == 0 {
		return ""
	}
	for _, jsa := range js.accountList() {
		for _, mset := range jsa.streamList() {
			if err := mset.storeFailure(); err != nil {
				return fmt.Sprintf("JetStream stream '%s > %s' failed: %v", jsa.acc.Name, mset.name, err)
			}
		}
	}
	return ""
}
