package server

import (
	"bytes"
	"strconv"
)

// Header names JetStream reads and writes.
const (
	JSMsgId                   = "Nats-Msg-Id"
	JSExpectedStream          = "Nats-Expected-Stream"
	JSExpectedLastSeq         = "Nats-Expected-Last-Sequence"
	JSExpectedLastSubjSeq     = "Nats-Expected-Last-Subject-Sequence"
	JSExpectedLastSubjSeqSubj = "Nats-Expected-Last-Subject-Sequence-Subject"
	JSExpectedLastMsgId       = "Nats-Expected-Last-Msg-Id"
	JSMsgRollup               = "Nats-Rollup"
	JSRequiredApiLevel        = "Nats-Required-Api-Level"
	JSStream                  = "Nats-Stream"
	JSSequence                = "Nats-Sequence"
	JSTimeStamp               = "Nats-Time-Stamp"
	JSSubject                 = "Nats-Subject"
	JSLastSequence            = "Nats-Last-Sequence"
	JSNumPending              = "Nats-Num-Pending"
	JSUpToSequence            = "Nats-UpTo-Sequence"

	JSMsgRollupSubject = "sub"
	JSMsgRollupAll     = "all"

	hdrLine = "NATS/1.0\r\n"
	// maxHdrBytes is the largest header block a stream stores: stores
	// encode its length in 16 bits, so nats-server refuses > 65535.
	maxHdrBytes = 1<<16 - 1
)

// getHeader returns the value of key in a NATS header block (keys compare
// case-sensitively first, then case-insensitively as a fallback), or nil.
// It does not allocate.
func getHeader(key string, hdr []byte) []byte {
	var fold []byte
	for k, v, rest := nextHeader(hdr); k != nil; k, v, rest = nextHeader(rest) {
		if string(k) == key {
			return bytes.TrimSpace(v)
		}
		if fold == nil && len(k) == len(key) && bytes.EqualFold(k, []byte(key)) {
			fold = bytes.TrimSpace(v)
		}
	}
	return fold
}

// nextHeader returns the key and (untrimmed) value of the first
// "key: value" line of hdr and what follows it; key is nil at the end.
// Lines without a key (the status line, the closing blank line) are
// skipped.
func nextHeader(hdr []byte) (key, val, rest []byte) {
	for len(hdr) > 0 {
		i := bytes.IndexByte(hdr, '\n')
		var line []byte
		if i < 0 {
			line, hdr = hdr, nil
		} else {
			line, hdr = hdr[:i], hdr[i+1:]
		}
		line = bytes.TrimRight(line, "\r")
		if colon := bytes.IndexByte(line, ':'); colon > 0 {
			return line[:colon], line[colon+1:], hdr
		}
	}
	return nil, nil, nil
}

// parseUintHeader parses a decimal header value; ok is false when absent
// or malformed.
func parseUintHeader(v []byte) (uint64, bool) {
	if len(v) == 0 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(v), 10, 64)
	return n, err == nil
}

// hdrBuilder builds a header block.
type hdrBuilder struct{ b []byte }

func newHdr(status string) *hdrBuilder {
	h := &hdrBuilder{b: make([]byte, 0, 128)}
	h.b = append(h.b, "NATS/1.0"...)
	if status != "" {
		h.b = append(h.b, ' ')
		h.b = append(h.b, status...)
	}
	h.b = append(h.b, "\r\n"...)
	return h
}

func (h *hdrBuilder) add(k, v string) *hdrBuilder {
	h.b = append(h.b, k...)
	h.b = append(h.b, ": "...)
	h.b = append(h.b, v...)
	h.b = append(h.b, "\r\n"...)
	return h
}

func (h *hdrBuilder) bytes() []byte { return append(h.b, "\r\n"...) }

// appendHeaders adds server headers to a stored header block (or makes a
// new block), keeping the stored headers first.
func appendHeaders(stored []byte, kv ...string) []byte {
	var out []byte
	if len(stored) >= len(hdrLine) {
		out = append(out, bytes.TrimSuffix(stored, []byte("\r\n"))...)
	} else {
		out = append(out, hdrLine...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, kv[i]...)
		out = append(out, ": "...)
		out = append(out, kv[i+1]...)
		out = append(out, "\r\n"...)
	}
	return append(out, "\r\n"...)
}
