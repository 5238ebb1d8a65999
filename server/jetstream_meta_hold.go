package server

import (
	"bytes"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nuid"
)

// A meta API request reaches every server and only the meta leader
// answers it. When the leader's server dies, its survivors keep believing
// in it until an election timeout passes (an awake group), then elect: a
// request sent meanwhile went unanswered, as in nats-server, and the
// client timed out after 5 s although a new leader was ready in under one.
//
// The server the client is connected to therefore holds such a request
// (metaHold): it watches the request's reply subject, and if the leader
// it believed in (or that leader's server incarnation) is gone before an
// answer passed, it sends the request again, with a reply subject of its
// own, once a new leader is known, and hands the first answer on to the
// client unless one passed meanwhile. A leader that was not ready yet
// (itself, newly elected) is treated the same way once it is ready.
//
// Exactly once: the old leader cannot answer any more (its route to this
// server is gone, and the client's reply subject has interest only here);
// the new leader was not leading when the original request reached it
// (it needed this server's vote, sent after the request on the same
// route, in a cluster of three), so it dropped it; an answer to the
// original that comes from it anyway comes over the same route before the
// answer to the copy and is seen first.
//
// Calls that change nothing (the account info, the stream listings) are
// sent again as they came. A stream create, update or delete is held too,
// but its copy may meet an original the old leader committed (applied or
// not yet; its answer passed nowhere, or nobody listened on the reply
// subject any more): applied again it would re-create a stream deleted
// since or undo a later update another client was told succeeded
// (TestJetStreamClusterMetaHoldNeverReappliesCreate, -Update). So every
// meta entry of a client's request carries a request id that its copies
// share, and the apply, in log order on every server, skips an id applied
// already and answers the copy with the first outcome
// (jetstream_meta_reqid.go): an original that never reached a log leaves
// the copy to be applied; an original committed by the new leader and the
// copy both in the log apply once; an original applied before the copy
// arrives is answered from the table without a proposal. The copy goes
// through the system account (jetstream_meta_copy.go), so no client can
// claim another's id. Writes are held only while every connected meta
// peer applies ids (route protocol 9); the peer removal is not held. In a
// rolling upgrade from 9 to 10 a leader of 10 does not run the copy of a
// server of 9 (it cannot be told from a forgery: jetstream_meta_copy.go
// copyFromCluster), whose client times out as before.

// metaHoldFor bounds a held request: under nats.go's default 5 s timeout.
var metaHoldFor = 4 * time.Second

// metaResendEvery: a new leader that is not ready yet drops the copy;
// another follows (only the first answer is handed on).
var metaResendEvery = 500 * time.Millisecond

// metaHold is clusteredDispatch's answer "nothing now; maybe a copy to
// the next leader": lead is the leader believed in, epoch its server's
// route incarnation.
type metaHold struct {
	lead  raft.ID
	epoch uint64
	write bool // a copy goes out through metaCopySubject
}

// heldMeta reports whether a meta call may be held and sent again.
func heldMeta(prefix string) bool {
	switch prefix {
	case "INFO", "STREAM.NAMES", "STREAM.LIST":
		return true
	}
	return heldWrite(prefix)
}

// metaLead is the meta group's leader as this server knows it.
func (jc *jsCluster) metaLead() raft.ID {
	jc.mu.Lock()
	g := jc.meta
	jc.mu.Unlock()
	if g == nil {
		return raft.None
	}
	return g.softState().Lead
}

// newMetaHold is the hold for a meta call from a client connected here
// while lead is believed to lead, or nil if the call is not held.
func (r *apiRequest) newMetaHold(prefix string, lead raft.ID) *metaHold {
	if !heldMeta(prefix) || lead == raft.None {
		return nil
	}
	write := heldWrite(prefix)
	if write && (r.requestID() == "" || r.jsa.js.srv.SystemAccount() == nil) {
		return nil // an older peer would apply a copy again
	}
	return &metaHold{lead: lead, epoch: r.jsa.js.srv.raftPeerHealth(lead).Epoch, write: write}
}

// maxMetaHolds bounds the meta requests held at once; beyond it a request
// is left to the leader as before.
const maxMetaHolds = 1024

// holdMeta runs the hold on a goroutine of its own (a server shutting
// down ends it).
func (r *apiRequest) holdMeta(h *metaHold) {
	r.hdr, r.body = bytes.Clone(r.hdr), bytes.Clone(r.body)
	r.watchReply(&r.jsa.js.cluster.metaHolds, maxMetaHolds, func(seen <-chan struct{}) {
		r.runMetaHold(h, seen)
	})
}

// metaAnswer is an answer to a held request's copy.
type metaAnswer struct{ hdr, msg []byte }

// testHookMetaHoldPass is told of each look a held request takes.
var testHookMetaHoldPass func(s *Server)

// runMetaHold waits, woken by the changes it looks for
// (jetstream_meta_hold_wake.go), its deadline, the copy's resend time or
// an answer, for the leader believed in to go and another to take the
// request's copy.
func (r *apiRequest) runMetaHold(h *metaHold, seen <-chan struct{}) {
	jc, s, acc := r.jsa.js.cluster, r.jsa.js.srv, r.jsa.acc
	deadline := s.clock.Now().Add(metaHoldFor)
	var got chan metaAnswer // non-nil once a copy went out
	var lastSent time.Time
	var inbox string
	for {
		wake := jc.holdWakeChan() // before the look: a change after it closes wake
		if testHookMetaHoldPass != nil {
			testHookMetaHoldPass(s)
		}
		now := s.clock.Now()
		if now.After(deadline) {
			return
		}
		if (got == nil || now.Sub(lastSent) >= metaResendEvery) && r.metaHoldGone(h) && jc.metaTarget(h) {
			if got == nil {
				var sub *subscription
				if got, sub, inbox = r.metaCopyInbox(); got == nil {
					return
				}
				defer acc.unsubscribe(sub)
			}
			lastSent = now
			if h.write {
				r.sendMetaCopy(inbox) // jetstream_meta_copy.go
			} else {
				s.deliver(nil, acc, jsAPIPrefix+r.subject, inbox, r.hdr, r.body)
			}
		}
		next := deadline
		if resend := lastSent.Add(metaResendEvery); got != nil && resend.After(now) && resend.Before(next) {
			next = resend // a leader not ready yet dropped it
		} // a resend due but no target: the change that makes one wakes it
		t := s.clock.NewTimer(next.Sub(now) + time.Millisecond)
		select {
		case <-seen:
			t.Stop()
			return
		case <-s.quit:
			t.Stop()
			return
		case a := <-got:
			t.Stop()
			select {
			case <-seen: // the original's answer passed first
			default:
				s.deliver(nil, acc, r.reply, "", a.hdr, a.msg)
			}
			return
		case <-wake:
		case <-t.C():
		}
		t.Stop()
	}
}

// metaHoldGone reports whether the leader believed in cannot answer: its
// server's route is gone or came back as a new incarnation, or it is this
// server (which dropped the request, leading but not ready).
func (r *apiRequest) metaHoldGone(h *metaHold) bool {
	s := r.jsa.js.srv
	if h.lead == raftID(s.Name()) {
		return true
	}
	ph := s.raftPeerHealth(h.lead)
	return !ph.Live || ph.Epoch != h.epoch
}

// metaTarget reports whether a copy of a held request may go out now: a
// leader is known that is not the one believed in (or is a new
// incarnation of it), and if it is this server it is ready.
func (jc *jsCluster) metaTarget(h *metaHold) bool {
	cur := jc.metaLead()
	if cur == raft.None {
		return false
	}
	if cur == raftID(jc.js.srv.Name()) {
		return jc.isMetaLeader()
	}
	return cur != h.lead || jc.js.srv.raftPeerHealth(cur).Epoch != h.epoch
}

// metaCopyInbox subscribes a reply subject of this server's own for the
// copies (its interest reaches the routes before the copy does) and
// returns the channel its first answer arrives on.
func (r *apiRequest) metaCopyInbox() (chan metaAnswer, *subscription, string) {
	got := make(chan metaAnswer, 1)
	inbox := "$JSH." + nuid.Next()
	sub, err := r.jsa.acc.subscribeInternal(inbox, "", func(_ *subscription, _ *client, _ *Account, _, _ string, hdr, msg []byte) {
		select {
		case got <- metaAnswer{bytes.Clone(hdr), bytes.Clone(msg)}:
		default:
		}
	})
	if err != nil {
		return nil, nil, ""
	}
	return got, sub, inbox
}
