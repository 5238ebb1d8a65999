package server

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// A replicated stream's snapshot (full or linked: both carry the
// metadata) holds each consumer's canonical State, in name order; a
// replica that installs it has its consumers exactly as they were at the
// snapshot's index.

// consumerSnap is one consumer in a stream snapshot.
type consumerSnap struct {
	Name  string `json:"name"`
	State []byte `json:"state"` // cstate AppendSnapshot
	// last_per_subject: the initial list still to deliver and the stream's
	// end at creation (consumer_lps.go), alike on every replica.
	LSS    []uint64 `json:"lss,omitempty"`
	LSSEnd uint64   `json:"lss_end,omitempty"`
}

// consumerSnapsLocked captures the consumers' states.
func (mset *stream) consumerSnapsLocked() []consumerSnap {
	var out []consumerSnap
	for _, o := range mset.logConsumersLocked() {
		o.trimLastPerSubjectLocked()
		out = append(out, consumerSnap{Name: o.name, State: o.state.AppendSnapshot(nil), LSS: o.lss, LSSEnd: o.lssEnd})
	}
	return out
}

// decodeConsumerSnaps checks and decodes a snapshot's consumers (before
// anything of the replica is replaced).
func decodeConsumerSnaps(snaps []consumerSnap) (map[string]*consumer, error) {
	out := make(map[string]*consumer, len(snaps))
	for _, cs := range snaps {
		st, err := cstate.RestoreSnapshot(cs.State)
		if err != nil {
			return nil, fmt.Errorf("consumer %q in snapshot: %w", cs.Name, err)
		}
		var cfg ConsumerConfig
		if err := json.Unmarshal(st.Config().Raw, &cfg); err != nil {
			return nil, fmt.Errorf("consumer %q in snapshot: config: %w", cs.Name, err)
		}
		out[cs.Name] = &consumer{name: cs.Name, cfg: &cfg, state: *st, lss: cs.LSS, lssEnd: cs.LSSEnd}
	}
	return out, nil
}

// restoreConsumersLocked replaces the stream's consumers with a
// snapshot's. A consumer object that exists keeps its identity (timers
// and requests refer to it); one the snapshot does not have is dropped.
func (mset *stream) restoreConsumersLocked(snaps map[string]*consumer) {
	for name, o := range mset.consumers {
		if snaps[name] == nil && !o.local {
			o.queueOutLocked(mset.removeConsumerLocked(o))
		}
	}
	for name, n := range snaps {
		if o := mset.consumers[name]; o != nil {
			o.cfg, o.state, o.lss, o.lssEnd = n.cfg, n.state, n.lss, n.lssEnd
			o.created = stampTime(n.state.Created())
			continue
		}
		n.mset, n.created = mset, stampTime(n.state.Created())
		if n.cfg.isPush() {
			n.push = &pushState{subj: n.cfg.DeliverSubject}
		}
		mset.addConsumerLocked(n)
		if mset.leader {
			n.startLeadingLocked()
		}
	}
}

func stampTime(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// consumersDigestLocked folds every consumer's Digest, in name order: equal
// on replicas that applied the same entries.
func (mset *stream) consumersDigestLocked() uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, o := range mset.logConsumersLocked() {
		h.Write([]byte(o.name))
		binary.BigEndian.PutUint64(b[:], o.state.Digest())
		h.Write(b[:])
	}
	return h.Sum64()
}
