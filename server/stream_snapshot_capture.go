package server

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"io"
	"sync/atomic"
)

// A replicated stream's snapshot holds every message of the state at its
// index, so encoding one takes time proportional to the stream. The group
// goroutine only fixes the point (the counters, the duplicate window and
// the last sequence, all cheap) and a background goroutine then reads the
// messages from the store while later entries keep being applied. Entries
// after the point only add messages above its last sequence, which the
// encoder never reads, or remove messages, which the store first shows
// to the snapshot's RemovalWatcher: a message the encoder still needs is
// copied before it goes. A purge gives up the snapshot (the next one is
// taken at a later point); so does anything that closes or replaces the
// store.

// snapBatch is the number of messages an encoder reads per hold of the
// store's lock.
const snapBatch = 512

// snapFlushBytes is how much of a snapshot streamed to a file is buffered.
const snapFlushBytes = 1 << 20

// snapSavedMax bounds the bytes of copies a capture keeps: past it (a mass
// removal ahead of the encoder) the snapshot is given up rather than
// reading every removed message under the store's lock. A variable for
// tests.
var snapSavedMax = 64 << 20

var errSnapshotAbandoned = errors.New("snapshot abandoned")

// snapCapture reads the messages of [first, last] as they were when it was
// attached to the store.
type snapCapture struct {
	first, last uint64
	next        atomic.Uint64 // the next sequence the encoder reads
	abandoned   atomic.Bool
	mu          lockorder.Mutex[lockorder.SnapCapture]
	saved       savedMsgs // copies of messages removed before the encoder got to them
	savedBytes  int
	encoded     uint64 // the last sequence encoded (encoder only)
}

func (c *snapCapture) Wants(seq uint64) bool {
	return seq >= c.next.Load() && seq <= c.last && !c.abandoned.Load()
}

func (c *snapCapture) Save(sm *StoreMsg) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.savedBytes += len(sm.Subj) + len(sm.Buf) + 64; c.savedBytes > snapSavedMax {
		c.Abandon()
		c.saved = nil
		return
	}
	heap.Push(&c.saved, sm)
}

func (c *snapCapture) Abandon() { c.abandoned.Store(true) }

// captureMessages attaches a capture of [first, last] to store; the caller
// makes sure no entry is applied meanwhile.
func captureMessages(store StreamStore, first, last uint64) *snapCapture {
	c := &snapCapture{first: first, last: last}
	c.next.Store(first)
	store.(watchedStore).SetRemovalWatcher(c)
	return c
}

// encode appends every message of the capture to b, as the snapshot
// format has them, and detaches the capture from store.
func (c *snapCapture) encode(store StreamStore, b []byte) ([]byte, error) {
	return c.encodeFlushing(store, b, nil)
}

// encodeTo writes b and then every message of the capture to w, a batch
// at a time: memory stays bounded whatever the stream's size.
func (c *snapCapture) encodeTo(store StreamStore, b []byte, w io.Writer) error {
	flush := func(b []byte) ([]byte, error) {
		_, err := w.Write(b)
		return b[:0], err
	}
	b, err := c.encodeFlushing(store, b, flush)
	if err == nil {
		_, err = flush(b)
	}
	return err
}

// encodeFlushing is encode handing the buffer to flush (when set) after
// each batch that left it above snapFlushBytes.
func (c *snapCapture) encodeFlushing(store StreamStore, b []byte, flush func([]byte) ([]byte, error)) ([]byte, error) {
	defer func() {
		store.(watchedStore).SetRemovalWatcher(nil)
		c.mu.Lock()
		c.saved = nil // copies of messages already read, saved in passing
		c.mu.Unlock()
	}()
	ws := store.(watchedStore)
	var sm StoreMsg
	for from := c.first; from <= c.last && c.last > 0; from += snapBatch {
		if c.abandoned.Load() {
			return nil, errSnapshotAbandoned
		}
		to := min(from+snapBatch-1, c.last)
		// The batch is read under the store's lock and next moves past it
		// before the lock is let go, so every message of the batch was
		// either read live or saved by a removal before the batch.
		err := ws.ReadLive(from, to, &sm, func(m *StoreMsg) { b = c.appendMsg(c.flushSaved(b, m.Seq-1), m) },
			func() { c.next.Store(to + 1) })
		if err != nil {
			return nil, err
		}
		b = c.flushSaved(b, to)
		if flush != nil && len(b) >= snapFlushBytes {
			if b, err = flush(b); err != nil {
				return nil, err
			}
		}
	}
	if c.abandoned.Load() {
		return nil, errSnapshotAbandoned
	}
	return b, nil
}

// flushSaved appends the saved copies of sequences up to seq, in order,
// and forgets them. Called with the store's lock held or after next moved
// past seq, so no copy at or below seq can be saved later.
func (c *snapCapture) flushSaved(b []byte, seq uint64) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.saved) > 0 && c.saved[0].Seq <= seq {
		b = c.appendMsg(b, heap.Pop(&c.saved).(*StoreMsg))
	}
	return b
}

// appendMsg encodes m unless a message at or above its sequence already
// was: a sequence is never encoded twice, whatever a store reports.
func (c *snapCapture) appendMsg(b []byte, m *StoreMsg) []byte {
	if m.Seq <= c.encoded {
		return b
	}
	c.encoded = m.Seq
	return appendSnapMsg(b, m)
}

// savedMsgs is a min-heap of saved copies by sequence.
type savedMsgs []*StoreMsg

func (h savedMsgs) Len() int           { return len(h) }
func (h savedMsgs) Less(i, j int) bool { return h[i].Seq < h[j].Seq }
func (h savedMsgs) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *savedMsgs) Push(x any)        { *h = append(*h, x.(*StoreMsg)) }
func (h *savedMsgs) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func appendSnapMsg(b []byte, m *StoreMsg) []byte {
	b = binary.AppendUvarint(b, m.Seq)
	b = binary.AppendVarint(b, m.TS)
	b = appendBytes(b, []byte(m.Subj))
	b = appendBytes(b, m.Hdr)
	return appendBytes(b, m.Msg)
}
