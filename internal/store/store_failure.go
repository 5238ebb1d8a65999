package store

import "errors"

// WriteFailure is a store's sticky write error: an I/O error (EIO,
// ENOSPC) or a panic under its lock left it refusing writes from then on.
// It is the store's own failure, not a rule a message broke (too large,
// a limit): a replicated stream halts the replica whose store failed,
// where every replica would refuse a message that breaks a rule.
type WriteFailure struct{ Err error }

func (w *WriteFailure) Error() string { return w.Err.Error() }
func (w *WriteFailure) Unwrap() error { return w.Err }

// IsWriteFailure reports whether err is (or wraps) a store's write
// failure.
func IsWriteFailure(err error) bool {
	var w *WriteFailure
	return errors.As(err, &w)
}
