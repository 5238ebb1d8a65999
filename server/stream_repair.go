package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats-server/v2/internal/wal"
)

// Repair of a damaged replica (issue 19; ARCHITECTURE.md "Repair of a
// damaged replica"). A replica whose local state cannot be trusted — its
// linked snapshot fails its checksums or does not hold what its metadata
// says, its log is corrupt, or its whole group directory is gone while the
// stream is older than this start — discards the group's log and
// snapshots, keeping the raft term and vote when they are readable, and
// starts as a recovering member (raft.Config.Recovering): it neither
// campaigns nor votes until it has caught up with a leader, which sends
// it a full snapshot. A marker file keeps it recovering across restarts
// until then. Nothing it had is sent anywhere, so damage on a minority
// never deletes or truncates the stream on the others.

// repairMarker, in a group directory, marks a replica that discarded its
// state and has not caught up with a leader yet. When the position of the
// discarded log's last entry was known it holds "floor <term> <index>
// <raft term>": that floor (raft.Config.RecoveringFloor) and the raft term
// the discarded log had stored; anything else when not.
const repairMarker = "recovering"

// repairState is what the marker holds: the floor (zero: unknown) and the
// raft term stored beside it, which the new log must not be below (it
// voted in that term, maybe; repairTerm).
type repairState struct {
	floor raft.LogPosition
	term  uint64
}

// encode is the marker's content.
func (rs repairState) encode() []byte {
	if rs.floor.IsZero() {
		return []byte("1")
	}
	return fmt.Appendf(nil, "floor %d %d %d\n", rs.floor.Term, rs.floor.Index, rs.term)
}

// decodeRepair reads a marker's content; anything but a well-formed floor
// is an unknown one (the replica abstains from elections, which is safe).
func decodeRepair(b []byte) repairState {
	var rs repairState
	var tail string
	n, _ := fmt.Sscanf(string(b), "floor %d %d %d\n%s", &rs.floor.Term, &rs.floor.Index, &rs.term, &tail)
	if n != 3 || rs.floor.Index == 0 || rs.term < rs.floor.Term {
		return repairState{}
	}
	return rs
}

// verifier is a store that can check every record it holds (the file
// store: Verify).
type verifier interface{ Verify() int }

// checkpointChecker is a store that says whether its checkpoint fit its
// files at open (the file store: CheckpointMismatched).
type checkpointChecker interface{ CheckpointMismatched() bool }

// verifyStore reads back every record of a store restored from a linked
// snapshot; damaged messages are dropped, so the restore's check of the
// message counts fails and the replica is repaired.
func verifyStore(st StreamStore) {
	if v, ok := st.(verifier); ok {
		v.Verify()
	}
}

func (sm *streamSM) recovering() bool { return sm.repairing }

func (sm *streamSM) recoveringFloor() raft.LogPosition { return sm.floor }

func (sm *streamSM) recovered(uint64) {
	sm.repairing = false
	mset := sm.mset
	fsys := mset.jsa.js.fs
	if err := errors.Join(fsys.Remove(filepath.Join(mset.groupDir, repairMarker)), fsys.SyncDir(mset.groupDir)); err != nil {
		mset.jsa.js.srv.Warnf("JetStream stream '%s > %s': removing the repair marker: %v", mset.jsa.acc.Name, mset.name, err)
		return
	}
	mset.jsa.js.srv.Noticef("JetStream stream '%s > %s': replica repaired from its peers", mset.jsa.acc.Name, mset.name)
}

// groupLost reports whether the replica must start recovering before its
// log is opened: a marker left by an unfinished repair, or a member (not
// one joining) whose group directory is gone on a server that started
// without its meta log, of a stream that is not new or that the server
// learned catching up after its storage was wiped (storageWiped: it may
// have run the group, acknowledged entries and voted, even moments ago;
// a stream created once it caught up is new to it). A group directory
// missing beside a meta log is a replica that never started here (its
// directory is made, fsynced, before the group starts), which may vote as
// any new member: were it taken for a lost one, a stream whose replicas
// all lost power before making theirs would find no member willing to
// vote. A group of one never recovers: no peer could give it anything,
// and it would wait for a leader forever; it starts again empty, the loss
// logged.
func (js *jetStream) groupLost(sa *streamAssignment, how replicaStart) bool {
	dir := js.groupDir(sa)
	if _, err := js.fs.Stat(filepath.Join(dir, repairMarker)); err == nil {
		return len(sa.Peers) > 1
	}
	if how == startJoin || !js.storageLost.Load() {
		return false
	}
	lost := !js.hasIncarnation(dir) && (js.srv.clock.Since(sa.Created) >= 10*time.Second || how != startCreated && js.storageWiped.Load())
	if lost && len(sa.Peers) <= 1 {
		js.srv.Errorf("JetStream stream '%s > %s': its storage on this server was lost; no other replica to recover it from: starting it empty",
			sa.Account, sa.Config.Name)
		return false
	}
	return lost
}

// markRepair writes the marker into the group directory.
func (js *jetStream) markRepair(sa *streamAssignment, rs repairState) error {
	dir := js.groupDir(sa)
	if err := vfs.MkdirAllSynced(js.fs, dir, 0o750); err != nil {
		return err
	}
	return js.writeFileSync(filepath.Join(dir, repairMarker), rs.encode())
}

// readRepair returns what an unfinished repair's marker holds, writing a
// marker without a floor where there is none (a wiped replica).
func (js *jetStream) readRepair(sa *streamAssignment) (repairState, error) {
	b, err := vfs.ReadFile(js.fs, filepath.Join(js.groupDir(sa), repairMarker))
	if err == nil {
		return decodeRepair(b), nil
	}
	return repairState{}, js.markRepair(sa, repairState{})
}

// repairTerm raises the stored raft term of the group's log to one above
// the marker's when it is below it: a crash between discarding the old
// log and storing its term and vote in the new one lost the vote the
// replica may have cast in that term, and a member voting with a floor
// must not vote twice in a term (a term above it holds no vote yet). An
// unreadable log is left to the caller's open.
func (js *jetStream) repairTerm(sa *streamAssignment, rs repairState) error {
	if rs.floor.IsZero() {
		return nil
	}
	return raiseGroupTerm(js.fs, js.groupDir(sa), rs.term, js.srv.Errorf)
}

// raiseTerm stores term+1 and no vote in the log at dir when its stored
// term is below term.
func raiseTerm(fs vfs.FS, dir string, term uint64, logf func(string, ...any)) error {
	w, err := wal.Open(fs, dir, wal.Options{Logf: logf})
	if err != nil {
		return nil
	}
	if w.HardState().Term >= term {
		return w.Close()
	}
	return storeHardState(w, wal.HardState{Term: term + 1})
}

// storeHardState stores hs in the open log w, fsynced, and closes w.
func storeHardState(w *wal.WAL, hs wal.HardState) error {
	err := w.SetHardState(hs)
	if err == nil {
		err = w.Sync()
	}
	return errors.Join(err, w.Close())
}

// discardGroup removes the group's log and snapshots after the marker
// (holding rs) is written, and leaves a new empty log holding hs's term
// and vote.
func (js *jetStream) discardGroup(sa *streamAssignment, hs raft.HardState, rs repairState) error {
	if err := js.markRepair(sa, rs); err != nil {
		return err
	}
	dir := js.groupDir(sa)
	if err := removeGroupLog(js.fs, dir); err != nil { // either layout (raft_log_layout.go)
		return err
	}
	for _, name := range []string{snapsDir, snapshotFile, snapshotFile + ".tmp"} {
		if err := vfs.RemoveAllSynced(js.fs, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	// The new log's mark: the marker now says what the replica lost.
	removeLogMark(js.fs, dir)
	if hs.Term == 0 {
		return nil
	}
	w, err := wal.Open(js.fs, dir, wal.Options{Logf: js.srv.Errorf}) // the log in the directory itself
	if err != nil {
		return err
	}
	return storeHardState(w, wal.HardState{Term: hs.Term, Vote: uint64(hs.Vote)})
}

// damagedLog reports whether err, from opening a group's log or starting
// its group, means the local state is damaged (and can be rebuilt from the
// peers) rather than an I/O failure to report.
func damagedLog(err error) bool {
	return errors.Is(err, errLinkedRestore) || errors.Is(err, wal.ErrCorrupt) || errors.Is(err, errSnapshotCorrupt) ||
		errors.Is(err, errLogLost)
}

// checkLogMark checks the replica's log against its mark (raft_logmark.go)
// and makes the log keep it. A log that lost durable state returns
// errLogLost and the hard state the repair keeps (logMark.keptHardState).
// A group of one has no peer to repair from: the loss is reported and the
// log used as it is.
func (js *jetStream) checkLogMark(sa *streamAssignment, log *walLog) (raft.HardState, error) {
	hs, _, _ := log.InitialState()
	m, err := log.useMark(logMarkPath(js.groupDir(sa)), strconv.FormatInt(sa.Created.UnixNano(), 10))
	if err == nil {
		return hs, nil
	}
	if len(sa.Peers) <= 1 {
		js.srv.Errorf("JetStream stream '%s > %s': %v; no other replica to recover it from", sa.Account, sa.Config.Name, err)
		log.mark = markState{path: log.mark.path, id: log.mark.id}
		return hs, nil
	}
	return m.keptHardState(hs), err
}

// startStreamGroup opens the replica's log and starts its raft group,
// repairing the replica (discard, then recover from the peers) when its
// local state turns out damaged. A founding member with no state at all
// of a stream created moments ago leads its first term when it is the
// stream's first leader, but only for a creation applied as it is
// committed (startCreated): one replayed or learned catching up the meta
// log may have led that term already, before a restart or a lost disk,
// and two leaders of one term would hold different entries under the same
// term and index.
func (jsa *jsAccount) startStreamGroup(sa *streamAssignment, mset *stream, how replicaStart, repairing bool, syncEvery time.Duration, owed pendingSyncs, freshDir bool) (*raftGroup, error) {
	js, s := jsa.js, jsa.js.srv
	var rs repairState
	if repairing {
		var err error
		if rs, err = js.readRepair(sa); err != nil {
			return nil, err
		}
		if err := js.repairTerm(sa, rs); err != nil {
			return nil, err
		}
	}
	for attempt := 0; ; attempt++ {
		log, err := openGroupLog(js.fs, js.groupDir(sa), syncEvery, s.Errorf) // raft_log_layout.go
		var hs raft.HardState
		var last raft.LogPosition // the log's last entry, before anything is restored from it
		if err == nil {
			if hs, err = js.checkLogMark(sa, log); err != nil {
				log.Close() // writes no mark
				log = nil
			}
		}
		if err == nil {
			last = logLast(log)
			log.keep.Store(snapshotEvery)
			log.owed = owed
			mset.mu.Lock()
			mset.groupDir, mset.wal, mset.alone = js.groupDir(sa), log, len(sa.Peers) <= 1
			mset.mu.Unlock()
			if !freshDir { // a directory just made holds no scratch
				jsa.removeSendingScratch(mset.groupDir)
			}
			hs, _, _ = log.InitialState()
			fresh := how == startCreated && !repairing && hs.Term == 0 && log.w.LastIndex() == 0
			first := fresh && s.clock.Since(sa.Created) < 10*time.Second && sa.firstLeader() == s.Name()
			restarted := how == startRestored || how == startReplayed
			jc := js.cluster
			if restarted && jc != nil {
				jc.restart.started.Add(1) // before the group can become current
			}
			var g *raftGroup
			g, err = s.startRaftGroup(sa.groupName(), repairPeers(how.foundingPeers(sa), repairing), log, &streamSM{mset: mset, repairing: repairing, floor: rs.floor, first: first, restarted: restarted && jc != nil})
			if err == nil {
				return g, nil
			}
			if restarted && jc != nil {
				jc.restart.started.Add(-1)
			}
			log.mark.off = true // the state is discarded below, or the start failed
			log.Close()
		}
		if attempt > 0 || !damagedLog(err) {
			return nil, err
		}
		if len(sa.Peers) <= 1 { // nobody to catch up from: discarding would lose the stream
			s.Errorf("JetStream stream '%s > %s': local state damaged (%v); no other replica to repair it from: "+
				"the replica is not started and its files are left as they are", jsa.acc.Name, sa.Config.Name, err)
			return nil, err
		}
		if err := owed.run(false); err != nil { // the directory is durable before a repair marks it
			return nil, err
		}
		owed, freshDir = nil, false
		rs = repairState{floor: discardFloor(repairing, rs.floor, last, hs), term: max(hs.Term, rs.term)}
		s.Warnf("JetStream stream '%s > %s': local state damaged (%v); discarding it and catching up from the other replicas (%s)",
			jsa.acc.Name, sa.Config.Name, err, floorText(rs.floor))
		if err := js.discardGroup(sa, hs, rs); err != nil {
			return nil, err
		}
		repairing = true
	}
}

// repairPeers is the members a replica's group starts with: none while it
// repairs, so the log it gets from the leader (or the leader's snapshot)
// says who they are, as for a joining replica. Its own log lost them, and
// the assignment it is started from may be an old one (at a restart, the
// stream's create replayed from the meta log, whose members may have been
// replaced since).
func repairPeers(peers []raft.ID, repairing bool) []raft.ID {
	if repairing {
		return nil
	}
	return peers
}

// discardFloor is the floor a replica discarding its log keeps: the last
// entry of that log (when the log was readable: a damaged snapshot or
// store), or of the floor of an earlier repair not finished, whichever is
// more up to date. Unknown (zero) when the log was unreadable, when no
// term and vote are kept (a replica that never voted nor acknowledged
// anything has nothing to protect, but the zero floor says "unknown"), or
// when the earlier repair had none: entries acknowledged before that loss
// are not known.
func discardFloor(repairing bool, prior, last raft.LogPosition, hs raft.HardState) raft.LogPosition {
	if last.IsZero() || hs.Term == 0 || repairing && prior.IsZero() {
		return raft.LogPosition{}
	}
	return prior.Max(last)
}

// floorText says how the replica votes while it recovers.
func floorText(floor raft.LogPosition) string {
	if floor.IsZero() {
		return "abstaining from elections until caught up: what it acknowledged is not known"
	}
	return fmt.Sprintf("voting only for logs at least as up to date as term %d index %d, the last entry it held", floor.Term, floor.Index)
}

// logLast is the position of the last entry of a log just opened (its
// snapshot's when it holds no entry after it); zero when not readable.
func logLast(log *walLog) raft.LogPosition {
	i, _ := log.LastIndex()
	t, err := log.Term(i)
	if err != nil || i == 0 {
		return raft.LogPosition{}
	}
	return raft.LogPosition{Term: t, Index: i}
}

// removeSendingScratch removes the scratch of snapshots being sent when
// the server stopped.
func (jsa *jsAccount) removeSendingScratch(dir string) {
	ents, _ := jsa.js.fs.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "sending-") {
			jsa.js.fs.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// keepDamaged keeps the store restored from a linked snapshot that lost
// messages (err says how) when the replica is alone in its group (an R1
// stream of a cluster): nobody can give them back, and discarding the
// replica would lose every message with the damaged ones. The readable
// messages stay, the damaged ones are the store's lost messages (stream
// info's state.lost), the last sequence stays the snapshot's so none is
// used twice, and the damage is logged and reported by /healthz (as the
// scrub reports it; the next pass counts the store's lost messages too).
// A store holding more than the snapshot says is not kept, nor one
// holding messages below the snapshot's first (removed before it: a purge,
// an expiry, a delete, which keeping them would bring back).
func (mset *stream) keepDamaged(store StreamStore, meta *streamSnapMeta, st StreamState, err error) error {
	if st.LastSeq > meta.Last || st.Msgs > meta.Messages || st.Msgs > 0 && st.FirstSeq < meta.First {
		return err
	}
	if st.LastSeq < meta.Last {
		if serr := store.SkipMsgs(meta.Last - st.LastSeq); serr != nil {
			return errors.Join(err, serr)
		}
	}
	lost := meta.Messages - st.Msgs
	mset.scrubLost.Store(int64(lost))
	mset.jsa.js.srv.Errorf("JetStream stream '%s > %s': %v; no other replica to repair it from: keeping the %d readable messages, %d lost",
		mset.jsa.acc.Name, mset.name, err, st.Msgs, lost)
	return nil
}
