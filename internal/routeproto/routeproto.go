// Package routeproto parses the control lines of Tern's route protocol (the
// operations are listed in server/route.go). It is pure: no I/O, no
// allocations; an Op's slices point into the line given to Parse. Sizes are
// ASCII digits only and bounded by Limits, so a peer cannot make the reader
// slice with a negative length or allocate by an absurd claim.
package routeproto

import (
	"errors"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// Kind is the operation of a control line.
type Kind uint8

// The route operations.
const (
	Unknown   Kind = iota // an operation this version does not know (ignored)
	Info                  // INFO <json>
	Sub                   // RS+ <account> <subject> [<queue>]
	Unsub                 // RS- <account> <subject> [<queue>]
	Msg                   // RMSG <account> <subject> <reply|-> <mode> <queues|-> <hdr> <size>
	Raft                  // RAFT <size>
	RaftFrag              // RAFTF <id> <total> <offset> <size>
	RaftBatch             // RAFTB <size>
	Ping                  // PING
	Pong                  // PONG
)

// Limits bound the sizes a control line may announce.
type Limits struct {
	MaxMsg   int   // RMSG size (headers included)
	MaxRaft  int   // RAFT frame size
	MaxPiece int   // RAFTF piece size
	MaxTotal int64 // RAFTF message size
	MaxBatch int   // RAFTB frame size
}

// Op is one parsed control line. Only the fields of its Kind are set.
type Op struct {
	Kind Kind
	Name []byte // the operation's name as sent
	Arg  []byte // INFO: the JSON

	Account, Subject []byte // RS+, RS-, RMSG
	Queue            []byte // RS+, RS-: the queue group, nil for none
	Reply            []byte // RMSG: nil for "-"
	Queues           []byte // RMSG: comma-separated queue groups, nil for "-"
	Mode             byte   // RMSG: '0' queue groups only, '1' plain subscribers too, '2' plain, re-routed, '3' queue groups only, re-routed
	Hdr, Size        int    // RMSG: header and total size; RAFT, RAFTF, RAFTB: payload size

	ID            uint64 // RAFTF
	Total, Offset int64  // RAFTF
}

// Errors Parse returns; every one means the route must close.
var (
	ErrArgs    = errors.New("malformed arguments")
	ErrSize    = errors.New("invalid size")
	ErrTooBig  = errors.New("size exceeds the limit")
	ErrSubject = errors.New("invalid subject")
	ErrMode    = errors.New("invalid delivery mode")
)

// maxFields is the most fields any operation has (RMSG: 7).
const maxFields = 7

// Parse parses one control line (a trailing CRLF or LF is ignored) into op.
func Parse(line []byte, lim *Limits, op *Op) error {
	line = trimEOL(line)
	*op = Op{}
	name, args := cut(line)
	op.Name = name
	switch string(name) { // no allocation: the compiler compares in place
	case "RMSG":
		op.Kind = Msg
		return parseMsg(args, lim, op)
	case "RS+", "RS-":
		op.Kind = Sub
		if name[2] == '-' {
			op.Kind = Unsub
		}
		return parseSub(args, op)
	case "RAFT":
		op.Kind = Raft
		return parseRaft(args, lim.MaxRaft, op)
	case "RAFTB":
		op.Kind = RaftBatch
		return parseRaft(args, lim.MaxBatch, op)
	case "RAFTF":
		op.Kind = RaftFrag
		return parseFrag(args, lim, op)
	case "INFO":
		op.Kind, op.Arg = Info, args
	case "PING":
		op.Kind = Ping
	case "PONG":
		op.Kind = Pong
	}
	return nil
}

func trimEOL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// cut splits the operation name from its arguments at the first blank.
func cut(line []byte) (name, args []byte) {
	for i, c := range line {
		if c == ' ' || c == '\t' {
			return line[:i], line[i+1:]
		}
	}
	return line, nil
}

// split cuts b into blank-separated fields; -1 when more than fit in f.
func split(b []byte, f *[maxFields][]byte) int {
	n, start := 0, -1
	for i := 0; i <= len(b); i++ {
		if i < len(b) && b[i] != ' ' && b[i] != '\t' {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if n == len(f) {
				return -1
			}
			f[n] = b[start:i]
			n++
			start = -1
		}
	}
	return n
}

func parseMsg(args []byte, lim *Limits, op *Op) error {
	var f [maxFields][]byte
	if split(args, &f) != 7 {
		return ErrArgs
	}
	op.Account, op.Subject = f[0], f[1]
	if !sublist.ValidPublishSubject(op.Subject) {
		return ErrSubject
	}
	if !dash(f[2]) {
		op.Reply = f[2]
		if !sublist.ValidPublishSubject(op.Reply) {
			return ErrSubject
		}
	}
	if len(f[3]) != 1 || f[3][0] < '0' || f[3][0] > '3' {
		return ErrMode
	}
	op.Mode = f[3][0]
	if !dash(f[4]) {
		op.Queues = f[4]
	}
	hdr, ok1 := ParseSize(f[5])
	size, ok2 := ParseSize(f[6])
	switch {
	case !ok1 || !ok2 || hdr > size:
		return ErrSize
	case size > int64(lim.MaxMsg):
		return ErrTooBig
	}
	op.Hdr, op.Size = int(hdr), int(size)
	return nil
}

func dash(b []byte) bool { return len(b) == 1 && b[0] == '-' }

func parseSub(args []byte, op *Op) error {
	var f [maxFields][]byte
	switch split(args, &f) {
	case 3:
		op.Queue = f[2]
		fallthrough
	case 2:
		op.Account, op.Subject = f[0], f[1]
		return nil
	}
	return ErrArgs
}

// parseRaft parses the size of a RAFT or RAFTB frame, at most max.
func parseRaft(args []byte, max int, op *Op) error {
	var f [maxFields][]byte
	if split(args, &f) != 1 {
		return ErrArgs
	}
	size, ok := ParseSize(f[0])
	switch {
	case !ok:
		return ErrSize
	case size > int64(max):
		return ErrTooBig
	}
	op.Size = int(size)
	return nil
}

func parseFrag(args []byte, lim *Limits, op *Op) error {
	var f [maxFields][]byte
	if split(args, &f) != 4 {
		return ErrArgs
	}
	id, ok := parseUint64(f[0])
	total, ok1 := ParseSize(f[1])
	off, ok2 := ParseSize(f[2])
	size, ok3 := ParseSize(f[3])
	switch {
	case !ok || !ok1 || !ok2 || !ok3 || total == 0 || off > total || size > total-off:
		return ErrSize
	case total > lim.MaxTotal || size > int64(lim.MaxPiece):
		return ErrTooBig
	}
	op.ID, op.Total, op.Offset, op.Size = id, total, off, int(size)
	return nil
}

// maxSizeDigits keeps every size below 10^18, far from overflowing int64.
const maxSizeDigits = 18

// ParseSize parses a size: 1 to 18 ASCII digits, nothing else (no sign).
func ParseSize(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > maxSizeDigits {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseUint64 parses an unsigned decimal that fits in 64 bits.
func parseUint64(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// NextQueue returns the first queue group of an RMSG's list and the rest
// of the list; q is empty when the list is done.
func NextQueue(list []byte) (q, rest []byte) {
	for len(list) > 0 {
		i := 0
		for i < len(list) && list[i] != ',' {
			i++
		}
		q, list = list[:i], list[i:]
		if len(list) > 0 {
			list = list[1:]
		}
		if len(q) > 0 {
			return q, list
		}
	}
	return nil, nil
}
