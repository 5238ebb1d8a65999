// Package wal is the Raft write-ahead log: entries (index, term, type, data)
// in checksummed segment files, plus the hard state (term, vote, commit) and
// the compaction point, all made durable by one fsync per Sync (group commit).
//
// # Files
//
// A WAL keeps its segment files in a directory, named
//
//	<seq %020d>-<first %020d>.wal
//
// Files of other names in the directory are not the WAL's: it ignores them
// (a raft group keeps its snapshot and records beside its log).
// seq is the segment's creation number and gives the replay order; first is
// the log index the segment was started at (informational: after a
// TruncateFrom a later segment may start below its predecessor). Every
// segment is a sequence of frames (see record.go):
//
//	[length u32][checksum u64][index u64][term u64][type u8][data]
//
// the checksum being highwayhash-64 (fixed key) over the length, index,
// term, type and data. Integers are little endian.
//
// # State records
//
// Type 0xFF is reserved for state records; Append refuses it. A state record
// stores in its index field the last log index at the point it is written
// and in its data the hard state (term, vote, commit), the compaction point
// (base index, base term) and the last snapshot (index, term). There is no
// separate hard-state file: a state record lands in the same segment as the
// entries, so one fsync covers both. Replay applies a state record as:
//
//   - drop every entry above its last index (this is how TruncateFrom is
//     recorded: nothing is ever overwritten in place, so a crash yields either
//     the old tail, when the record did not survive, or the new one);
//   - if its last index is beyond what was replayed, the entries in between
//     are missing (earlier segments removed by Compact); they must all end up
//     at or below the final base, or Open fails with ErrCorrupt;
//   - drop every entry at or below its base (Compact, snapshot install).
//
// Every segment begins with a state record holding the state as of its
// creation, so removing a prefix of segments never loses state.
//
// # Recovery rules
//
// Open replays the segments in seq order. A frame that does not parse (short,
// length out of range, bad checksum) in a segment other than the last is
// ErrCorrupt: a segment is fsynced in full before its successor is created,
// so only the last one can have a torn tail. In the last segment the first
// bad frame is a torn tail, and the file is truncated there, unless a valid
// frame with a plausible index follows it; that is damage in the middle of
// the log and Open fails with ErrCorrupt. Valid frames that break the log's
// rules (an entry index other than the next one, a term going down, a segment
// not starting with a state record, entries missing above the compaction
// point, a commit index above the last entry) are ErrCorrupt too.
//
// # Compaction
//
// Compact(upTo) records upTo as the new base, so FirstIndex() is exactly
// upTo+1 and Entries below it are ErrCompacted, then deletes the oldest
// segments whose live entries are all at or below upTo. Entries <= upTo in
// retained segments stay on disk until their segment goes.
//
// # Errors
//
// A failed write or fsync makes the WAL unusable: every later write returns
// the error, and the owner should close it and reopen (which recovers from
// what reached the disk). Reads keep working.
package wal
