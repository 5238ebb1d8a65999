package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// StorageType is where a stream keeps its messages.
type StorageType int

const (
	FileStorage StorageType = iota
	MemoryStorage
)

// storageNames are the JSON names of the storage types, as nats-server's.
var storageNames = []string{"file", "memory"}

func (st StorageType) MarshalJSON() ([]byte, error) {
	if st < 0 || int(st) >= len(storageNames) {
		return nil, fmt.Errorf("can not marshal %d", st)
	}
	return json.Marshal(storageNames[st])
}

func (st *StorageType) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	for i, n := range storageNames {
		if strings.EqualFold(n, s) {
			*st = StorageType(i)
			return nil
		}
	}
	*st = 0
	return fmt.Errorf("can not unmarshal %q", s)
}

// Store errors.
var (
	ErrStoreClosed       = errors.New("store is closed")
	ErrStoreMsgNotFound  = errors.New("no message found")
	ErrStoreEOF          = errors.New("stream store EOF")
	ErrMaxMsgs           = errors.New("maximum messages exceeded")
	ErrMaxBytes          = errors.New("maximum bytes exceeded")
	ErrMaxMsgsPerSubject = errors.New("maximum messages per subject exceeded")
	ErrStoreCorrupt      = errors.New("store is corrupt")
	ErrSequenceMismatch  = errors.New("expected sequence does not match store")
)

// StoreMsg is a stored message. Load functions fill a caller-provided
// StoreMsg (reusing its buffer) to avoid allocations.
type StoreMsg struct {
	Subj string
	Hdr  []byte
	Msg  []byte
	Buf  []byte // backing storage for Hdr and Msg
	Seq  uint64
	TS   int64 // unix nanoseconds, chosen before the message reached the store
}

// copyFrom sets sm to (subj, hdr, msg) using sm.Buf as storage.
func (sm *StoreMsg) copyFrom(subj string, hdr, msg []byte, seq uint64, ts int64) {
	sm.Buf = append(append(sm.Buf[:0], hdr...), msg...)
	sm.Hdr, sm.Msg = sm.Buf[:len(hdr):len(hdr)], sm.Buf[len(hdr):]
	if len(hdr) == 0 {
		sm.Hdr = nil
	}
	sm.Subj, sm.Seq, sm.TS = subj, seq, ts
}

// StreamState is the state of a store.
type StreamState struct {
	Msgs        uint64            `json:"messages"`
	Bytes       uint64            `json:"bytes"`
	FirstSeq    uint64            `json:"first_seq"`
	FirstTime   time.Time         `json:"first_ts"`
	LastSeq     uint64            `json:"last_seq"`
	LastTime    time.Time         `json:"last_ts"`
	NumSubjects int               `json:"num_subjects,omitempty"`
	Subjects    map[string]uint64 `json:"subjects,omitempty"`
	NumDeleted  int               `json:"num_deleted,omitempty"`
	Deleted     []uint64          `json:"deleted,omitempty"`
	Lost        *LostStreamData   `json:"lost,omitempty"`
	Consumers   int               `json:"consumer_count"`
}

// LostStreamData lists messages a store found damaged and skipped.
type LostStreamData struct {
	Msgs  []uint64 `json:"msgs"`
	Bytes uint64   `json:"bytes"`
}

// SimpleState is the per-subject (or per-filter) state.
type SimpleState struct {
	Msgs  uint64 `json:"messages"`
	First uint64 `json:"first_seq"`
	Last  uint64 `json:"last_seq"`
}

// StoreLimits are the limits a store enforces by discarding old messages.
// The stream layer checks discard-new limits before storing; the store
// only ever removes from the front (or the front of a subject).
type StoreLimits struct {
	MaxMsgs           int64
	MaxBytes          int64
	MaxMsgsPerSubject int64
}

// StreamStore is a stream's message store. Implementations are
// deterministic: the same calls in the same order give the same state, and
// nothing changes except through these calls (no timers, no clock reads).
// Sequences are assigned by the store: the next message gets LastSeq+1.
// All methods are safe for concurrent use.
type StreamStore interface {
	Queries
	// StoreMsg appends a message at LastSeq+1 and applies the limits.
	StoreMsg(subj string, hdr, msg []byte, ts int64) (seq uint64, err error)
	// SkipMsgs advances LastSeq by n without storing (first_seq, failures).
	SkipMsgs(n uint64) error
	LoadMsg(seq uint64, sm *StoreMsg) (*StoreMsg, error)
	// LoadLastMsg loads the last message whose subject matches filter
	// (wildcards allowed; "" or ">" means any subject).
	LoadLastMsg(filter string, sm *StoreMsg) (*StoreMsg, error)
	// LoadNextMsg loads the first message at or after start matching filter.
	LoadNextMsg(filter string, start uint64, sm *StoreMsg) (*StoreMsg, error)
	// LastSeqForSubject returns the sequence of the last message whose
	// subject matches filter, 0 when there is none. It reads only the
	// in-memory per-subject index.
	LastSeqForSubject(filter string) uint64
	RemoveMsg(seq uint64) (bool, error)
	// EraseMsg removes and overwrites the message's data on disk.
	EraseMsg(seq uint64) (bool, error)
	// Purge removes everything and keeps LastSeq (FirstSeq = LastSeq+1).
	Purge() (uint64, error)
	// PurgeEx removes messages matching subject (all if ""), below seq when
	// seq > 0, keeping the newest keep messages when keep > 0.
	PurgeEx(subject string, seq, keep uint64) (uint64, error)
	// Compact removes every message below seq.
	Compact(seq uint64) (uint64, error)
	// ExpireBefore removes messages with TS < cutoff from the front.
	ExpireBefore(cutoff int64) (uint64, error)
	State() StreamState
	FastState(*StreamState)
	// SubjectsState returns per-subject state for subjects matching filter.
	SubjectsState(filter string) map[string]SimpleState
	// FilteredState is the state of messages at or after seq matching subject.
	FilteredState(seq uint64, subject string) SimpleState
	UpdateLimits(StoreLimits) error
	// Flush hands everything stored so far to the operating system, so it
	// survives the process being killed (a power loss needs Sync).
	Flush() error
	// Sync flushes and fsyncs everything stored so far.
	Sync() error
	Stop() error
	Delete() error
}

// Queries are the reads a consumer makes of its stream (internal/consumer's
// Source), answered from the store's counters and per-subject index: no
// filter, one literal subject and ">" never scan the stream, wildcards
// look at each subject once and scan only a part of the stream that some
// matching subject has messages on both sides of.
type Queries interface {
	// Bounds are FirstSeq and LastSeq as FastState gives them: first is
	// LastSeq+1 when the store is empty.
	Bounds() (first, last uint64)
	// Contains reports whether the message with sequence seq is stored.
	Contains(seq uint64) bool
	// NumPending counts stored messages with sequence >= from whose
	// subject matches one of filters (every message when filters is empty
	// or holds "" or ">"); with lastPerSubject only each subject's last
	// message counts.
	NumPending(from uint64, filters []string, lastPerSubject bool) uint64
	// LastMatching is the sequence of the last message matching one of
	// filters (any message when filters is empty), 0 when none does.
	LastMatching(filters []string) uint64
	// SeqAtTime is the first stored sequence whose timestamp is >= ts,
	// LastSeq+1 when there is none. Timestamps are the callers' and need
	// not grow with the sequence: the answer is exact either way, only
	// cheaper when they do.
	SeqAtTime(ts int64) uint64
}
