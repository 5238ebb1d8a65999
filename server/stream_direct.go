package server

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

const maxMultiLast = 1024

// directGet answers $JS.API.DIRECT.GET.<stream>[.<subject>] with the raw
// message and the Nats-Stream/-Subject/-Sequence/-Time-Stamp headers.
func (mset *stream) directGet(_ *subscription, c *client, _ *Account, subject, reply string, _, body []byte) {
	if reply == "" {
		return
	}
	respond := func(hdr, msg []byte) { mset.jsa.js.srv.deliver(c, mset.jsa.acc, reply, "", hdr, msg) }
	status := func(s string) { respond(newHdr(s).bytes(), nil) }
	prefix := "$JS.API.DIRECT.GET." + mset.cfg.Name
	var req msgGetRequest
	if rest := strings.TrimPrefix(subject, prefix); rest != "" {
		req.LastFor = rest[1:]
		if len(body) > 0 && json.Unmarshal(body, &req) != nil {
			status("408 Malformed Request")
			return
		}
	} else {
		if len(body) == 0 {
			status("408 Empty Request")
			return
		}
		if err := json.Unmarshal(body, &req); err != nil {
			status("408 Malformed Request")
			return
		}
		if !req.valid() {
			status("408 Bad Request")
			return
		}
	}
	switch {
	case len(req.MultiLast) > 0:
		mset.directMultiLast(&req, respond, status)
	case req.Batch > 0:
		mset.directBatch(&req, respond, status)
	default:
		var sm StoreMsg
		m, err := mset.load(&req, &sm)
		if err != nil {
			status("404 Message Not Found")
			return
		}
		respond(directHeaders(mset.cfg.Name, m), m.Msg)
	}
}

func directHeaders(stream string, m *StoreMsg, extra ...string) []byte {
	kv := append([]string{JSStream, stream, JSSubject, m.Subj, JSSequence, strconv.FormatUint(m.Seq, 10),
		JSTimeStamp, time.Unix(0, m.TS).UTC().Format(time.RFC3339Nano)}, extra...)
	return appendHeaders(m.Hdr, kv...)
}

// directBatch sends up to req.Batch messages then a 204 EOB.
func (mset *stream) directBatch(req *msgGetRequest, respond func(hdr, msg []byte), status func(string)) {
	filter := req.NextFor
	start := req.Seq
	var sm StoreMsg
	var last uint64
	sent, bytes := 0, 0
	for sent < req.Batch {
		m, err := mset.store.LoadNextMsg(filter, start, &sm)
		if err != nil {
			break
		}
		if req.MaxBytes > 0 && sent > 0 && bytes+len(m.Msg)+len(m.Hdr) > req.MaxBytes {
			break
		}
		pending := mset.store.FilteredState(m.Seq+1, filter).Msgs
		respond(directHeaders(mset.cfg.Name, m, JSNumPending, strconv.FormatUint(pending, 10),
			JSLastSequence, strconv.FormatUint(last, 10)), m.Msg)
		last, start = m.Seq, m.Seq+1
		sent++
		bytes += len(m.Msg) + len(m.Hdr)
	}
	if sent == 0 {
		status("404 Message Not Found")
		return
	}
	pending := mset.store.FilteredState(start, filter).Msgs
	respond(newHdr("204 EOB").add(JSNumPending, strconv.FormatUint(pending, 10)).
		add(JSLastSequence, strconv.FormatUint(last, 10)).bytes(), nil)
}

// directMultiLast sends the last message of every subject matching the
// filters, in sequence order, then a 204 EOB.
func (mset *stream) directMultiLast(req *msgGetRequest, respond func(hdr, msg []byte), status func(string)) {
	var seqs []uint64
	seen := map[uint64]bool{}
	for _, f := range req.MultiLast {
		for _, ss := range mset.store.SubjectsState(f) {
			if (req.UpToSeq == 0 || ss.Last <= req.UpToSeq) && !seen[ss.Last] {
				seen[ss.Last] = true
				seqs = append(seqs, ss.Last)
			}
		}
	}
	switch {
	case len(seqs) == 0:
		status("404 No Results")
		return
	case len(seqs) > maxMultiLast:
		status("413 Too Many Results")
		return
	}
	slices.Sort(seqs)
	var sm StoreMsg
	for _, seq := range seqs {
		if m, err := mset.store.LoadMsg(seq, &sm); err == nil {
			respond(directHeaders(mset.cfg.Name, m), m.Msg)
		}
	}
	var st StreamState
	mset.store.FastState(&st)
	upTo := req.UpToSeq
	if upTo == 0 {
		upTo = st.LastSeq
	}
	respond(newHdr("204 EOB").add(JSUpToSequence, strconv.FormatUint(upTo, 10)).bytes(), nil)
}
