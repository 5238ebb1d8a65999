package consumer

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"time"
)

// AckSubject is what a message's ack reply subject carries:
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>
//	$JS.ACK.<domain>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<more>...]
//
// The second form (nats-server's feature flag js_ack_fc_v2) has "_" for
// no domain; clients (nats.go's jetstream) accept 9 tokens or 11 and more,
// ignoring tokens after the eleventh. Strings are views of the parsed
// subject.
type AckSubject struct {
	V2         bool
	Domain     string // "" for "_"
	AccHash    string
	Stream     string
	Consumer   string
	Deliveries uint64
	SSeq       uint64
	CSeq       uint64
	TS         int64
	Pending    uint64
}

const ackPrefix = "$JS.ACK."

// ParseAckSubject parses an ack reply subject without allocating. It
// reports false for anything else, including an empty token or a number
// that is not plain decimal digits within range.
func ParseAckSubject(subj string) (AckSubject, bool) {
	if len(subj) <= len(ackPrefix) || subj[:len(ackPrefix)] != ackPrefix {
		return AckSubject{}, false
	}
	var tok [10]string
	n, rest, done := 0, subj[len(ackPrefix):], false
	for n < len(tok) && !done {
		i := 0
		for i < len(rest) && rest[i] != '.' {
			i++
		}
		if i == 0 {
			return AckSubject{}, false // empty token
		}
		tok[n] = rest[:i]
		n++
		if i == len(rest) {
			rest, done = "", true
		} else {
			rest = rest[i+1:]
		}
	}
	var a AckSubject
	var t []string
	switch {
	case done && n == 7:
		t = tok[:7]
	case done && n == 9, n == 10 && validExtra(rest, done):
		a.V2, a.Domain, a.AccHash, t = true, tok[0], tok[1], tok[2:9]
	default:
		return AckSubject{}, false
	}
	if a.Domain == "_" {
		a.Domain = ""
	}
	a.Stream, a.Consumer = t[0], t[1]
	var ok [5]bool
	var ts uint64
	a.Deliveries, ok[0] = parseUint(t[2])
	a.SSeq, ok[1] = parseUint(t[3])
	a.CSeq, ok[2] = parseUint(t[4])
	ts, ok[3] = parseUint(t[5])
	a.Pending, ok[4] = parseUint(t[6])
	if ok != [5]bool{true, true, true, true, true} || ts > 1<<63-1 {
		return AckSubject{}, false
	}
	a.TS = int64(ts)
	return a, true
}

// validExtra checks what follows the tenth token after the prefix: nothing
// (done), or tokens none of which is empty.
func validExtra(rest string, done bool) bool {
	if done {
		return true
	}
	if rest == "" {
		return false
	}
	prev := byte('.')
	for i := 0; i < len(rest); i++ {
		if rest[i] == '.' && prev == '.' {
			return false
		}
		prev = rest[i]
	}
	return prev != '.'
}

// parseUint parses plain decimal digits, refusing empty input, signs and
// overflow.
func parseUint(s string) (uint64, bool) {
	if s == "" || len(s) > 20 {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (1<<64-1-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// AppendAckSubject appends a's subject to b: the v2 form when a.V2 (an
// empty domain written "_"), else the original form.
func AppendAckSubject(b []byte, a *AckSubject) []byte {
	b = append(b, ackPrefix...)
	if a.V2 {
		if a.Domain == "" {
			b = append(b, '_')
		} else {
			b = append(b, a.Domain...)
		}
		b = append(b, '.')
		b = append(b, a.AccHash...)
		b = append(b, '.')
	}
	b = append(b, a.Stream...)
	b = append(b, '.')
	b = append(b, a.Consumer...)
	for _, v := range [...]uint64{a.Deliveries, a.SSeq, a.CSeq, uint64(max(a.TS, 0)), a.Pending} {
		b = append(b, '.')
		b = strconv.AppendUint(b, v, 10)
	}
	return b
}

// AccountHash is the account token of the v2 ack subject: eight characters
// of 0-9A-Za-z taken from the SHA-256 of the account name (the same token
// nats-server derives, so subjects agree in a mixed cluster).
func AccountHash(account string) string {
	const digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	sum := sha256.Sum256([]byte(account))
	var out [8]byte
	for i := range out {
		out[i] = digits[int(sum[i])%len(digits)]
	}
	return string(out[:])
}

// AckKind is what an ack message's body asks for.
type AckKind uint8

// Ack bodies.
const (
	AckUnknown  AckKind = iota
	AckAck              // "", "+ACK", "+OK"
	AckNak              // "-NAK" [delay]
	AckProgress         // "+WPI"
	AckNext             // "+NXT" [pull request]: ack, then a next-message request
	AckTerm             // "+TERM" [reason]
)

var (
	bodyAck      = []byte("+ACK")
	bodyOK       = []byte("+OK")
	bodyNak      = []byte("-NAK")
	bodyProgress = []byte("+WPI")
	bodyNext     = []byte("+NXT")
	bodyTerm     = []byte("+TERM")
)

// ParseAckBody classifies an ack body as nats-server does and returns what
// follows the keyword (a nak delay, a term reason or a pull request),
// trimmed of spaces.
func ParseAckBody(body []byte) (AckKind, []byte) {
	switch {
	case len(body) == 0, bytes.Equal(body, bodyAck), bytes.Equal(body, bodyOK):
		return AckAck, nil
	case bytes.HasPrefix(body, bodyNext):
		return AckNext, bytes.TrimSpace(body[len(bodyNext):])
	case bytes.HasPrefix(body, bodyNak):
		return AckNak, bytes.TrimSpace(body[len(bodyNak):])
	case bytes.Equal(body, bodyProgress):
		return AckProgress, nil
	case bytes.HasPrefix(body, bodyTerm):
		return AckTerm, bytes.TrimSpace(body[len(bodyTerm):])
	}
	return AckUnknown, nil
}

// ParseNakDelay reads a -NAK argument: {"delay": <nanoseconds>} or a Go
// duration ("5s"). An empty argument is no delay; one that does not parse
// is reported false, and nats-server then treats the nak as one without
// delay.
func ParseNakDelay(arg []byte) (time.Duration, bool) {
	if len(arg) == 0 {
		return 0, true
	}
	if arg[0] == '{' {
		var v struct {
			Delay time.Duration `json:"delay"`
		}
		if json.Unmarshal(arg, &v) != nil {
			return 0, false
		}
		return v.Delay, true
	}
	d, err := time.ParseDuration(string(arg))
	return d, err == nil
}
