package server

// A client publishing asynchronously to a replicated stream sends many
// publishes in one read. Each is queued for the stream's group as it is
// parsed, but the group is woken only at the end of the read (the client's
// read batch hook, client.go readBatchHook): woken at the first publish, the
// leader took the few queued by then, and its append, write and fsync ran
// while the rest of the read queued behind them, for a second round (a
// whole fsync on every replica) of their own. A group already awake may
// take held proposals meanwhile; the queue keeps their order either way.
// Proposals from anywhere else (a route, an internal client, the API)
// wake the group at once, and so does one queued while the read's hooks
// run (a hook delivering with c to a subject a replicated stream takes;
// the only such hook today, the deferred acks, serves single-server
// streams): the wake hook may have run already, or be added too late to
// run, and an idle group sleeps without ticks until something wakes it.

// heldWakes is a client's groups owed a wake: its read batch hook (read
// loop only).
type heldWakes struct {
	groups []*raftGroup
}

// holdProposal queues data for g and owes g a wake at the end of c's
// current read (c is a client's read loop, not a route's).
func holdProposal(c *client, g *raftGroup, data []byte, done proposalDone) {
	if c.endingRead {
		g.Propose(data, done)
		return
	}
	if !g.proposeQuiet(data, done) {
		return // refused (and answered): nothing queued
	}
	h := readHook[heldWakes](c)
	for _, x := range h.groups {
		if x == g {
			return
		}
	}
	h.groups = append(h.groups, g)
}

// readBatchEnd wakes every group the read queued proposals for.
func (h *heldWakes) readBatchEnd(*client) {
	for i, g := range h.groups {
		g.props.signal()
		h.groups[i] = nil
	}
	h.groups = h.groups[:0]
}
