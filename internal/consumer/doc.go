// Package consumer is the replicated state machine of a durable JetStream
// consumer: its State, the Entry values that change it, a deterministic
// Apply, a compact versioned codec for entries and snapshots, a Digest,
// the retention rule of interest and work-queue streams, and the ack reply
// subject. It knows nothing of the server, raft, clocks or stores: what it
// reads of its stream comes through the small Source interface.
//
// # How a stream carries consumer entries (the plan; server/ is unchanged)
//
// A consumer has no raft group of its own (DESIGN §2a): its entries travel
// in its stream's raft log, so messages, consumer changes and acks are
// ordered once, by one log, on every replica.
//
//   - server/stream_codec.go gains one op byte, e.g. streamOpConsumer 'K',
//     whose payload is AppendEntry's bytes (version byte, op, leader stamp,
//     consumer name, fields). The stream's envelope keeps its origin and
//     reply, so the proposing server answers after its own apply.
//   - The stream's state machine holds map[name]*State. Its apply decodes
//     the entry, sets Gen of a Create or Update to the entry's log index,
//     and calls State.Apply with a Source over its store at that index.
//     A Create makes the map entry; after a Delete the entry is removed.
//   - After the stream applies its own delete, expire, limit or purge
//     entries it hands each consumer an OpStreamRemoved (the sequences it
//     removed, with nats-server's term reason) or an OpStreamPurged (the
//     new first sequence). These are derived in the apply, never proposed.
//   - Outcome.Acked (and, after Create/Update/Delete, Outcome.Interest)
//     feed AppendRemovable / Removable under the stream's retention; the
//     stream removes those messages in the same apply, so every replica
//     removes the same messages at the same index (DESIGN §2a.3).
//   - Only the leader acts on Deliveries (it sends exactly those messages,
//     with ack subjects from their numbers, after the apply), on Due (its
//     redelivery queue), on Reply (the proposer answers an AckSync) and on
//     Events (advisories). Every replica acts on Acked.
//   - The stream's snapshot carries each consumer's AppendSnapshot; its
//     digest folds each consumer's Digest in name order.
//   - Ephemeral AckNone R1 consumers (ordered consumers, KV watch, object
//     get) use none of this: they run off the log on one server.
//
// # Replicated state and leader-only soft state
//
// Replicated (State): configuration and its generation, created stamp,
// delivered pair, pending (stream seq → first consumer seq, delivery count,
// last delivery stamp), messages past max_deliver still held, last
// delivery and ack stamps, pause deadline, pinned id and stamp. The ack
// floor, num_ack_pending, num_redelivered and num_pending are functions
// of it (num_pending of it and the store).
//
// Leader-only, rebuilt by a new leader from the applied state: waiting
// pull requests (num_waiting), the push delivery cursor (the next stream
// sequence to look at, at least Delivered+1, and a last-per-subject skip
// list), the redelivery queue (pending messages due at its clock), every
// timer (ack wait and backoff, pause end, pin and inactivity timeouts),
// flow control and heartbeats. A new leader commits a no-op, applies its
// whole log, then proposes from State: nothing it sends is decided by
// soft state alone.
//
// A State has no lock: the stream's apply owns it, and readers (consumer
// info) read it under the stream's lock, as they read the store.
//
// # Determinism rules
//
//   - Apply reads only the State, the Entry and the Source. The only time
//     it knows is the entry's TS, stamped by the leader; timers fire on the
//     leader as proposals (OpRedeliverDue, OpResume with the pause seen,
//     OpUnpin with the id seen) that the apply checks against the state:
//     a redelivery of a message acknowledged meanwhile, or given more time
//     by +WPI or a nak delay, does nothing. The pause API's entries carry
//     the new configuration, set by the caller at apply from the one in
//     force (State.pause), and a stream ends pins with an OpUnpin it
//     derives where a new leader's no-op entry is applied (the server's
//     consumer_cluster_pin.go), both the same on every replica.
//   - The leader proposes which stream messages to deliver; the apply
//     decides: a first delivery must be above Delivered and stored, and fit
//     under max_ack_pending; a redelivery must be pending, due at TS and
//     below max_deliver. Consumer sequences are assigned at apply (DESIGN
//     §2.1: the leader does not assign sequences), so pipelined delivery
//     entries never conflict and a stale leader's entry delivers nothing
//     that is already delivered. Entries made for an older configuration
//     or an earlier consumer of the same name are refused (Gen).
//   - Nothing depends on map iteration order: outcomes list sequences in
//     ascending order or in the entry's order, snapshots are canonical,
//     Digest hashes the canonical snapshot and the floor.
//   - Ack semantics are nats-server's: +ACK under ack policy all acks
//     everything up to the message; the floor moves over acknowledged
//     messages, messages past max_deliver and messages gone from the
//     stream; acks of messages not delivered yet are ignored unanswered;
//     +TERM acknowledges with an advisory; -NAK redelivers (after a delay
//     when given); +WPI restarts the ack wait. An OpAcks entry carries the
//     plain +ACKs a leader received together (one client read) and
//     applies exactly as one OpAck entry each, with the same stamp.
package consumer
