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

// A snapshot from a peer is always full: the local kinds (a spooled file
// section, a linked directory) are never encoded, and bytes in the linked
// form are not a full snapshot.
func TestSnapshotFromPeerIsFull(t *testing.T) {
	for _, local := range []any{spooledSnap{Path: "/tmp/not-yours", Size: 3},
		newLinkedSnap(streamSnapMeta{Linked: "7"})} {
		m := raft.Message{Type: raft.MsgSnap, Snapshot: &raft.Snapshot{Index: 5, Term: 1, Local: local}}
		got, err := decodeRaftMsg(encodeRaftMsg(nil, &m))
		if err != nil || got.Snapshot == nil || got.Snapshot.Local != nil || len(got.Snapshot.Data) != 0 {
			t.Fatalf("%T: decoded %+v %v", local, got.Snapshot, err)
		}
	}
	linked := newLinkedSnap(streamSnapMeta{Linked: "7"})
	if _, _, err := decodeFullSnap(linked.raw); !errors.Is(err, errBadRaftMsg) {
		t.Fatalf("the linked form decoded as a full snapshot: %v", err)
	}
	mj := []byte(`{"config":{},"first":1,"last":0,"messages":0,"linked":"7"}`)
	if _, _, err := decodeFullSnap(appendBytes(nil, mj)); !errors.Is(err, errBadRaftMsg) {
		t.Fatalf("full snapshot metadata naming a directory accepted: %v", err)
	}
	for _, bad := range []string{"", "../x", "7/..", "-1"} {
		raw := newLinkedSnap(streamSnapMeta{Linked: bad}).raw
		if _, err := decodeLinkedSnap(raw); !errors.Is(err, errBadRaftMsg) {
			t.Fatalf("linked snapshot naming %q decoded: %v", bad, err)
		}
	}
}
