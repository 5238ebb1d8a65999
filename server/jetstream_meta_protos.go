package server

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// The route protocol each peer last advertised, kept on disk. Request ids
// and held writes (jetstream_meta_reqid.go) are used only while every
// meta peer applies ids, and a peer's last advertised protocol counts
// while its route is down. Known only from the routes, a peer not heard
// since this server started counted as older: a cluster started with one
// meta peer down (or a server restarted while one was) ran without the
// feature until that peer came back. So the protocols heard are kept in
// the meta directory (peerProtosFile, written through the vfs seam when
// one changes) and a restarted server starts from them; what a route
// advertises since overrides them, and a peer never heard at all still
// counts as older.
//
// The mixed-version safety is kept: a peer counts as applying ids only if
// it advertised route protocol 9 or later when it last connected, to this
// server in this run or an earlier one. A server restarted with an older
// version counts as its last advertised protocol until its route comes
// back (routeProtoSeen, then this file, are updated when the route
// registers, before it can take any entry from this server), so entries
// proposed while it is down are proposed as for the version it last ran.
// Such an entry (a copy of a held write, skipped by the others when its id
// was applied) could be applied twice by a server downgraded meanwhile:
// no gate can know a down server's next version, and a server downgraded
// below a feature its own log already holds is not supported anyway (its
// own log may hold id-carrying entries too). Every route protocol gate
// protects rolling upgrades, not downgrades.

// Only meta peers are kept: every server whose route ever connected was,
// and the file grew with each server replaced under a new name. The meta
// membership is known once the group starts (jsCluster.peers, fixed from
// then on); the names heard before that which are not members are
// dropped then (prunePeerProtos), and a route of a server that is not a
// member adds nothing after it (what it advertises still counts while its
// route is up: routeProtoSeen).

const peerProtosFile = "protos.json"

// peerProtos is the protocols known (under jsCluster.mu) and the state
// of their single writer.
type peerProtos struct {
	known  map[string]int
	saving bool // a goroutine writes the file
	dirty  bool // known changed since that writer copied it
}

// loadPeerProtos reads the kept protocols and adds what the routes
// advertised since this server started (before the route hook was set).
func (jc *jsCluster) loadPeerProtos() {
	var saved map[string]int
	if b, err := vfs.ReadFile(jc.js.fs, jc.peerProtosPath()); err == nil {
		_ = json.Unmarshal(b, &saved)
	}
	live := jc.js.srv.routeProtosSeen()
	jc.mu.Lock()
	if jc.protos.known == nil {
		jc.protos.known = map[string]int{}
	}
	for name, v := range saved {
		if _, ok := jc.protos.known[name]; !ok { // a route's since start wins
			jc.protos.known[name] = v
		}
	}
	changed := false
	for name, v := range live {
		if jc.protos.known[name] != v {
			jc.protos.known[name], changed = v, true
		}
	}
	jc.mu.Unlock()
	if changed {
		jc.savePeerProtos()
	}
}

func (jc *jsCluster) peerProtosPath() string {
	return filepath.Join(jc.metaDir(), peerProtosFile)
}

// peerProtoKept is the protocol name advertised last, 0 if never heard.
func (jc *jsCluster) peerProtoKept(name string) int {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return jc.protos.known[name]
}

// notePeerProto records the protocol a route just advertised (the route
// hook peerProto, on the route's goroutine).
func (jc *jsCluster) notePeerProto(name string, proto int) {
	jc.mu.Lock()
	if jc.protos.known == nil {
		jc.protos.known = map[string]int{}
	}
	if jc.peers != nil && !slices.Contains(jc.peers, name) {
		jc.mu.Unlock()
		return // not a meta peer: nothing to keep
	}
	v, ok := jc.protos.known[name]
	if ok && v == proto {
		jc.mu.Unlock()
		return
	}
	jc.protos.known[name] = proto
	jc.mu.Unlock()
	if v >= routeProtoMetaIDs && proto < routeProtoMetaIDs {
		jc.js.srv.Warnf("JetStream cluster: %s came back with route protocol %d, older than the %d it advertised before: "+
			"meta entries proposed while it was away may carry request ids it does not apply (downgrades are not supported)", name, proto, v)
	}
	jc.savePeerProtos()
}

// prunePeerProtos drops the kept protocols of servers that are not meta
// peers (startMeta, once the membership is known) and rewrites the file
// if it held any.
func (jc *jsCluster) prunePeerProtos() {
	jc.mu.Lock()
	n := len(jc.protos.known)
	maps.DeleteFunc(jc.protos.known, func(name string, _ int) bool { return !slices.Contains(jc.peers, name) })
	pruned := len(jc.protos.known) < n
	jc.mu.Unlock()
	if pruned {
		jc.savePeerProtos()
	}
}

// savePeerProtos writes the file on a goroutine of its own unless one is
// writing already (it writes again if known changed meanwhile).
func (jc *jsCluster) savePeerProtos() {
	s := jc.js.srv
	jc.mu.Lock()
	if jc.protos.saving || s.shutdown.Load() {
		jc.protos.dirty = true
		jc.mu.Unlock()
		return
	}
	jc.protos.saving = true
	jc.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			jc.mu.Lock()
			b, _ := json.Marshal(jc.protos.known) // under mu: no copy needed
			jc.protos.dirty = false
			jc.mu.Unlock()
			err := vfs.MkdirAllSynced(jc.js.fs, jc.metaDir(), 0o750)
			if err == nil {
				err = jc.js.writeFileSync(jc.peerProtosPath(), b)
			}
			if err != nil {
				s.Warnf("JetStream cluster: could not keep the peers' route protocols: %v", err)
			}
			jc.mu.Lock()
			if !jc.protos.dirty || s.shutdown.Load() {
				jc.protos.saving = false
				jc.mu.Unlock()
				return
			}
			jc.mu.Unlock()
		}
	}()
}

// metaPeerProto is the route protocol meta peer name counts as: what its
// route advertised since this server started, else what it advertised
// before (kept), else 0 (never heard: older).
func (jc *jsCluster) metaPeerProto(name string) int {
	if v := jc.js.srv.routeProtoSeen(name); v != 0 {
		return v
	}
	return jc.peerProtoKept(name)
}
