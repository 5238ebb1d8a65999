package server

import (
	"time"
)

type purgeRequest struct {
	Subject  string `json:"filter,omitempty"`
	Sequence uint64 `json:"seq,omitempty"`
	Keep     uint64 `json:"keep,omitempty"`
}

type purgeResponse struct {
	apiResponse
	Success bool   `json:"success,omitempty"`
	Purged  uint64 `json:"purged"`
}

func (r *apiRequest) streamPurge() any {
	mset := r.jsa.lookup(r.streamName("STREAM.PURGE."))
	if mset == nil {
		return &purgeResponse{apiResponse: apiResponse{Error: errStreamNotFound()}}
	}
	var req purgeRequest
	if e := r.unmarshal(&req); e != nil {
		return &purgeResponse{apiResponse: apiResponse{Error: e}}
	}
	if req.Sequence > 0 && req.Keep > 0 {
		return &purgeResponse{apiResponse: apiResponse{Error: errBadRequest()}}
	}
	defer mset.flushConsumersOut() // after the unlock: advisories the purge queued
	mset.mu.Lock()
	defer mset.mu.Unlock()
	switch {
	case mset.cfg.Sealed:
		return &purgeResponse{apiResponse: apiResponse{Error: errSealed()}}
	case mset.cfg.DenyPurge:
		return &purgeResponse{apiResponse: apiResponse{Error: errPurgeFailed("stream purge not permitted")}}
	}
	n, err := mset.applyPurge(&req)
	if err != nil {
		return &purgeResponse{apiResponse: apiResponse{Error: errPurgeFailed(err.Error())}}
	}
	return &purgeResponse{Success: true, Purged: n}
}

// applyPurge is the deterministic purge operation; the caller holds mu.
func (mset *stream) applyPurge(req *purgeRequest) (uint64, error) {
	var n uint64
	var err error
	if req.Subject == "" && req.Sequence == 0 && req.Keep == 0 {
		n, err = mset.st().Purge()
	} else {
		n, err = mset.st().PurgeEx(req.Subject, req.Sequence, req.Keep)
	}
	if err == nil && n > 0 {
		mset.consumersPurgedLocked(req.Subject != "" || req.Keep > 0)
	}
	return n, err
}

// StoredMsg is a message as STREAM.MSG.GET returns it.
type StoredMsg struct {
	Subject  string    `json:"subject"`
	Sequence uint64    `json:"seq"`
	Header   []byte    `json:"hdrs,omitempty"`
	Data     []byte    `json:"data,omitempty"`
	Time     time.Time `json:"time"`
}

type msgGetRequest struct {
	Seq       uint64     `json:"seq,omitempty"`
	LastFor   string     `json:"last_by_subj,omitempty"`
	NextFor   string     `json:"next_by_subj,omitempty"`
	Batch     int        `json:"batch,omitempty"`
	MaxBytes  int        `json:"max_bytes,omitempty"`
	MultiLast []string   `json:"multi_last,omitempty"`
	UpToSeq   uint64     `json:"up_to_seq,omitempty"`
	NoHeaders bool       `json:"no_hdr,omitempty"`
	StartTime *time.Time `json:"start_time,omitempty"`
}

type msgGetResponse struct {
	apiResponse
	Message *StoredMsg `json:"message,omitempty"`
}

// valid reports whether exactly one way of selecting a message is given.
func (req *msgGetRequest) valid() bool {
	n := 0
	if req.Seq > 0 && req.NextFor == "" {
		n++
	}
	if req.LastFor != "" {
		n++
	}
	if req.NextFor != "" {
		n++
	}
	if len(req.MultiLast) > 0 {
		n++
	}
	if req.StartTime != nil {
		n++
	}
	return n == 1 && !(req.LastFor != "" && req.Seq > 0)
}

// load finds the message a get request asks for.
func (mset *stream) load(req *msgGetRequest, sm *StoreMsg) (*StoreMsg, error) {
	switch {
	case req.LastFor != "":
		return mset.st().LoadLastMsg(req.LastFor, sm)
	case req.NextFor != "":
		return mset.st().LoadNextMsg(req.NextFor, req.Seq, sm)
	}
	return mset.st().LoadMsg(req.Seq, sm)
}

func (r *apiRequest) streamMsgGet() any {
	mset := r.jsa.lookup(r.streamName("STREAM.MSG.GET."))
	if mset == nil {
		return &msgGetResponse{apiResponse: apiResponse{Error: errStreamNotFound()}}
	}
	var req msgGetRequest
	if e := r.unmarshal(&req); e != nil {
		return &msgGetResponse{apiResponse: apiResponse{Error: e}}
	}
	if !req.valid() || req.Batch > 0 || len(req.MultiLast) > 0 {
		return &msgGetResponse{apiResponse: apiResponse{Error: errBadRequest()}}
	}
	if mset.replicated {
		r.msgGetLater(mset, &req) // once the read is linearizable (stream_read.go)
		return nil
	}
	return mset.msgGet(&req)
}

// msgGet answers a get request from the stream's state.
func (mset *stream) msgGet(req *msgGetRequest) *msgGetResponse {
	sm, err := mset.load(req, nil)
	if err != nil {
		return &msgGetResponse{apiResponse: apiResponse{Error: errNoMessageFound()}}
	}
	return &msgGetResponse{Message: &StoredMsg{Subject: sm.Subj, Sequence: sm.Seq, Header: sm.Hdr, Data: sm.Msg,
		Time: time.Unix(0, sm.TS).UTC()}}
}

type msgDeleteRequest struct {
	Seq     uint64 `json:"seq"`
	NoErase bool   `json:"no_erase,omitempty"`
}

func (r *apiRequest) streamMsgDelete() any {
	mset := r.jsa.lookup(r.streamName("STREAM.MSG.DELETE."))
	fail := func(e *ApiError) any { return &successResponse{apiResponse: apiResponse{Error: e}} }
	if mset == nil {
		return fail(errStreamNotFound())
	}
	var req msgDeleteRequest
	if e := r.unmarshal(&req); e != nil {
		return fail(e)
	}
	defer mset.flushConsumersOut() // after the unlock: advisories the delete queued
	mset.mu.Lock()
	defer mset.mu.Unlock()
	switch {
	case mset.cfg.Sealed:
		return fail(errSealed())
	case mset.cfg.DenyDelete:
		return fail(errMsgDeleteFailed("message delete not permitted"))
	}
	ok, err := mset.applyDelete(req.Seq, !req.NoErase)
	switch {
	case err != nil:
		return fail(errMsgDeleteFailed(err.Error()))
	case !ok:
		return fail(errSequenceNotFound(req.Seq))
	}
	return &successResponse{Success: true}
}

// applyDelete is the deterministic delete operation; the caller holds mu.
func (mset *stream) applyDelete(seq uint64, erase bool) (bool, error) {
	remove := mset.st().RemoveMsg
	if erase {
		remove = mset.st().EraseMsg
	}
	ok, err := remove(seq)
	if ok && err == nil {
		mset.consumersRemovedLocked(seq)
	}
	return ok, err
}
