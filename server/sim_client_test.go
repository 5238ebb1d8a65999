package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Simulated clients publish to a stream through one server at a time,
// some with a compare-and-set expectation (Nats-Expected-Last-Subject-
// Sequence) built from what they last learned of the subject. A server
// that does not lead the stream has no subscription on its subjects (no
// routes in the simulator), so the publish finds no responders and the
// client tries another server, as a client would after a timeout.

const simReplyPrefix = "_SIM."

// simClientTimeout is how long (virtual ms) a client waits for an answer.
const simClientTimeout = 1500

type simClient struct {
	id     int
	stream string
	known  map[string]uint64 // last sequence learned per subject
	pref   int               // the server it talks to
}

// simOp is one publish and what the client heard back.
type simOp struct {
	id      int
	c       *simClient
	subj    string
	data    string
	expect  int64 // -1: no expectation
	node    string
	answers int
	late    bool   // the client stopped waiting
	seq     uint64 // acknowledged at
	errCode int    // rejected or refused with
	errText string
	// seen is the subject's sequence the first answer gave (acknowledged
	// at, or named by a 10071 rejection), at the virtual ms it came.
	seen uint64
	at   int64
}

func simOpID(reply string) (int, bool) {
	if !strings.HasPrefix(reply, simReplyPrefix) {
		return 0, false
	}
	id, err := strconv.Atoi(reply[len(simReplyPrefix):])
	return id, err == nil
}

func (w *simWorld) addClient(stream string) {
	c := &simClient{id: len(w.clients), stream: stream, known: map[string]uint64{}, pref: w.rng.IntN(len(w.nodes))}
	w.clients = append(w.clients, c)
	w.at(w.rng.Int64N(20)+1, func() { w.clientStep(c) })
}

// clientStep issues the client's next publish.
func (w *simWorld) clientStep(c *simClient) {
	if w.now >= w.opts.duration {
		return
	}
	n := w.nodes[c.pref]
	if !n.up {
		c.pref = w.rng.IntN(len(w.nodes))
		w.at(5, func() { w.clientStep(c) })
		return
	}
	op := &simOp{id: len(w.ops), c: c, subj: fmt.Sprintf("%s.k%d", c.stream, w.rng.IntN(6)), expect: -1, node: n.name}
	op.data = fmt.Sprintf("c%d-op%d", c.id, op.id)
	var hdr []byte
	if w.rng.IntN(3) > 0 {
		op.expect = int64(c.known[op.subj])
		hdr = fmt.Appendf(nil, "NATS/1.0\r\n%s: %d\r\n\r\n", JSExpectedLastSubjSeq, op.expect)
	}
	w.ops = append(w.ops, op)
	reply := simReplyPrefix + strconv.Itoa(op.id)
	if n.srv.deliver(nil, n.srv.globalAccount(), op.subj, reply, hdr, []byte(op.data)) == 0 {
		op.errText = "no responders"
		c.pref = w.rng.IntN(len(w.nodes))
		w.at(2, func() { w.clientStep(c) })
		return
	}
	n.pump()
	w.at(simClientTimeout, func() {
		if op.answers == 0 {
			op.errText, op.late = "timeout", true
			c.pref = w.rng.IntN(len(w.nodes))
			w.clientStep(c)
		}
	})
}

// onReply records an answer; a second answer to the same publish must
// say the same.
func (w *simWorld) onReply(n *simNode, inc int, subject string, msg []byte) {
	id, ok := simOpID(subject)
	if !ok || id >= len(w.ops) {
		w.fail("%s: an answer on %q", n.name, subject)
		return
	}
	op := w.ops[id]
	var ack struct {
		Seq   uint64    `json:"seq"`
		Error *ApiError `json:"error"`
	}
	if err := json.Unmarshal(msg, &ack); err != nil {
		w.fail("%s: an answer %q to op %d: %v", n.name, msg, id, err)
		return
	}
	code, text := 0, ""
	if ack.Error != nil {
		code, text = int(ack.Error.ErrCode), ack.Error.Description
	}
	if simDebugGroup != "" {
		w.logf("%s answers op %d (%s expecting %d): seq %d err %d %s", n.name, id, op.subj, op.expect, ack.Seq, code, text)
	}
	if op.answers > 0 && (op.seq != ack.Seq || op.errCode != code) && op.errCode != 10008 {
		w.fail("op %d answered twice differently: seq %d err %d, then (by %s) seq %d err %d %s", id, op.seq, op.errCode, n.name, ack.Seq, code, text)
		return
	}
	first := op.answers == 0
	op.answers++
	if op.answers > 1 && op.errCode == 10008 && code == 0 {
		w.fail("op %d was refused (10008) and then stored at %d", id, ack.Seq)
		return
	}
	op.seq, op.errCode, op.errText = ack.Seq, code, text
	c := op.c
	switch {
	case code == 0:
		c.known[op.subj] = ack.Seq
		if first {
			w.stats.Acked++
			op.seen, op.at = ack.Seq, w.now
		}
	case code == 10071:
		if i := strings.LastIndexByte(text, ' '); i >= 0 {
			if v, err := strconv.ParseUint(text[i+1:], 10, 64); err == nil {
				c.known[op.subj] = v
				if first {
					op.seen, op.at = v, w.now
				}
			}
		}
		w.stats.Rejected++
	default:
		c.pref = w.rng.IntN(len(w.nodes))
	}
	if first && !op.late {
		w.at(w.rng.Int64N(10)+1, func() { w.clientStep(c) })
	}
}
