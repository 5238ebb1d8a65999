// Package proto is the NATS client-protocol parser: a byte-at-a-time state
// machine over the read buffer that slices arguments and payloads out of the
// buffer it is given (copying only when an operation spans two reads) and
// hands complete operations to a Handler. It does no I/O and keeps no
// references to buf after Parse returns, except copies it made itself.
package proto

import "bytes"

// Handler receives complete protocol operations. Slices passed to it are only
// valid for the duration of the call.
type Handler interface {
	ProcessConnect(arg []byte) error
	// ProcessPub receives a PUB (hdr < 0) or HPUB (hdr = header length); msg
	// holds headers and payload without the trailing CRLF.
	ProcessPub(subject, reply []byte, hdr int, msg []byte) error
	ProcessSub(subject, queue, sid []byte) error
	ProcessUnsub(sid []byte, max int64) error
	ProcessPing() error
	ProcessPong() error
}

// Error is a protocol error; Text is what the server sends in -ERR.
type Error struct {
	Text  string
	Close bool // connection must be closed after sending the error
}

func (e *Error) Error() string { return e.Text }

// Protocol errors with the exact text nats-server sends.
var (
	ErrUnknownOp      = &Error{Text: "Unknown Protocol Operation", Close: true}
	ErrMaxControlLine = &Error{Text: "maximum control line exceeded", Close: true}
	ErrMaxPayload     = &Error{Text: "Maximum Payload Violation", Close: true}
	ErrAuthorization  = &Error{Text: "Authorization Violation", Close: true}
	ErrBadArgs        = &Error{Text: "Parser Error", Close: true}
)

type state uint8

const (
	stOpStart state = iota
	stOpName
	stArgSkip
	stArg
	stPayload
	stPayloadCR
	stPayloadLF
	stBareOpEnd
)

type op uint8

const (
	opNone op = iota
	opPub
	opHPub
	opSub
	opUnsub
	opConnect
	opInfo
	opPing
	opPong
)

// Limits configure a Parser.
type Limits struct {
	MaxControlLine int // bytes in a control line, CRLF excluded
	MaxPayload     int // bytes in a PUB/HPUB payload (headers included)
}

// Parser is the per-connection protocol state machine.
type Parser struct {
	Limits
	// Headers is set once the client negotiated headers; HPUB is refused before.
	Headers bool
	// RequireConnect makes any operation but CONNECT an Authorization
	// Violation; the handler clears it once a CONNECT is accepted.
	RequireConnect bool

	h     Handler
	state state
	op    op
	cand  uint16 // operations the name read so far may still be
	nlen  int

	argStart int    // start of the control line in the current buffer
	argBuf   []byte // control line copied when it spans reads
	argLen   int    // bytes of the control line seen so far
	scratch  [512]byte

	// pending PUB/HPUB
	subject, reply []byte
	hdr, size      int
	msgBuf         []byte // payload copied when it spans reads
	ref            []byte // payload sliced from the read buffer
	owned          bool   // the payload is in msgBuf, not ref
	pubOwn         []byte // owns subject/reply when the payload spans reads
	fields         [5][]byte
}

// New returns a parser that delivers operations to h.
func New(h Handler, lim Limits) *Parser {
	return &Parser{h: h, Limits: lim}
}

// Parse consumes buf. On error the connection must be handled as the error
// says; the parser state is then undefined.
func (p *Parser) Parse(buf []byte) error {
	p.argStart = 0 // a control line in progress continues at buf[0]
	for i := 0; i < len(buf); i++ {
		b := buf[i]
		switch p.state {
		case stOpStart:
			p.nlen = 0
			p.state = stOpName
			fallthrough
		case stOpName:
			if err := p.opNameByte(b); err != nil {
				return err
			}
			if p.state == stArg {
				p.argStart = i + 1
			}
		case stArgSkip:
			if b == ' ' || b == '\t' {
				continue
			}
			p.state = stArg
			p.argStart = i
			i--
		case stArg:
			// Scan to the end of the control line at once.
			nl := bytes.IndexByte(buf[i:], '\n')
			if nl < 0 {
				p.argLen += len(buf) - i
				if p.argLen > p.MaxControlLine {
					return ErrMaxControlLine
				}
				i = len(buf) - 1
				continue
			}
			if p.argLen += nl; p.argLen > p.MaxControlLine+1 {
				return ErrMaxControlLine
			}
			next, err := p.controlLine(buf, i+nl)
			if err != nil {
				return err
			}
			i = next
		case stPayload:
			i = p.payload(buf, i)
		case stPayloadCR:
			if b != '\r' {
				return ErrUnknownOp
			}
			p.state = stPayloadLF
		case stPayloadLF:
			if b != '\n' {
				return ErrUnknownOp
			}
			if err := p.dispatchPub(); err != nil {
				return err
			}
		case stBareOpEnd:
			if err := p.bareOpByte(b); err != nil {
				return err
			}
		}
	}
	p.saveSplit(buf)
	return nil
}

// saveSplit copies whatever of buf the parser still needs after Parse returns.
func (p *Parser) saveSplit(buf []byte) {
	if p.state != stArg {
		return
	}
	if p.argBuf == nil {
		p.argBuf = p.scratch[:0]
	}
	p.argBuf = append(p.argBuf, buf[p.argStart:]...)
}

var opNames = [...]struct {
	name string
	op   op
}{
	{"PUB", opPub}, {"HPUB", opHPub}, {"SUB", opSub}, {"UNSUB", opUnsub},
	{"CONNECT", opConnect}, {"INFO", opInfo}, {"PING", opPing}, {"PONG", opPong},
}

func upper(b byte) byte {
	if b >= 'a' && b <= 'z' {
		return b - 'a' + 'A'
	}
	return b
}

// opNameByte accumulates the operation name and fails as soon as it cannot
// be the prefix of a known operation. cand is the set of operations (bits
// over opNames) the name read so far is still a prefix of.
func (p *Parser) opNameByte(b byte) error {
	if b == ' ' || b == '\t' || b == '\r' || b == '\n' {
		return p.endOpName(b)
	}
	ub := upper(b)
	cand := p.cand
	if p.nlen == 0 {
		cand = allOps
	}
	for i := range opNames {
		bit := uint16(1) << i
		if cand&bit != 0 && (len(opNames[i].name) <= p.nlen || opNames[i].name[p.nlen] != ub) {
			cand &^= bit
		}
	}
	if cand == 0 {
		return ErrUnknownOp
	}
	p.cand = cand
	p.nlen++
	return nil
}

const allOps = uint16(1)<<len(opNames) - 1

func (p *Parser) endOpName(b byte) error {
	p.op = opNone
	for i := range opNames {
		if p.nlen > 0 && p.cand&(1<<i) != 0 && len(opNames[i].name) == p.nlen {
			p.op = opNames[i].op
		}
	}
	if p.op == opNone {
		return ErrUnknownOp
	}
	if p.RequireConnect && p.op != opConnect {
		return ErrAuthorization
	}
	if p.op == opHPub && !p.Headers {
		return ErrUnknownOp
	}
	if p.op == opPing || p.op == opPong {
		p.state = stBareOpEnd
		return p.bareOpByte(b)
	}
	if b == '\r' || b == '\n' {
		return ErrUnknownOp // operation needs arguments
	}
	p.state = stArgSkip
	p.argLen = 0
	p.argBuf = nil
	return nil
}

// bareOpByte handles what follows PING/PONG: optional blanks then CRLF.
func (p *Parser) bareOpByte(b byte) error {
	switch b {
	case ' ', '\t', '\r':
		return nil
	case '\n':
		p.state = stOpStart
		if p.op == opPing {
			return p.h.ProcessPing()
		}
		return p.h.ProcessPong()
	}
	return ErrUnknownOp
}

// controlLine handles a complete control line ending at buf[nl] == '\n' and
// returns the index the main loop continues from.
func (p *Parser) controlLine(buf []byte, nl int) (int, error) {
	var line []byte
	if p.argBuf != nil {
		p.argBuf = append(p.argBuf, buf[p.argStart:nl]...)
		line = p.argBuf
	} else {
		line = buf[p.argStart:nl]
	}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	p.argBuf = nil
	p.state = stOpStart
	switch p.op {
	case opPub, opHPub:
		if err := p.pubArgs(line); err != nil {
			return nl, err
		}
		p.state = stPayload
		return p.startPayload(buf, nl+1), nil
	case opSub:
		return nl, p.subArgs(line)
	case opUnsub:
		return nl, p.unsubArgs(line)
	case opConnect:
		return nl, p.h.ProcessConnect(line)
	}
	return nl, nil // INFO from a client is accepted and ignored
}
