package server

// A new replicated stream's first leader leads term 1 without an election
// (streamAssignment.firstLeader: a hash of the stream's identity picks one
// of sa.Peers). Left to the hash, the servers' counts of first leaderships
// drift apart like coin tosses, and the leader balancer
// (jetstream_balance.go) moves a leadership whenever a server leads two
// more than another: while streams were created one after another, it
// moved about one new stream in ten to four (a leadership transfer, then
// an election of term 2 with a vote and a no-op to fsync on every member,
// new announcements), a cost on every create that also competed with the
// creates for the servers' processors. The meta leader therefore orders a
// new assignment's peers so that the hash lands on the member that is the
// first leader of the fewest replicated streams (ties: the placement's
// order, connected and least loaded first). The placement itself is
// unchanged, only its order, which nothing else reads as a preference, and
// every server, older versions too, still finds the first leader by the
// same hash of the same assignment. Counted from the assignments
// (firstLeads, kept beside placed by the meta apply and snapshot restore),
// so a create scans nothing: who leads now may differ after failovers,
// and the balancer still evens that out.

// countFirstLeadLocked adds d to the count of sa's first leader (replicated
// streams only: the balancer spreads only those).
func (jc *jsCluster) countFirstLeadLocked(sa *streamAssignment, d int) {
	if sa == nil || len(sa.Peers) < 2 {
		return
	}
	if jc.firstLeads == nil {
		jc.firstLeads = map[string]int{}
	}
	p := sa.firstLeader()
	if jc.firstLeads[p] += d; jc.firstLeads[p] == 0 {
		delete(jc.firstLeads, p)
	}
}

// spreadFirstLeader orders the peers of a new assignment (its Created set)
// so that its first leader is the connected member (this server or one it
// has a route to) with the fewest first leaderships; with none connected
// the order stays.
func (jc *jsCluster) spreadFirstLeader(sa *streamAssignment) {
	if len(sa.Peers) < 2 {
		return
	}
	up := jc.connectedServers()
	jc.mu.Lock()
	counts := make([]int, len(sa.Peers))
	for i, p := range sa.Peers {
		counts[i] = jc.firstLeads[p]
		if !up[p] {
			counts[i] = -1 // never picked: it would only wait out an election
		}
	}
	jc.mu.Unlock()
	placeFirstLeader(sa, counts)
}

// placeFirstLeader swaps the peer with the smallest count that is not
// negative (counts[i] is sa.Peers[i]'s) to the first leader's index.
func placeFirstLeader(sa *streamAssignment, counts []int) {
	want := fewestFirst(counts)
	if want < 0 {
		return
	}
	at := sa.firstLeaderIndex()
	sa.Peers[at], sa.Peers[want] = sa.Peers[want], sa.Peers[at]
}

// fewestFirst is the index of the smallest count that is not negative,
// the first one of equals; -1 when every count is negative.
func fewestFirst(counts []int) int {
	best := -1
	for i, c := range counts {
		if c >= 0 && (best < 0 || c < counts[best]) {
			best = i
		}
	}
	return best
}
