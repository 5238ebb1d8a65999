package server

import (
	"path/filepath"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Retiring the log of a replica that left its placement (ARCHITECTURE.md
// "Leaving replicas"). A replica leaves when the placement drops it, but
// it cannot tell for sure that its group stopped counting it: it is never
// sent the entry that removes it, and it also stops hearing the leader
// when its route is cut or its group stalls (leaving.next's "shunned"),
// while the removal is not committed, or not even proposed. Such a server
// may still be a member that acknowledged entries and voted. Were its log
// deleted and the server placed here again, it joined as a new member
// with an empty log and no term or vote, granting its vote to any
// candidate, one missing entries committed with its acknowledgement among
// them (Raft safety lost on a second fault).
//
// So a log that is no longer wanted while the stream lives is retired,
// not deleted: the log and snapshots go (the disk space) as a damaged
// replica's do (discardGroup), keeping the raft term and vote and a repair
// marker holding the position of the discarded log's last entry. A replica
// started from that directory again (placed here again: rejoinReplica, or
// a later join) starts as a recovering member with that floor
// (groupLost, startStreamGroup): it votes only for a candidate whose log
// is at least as up to date as what it discarded, and campaigns once it
// caught up past it. The directory goes when the stream is deleted.

// retireGroupDir discards the log of the stream's group directory, if
// there is one, as described above. A log that cannot be read leaves a
// marker without a floor (the replica abstains from elections until it
// caught up with a leader).
func (js *jetStream) retireGroupDir(sa *streamAssignment) {
	dir := js.groupDir(sa)
	if !js.hasGroupLog(dir) && !js.exists(filepath.Join(dir, snapshotFile)) {
		return // no log: nothing acknowledged here
	}
	var prior repairState
	b, err := vfs.ReadFile(js.fs, filepath.Join(dir, repairMarker))
	repairing := err == nil
	if repairing {
		prior = decodeRepair(b)
	}
	var hs raft.HardState
	var last raft.LogPosition
	if log, err := openGroupLog(js.fs, dir, 0, js.srv.Errorf); err == nil {
		hs, _, _ = log.InitialState()
		last = logLast(log)
		log.mark.off = true // discardGroup removes the mark
		log.Close()
	}
	if repairing && last.IsZero() {
		return // retired already (or repairing), and nothing held since
	}
	rs := repairState{floor: discardFloor(repairing, prior.floor, last, hs), term: max(hs.Term, prior.term)}
	if err := js.discardGroup(sa, hs, rs); err != nil {
		js.srv.Warnf("JetStream stream '%s > %s': retiring the log of a replica that left: %v", sa.Account, sa.Config.Name, err)
	}
}
