package server

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats-server/v2/internal/wal"
)

// The meta group's log checked against its mark (raft_logmark.go): a
// member whose meta log lost its directory or its tail, below what it held
// durably, may have acknowledged meta entries it no longer holds. It keeps
// what is left of its log, raises its term as a stream replica does
// (logMark.keptHardState), and starts as a recovering member without a
// floor (raft.Config.Recovering): it neither campaigns nor votes until it
// has caught up with a meta leader. It writes no mark until then, so a
// restart meanwhile finds the loss again. A meta group of one has nobody
// to recover from: the loss is logged and the log used as it is.
//
// A meta log that does not open because it is damaged (a flipped bit, a
// cut or lost sealed segment: wal.ErrCorrupt) is cut back to its valid
// prefix (wal.Salvage) and the member recovers the same way: what it lost
// may hold entries it acknowledged, and the hard state stored after the
// damage (its term and vote) is gone with them. A meta group of one keeps
// refusing to start on such a log: cutting it would drop stream
// assignments with nobody to give them back. A snapshot file that fails
// its checksum (errSnapshotCorrupt) goes with the whole log after it (its
// entries cannot be applied without it); the term and vote stay.

// metaRecovery is the meta group's recovering state (group goroutine
// only, once the group runs).
type metaRecovery struct {
	active bool
	log    *walLog
}

func (m *metaSM) recovering() bool                  { return m.rec.active }
func (m *metaSM) recoveringFloor() raft.LogPosition { return raft.LogPosition{} }

func (m *metaSM) recovered(commit uint64) {
	m.rec.active = false
	m.caughtUp = max(m.caughtUp, commit) // entries below, applied later, were caught up too
	m.openTerm, m.replayOver = noTermLimit, false
	m.rec.log.mark.off = false // its log holds what it answered for again
	m.jc.clearMetaWiped()      // jetstream_meta_wiped.go
	m.jc.js.srv.Noticef("JetStream cluster: meta group caught up with its leader after losing log entries or its storage")
}

// openMetaLog opens the meta group's log, cutting a damaged one back to
// its valid prefix when another member can give the rest back; salvaged
// says it was.
func (jc *jsCluster) openMetaLog(members int) (log *walLog, salvaged bool, err error) {
	s := jc.js.srv
	log, err = openWALLog(jc.js.fs, jc.metaDir(), 0, s.Errorf) // meta changes are rare: fsync each
	var what string
	var serr error
	switch {
	case err == nil || members <= 1:
		return log, false, err
	case errors.Is(err, wal.ErrCorrupt):
		what, serr = wal.Salvage(jc.js.fs, walDir(jc.metaDir()), wal.Options{Logf: s.Errorf})
	case errors.Is(err, errSnapshotCorrupt):
		what, serr = "removed the snapshot and the entries after it", jc.discardMetaLog()
	default:
		return nil, false, err
	}
	if serr != nil {
		return nil, false, fmt.Errorf("%w; cutting it back to its valid prefix: %v", err, serr)
	}
	s.Errorf("JetStream cluster: meta group: %v; kept its valid prefix (%s), abstaining from elections until caught up with the meta leader", err, what)
	log, err = openWALLog(jc.js.fs, jc.metaDir(), 0, s.Errorf)
	return log, err == nil, err
}

// checkMetaMark checks the meta log against its mark; on a loss it stores
// the term and vote the member keeps and reports that it must recover. A
// salvaged log recovers whatever its mark says, and writes no mark until
// it has caught up.
func (jc *jsCluster) checkMetaMark(log *walLog, members int, salvaged bool) (bool, error) {
	m, err := log.useMark(logMarkPath(jc.metaDir()), metaGroupName)
	if salvaged && err == nil {
		log.mark.off = true
		return true, nil
	}
	if !errors.Is(err, errLogLost) {
		return false, err
	}
	if members <= 1 { // nobody to recover from
		jc.js.srv.Errorf("JetStream cluster: meta group: %v; no other member to recover it from", err)
		log.mark = markState{path: log.mark.path, id: log.mark.id}
		return false, nil
	}
	jc.js.srv.Errorf("JetStream cluster: meta group: %v; abstaining from elections until caught up with the meta leader", err)
	hs, _, _ := log.InitialState()
	if kept := m.keptHardState(hs); kept.Term != hs.Term || kept.Vote != hs.Vote {
		kept.Commit = hs.Commit
		if err := errors.Join(log.Save(nil, nil, &kept), log.Sync()); err != nil {
			return false, fmt.Errorf("storing the meta log's term: %w", err)
		}
	}
	return true, nil
}

// discardMetaLog removes the meta group's snapshot file, which failed its
// checksum, and its log, whose entries follow that snapshot and cannot be
// applied without it; a new log keeps the term and vote (the old log
// opened: only the snapshot file is damaged).
func (jc *jsCluster) discardMetaLog() error {
	fs, dir := jc.js.fs, jc.metaDir()
	w, err := wal.Open(fs, walDir(dir), wal.Options{Logf: jc.js.srv.Errorf})
	if err != nil {
		return err
	}
	hs := w.HardState()
	if err := w.Close(); err != nil {
		return err
	}
	for _, name := range []string{snapshotFile, snapshotFile + ".tmp", "wal"} {
		if err := vfs.RemoveAllSynced(fs, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	if w, err = wal.Open(fs, walDir(dir), wal.Options{Logf: jc.js.srv.Errorf}); err != nil {
		return err
	}
	return storeHardState(w, wal.HardState{Term: hs.Term, Vote: hs.Vote})
}
