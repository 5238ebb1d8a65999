package consumer

import (
	"encoding/binary"
	"errors"
)

// entryVersion is the first byte of every encoded entry; a decoder meeting
// a version it does not know refuses the entry (a newer server's entry in
// a mixed cluster must stop the apply, not be misread).
const entryVersion = 1

// ErrCodec is returned for bytes that are not a well-formed entry or snapshot.
var ErrCodec = errors.New("consumer: malformed encoding")

// AppendEntry appends the encoding of e to b.
func AppendEntry(b []byte, e *Entry) []byte {
	b = append(b, entryVersion, byte(e.Op))
	b = binary.AppendVarint(b, e.TS)
	b = appendString(b, e.Consumer)
	switch e.Op {
	case OpCreate, OpUpdate:
		b = appendConfig(b, e.Config)
	case OpDeliver:
		b = binary.AppendUvarint(b, e.Gen)
		b = binary.AppendUvarint(b, e.Tag)
		b = appendSeqs(b, e.Seqs)
	case OpAck, OpAckAll, OpProgress:
		b = binary.AppendUvarint(b, e.Seq)
		b = binary.AppendUvarint(b, e.CSeq)
	case OpNak:
		b = binary.AppendUvarint(b, e.Seq)
		b = binary.AppendUvarint(b, e.CSeq)
		b = binary.AppendVarint(b, e.Delay)
	case OpTerm:
		b = binary.AppendUvarint(b, e.Seq)
		b = binary.AppendUvarint(b, e.CSeq)
		b = appendString(b, e.Text)
	case OpRedeliverDue, OpAcks:
		b = appendSeqs(b, e.Seqs)
	case OpPause, OpResume:
		b = binary.AppendVarint(b, e.Until)
	case OpPin, OpUnpin:
		b = appendString(b, e.Text)
	case OpStreamRemoved:
		b = appendSeqs(b, e.Seqs)
		b = appendString(b, e.Text)
	case OpStreamPurged:
		b = binary.AppendUvarint(b, e.Seq)
	}
	return b
}

// DecodeEntry decodes one entry (the whole of data). Hostile input gets
// ErrCodec, never a panic; what is allocated is bounded by len(data).
// The Gen of OpCreate and OpUpdate is not encoded (see Entry).
func DecodeEntry(data []byte) (Entry, error) {
	r := &reader{b: data}
	var e Entry
	if r.byte() != entryVersion {
		return Entry{}, ErrCodec
	}
	e.Op = Op(r.byte())
	e.TS = r.varint()
	e.Consumer = r.string()
	switch e.Op {
	case OpCreate, OpUpdate:
		e.Config = readConfig(r)
	case OpDeliver:
		e.Gen, e.Tag, e.Seqs = r.uvarint(), r.uvarint(), readSeqs(r)
	case OpAck, OpAckAll, OpProgress:
		e.Seq, e.CSeq = r.uvarint(), r.uvarint()
	case OpNak:
		e.Seq, e.CSeq, e.Delay = r.uvarint(), r.uvarint(), r.varint()
	case OpTerm:
		e.Seq, e.CSeq, e.Text = r.uvarint(), r.uvarint(), r.string()
	case OpRedeliverDue, OpAcks:
		e.Seqs = readSeqs(r)
	case OpPause, OpResume:
		e.Until = r.varint()
	case OpPin, OpUnpin:
		e.Text = r.string()
	case OpStreamRemoved:
		e.Seqs, e.Text = readSeqs(r), r.string()
	case OpStreamPurged:
		e.Seq = r.uvarint()
	case OpDelete:
	default:
		return Entry{}, ErrCodec
	}
	if r.bad || len(r.b) != 0 {
		return Entry{}, ErrCodec
	}
	return e, nil
}

// appendSeqs encodes a list of stream sequences as differences from the
// previous one (zigzag, so any order round-trips).
func appendSeqs(b []byte, seqs []uint64) []byte {
	b = binary.AppendUvarint(b, uint64(len(seqs)))
	var prev uint64
	for _, s := range seqs {
		b = binary.AppendVarint(b, int64(s-prev))
		prev = s
	}
	return b
}

func readSeqs(r *reader) []uint64 {
	n := r.count(1)
	if n == 0 {
		return nil
	}
	seqs := make([]uint64, n)
	var prev uint64
	for i := range seqs {
		prev += uint64(r.varint())
		seqs[i] = prev
	}
	return seqs
}

func appendConfig(b []byte, c *Config) []byte {
	if c == nil {
		return append(b, 0)
	}
	b = append(b, 1, byte(c.AckPolicy), byte(c.DeliverPolicy))
	b = binary.AppendUvarint(b, c.OptStartSeq)
	for _, v := range [...]int64{c.OptStartTime, c.AckWait, c.MaxDeliver, c.MaxAckPending, c.PauseUntil} {
		b = binary.AppendVarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(c.BackOff)))
	for _, d := range c.BackOff {
		b = binary.AppendVarint(b, d)
	}
	b = binary.AppendUvarint(b, uint64(len(c.FilterSubjects)))
	for _, f := range c.FilterSubjects {
		b = appendString(b, f)
	}
	b = binary.AppendUvarint(b, uint64(len(c.Raw)))
	return append(b, c.Raw...)
}

func readConfig(r *reader) *Config {
	if !r.bool() {
		return nil
	}
	c := &Config{AckPolicy: AckPolicy(r.byte()), DeliverPolicy: DeliverPolicy(r.byte())}
	if c.AckPolicy > AckFlowControl || c.DeliverPolicy > DeliverLastPerSubject {
		r.fail()
		return nil
	}
	c.OptStartSeq = r.uvarint()
	c.OptStartTime, c.AckWait, c.MaxDeliver = r.varint(), r.varint(), r.varint()
	c.MaxAckPending, c.PauseUntil = r.varint(), r.varint()
	if n := r.count(1); n > 0 {
		c.BackOff = make([]int64, n)
		for i := range c.BackOff {
			c.BackOff[i] = r.varint()
		}
	}
	if n := r.count(1); n > 0 {
		c.FilterSubjects = make([]string, n)
		for i := range c.FilterSubjects {
			c.FilterSubjects[i] = r.string()
		}
	}
	if raw := r.bytes(); len(raw) > 0 {
		c.Raw = append([]byte(nil), raw...)
	}
	if r.bad {
		return nil
	}
	return c
}
