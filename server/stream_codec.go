package server

import (
	"encoding/binary"
	"encoding/json"
)

// Replicated stream log entries. Everything that changes a replicated
// stream's state is one of these, applied in log order on every replica.
const (
	streamOpMsg    byte = 'M' // a publish
	streamOpPurge  byte = 'P' // purge request (JSON purgeRequest)
	streamOpDelete byte = 'D' // delete one message
	streamOpExpire byte = 'E' // expire messages older than a cut-off
	streamOpConfig byte = 'C' // new configuration (JSON StreamConfig)
	// streamOpConsumer carries one consumer entry (cstate.AppendEntry's
	// bytes): consumers of a replicated stream live in its log
	// (consumer_cluster.go).
	streamOpConsumer byte = 'K'
)

// streamEntry is the decoded form. origin is the server that proposed the
// entry: it answers the client (reply) once it has applied the entry.
type streamEntry struct {
	op     byte
	origin string
	reply  string
	m      inMsg         // streamOpMsg
	seq    uint64        // streamOpDelete
	erase  bool          // streamOpDelete
	cutoff int64         // streamOpExpire
	purge  purgeRequest  // streamOpPurge
	cfg    *StreamConfig // streamOpConfig
	cons   []byte        // streamOpConsumer: the encoded consumer entry
}

func encodeStreamEntry(e *streamEntry) []byte {
	b := make([]byte, 0, 64+len(e.m.subj)+len(e.m.hdr)+len(e.m.msg))
	b = append(b, e.op)
	b = appendBytes(b, []byte(e.origin))
	b = appendBytes(b, []byte(e.reply))
	switch e.op {
	case streamOpMsg:
		b = binary.AppendVarint(b, e.m.ts)
		b = appendBytes(b, []byte(e.m.subj))
		b = appendBytes(b, e.m.hdr)
		b = appendBytes(b, e.m.msg)
	case streamOpDelete:
		b = binary.AppendUvarint(b, e.seq)
		if e.erase {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	case streamOpExpire:
		b = binary.AppendVarint(b, e.cutoff)
	case streamOpPurge:
		p := e.purge // a copy: marshalling e's own would move every entry to the heap
		j, _ := json.Marshal(&p)
		b = appendBytes(b, j)
	case streamOpConfig:
		j, _ := json.Marshal(e.cfg)
		b = appendBytes(b, j)
	case streamOpConsumer:
		b = appendBytes(b, e.cons)
	}
	return b
}

// decodeStreamEntryAt decodes data into e (reset first). Only the server
// that proposed an entry answers it, so when self is not empty an entry
// from another server gets neither origin nor reply (it is not self: all
// the apply asks), and one from self gets self as its origin string; an
// empty self decodes both as they are.
// entryReply is the reply subject an encoded entry carries.
func entryReply(data []byte) string {
	r := &raftReader{b: data}
	r.byte()
	r.view()
	return string(r.view())
}

func decodeStreamEntryAt(e *streamEntry, data []byte, self string) error {
	r := &raftReader{b: data}
	*e = streamEntry{op: r.byte()}
	origin, reply := r.view(), r.view()
	switch {
	case self == "":
		e.origin, e.reply = string(origin), string(reply)
	case string(origin) == self:
		e.origin, e.reply = self, string(reply)
	}
	switch e.op {
	case streamOpMsg:
		e.m.ts = r.varint()
		e.m.subj = string(r.view())
		// Views of data (which is never written to): the apply only reads
		// them and the stores copy what they keep.
		e.m.hdr = r.view()
		e.m.msg = r.view()
		e.m.reply = e.reply
	case streamOpDelete:
		e.seq = r.uvarint()
		e.erase = r.byte() == 1
	case streamOpExpire:
		e.cutoff = r.varint()
	case streamOpPurge:
		if j := r.bytes(); r.err == nil && json.Unmarshal(j, &e.purge) != nil {
			return errBadRaftMsg
		}
	case streamOpConfig:
		e.cfg = &StreamConfig{}
		if j := r.bytes(); r.err == nil && json.Unmarshal(j, e.cfg) != nil {
			return errBadRaftMsg
		}
	case streamOpConsumer:
		e.cons = r.view() // a view of data: decoded (copied) by the apply
	default:
		return errBadRaftMsg
	}
	return r.err
}

func (r *raftReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errBadRaftMsg
		return 0
	}
	r.b = r.b[n:]
	return v
}
