package server

import (
	"encoding/json"
	"slices"
)

// The leader of a replicated stream listens to the stream's subjects as
// the queue group streamIngestQueue (jetstream_routes.go) while it leads:
// startServing subscribes them, stopServing drops them, and a new
// configuration applied from the log brings them in line (syncIngest).
// All three run on the stream's group goroutine, one after the other,
// but for stop (a deleted stream), which marks the stream closed first,
// and stopServing told by a wedged group's deposal (raft_wedge.go), which
// clears mset.leader first: syncIngest looks at both again under mu after
// it subscribed, so what is added after either is dropped again.

// syncIngest makes the leader's ingest subscriptions match the stream's
// subjects: missing ones are added before the ones no longer wanted are
// removed, so a subject kept across an update never goes without a
// listener (a publish in that gap would get no responders). The other
// subscriptions in mset.ingest (the consumers' pull requests) are kept.
// Called without locks, after the apply that changed the configuration
// (subscribing takes routeTable.mu, which may not be taken under
// stream.mu). A replica that does not lead does nothing: it subscribes
// the subjects it has then when it starts leading.
func (mset *stream) syncIngest() {
	mset.mu.Lock()
	if !mset.leader || mset.closed {
		mset.mu.Unlock()
		return
	}
	want := slices.Clone(mset.cfg.Subjects)
	have := slices.Clone(mset.ingest)
	mset.mu.Unlock()
	added := mset.subscribeIngest(missingIngest(want, have))
	mset.mu.Lock()
	if mset.closed || !mset.leader { // stopped meanwhile (stop took mset.ingest)
		mset.mu.Unlock()
		mset.unsubscribeAll(added)
		return
	}
	keep, drop := splitIngest(mset.ingest, want)
	mset.ingest = append(keep, added...)
	mset.mu.Unlock()
	mset.unsubscribeAll(drop)
}

// subscribeIngest subscribes subjects as the leaders' queue group; a
// subject that cannot be subscribed is logged and left out.
func (mset *stream) subscribeIngest(subjects []string) []*subscription {
	var subs []*subscription
	for _, subj := range subjects {
		sub, err := mset.jsa.acc.subscribeInternal(subj, streamIngestQueue, mset.inbound)
		if err != nil {
			mset.jsa.js.srv.Errorf("JetStream: stream %q cannot listen to %q: %v", mset.name, subj, err)
			continue
		}
		subs = append(subs, sub)
	}
	return subs
}

func (mset *stream) unsubscribeAll(subs []*subscription) {
	for _, sub := range subs {
		mset.jsa.acc.unsubscribe(sub)
	}
}

// missingIngest is the subjects of want that no ingest subscription of
// have listens to.
func missingIngest(want []string, have []*subscription) []string {
	var missing []string
	for _, subj := range want {
		if !slices.ContainsFunc(have, func(sub *subscription) bool { return isIngestOf(sub, subj) }) {
			missing = append(missing, subj)
		}
	}
	return missing
}

// splitIngest keeps the subscriptions that are not ingest ones and one
// ingest subscription per wanted subject; the rest are dropped.
func splitIngest(subs []*subscription, want []string) (keep, drop []*subscription) {
	seen := map[string]bool{}
	for _, sub := range subs {
		switch {
		case sub.queue != streamIngestQueue:
			keep = append(keep, sub)
		case slices.Contains(want, sub.subject) && !seen[sub.subject]:
			seen[sub.subject] = true
			keep = append(keep, sub)
		default:
			drop = append(drop, sub)
		}
	}
	return keep, drop
}

func isIngestOf(sub *subscription, subject string) bool {
	return sub.queue == streamIngestQueue && sub.subject == subject
}

// answerUpdate answers a STREAM.UPDATE once the leader applied the new
// configuration and listens to its subjects, so a client that publishes
// to an added subject after the answer finds the leader's interest (the
// RS+ went to every route before the answer). On a goroutine of its own:
// the stream info asks the group goroutine for its status.
func (mset *stream) answerUpdate(reply string) {
	si, _ := mset.info("", false, 0)
	resp := &streamInfoResponse{apiResponse: apiResponse{Type: apiTypePrefix + "stream_update_response"}, StreamInfo: si}
	b, _ := json.Marshal(resp)
	mset.jsa.js.srv.deliver(nil, mset.jsa.acc, reply, "", nil, b)
}
