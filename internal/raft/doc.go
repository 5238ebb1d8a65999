// Package raft is Tern's consensus core: a pure state machine in the style of
// etcd-io/raft's RawNode. It has no goroutines, no clock, no disk and no
// sockets. Time advances through Tick, peers' messages arrive through Step,
// proposals through Propose, and everything the outside world must do comes
// out as a Ready batch: entries, hard state and snapshot to persist, messages
// to send, committed entries to apply. Driver processes a Ready in the one
// safe order — persist, sync, (restore,) send, apply, Advance — and is shared
// by the simulator (internal/sim) and the server. One reordering is safe and
// made: a pipelining leader applies the committed entries that were durable
// here before the Ready (below its first new entry) while, or before, the
// Ready's entries sync; those were committed by a quorum that does not
// count the entries being synced.
//
// What the core implements:
//
//   - Leader election (Raft §5.2) with randomized timeouts drawn from the
//     injected Config.Rand, pre-vote (§9.6 of Ongaro's dissertation) and
//     check-quorum: a leader that has not heard from a quorum within an
//     election timeout steps down, and a follower that heard from a leader
//     within that time ignores vote requests (its "lease").
//   - Log replication (§5.3) with per-follower flow control: probing (one
//     append in flight) until the follower's match index is known, then
//     pipelining up to MaxInflight appends of up to MaxBatchBytes each.
//     Appends are built when the driver asks for a Ready, so every proposal
//     made since the last Ready travels in one message (batching) and is
//     persisted with one sync (group commit).
//   - Conflicts: a follower truncates a conflicting uncommitted tail; a
//     rejection carries a hint (index, term) that lets the leader skip back
//     a whole term per round trip.
//   - Commitment only of entries of the leader's current term by counting
//     replicas (§5.4.2, Figure 8); a new leader appends a NoOp entry of its
//     term and reports SoftState.LeaderReady only once that entry is
//     committed and applied, i.e. once the state machine reflects every
//     committed entry. The upper layer must not act as leader before.
//   - Snapshots (§7): the driver calls Node.Compact at an applied index
//     with the state machine's state; the leader sends the latest snapshot
//     to a follower whose next entry was compacted away, and resends it if
//     no acknowledgement arrives within an election timeout.
//   - Membership changes one server at a time (dissertation §4.1), taking
//     effect when appended (see ConfChange), and leader transfer through
//     MsgTimeoutNow.
//   - Linearizable reads through a read index (dissertation §6.4):
//     Node.ReadIndex(ctx) on the leader records the commit index and
//     confirms leadership with one heartbeat round; when a quorum
//     (counting the leader) acknowledges a heartbeat of that round or a
//     later one, a ReadState{Index, Ctx} comes out in Ready.ReadStates,
//     and the read may be served once the state machine has applied
//     Index. Rounds are numbered (MsgHeartbeat.Index, echoed by the
//     answer), and all requests made between two Readys share one round.
//     A group of one answers at once. A leader that has not committed
//     the NoOp of its term holds requests until it has (its commit index
//     may lag what earlier leaders committed). A follower forwards to its
//     leader (MsgReadIndex, the context as the Data of one entry) and gets
//     the leader's index back (MsgReadIndexResp); with no leader known it
//     returns ErrProposalDropped. A leader that steps down drops pending
//     requests unanswered, as may a lossy network: callers time out and
//     retry. An isolated leader that still believes it leads never
//     answers a read made after it was cut off: no quorum acknowledges
//     the round.
//   - Bootstrap: a new group's founding members write the initial
//     membership into the log as committed AddPeer entries at term 1, so
//     peers that join later learn it from the log (or a snapshot).
//
// Safety-relevant contracts for drivers:
//
//   - Everything in Ready.Entries, Ready.Snapshot and a Ready.HardState whose
//     term or vote changed (Ready.MustSync) must be durable before any of
//     Ready.Messages is sent, except when Ready.LeaderMayPipeline: a
//     leader's appends may leave while its own log syncs, provided no peer
//     message is stepped before that sync completed (Driver.Process does
//     both in one call).
//   - Between Ready and Advance nothing else may be called on the Node.
//   - A node joining an existing group starts with empty storage and no
//     Config.Peers; giving it peers would bootstrap a conflicting log.
//   - Storage errors and broken invariants panic inside the core; use
//     Driver.Step, Driver.Tick and Driver.Process, which turn them into
//     errors, then stop the group and mark it unhealthy.
package raft
