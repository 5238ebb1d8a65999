package server

import (
	"bytes"
	"encoding/json"
	"time"

	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// CONSUMER.PAUSE and the end of a pause. A pause is state (cstate's
// paused, set by OpPause or by a create's pause_until) and config
// (pause_until, echoed in CONSUMER.INFO). The leader's timer proposes
// OpResume with the pause it saw, which the apply takes only if that pause
// is still the one in force and has passed (doc.go), then delivery starts
// again.

func (r *apiRequest) consumerPause() any {
	sname, cname, ok := r.twoTokens("CONSUMER.PAUSE.")
	if !ok {
		return consumerErr(errBadRequest())
	}
	var req JSApiConsumerPauseRequest
	if b := bytes.TrimSpace(r.body); len(b) > 0 && (b[0] == '{' || b[0] == '[') {
		if err := json.Unmarshal(b, &req); err != nil {
			return &JSApiConsumerPauseResponse{apiResponse: apiResponse{Error: errInvalidJSON(err)}}
		}
	}
	mset, e := r.consumerStream(sname)
	if e != nil {
		return &JSApiConsumerPauseResponse{apiResponse: apiResponse{Error: e}}
	}
	mset.mu.Lock()
	o := mset.consumers[cname]
	if o == nil || o.closed {
		mset.mu.Unlock()
		return &JSApiConsumerPauseResponse{apiResponse: apiResponse{Error: errConsumerNotFound()}}
	}
	until := req.PauseUntil.UTC()
	if o.viaLog() { // every replica applies it; the leader answers
		mset.mu.Unlock()
		return r.proposeConsumerPause(mset, cname, until)
	}
	if err := o.pauseLocked(until); err != nil {
		mset.mu.Unlock()
		return &JSApiConsumerPauseResponse{apiResponse: apiResponse{Error: errConsumerStoreFailed(err)}}
	}
	mset.mu.Unlock()
	o.flushOut()
	resp := &JSApiConsumerPauseResponse{PauseUntil: until}
	if now := o.now(); now.Before(until) {
		resp.Paused, resp.PauseRemaining = true, until.Sub(now)
	}
	return resp
}

// pauseLocked pauses o until until (a zero or past time resumes it),
// records it in the config and (re)arms the resume timer.
func (o *consumer) pauseLocked(until time.Time) error {
	e := cstate.Entry{Op: cstate.OpResume, TS: o.now().UnixNano()}
	if !until.IsZero() {
		e.Op, e.Until = cstate.OpPause, until.UnixNano()
	}
	o.applyPauseLocked(&e)
	if err := o.saveMetaLocked(); err != nil {
		return err
	}
	o.armPauseLocked()
	o.queueOutLocked(o.pumpLocked(nil))
	return nil
}

// applyPauseLocked applies a pause entry. One of the pause API (OpPause,
// OpResume with Until 0) also sets pause_until in the config, the state's
// copy included (Entry.Config, derived here from the config in force: the
// same on every replica), so a snapshot and CONSUMER.INFO carry it.
func (o *consumer) applyPauseLocked(e *cstate.Entry) *cstate.Outcome {
	if e.Op == cstate.OpPause || e.Until == 0 {
		cfg := o.cfg.clone()
		cfg.PauseUntil = nil
		if e.Op == cstate.OpPause {
			t := time.Unix(0, e.Until).UTC()
			cfg.PauseUntil = &t
		}
		setStaticConsumerMetadata(cfg)
		o.cfg = cfg // before the apply: its advisory shows the new pause_until
		e.Config = stateConfig(cfg)
	}
	return o.applyLocked(e)
}

// armPauseLocked arms the resume timer for the pause in force, if any.
func (o *consumer) armPauseLocked() {
	until := o.state.PausedUntil()
	if o.pauseT != nil {
		o.pauseT.Stop()
	}
	if until == 0 || o.closed || !o.leadsLocked() {
		return
	}
	clk := o.mset.jsa.js.srv.clock
	wait := max(time.Duration(until-clk.Now().UnixNano()), time.Millisecond)
	o.pauseT = clk.AfterFunc(wait, func() { o.pauseFired(until) })
}

// pauseFired proposes the end of the pause it was armed for; the apply
// decides whether it still is the pause in force and has passed.
func (o *consumer) pauseFired(until int64) {
	mset := o.mset
	mset.mu.Lock()
	if o.closed {
		mset.mu.Unlock()
		return
	}
	e := &cstate.Entry{Op: cstate.OpResume, TS: o.now().UnixNano(), Until: until}
	if o.viaLog() { // every replica applies the resume, in log order
		if o.lead != nil && o.state.PausedUntil() == until {
			o.proposeLocked(e, "", 0)
		}
		mset.mu.Unlock()
		return
	}
	o.applyLocked(e)
	if p := o.state.PausedUntil(); p == until { // not passed yet by the applied stamp: look again
		o.armPauseLocked()
	}
	o.queueOutLocked(o.pumpLocked(nil))
	mset.mu.Unlock()
	o.flushOut()
}

// pausedAdvisoryLocked: nats-server answers every create or update of a
// paused consumer with a pause advisory too.
func (o *consumer) pausedAdvisoryLocked() {
	if p := o.state.PausedUntil(); p > o.now().UnixNano() {
		o.eventsLocked([]cstate.Event{{Kind: cstate.EventPaused, Until: p}})
	}
}
