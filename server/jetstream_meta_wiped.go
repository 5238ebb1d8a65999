package server

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// A meta member whose storage was wiped (issue 19; ARCHITECTURE.md "Repair
// of a damaged replica"). A server that starts without a meta log either
// is new in a new cluster or lost its storage; only its peers can tell
// which. Each says in its route INFO whether it holds meta state (its meta
// log existed when it started, or its meta group applied an entry of a
// term past the bootstrap's, which only an elected leader writes). A
// server without a meta log that hears so from a peer has lost its
// storage: it may have acknowledged meta entries and voted in terms it no
// longer knows, so its meta group starts as a recovering member without a
// floor (raft.Config.Recovering), as a salvaged meta log does
// (jetstream_meta_repair.go): it neither votes nor campaigns until it has
// caught up with a meta leader. A marker file in the meta directory keeps
// it so across restarts until then. Two members of three wiped at once
// find no leader (the third cannot win alone): the cluster fails closed
// (10008) instead of electing a leader with an empty log, which would have
// erased every stream from the third one's log.
//
// In a new cluster no member holds meta state before one of them applied
// an entry of term 2 or later: the members connect to every peer before
// any starts its meta group, so the INFO each sends first says nothing of
// a log made after it. A member that hears of a peer's state later than
// that (a route that came back) recovers from the leader that peer's state
// proves was elected.
//
// The decision is made once, at the meta group's start; a route INFO that
// comes later (the handshake of a route that came back: tern_meta_state is
// read from no other INFO) changes nothing, also for a member voting with
// an empty meta log. None needs to:
//   - A member that lost its storage lost its peers.json with it, so its
//     meta group does not start before every configured peer is connected
//     (waitForPeers), and a route is registered only once its handshake
//     INFO is read. A peer that restarted with its meta log says so in its
//     first INFO (Server.metaHeld is set before the routes start); one that
//     kept running says so once it applied an entry of an elected leader.
//     So a server wiped while its peers were all down waits for them and
//     decides when they are back, from INFOs that say they hold meta state
//     (TestJetStreamClusterWipedMetaWhilePeersDown). It decides "new" only
//     if no peer holds meta state then: every member new or wiped (a new
//     cluster), or a new cluster whose first leader has not applied its
//     first entry yet, which it does a round trip after winning.
//   - A member with an empty log that hears of meta state later is one
//     whose storage is intact: it missed the first elections (a route
//     down since it started). Its votes are in its log, so it may vote;
//     abstaining until it caught up with a leader would leave the cluster
//     without one should another member stop meanwhile. An INFO cannot
//     tell it from a wiped member that decided "new", and only the start
//     sees that the storage is gone.
//   - A member that lost only its log directory and kept peers.json starts
//     without waiting for its routes; its log mark, beside the meta
//     directory, says what it lost (checkMetaMark).
//
// What it does not cover is a server whose routes do not name every meta
// member: it waits only for the routes it names (expectedClusterSize), so
// it may start before a member holding state is connected, and then
// records a meta membership without that member too. Every meta member
// must be listed in every server's routes.

// metaWiped is the marker, in the meta directory, of a member that lost
// its storage and has not caught up with a meta leader yet.
const metaWiped = "recovering"

// metaWALExists reports whether the meta group's log exists under the
// options' store directory (at start, before the routes say so).
func metaWALExists(o *Options) bool {
	fsys := o.fsys
	if fsys == nil {
		fsys = vfs.Default
	}
	_, err := fsys.Stat(walDir(filepath.Join(o.StoreDir, "jetstream", "_raft_", metaGroupName)))
	return err == nil
}

// peerHoldsMeta reports whether a connected peer said it holds meta state.
func (s *Server) peerHoldsMeta() bool {
	for _, r := range s.routeList() {
		if r.remote.MetaState {
			return true
		}
	}
	return false
}

// metaStorageWiped decides at the meta group's start whether this member
// lost its meta storage: a marker left by an earlier start, or no log
// while a peer holds meta state (the marker is then written, fsynced).
// It also sets storageLost, which stream replicas consult (groupLost).
func (jc *jsCluster) metaStorageWiped() (bool, error) {
	js, s := jc.js, jc.js.srv
	marker := filepath.Join(jc.metaDir(), metaWiped)
	if _, err := js.fs.Stat(marker); err == nil {
		js.storageLost.Store(true)
		js.storageWiped.Store(true)
		return true, nil
	}
	if _, err := js.fs.Stat(walDir(jc.metaDir())); err == nil {
		return false, nil
	}
	js.storageLost.Store(true)
	if !s.peerHoldsMeta() {
		return false, nil // a new member of a new cluster
	}
	s.Errorf("JetStream cluster: meta group: no meta log, but the cluster has run: this server's storage was lost; " +
		"abstaining from elections until caught up with the meta leader")
	js.storageWiped.Store(true)
	if err := vfs.MkdirAllSynced(js.fs, jc.metaDir(), 0o750); err != nil {
		return false, err
	}
	return true, js.writeFileSync(marker, []byte("1"))
}

// clearMetaWiped removes the marker once the member caught up.
func (jc *jsCluster) clearMetaWiped() {
	fsys, dir := jc.js.fs, jc.metaDir()
	err := fsys.Remove(filepath.Join(dir, metaWiped))
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err = errors.Join(err, fsys.SyncDir(dir)); err != nil {
		jc.js.srv.Warnf("JetStream cluster: meta group: removing the recovering marker: %v", err)
	}
}
