package server

import (
	"maps"
	"strings"
	"sync/atomic"
)

// The old-form group names that two streams of the cluster share
// (jetstream_group_name.go; ARCHITECTURE.md "Mixed versions"), kept by the
// meta apply for the raft transport, which asks on every raft message to
// or from a server before route protocol 8.

// sharedOldName says whether name, a group name on the wire, is the
// old-form name of two streams of the cluster (one of an account with
// '-'): a server before route protocol 8 runs either stream's group under
// it, so a raft message under it to or from such a server is not sent or
// taken. It takes no lock (the route's read loop asks too).
func (s *Server) sharedOldName(name []byte) bool {
	js := s.js.Load()
	return js != nil && js.cluster != nil && js.cluster.sharedOld.has(name)
}

// oldNameSet is the set of old-form group names that two streams of the
// cluster share. The meta apply replaces it (never changes a map in
// place) under jc.mu, so one writer at a time; readers load it without a
// lock. It is empty unless two streams' names collide, as they rarely do.
type oldNameSet struct {
	p atomic.Pointer[map[string]struct{}]
}

func (o *oldNameSet) has(name []byte) bool {
	m := o.p.Load()
	if m == nil || len(*m) == 0 {
		return false
	}
	_, ok := (*m)[string(name)]
	return ok
}

// set records whether name is shared (jc.mu held).
func (o *oldNameSet) set(name string, shared bool) {
	var cur map[string]struct{}
	if m := o.p.Load(); m != nil {
		cur = *m
	}
	if _, ok := cur[name]; ok == shared {
		return
	}
	next := make(map[string]struct{}, len(cur)+1)
	maps.Copy(next, cur)
	if shared {
		next[name] = struct{}{}
	} else {
		delete(next, name)
	}
	o.p.Store(&next)
}

// mayShareOldName says whether account's stream's old-form name may be
// another stream's too: not with fewer than two '-' after "S-".
func mayShareOldName(account, stream string) bool {
	return strings.Contains(account, "-") || strings.Contains(stream, "-")
}

// oldNameChangedLocked updates the shared old names after account's stream
// was added or deleted (jc.mu held).
func (jc *jsCluster) oldNameChangedLocked(account, stream string) {
	if !mayShareOldName(account, stream) {
		return
	}
	name := legacyGroupName(account, stream)
	jc.sharedOld.set(name, len(jc.legacyHoldersLocked(name)) > 1)
}

// resetOldNamesLocked makes the shared old names anew from the
// assignments (a meta snapshot replaced them; jc.mu held).
func (jc *jsCluster) resetOldNamesLocked() {
	next := map[string]struct{}{}
	for account, streams := range jc.streams {
		for stream := range streams {
			if !mayShareOldName(account, stream) {
				continue
			}
			if name := legacyGroupName(account, stream); len(jc.legacyHoldersLocked(name)) > 1 {
				next[name] = struct{}{}
			}
		}
	}
	jc.sharedOld.p.Store(&next)
}
