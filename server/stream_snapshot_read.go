package server

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"slices"
)

// snapMsg is one message of a full stream snapshot (encoded by
// appendSnapMsg in stream_snapshot_capture.go).
type snapMsg struct {
	seq      uint64
	ts       int64
	subj     string
	hdr, msg []byte
}

// bytesSnapMsgs yields the messages of a snapshot in memory, r being just
// past its metadata. hdr and msg are views of the snapshot.
func bytesSnapMsgs(r *raftReader) func() (snapMsg, bool, error) {
	return func() (snapMsg, bool, error) {
		if r.err != nil || len(r.b) == 0 {
			return snapMsg{}, false, r.err
		}
		m := snapMsg{seq: r.uvarint(), ts: r.varint()}
		m.subj, m.hdr, m.msg = string(r.view()), r.view(), r.view()
		if r.err != nil {
			return snapMsg{}, false, r.err
		}
		return m, true, nil
	}
}

// streamSnapMsgs yields the messages of a snapshot read from br, just
// past its metadata. hdr and msg are valid until the next call.
func streamSnapMsgs(br *bufio.Reader) func() (snapMsg, bool, error) {
	var buf []byte
	return func() (snapMsg, bool, error) {
		if _, err := br.Peek(1); err == io.EOF {
			return snapMsg{}, false, nil
		}
		seq, err1 := binary.ReadUvarint(br)
		ts, err2 := binary.ReadVarint(br)
		if err1 != nil || err2 != nil {
			return snapMsg{}, false, errBadRaftMsg
		}
		// The three fields go into one buffer; slices are taken once it
		// stopped growing.
		var ends [3]int
		buf = buf[:0]
		for i := range ends {
			var err error
			if buf, err = readSnapField(br, buf); err != nil {
				return snapMsg{}, false, err
			}
			ends[i] = len(buf)
		}
		m := snapMsg{seq: seq, ts: int64(ts), subj: string(buf[:ends[0]])}
		m.hdr, m.msg = nonEmpty(buf[ends[0]:ends[1]]), nonEmpty(buf[ends[1]:ends[2]])
		return m, true, nil
	}
}

// maxSnapField bounds a length-prefixed field of a streamed snapshot, so
// that a corrupt length cannot ask for a huge allocation.
const maxSnapField = 64 << 20

// readSnapField appends the next length-prefixed field of br to buf.
func readSnapField(br *bufio.Reader, buf []byte) ([]byte, error) {
	n, err := binary.ReadUvarint(br)
	if err != nil || n > maxSnapField {
		return buf, errBadRaftMsg
	}
	start := len(buf)
	buf = slices.Grow(buf, int(n))[:start+int(n)]
	if _, err := io.ReadFull(br, buf[start:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = errBadRaftMsg
		}
		return buf, err
	}
	return buf, nil
}

// nonEmpty is b, or nil when b is empty (as raftReader.view gives).
func nonEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}
