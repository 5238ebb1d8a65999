package server

import (
	"fmt"

	"github.com/nats-io/nats-server/v2/internal/store"
)

// A store's write error (EIO, ENOSPC: store.WriteFailure, sticky) breaks
// the store as a panic does (stream_store_panic.go). A rule a message
// breaks (too large, a limit) is not one: every replica refuses it alike.
// On a replicated stream the failing replica must not answer "not
// stored" for an entry the other replicas store, nor refuse every later
// entry on its own (silently diverging, and failing every write when it
// leads): its group halts at the next apply (streamSM.Apply), or at once
// when the failure came from its periodic sync, and the replica restarts
// from its log (stream_halt_restart.go); a leader's halt hands the
// leadership over. A stream on one server refuses writes (10077), as the
// message really was not stored. Either way /healthz and /jsz report it
// while the broken store runs (brokenStores).

const (
	brokenNo = iota
	brokenYes
	brokenGone
)

// markStoreBroken records err as the reason mset's store refuses writes
// and counts the stream in brokenStores (once, and never after it
// stopped).
func (mset *stream) markStoreBroken(err error) {
	if mset.storeBroken.CompareAndSwap(nil, &err) && mset.brokenCounted.CompareAndSwap(brokenNo, brokenYes) {
		mset.jsa.js.brokenStores.Add(1)
	}
}

// forgetStoreBroken takes a stopped stream out of brokenStores (its
// replacement, if any, starts with a new store).
func (mset *stream) forgetStoreBroken() {
	if mset.brokenCounted.Swap(brokenGone) == brokenYes {
		mset.jsa.js.brokenStores.Add(-1)
	}
}

// storeWriteFailed marks the store broken when err is its write failure
// (a call's error path only: nothing on a stored message's path).
func (mset *stream) storeWriteFailed(err error) {
	if err == nil || !store.IsWriteFailure(err) || mset.storeBroken.Load() != nil {
		return
	}
	mset.jsa.js.srv.Errorf("JetStream: stream '%s > %s': its store failed: %v", mset.jsa.acc.Name, mset.name, err)
	mset.markStoreBroken(fmt.Errorf("store write failed: %w", err))
}

// storeSyncFailed handles a failed periodic sync: a replicated stream's
// group halts now (an idle stream would otherwise wait for its next entry
// to halt, reported broken meanwhile), on its own goroutine, logging one
// line (raft_halt.go: an expected failure, no stack). Under a raftHost
// the host takes the halt as an event's error.
func (mset *stream) storeSyncFailed(err error) {
	mset.storeWriteFailed(err)
	broken := mset.storeFailure()
	if !mset.replicated || broken == nil {
		return
	}
	if g := mset.groupNow(); g != nil {
		g.haltWith(fmt.Errorf("stream store failed: %w", broken),
			fmt.Sprintf("JetStream stream '%s > %s': store sync failed: %v: halting replica; it restarts and catches up from its peers",
				mset.jsa.acc.Name, mset.name, err))
	}
}

// brokeOn reports whether err broke mset's replicated store: the entry
// then gets no answer from this replica, whose group halts.
func (mset *stream) brokeOn(err error) bool {
	mset.storeWriteFailed(err)
	return mset.replicated && mset.storeBroken.Load() != nil
}
