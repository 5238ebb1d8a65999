package server

import (
	"bytes"
	"strconv"
)

// A compare-and-set publish (KV Update and Create, a writer expecting a
// subject's last sequence) carries one header and nothing else:
//
//	NATS/1.0\r\nNats-Expected-Last-Subject-Sequence: <n>\r\n\r\n
//
// 52 bytes for n = 0, written to the raft log, checksummed, sent to every
// follower and written again there. A log entry with exactly that header
// (n in its canonical decimal form) is encoded as streamOpMsgExpect: the
// streamOpMsg layout with n as a uvarint where the header bytes were. The
// decode rebuilds the header byte for byte and hands the apply a
// streamOpMsg, so processJetStreamMsg decides the expectation from the
// same bytes on every replica and stores the header as the client sent
// it. Any other header (another order, spacing, a leading zero, a second
// header) stays in the streamOpMsg form.
//
// Mixed versions: an older server does not know streamOpMsgExpect (its
// decode fails and the group halts), so the leader proposes the form only
// while every other replica speaks routeProtoCompactExpect
// (replicasSpeakLocked, as for OpAcks).
const streamOpMsgExpect byte = 'S'

// routeProtoCompactExpect is the first route protocol whose servers read
// streamOpMsgExpect entries.
const routeProtoCompactExpect = 11

var (
	loneExpectHead = []byte("NATS/1.0\r\n" + JSExpectedLastSubjSeq + ": ")
	loneExpectTail = []byte("\r\n\r\n")
)

// loneExpectSeq returns n when hdr is exactly the lone expectation header
// with n in canonical decimal (what appendLoneExpect rebuilds).
func loneExpectSeq(hdr []byte) (uint64, bool) {
	if len(hdr) <= len(loneExpectHead)+len(loneExpectTail) || !bytes.HasPrefix(hdr, loneExpectHead) || !bytes.HasSuffix(hdr, loneExpectTail) {
		return 0, false
	}
	digits := hdr[len(loneExpectHead) : len(hdr)-len(loneExpectTail)]
	if len(digits) > 20 || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	var n uint64
	for _, d := range digits {
		if d < '0' || d > '9' {
			return 0, false
		}
		v := n*10 + uint64(d-'0')
		if n > (1<<64-1)/10 || v < n*10 { // overflow
			return 0, false
		}
		n = v
	}
	return n, true
}

// appendLoneExpect appends the lone expectation header for n to b.
func appendLoneExpect(b []byte, n uint64) []byte {
	b = append(b, loneExpectHead...)
	b = strconv.AppendUint(b, n, 10)
	return append(b, loneExpectTail...)
}
