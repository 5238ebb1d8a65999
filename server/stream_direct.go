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
	req, bad := mset.directRequest(subject, body)
	if bad != "" {
		status(bad)
		return
	}
	if !mset.replicated || mset.staleDirectReads() {
		mset.directAnswer(req, respond, status)
		return
	}
	// Served once this replica has applied what the group had committed
	// when the request came (stream_read.go); until then, nothing.
	reply = strings.Clone(reply)
	mset.readLinearizable(func(err error, wake map[*client]struct{}) {
		if err == nil {
			respond := func(hdr, msg []byte) { mset.jsa.js.srv.deliverBatch(wake, mset.jsa.acc, reply, "", hdr, msg) }
			mset.directAnswer(req, respond, func(s string) { respond(newHdr(s).bytes(), nil) })
		}
	})
}

// directRequest parses a direct get request: from the subject's suffix
// (the last message on a subject) or the JSON body; bad is the status a
// request is refused with.
func (mset *stream) directRequest(subject string, body []byte) (req *msgGetRequest, bad string) {
	req = &msgGetRequest{}
	prefix := "$JS.API.DIRECT.GET." + mset.name
	if rest := strings.TrimPrefix(subject, prefix); rest != "" {
		// The subject form takes no payload (nats-server: 408 Bad Request).
		if len(body) > 0 || len(rest) < 2 {
			return nil, "408 Bad Request"
		}
		req.LastFor = strings.Clone(rest[1:])
		return req, ""
	}
	if len(body) == 0 {
		return nil, "408 Empty Request"
	}
	if err := json.Unmarshal(body, req); err != nil {
		return nil, "408 Malformed Request"
	}
	return req, req.directStatus()
}

// directAnswer answers a direct get from the replica's state.
func (mset *stream) directAnswer(req *msgGetRequest, respond func(hdr, msg []byte), status func(string)) {
	switch {
	case len(req.MultiLast) > 0:
		mset.directMultiLast(req, respond, status)
	case req.Batch > 0:
		mset.directBatch(req, respond, status)
	default:
		var sm StoreMsg
		m, err := mset.load(req, &sm)
		if err != nil {
			status("404 Message Not Found")
			return
		}
		respond(directHeaders(mset.name, m), m.Msg)
	}
}

// directStatus is the 408 status nats-server answers a direct get request
// with when it selects nothing or combines options that conflict.
func (req *msgGetRequest) directStatus() string {
	last, next, multi, start := req.LastFor != "", req.NextFor != "", len(req.MultiLast) > 0, req.StartTime != nil
	switch {
	case req.Seq == 0 && !last && !next && !multi && !start:
		return "408 Empty Request"
	case req.Seq > 0 && (last || start), start && last, last && (next || multi || req.Batch > 0), next && multi:
		return "408 Bad Request"
	}
	return ""
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
		m, err := mset.st().LoadNextMsg(filter, start, &sm)
		if err != nil {
			break
		}
		if req.MaxBytes > 0 && sent > 0 && bytes+len(m.Msg)+len(m.Hdr) > req.MaxBytes {
			break
		}
		// As nats-server: the matching messages from this one on.
		pending := mset.st().FilteredState(m.Seq, filter).Msgs
		respond(directHeaders(mset.name, m, JSNumPending, strconv.FormatUint(pending, 10),
			JSLastSequence, strconv.FormatUint(last, 10)), m.Msg)
		last, start = m.Seq, m.Seq+1
		sent++
		bytes += len(m.Msg) + len(m.Hdr)
	}
	if sent == 0 {
		status("404 Message Not Found")
		return
	}
	pending := mset.st().FilteredState(start, filter).Msgs
	respond(newHdr("204 EOB").add(JSNumPending, strconv.FormatUint(pending, 10)).
		add(JSLastSequence, strconv.FormatUint(last, 10)).bytes(), nil)
}

// directMultiLast sends the last message of every subject matching the
// filters, in sequence order, then a 204 EOB.
func (mset *stream) directMultiLast(req *msgGetRequest, respond func(hdr, msg []byte), status func(string)) {
	var seqs []uint64
	seen := map[uint64]bool{}
	for _, f := range req.MultiLast {
		for subj, ss := range mset.st().SubjectsState(f) {
			if seq := mset.lastAtOrBefore(subj, ss, req.UpToSeq); seq > 0 && !seen[seq] {
				seen[seq] = true
				seqs = append(seqs, seq)
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
	// As nats-server: each reply carries the number of results still to
	// come and the previous reply's sequence; so does the EOB.
	var sm StoreMsg
	pending, last := uint64(len(seqs)-1), uint64(0)
	for _, seq := range seqs {
		if m, err := mset.st().LoadMsg(seq, &sm); err == nil {
			respond(directHeaders(mset.name, m, JSNumPending, strconv.FormatUint(pending, 10),
				JSLastSequence, strconv.FormatUint(last, 10)), m.Msg)
			last = m.Seq
		}
		if pending > 0 {
			pending--
		}
	}
	var st StreamState
	mset.st().FastState(&st)
	upTo := req.UpToSeq
	if upTo == 0 {
		upTo = st.LastSeq
	}
	respond(newHdr("204 EOB").add(JSNumPending, strconv.FormatUint(pending, 10)).
		add(JSLastSequence, strconv.FormatUint(last, 10)).
		add(JSUpToSequence, strconv.FormatUint(upTo, 10)).bytes(), nil)
}

// lastAtOrBefore is the sequence of the last message on the literal subject
// subj at or below upTo (0 = no bound), 0 when there is none: the subject's
// value as of upTo, which a multi_last read with up_to_seq asks for.
func (mset *stream) lastAtOrBefore(subj string, ss SimpleState, upTo uint64) uint64 {
	switch {
	case upTo == 0 || ss.Last <= upTo:
		return ss.Last
	case ss.First > upTo:
		return 0
	}
	var sm StoreMsg
	var last uint64
	for seq := ss.First; seq <= upTo; {
		m, err := mset.st().LoadNextMsg(subj, seq, &sm)
		if err != nil || m.Seq > upTo {
			break
		}
		last, seq = m.Seq, m.Seq+1
	}
	return last
}
