package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// The streamed reader of a full snapshot's messages yields what the
// in-memory one does, and a cut or corrupted stream is an error, never a
// panic or a huge allocation.
func TestSnapshotMsgReaders(t *testing.T) {
	var b []byte
	for i := range 50 {
		m := &StoreMsg{Seq: uint64(3 + 2*i), TS: int64(1000 + i), Subj: fmt.Sprintf("s.%d", i%7), Msg: bytes.Repeat([]byte{byte(i)}, i*37)}
		if i%3 == 0 {
			m.Hdr = []byte("NATS/1.0\r\nA: b\r\n\r\n")
		}
		b = appendSnapMsg(b, m)
	}
	collect := func(next func() (snapMsg, bool, error)) ([]string, error) {
		var out []string
		for {
			m, ok, err := next()
			if err != nil || !ok {
				return out, err
			}
			out = append(out, fmt.Sprintf("%d %d %s %q %q", m.seq, m.ts, m.subj, m.hdr, m.msg))
		}
	}
	want, err := collect(bytesSnapMsgs(&raftReader{b: b}))
	if err != nil || len(want) != 50 {
		t.Fatalf("in memory: %d messages, %v", len(want), err)
	}
	got, err := collect(streamSnapMsgs(bufio.NewReaderSize(bytes.NewReader(b), 16)))
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("streamed: %v\n%v, want\n%v", err, got, want)
	}
	for cut := 1; cut < len(b); cut += 97 {
		if _, err := collect(streamSnapMsgs(bufio.NewReader(bytes.NewReader(b[:cut])))); err == nil {
			// A cut between two messages reads as a shorter snapshot.
			if _, merr := collect(bytesSnapMsgs(&raftReader{b: b[:cut]})); merr != nil {
				t.Fatalf("cut at %d: streamed read gave no error, in memory %v", cut, merr)
			}
		} else if !errors.Is(err, errBadRaftMsg) {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
	huge := append(appendSnapMsg(nil, &StoreMsg{Seq: 1, Subj: "a"}), 1, 0, 0xff, 0xff, 0xff, 0xff, 0x0f)
	if _, err := collect(streamSnapMsgs(bufio.NewReader(bytes.NewReader(huge)))); !errors.Is(err, errBadRaftMsg) {
		t.Fatalf("a field claiming 4 GiB: %v", err)
	}
}

// decodeSpooled recognises only what encode made.
func TestSpooledSnapRef(t *testing.T) {
	s := spooledSnap{Path: "/x/y", Off: 12, Size: 3 << 30, Index: 7}
	if got, ok := decodeSpooled(s.encode()); !ok || got != s {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	for _, data := range [][]byte{nil, []byte("{}"), appendBytes(nil, []byte(linkedSnapTag)), s.encode()[:10],
		append(s.encode(), 0)} {
		if _, ok := decodeSpooled(data); ok {
			t.Fatalf("%q decoded as a spooled reference", data)
		}
	}
}

// A peer cannot hand this server a spooled reference (a file name here).
func TestSpooledSnapRefFromPeerRefused(t *testing.T) {
	m := raft.Message{Type: raft.MsgSnap, Snapshot: &raft.Snapshot{Index: 5, Term: 1,
		Data: spooledSnap{Path: "/tmp/not-yours"}.encode()}}
	var s Server
	if err := s.deliverRaft(appendRaftPayload(nil, "G", &m), false); !errors.Is(err, errBadRaftMsg) {
		t.Fatalf("got %v", err)
	}
}
