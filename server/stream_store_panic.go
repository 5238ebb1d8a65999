package server

import (
	"fmt"
	"runtime/debug"
)

// A panic in a stream's store (a bug in its write path) must not end the
// process from a path that has to go on: stopping or deleting a stream
// (Shutdown stops every stream) and syncing it. The store has released
// its locks and turned read-only by then (internal/store unlock); here
// the panic is logged and becomes the call's error.

// storeSafely runs call (a call into mset's store), a panic logged and
// returned as its error.
func (mset *stream) storeSafely(what string, call func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("store %s panicked: %v", what, p)
			mset.jsa.js.srv.Errorf("JetStream: stream %q: %v\n%s", mset.name, err, debug.Stack())
		}
	}()
	return call()
}
