package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"slices"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/routeproto"
)

// Reading what a peer sends on a route: the bounds of each operation and
// payloads read as they arrive, never allocated by the size a control line
// claims. internal/routeproto parses the control lines (sizes are ASCII
// digits within these bounds, or the route closes), route_proto.go acts
// on them, raft_frag.go reassembles raft messages sent in pieces.

const (
	// routeMsgMargin is what an RMSG may carry beyond max_payload: besides
	// client messages, routes carry the servers' own answers (stream and
	// server information), which no client limit bounds.
	routeMsgMargin = 64 << 20
	// raftMaxMsg bounds a raft message that is not a snapshot: an append
	// carries at most MaxBatchBytes of entries plus one entry, and an entry
	// is at most a message of max_payload (64 MiB at most) and its metadata.
	raftMaxMsg = 128 << 20
	// raftOldFrameMax is the largest RAFT frame of a peer too old to send
	// pieces (route protocol 1); newer peers send nothing above a piece.
	raftOldFrameMax = 1 << 30
	// raftHeadMax is the longest message head (group name, codec version
	// and type) looked at before a raft message is read.
	raftHeadMax = binary.MaxVarintLen64 + 4096 + 2
	// payloadStep is how far a payload buffer grows ahead of the bytes
	// that arrived; past it the buffer doubles as bytes come in.
	payloadStep = 1 << 20
)

var errNoCRLF = errors.New("payload not followed by CRLF")

// routeLimits are the sizes r's peer may announce.
func (s *Server) routeLimits(r *route) routeproto.Limits {
	return routeLimitsFor(s.getOpts().MaxPayload, r.remote.Proto)
}

// routeLimitsFor are the sizes a peer speaking route protocol proto may
// announce to a server whose max_payload is maxPayload.
func routeLimitsFor(maxPayload int32, proto int) routeproto.Limits {
	lim := routeproto.Limits{
		MaxMsg:   int(max(maxPayload, MAX_PAYLOAD_SIZE)) + routeMsgMargin,
		MaxRaft:  raftFragMaxPiece,
		MaxPiece: raftFragMaxPiece,
		MaxTotal: raftFragMaxTotal,
		MaxBatch: raftBatchMax,
	}
	if proto < 2 {
		lim.MaxRaft = raftOldFrameMax
	}
	return lim
}

// appendRead appends the next n bytes of br to buf. The buffer grows as
// bytes arrive: at most payloadStep, or as much as it holds, ahead of them.
func appendRead(br io.Reader, buf []byte, n int) ([]byte, error) {
	end := len(buf) + n
	for len(buf) < end {
		k := len(buf)
		step := min(end-k, max(payloadStep, k))
		buf = slices.Grow(buf, step)[:k+step]
		if m, err := io.ReadFull(br, buf[k:]); err != nil {
			return buf[:k+m], err
		}
	}
	return buf, nil
}

// readPayload reads a payload of size bytes and its CRLF into buf (reused
// when large enough); the payload is buf[:size].
func readPayload(br io.Reader, buf []byte, size int) ([]byte, error) {
	buf, err := appendRead(br, buf[:0], size+2)
	if err != nil {
		return buf, err
	}
	if buf[size] != '\r' || buf[size+1] != '\n' {
		return buf, errNoCRLF
	}
	return buf, nil
}

// discardPayload skips a payload of size bytes and checks its CRLF.
func discardPayload(br *bufio.Reader, size int) error {
	if _, err := br.Discard(size); err != nil {
		return err
	}
	var crlf [2]byte
	if _, err := io.ReadFull(br, crlf[:]); err != nil {
		return err
	}
	if crlf != [2]byte{'\r', '\n'} {
		return errNoCRLF
	}
	return nil
}

// raftHead decodes the head of a raft payload (appendRaftPayload): the
// group's name and the message's type; ok is false when b does not hold
// a well-formed head.
func raftHead(b []byte) (group []byte, typ raft.MessageType, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) || uint64(len(b)-k)-n < 2 {
		return nil, 0, false
	}
	group, rest := b[k:k+int(n)], b[k+int(n):]
	if rest[0] != raftCodecVersion {
		return nil, 0, false
	}
	return group, raft.MessageType(rest[1]), true
}

// skipRaftMessage looks at the head of a raft message of total bytes whose
// first size bytes are next in r's reader, and tells (with why, when it is
// worth a log line) whether to skip it unread: it is malformed, for a
// group this server does not run (unless keep and small enough to keep
// until the group starts, raft_early.go), or a message other than a
// snapshot larger than any sent.
func (s *Server) skipRaftMessage(r *route, size, total int, keep bool) (skip bool, why string) {
	head, err := r.br.Peek(min(size, raftHeadMax))
	if err != nil {
		return false, "" // the read that follows fails too
	}
	group, typ, ok := raftHead(head)
	switch {
	case !ok:
		return true, "malformed head"
	case s.raftGroupNamed(group) == nil && !(keep && s.keepsEarly(total)):
		return true, "" // not (yet) a member here, and too large to keep (raft_early.go)
	case typ != raft.MsgSnap && total > raftMaxMsg:
		return true, "too large for its type"
	case r.remote.Proto < routeProtoGroupNames && s.sharedOldName(group):
		return true, "its group name means two streams to a server before route protocol 8"
	}
	return false, ""
}

// protoSnippet is the start of a control line, for an error message.
func protoSnippet(line []byte) []byte {
	if len(line) > 128 {
		return line[:128]
	}
	return line
}
