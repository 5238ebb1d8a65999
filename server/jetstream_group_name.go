package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A stream's raft group name: the key of its messages on the routes and
// the name of its directory under _raft_.
//
// Account and stream names may both contain '-', so the name "S-<account>-
// <stream>" used before was ambiguous: account team-a's stream x and
// account team's stream a-x were both S-team-a-x (one directory, each
// other's raft messages). The name is kept for an account without '-' (the
// first '-' after "S-" ends the account; nkeys, $G and $SYS have none), so
// those groups keep their names and directories across an upgrade. An
// account with '-' gets "S<length of the account>-<account>-<stream>"
// (S6-team-a-x): a digit after the S, so never an old-form name, and the
// length says where the account ends.

func streamGroupName(account, stream string) string {
	if !strings.Contains(account, "-") {
		return "S-" + account + "-" + stream
	}
	return "S" + strconv.Itoa(len(account)) + "-" + account + "-" + stream
}

// legacyGroupName is the name servers before the change gave the group.
func legacyGroupName(account, stream string) string { return "S-" + account + "-" + stream }

// errGroupDirAmbiguous: a group directory of an older server may hold the
// logs of two streams whose group names collided; no replica uses it.
var errGroupDirAmbiguous = errors.New("group directory shared by streams whose names collided")

// errReplicaDeferred: the replica starts later (claimGroupDir).
var errReplicaDeferred = errors.New("replica start deferred until the meta log is replayed")

// metaReplay is the meta log's replay at start, as far as it was committed
// then (to): done once applied; waiting are the replicas deferred till then.
type metaReplay struct {
	to      uint64
	done    bool
	waiting []deferredReplica
}

type deferredReplica struct {
	sa  *streamAssignment
	how replicaStart
}

// wait adds d; a later start of the same stream replaces an earlier one.
func (r *metaReplay) wait(d deferredReplica) {
	for i := range r.waiting {
		if w := r.waiting[i].sa; w.Account == d.sa.Account && w.Config.Name == d.sa.Config.Name {
			r.waiting[i] = d
			return
		}
	}
	r.waiting = append(r.waiting, d)
}

// replayedTo is called by the meta group after it applied up to index: the
// first time it reaches the replay's end it starts the deferred replicas
// of streams still placed here (unchanged incarnation).
func (jc *jsCluster) replayedTo(index uint64) {
	jc.mu.Lock()
	if jc.replay.done || index < jc.replay.to {
		jc.mu.Unlock()
		return
	}
	jc.replay.done = true
	waiting := jc.replay.waiting
	jc.replay.waiting = nil
	start := map[replicaStart][]*streamAssignment{}
	for _, d := range waiting {
		cur := jc.streams[d.sa.Account][d.sa.Config.Name]
		if cur == nil || !cur.Created.Equal(d.sa.Created) || !jc.isPeer(cur) {
			continue
		}
		start[d.how] = append(start[d.how], cur)
	}
	jc.mu.Unlock()
	for _, how := range []replicaStart{startCreated, startReplayed, startRestored, startJoin} {
		jc.startReplicas(start[how], how)
	}
}

// contested says whether two accounts with JetStream here could each have a
// stream whose legacy group name is name.
func (js *jetStream) contested(name string) bool {
	rest := strings.TrimPrefix(name, "S-")
	n := 0
	for i := 0; i < len(rest); i++ {
		if rest[i] == '-' && js.account(rest[:i]) != nil {
			n++
		}
	}
	return n > 1
}

// legacyHoldersLocked lists the streams of the cluster whose legacy group
// name is name ("S-" + a + "-" + s, for each '-' of the rest as the end of
// the account), with jc.mu held.
func (jc *jsCluster) legacyHoldersLocked(name string) []*streamAssignment {
	rest, ok := strings.CutPrefix(name, "S-")
	if !ok {
		return nil
	}
	var out []*streamAssignment
	for i := 0; i < len(rest); i++ {
		if rest[i] != '-' {
			continue
		}
		if sa := jc.streams[rest[:i]][rest[i+1:]]; sa != nil {
			out = append(out, sa)
		}
	}
	return out
}

// legacyClaimantsLocked lists those of them placed on this server.
func (jc *jsCluster) legacyClaimantsLocked(name string) []*streamAssignment {
	return slices.DeleteFunc(jc.legacyHoldersLocked(name), func(sa *streamAssignment) bool { return !jc.isPeer(sa) })
}

// ownerFile, an empty file, marks a group directory under an old-form name
// that another stream's legacy name can equal (a '-' in the stream's name)
// as made or settled by a server that names groups unambiguously: only its
// stream ever wrote it. Such a directory without it was left by an older
// server.
const ownerFile = "owner"

// mayBeClaimed says whether sa's group name is also the legacy name of
// streams of accounts with '-' (so its directory needs ownerFile).
func mayBeClaimed(sa *streamAssignment) bool {
	return !strings.Contains(sa.Account, "-") && strings.Contains(sa.Config.Name, "-")
}

// claimGroupDir settles, before a replica of sa starts, whether a group
// directory an older server left under an ambiguous name is this
// stream's. A directory under the old name without ownerFile is legacy:
//   - if another stream placed here claims its name too and has no
//     directory of its own, both may have written it: the replica does not
//     start (the error says which streams and what to do); nothing is
//     mixed or discarded;
//   - otherwise a stream of an account with '-' moves it (and its log mark)
//     to its new name, and a stream keeping the old name marks it its own.
//
// A stream of an account with '-' whose new directory exists, or whose
// old name holds a directory marked as another stream's, starts as usual.
//
// Which streams claim the directory is known once the meta log is applied
// as far as it was committed when this server started: a stream whose
// directory is contested (accounts with JetStream here could have two
// streams of that legacy name) waits until then (errReplicaDeferred).
func (js *jetStream) claimGroupDir(sa *streamAssignment, how replicaStart) error {
	legacy := legacyGroupName(sa.Account, sa.Config.Name)
	old := filepath.Join(js.storeDir, "_raft_", legacy)
	dir := js.groupDir(sa)
	if dir == old && !mayBeClaimed(sa) {
		return nil // one '-' after "S-": no other stream's legacy name
	}
	if (dir != old && js.exists(dir)) || !js.exists(old) || js.exists(filepath.Join(old, ownerFile)) {
		return nil
	}
	contested := js.contested(legacy)
	jc := js.cluster
	jc.mu.Lock()
	if contested && !jc.replay.done {
		jc.replay.wait(deferredReplica{sa: sa, how: how})
		jc.mu.Unlock()
		js.srv.Noticef("JetStream cluster: stream '%s > %s' starts once the meta log is replayed (group directory %s of an older server)",
			sa.Account, sa.Config.Name, old)
		return errReplicaDeferred
	}
	claim := jc.legacyClaimantsLocked(legacy)
	jc.mu.Unlock()
	var others []string
	for _, c := range claim {
		if c.Account == sa.Account && c.Config.Name == sa.Config.Name {
			continue
		}
		if c.groupName() == legacy || !js.exists(js.groupDir(c)) {
			others = append(others, fmt.Sprintf("'%s > %s'", c.Account, c.Config.Name))
		}
	}
	if len(others) > 0 {
		return fmt.Errorf("%w: %s, made by an older server, may hold the logs of '%s > %s' and %s: "+
			"no replica of them uses it; move it out of the store directory to start them (they catch up from the other replicas)",
			errGroupDirAmbiguous, old, sa.Account, sa.Config.Name, strings.Join(others, ", "))
	}
	if dir == old {
		if err := js.markOwner(old); err != nil {
			return err
		}
		return js.fs.SyncDir(old)
	}
	// The mark first: a crash between the two renames leaves the directory
	// under the old name, and the next start moves it.
	if err := js.fs.Rename(logMarkPath(old), logMarkPath(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := js.fs.Rename(old, dir); err != nil {
		return fmt.Errorf("moving group directory %s to %s: %w", old, dir, err)
	}
	if err := js.fs.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	js.srv.Noticef("JetStream cluster: stream '%s > %s': group directory %s moved to %s (unambiguous name)",
		sa.Account, sa.Config.Name, old, dir)
	return nil
}

// markOwner creates dir's ownerFile, an empty file: durable once dir is
// synced.
func (js *jetStream) markOwner(dir string) error {
	f, err := js.fs.OpenFile(filepath.Join(dir, ownerFile), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

func (js *jetStream) exists(path string) bool {
	_, err := js.fs.Stat(path)
	return err == nil
}
