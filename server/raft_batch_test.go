package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"reflect"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/routeproto"
)

// takeOut is what c's writer would write next.
func takeOut(c *client) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	chunks, _ := c.out.take()
	var b []byte
	for _, ch := range chunks {
		b = append(b, ch...)
	}
	c.out.recycle(chunks)
	return b
}

// TestRaftBatchFrameBytes: records queued on a route go out as one RAFTB
// frame, the peer ids once, closed by the next other output (PING here)
// or by the writer's take, byte for byte.
func TestRaftBatchFrameBytes(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newClient(nil, a, 1)
	put := func(group string, m raft.Message) bool {
		tr := &raftTransport{group: group}
		return c.out.putRaftRecord(m.From, m.To, m.Type, tr.appendRaftRecord(&m))
	}
	c.mu.Lock()
	first := put("G", raft.Message{Type: raft.MsgHeartbeat, From: 1, To: 2, Term: 3, Commit: 4})
	if !c.out.beatsOnly.Load() {
		t.Fatal("a frame of one heartbeat: the writer would not wait for more")
	}
	second := put("HH", raft.Message{Type: raft.MsgAppResp, From: 1, To: 2, Term: 3, Index: 5})
	if c.out.beatsOnly.Load() {
		t.Fatal("a frame with an append's answer: the writer would wait for more")
	}
	c.out.write([]byte("PING\r\n"))
	third := put("G", raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: 3, LogTerm: 3, Index: 4, Commit: 4,
		Entries: []raft.Entry{{Term: 3, Index: 5, Data: []byte("ab")}}})
	fourth := put("G", raft.Message{Type: raft.MsgHeartbeat, From: 1, To: 3, Term: 3})
	c.mu.Unlock()
	if !first || second || !third || !fourth {
		t.Fatalf("frames opened: %v %v %v %v, want true false true true", first, second, third, fourth)
	}
	want := "RAFTB 0000027\r\n\x01\x02" +
		"\x01G\x09\x01\x07\x03\x00\x00\x04\x00\x00\x00" +
		"\x02HH\x09\x01\x06\x03\x00\x05\x00\x00\x00\x00" + "\r\n" +
		"PING\r\n" +
		"RAFTB 0000020\r\n\x01\x02" +
		"\x01G\x0f\x01\x05\x03\x03\x04\x04\x00\x00\x01\x03\x05\x00\x02ab" + "\r\n" +
		"RAFTB 0000014\r\n\x01\x03" +
		"\x01G\x09\x01\x07\x03\x00\x00\x00\x00\x00\x00" + "\r\n"
	if got := string(takeOut(c)); got != want || c.out.beatsOnly.Load() {
		t.Fatalf("frames:\n%q\nwant\n%q", got, want)
	}
	// The test helper builds the same form.
	if got := string(appendRaftBatch(nil, []string{"G"}, []raft.Message{{Type: raft.MsgHeartbeat, From: 1, To: 3, Term: 3}})); got != want[len(want)-31:] {
		t.Fatalf("appendRaftBatch: %q, want %q", got, want[len(want)-31:])
	}
}

// TestRaftBatchStalledRouteBounded: a route whose peer reads nothing holds
// at most max_pending bytes of raft records (plus one); the rest are
// dropped and counted (raft sends again). Without the bound the output
// grows by every heartbeat queued.
func TestRaftBatchStalledRouteBounded(t *testing.T) {
	s := runServer(t, nil)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	r := &route{remote: routeInfo{ID: "P", Name: "P", Proto: routeProto}}
	r.c = newClient(s, a, s.cidGen.Add(1)) // no write loop: nothing is taken
	r.c.route = r
	const limit = 64 << 10
	old := s.maxPending.Swap(limit)
	defer s.maxPending.Store(old)
	tr := &raftTransport{s: s, group: "a-group-name"}
	const n = 20000
	for i := range n {
		m := raft.Message{Type: raft.MsgHeartbeat, From: 1, To: 2, Term: uint64(i), Commit: uint64(i)}
		if !tr.sendBatched(r, &m) {
			t.Fatal("a heartbeat did not go batched")
		}
	}
	r.c.mu.Lock()
	pending := r.c.out.pending
	r.c.mu.Unlock()
	if pending > limit+raftBatchRecordMax {
		t.Fatalf("%d bytes queued on a stalled route, limit %d", pending, limit)
	}
	if d := s.raft.msgs.batchDropped.Load(); d == 0 || int(d) >= n {
		t.Fatalf("%d of %d records dropped", d, n)
	}
	t.Logf("%d bytes queued, %d of %d records dropped", pending, s.raft.msgs.batchDropped.Load(), n)
}

// TestRaftBatchReadLoop: a RAFTB frame's records reach their group in
// order; a frame whose records are malformed closes the route (the read
// loop returns errBadRaftBatch).
func TestRaftBatchReadLoop(t *testing.T) {
	s := runServer(t, clusterOptions())
	g := &raftGroup{inbox: newRaftQueue[raft.Message](16)}
	s.raft.mu.Lock()
	if s.raft.groups == nil {
		s.raft.groups = map[string]*raftGroup{}
	}
	s.raft.groups["G"] = g
	s.raft.mu.Unlock()
	defer func() {
		s.raft.mu.Lock()
		delete(s.raft.groups, "G")
		s.raft.mu.Unlock()
	}()
	msgs := []raft.Message{
		{Type: raft.MsgHeartbeat, From: 7, To: 9, Term: 2, Commit: 1},
		{Type: raft.MsgApp, From: 7, To: 9, Term: 2, Index: 1, Entries: []raft.Entry{{Term: 2, Index: 2, Data: []byte("x")}}},
		{Type: raft.MsgHeartbeat, From: 7, To: 9, Term: 2, Commit: 2},
	}
	in := appendRaftBatch(nil, []string{"G", "OTHER", "G"}, msgs)
	in = append(in, "RAFTB 0000004\r\n\x01\x02\x05G\r\n"...) // a group name past the frame's end
	a, b := net.Pipe()
	defer b.Close()
	r := &route{br: bufio.NewReader(bytes.NewReader(in)), remote: routeInfo{ID: "P", Name: "P", Proto: routeProto}}
	r.c = newClient(s, a, s.cidGen.Add(1))
	r.c.route = r
	defer r.c.closeNow(RouteRemoved)
	if err := s.routeReadLoop(r); !errors.Is(err, errBadRaftBatch) {
		t.Fatalf("read loop ended with %v, want %v", err, errBadRaftBatch)
	}
	for _, want := range []raft.Message{msgs[0], msgs[2]} {
		got, ok := g.inbox.pop()
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("group got %+v (%v), want %+v", got, ok, want)
		}
	}
	if _, ok := g.inbox.pop(); ok {
		t.Fatal("more messages than sent to the group")
	}
	if n := s.raft.msgs.framesRecv[frameRAFTB].Load(); n != 2 {
		t.Fatalf("%d RAFTB frames counted, want 2", n)
	}
}

// FuzzRaftBatch: the RAFTB payload decoder neither panics nor allocates
// by a claimed size, and every record it accepts encodes back to a frame
// that decodes to the same.
func FuzzRaftBatch(f *testing.F) {
	msgs := []raft.Message{
		{Type: raft.MsgHeartbeat, From: 7, To: 9, Term: 2, Commit: 1, Quiesce: true},
		{Type: raft.MsgApp, From: 7, To: 9, Term: 2, Index: 1, Entries: []raft.Entry{{Term: 2, Index: 2, Data: []byte("x")}}},
		{Type: raft.MsgSnap, From: 7, To: 9, Snapshot: &raft.Snapshot{Index: 3, Term: 1, Peers: []raft.ID{7, 9}, Data: []byte("s")}},
	}
	frame := appendRaftBatch(nil, []string{"G", "H", "G"}, msgs)
	f.Add(frame[len("RAFTB 0000000\r\n") : len(frame)-2])
	f.Add([]byte("\x01\x02\x05G"))
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		var groups []string
		var got []raft.Message
		in := bytes.Clone(b) // overwritten below, as a route's read buffer is
		err := raftBatchRecords(in, func(group []byte, m raft.Message, size int, err error) {
			if size > len(b) || len(group) > len(b) {
				t.Fatalf("a record of %d bytes in %d", size, len(b))
			}
			if err == nil {
				groups, got = append(groups, string(group)), append(got, m)
			}
		})
		if err != nil && !errors.Is(err, errBadRaftBatch) {
			t.Fatalf("error %v", err)
		}
		// The decoded messages keep none of the frame's bytes (the
		// route's read buffer, overwritten by the next frame).
		if len(got) > 0 {
			before := appendRaftBatch(nil, groups, got)
			for i := range in {
				in[i] = 0xa5
			}
			if after := appendRaftBatch(nil, groups, got); !bytes.Equal(before, after) {
				t.Fatalf("a decoded message changed with the frame's bytes:\n%q\n%q", before, after)
			}
		}
		for i := range got {
			if got[i].Snapshot != nil && got[i].Snapshot.Local != nil {
				t.Fatalf("a local snapshot kind decoded from bytes: %T", got[i].Snapshot.Local)
			}
			again := appendRaftBatch(nil, groups[i:i+1], got[i:i+1])
			var back raft.Message
			if err := raftBatchRecords(again[len("RAFTB 0000000\r\n"):len(again)-2], func(_ []byte, m raft.Message, _ int, err error) {
				if err != nil {
					t.Fatalf("re-encoded record: %v", err)
				}
				back = m
			}); err != nil || !reflect.DeepEqual(back, got[i]) {
				t.Fatalf("re-encode mismatch: %v\n%+v\n%+v", err, back, got[i])
			}
		}
	})
}

// TestRaftBatchFramesSplitAtBound: records queued without a write in
// between (a writer stuck on a slow socket) fill frames of at most
// raftBatchMax bytes, each a frame the receiver's limits accept, holding
// every record once and in order; the size digits never overflow.
func TestRaftBatchFramesSplitAtBound(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newClient(nil, a, 1)
	tr := &raftTransport{group: "a-group"}
	const n = 100
	c.mu.Lock()
	for i := range n {
		m := raft.Message{Type: raft.MsgApp, From: 1<<63 + 5, To: 1<<62 + 7, Term: 1, Index: uint64(i),
			Entries: []raft.Entry{{Term: 1, Index: uint64(i + 1), Data: bytes.Repeat([]byte{'d'}, raftBatchRecordMax-200-i)}}}
		if encodedRaftMsgSize(&m) > raftBatchRecordMax {
			t.Fatalf("record %d too large to batch", i)
		}
		c.out.putRaftRecord(m.From, m.To, m.Type, tr.appendRaftRecord(&m))
	}
	c.mu.Unlock()
	out := takeOut(c)
	lim := routeLimitsFor(1<<20, routeProto)
	var op routeproto.Op
	frames, next := 0, uint64(0)
	for len(out) > 0 {
		i := bytes.IndexByte(out, '\n')
		if i < 0 {
			t.Fatalf("no control line in %d bytes left", len(out))
		}
		if err := routeproto.Parse(out[:i+1], &lim, &op); err != nil || op.Kind != routeproto.RaftBatch {
			t.Fatalf("frame %d: %q: %v", frames, out[:min(i+1, 40)], err)
		}
		payload := out[i+1 : i+1+op.Size]
		if string(out[i+1+op.Size:i+3+op.Size]) != "\r\n" {
			t.Fatalf("frame %d of %d bytes not followed by CRLF", frames, op.Size)
		}
		out = out[i+3+op.Size:]
		frames++
		if err := raftBatchRecords(payload, func(group []byte, m raft.Message, _ int, err error) {
			if err != nil || string(group) != "a-group" || m.Index != next || m.From != 1<<63+5 || m.To != 1<<62+7 {
				t.Fatalf("record %d: %q %v %v", next, group, m, err)
			}
			next++
		}); err != nil {
			t.Fatal(err)
		}
	}
	if next != n || frames < n*raftBatchRecordMax/raftBatchMax {
		t.Fatalf("%d records in %d frames, want %d", next, frames, n)
	}
	t.Logf("%d records in %d frames", next, frames)
}

// appendRaftBatch appends a whole RAFTB frame of msgs (all from one peer
// id to another) of the groups named alike: the form putRaftRecord
// builds in a route's output (for the tests and fuzzing only).
func appendRaftBatch(b []byte, groups []string, msgs []raft.Message) []byte {
	var p []byte
	if len(msgs) > 0 {
		p = binary.AppendUvarint(p, uint64(msgs[0].From))
		p = binary.AppendUvarint(p, uint64(msgs[0].To))
	}
	for i := range msgs {
		p = binary.AppendUvarint(p, uint64(len(groups[i])))
		p = append(p, groups[i]...)
		msg := encodeRaftRecordMsg(nil, &msgs[i])
		p = binary.AppendUvarint(p, uint64(len(msg)))
		p = append(p, msg...)
	}
	b = append(b, "RAFTB "...)
	for d := 1000000; d > 0; d /= 10 {
		b = append(b, byte('0'+len(p)/d%10))
	}
	b = append(b, "\r\n"...)
	b = append(b, p...)
	return append(b, "\r\n"...)
}
