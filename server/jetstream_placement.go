package server

import (
	"maps"
	"slices"
	"sort"
	"strings"
)

// Placement: the meta leader picks a stream's servers among the meta
// group's members, connected ones first, then least loaded (names break
// ties, so placement is spread and deterministic), keeping only servers in the requested cluster
// that carry every requested tag (server_tags, compared case-insensitively
// as nats-server does). Tags of other servers come from their route INFO,
// so a server that is not connected cannot be chosen when tags are asked.

func errNoSuitablePeers(detail string) *ApiError {
	return apiErr(400, 10005, "no suitable peers for placement"+detail)
}

// placePeers picks n servers for a new stream.
func (jc *jsCluster) placePeers(n int, pl *Placement) ([]string, *ApiError) {
	if pl != nil && pl.Cluster != "" && pl.Cluster != jc.js.srv.ClusterName() {
		return nil, errNoSuitablePeers(", unknown cluster " + strings.TrimSpace(pl.Cluster))
	}
	cands := jc.candidates(pl, nil)
	jc.mu.Lock()
	total := len(jc.peers)
	jc.mu.Unlock()
	switch {
	case n > total:
		return nil, errInsufficientResources()
	case n > len(cands):
		return nil, errNoSuitablePeers(", tags not matched")
	}
	return cands[:n], nil
}

// replacementPeer picks a server to take a removed peer's place, or "".
func (jc *jsCluster) replacementPeer(sa *streamAssignment, removed string) string {
	exclude := append(append(slices.Clone(sa.Peers), sa.Removed...), removed)
	if c := jc.candidates(sa.Config.Placement, exclude); len(c) > 0 {
		return c[0]
	}
	return ""
}

// candidates lists the members that satisfy pl and are not excluded,
// least loaded first.
func (jc *jsCluster) candidates(pl *Placement, exclude []string) []string {
	var tags []string
	if pl != nil {
		tags = pl.Tags
	}
	jc.mu.Lock()
	load := maps.Clone(jc.placed)
	peers := slices.Clone(jc.peers)
	jc.mu.Unlock()
	var out []string
	for _, p := range peers {
		if !slices.Contains(exclude, p) && hasTags(jc.serverTags(p), tags) {
			out = append(out, p)
		}
	}
	up := jc.connectedServers()
	sort.Slice(out, func(i, j int) bool {
		switch {
		case up[out[i]] != up[out[j]]:
			return up[out[i]] // servers that are connected now first
		case load[out[i]] != load[out[j]]:
			return load[out[i]] < load[out[j]]
		}
		return out[i] < out[j]
	})
	return out
}

// connectedServers is the set of servers connected now: this one and
// those at the end of a route.
func (jc *jsCluster) connectedServers() map[string]bool {
	up := map[string]bool{jc.js.srv.Name(): true}
	for _, r := range jc.js.srv.routeList() {
		up[r.remote.Name] = true
	}
	return up
}

// allPeersOffline reports whether none of peers is connected now: no
// replica can apply a change, and nats-server answers an update so
// (10118) instead of leaving the client to time out.
func (jc *jsCluster) allPeersOffline(peers []string) bool {
	up := jc.connectedServers()
	return !slices.ContainsFunc(peers, func(p string) bool { return up[p] })
}

// serverTags returns a member's tags: ours from the options, a peer's
// from its route INFO (nil while it is not connected).
func (jc *jsCluster) serverTags(name string) []string {
	s := jc.js.srv
	if name == s.Name() {
		return s.getOpts().Tags
	}
	for _, r := range s.routeList() {
		if r.remote.Name == name {
			return r.remote.Tags
		}
	}
	return nil
}

func hasTags(have, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(have, func(h string) bool { return strings.EqualFold(h, w) }) {
			return false
		}
	}
	return true
}
