package server

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"runtime"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

func TestRaftCodecRoundTrip(t *testing.T) {
	msgs := []raft.Message{
		{Type: raft.MsgVote, From: 1, To: 2, Term: 7, LogTerm: 6, Index: 99, Transfer: true},
		{Type: raft.MsgApp, From: 3, To: 1, Term: 2, LogTerm: 2, Index: 10, Commit: 9,
			Entries: []raft.Entry{{Term: 2, Index: 11, Type: raft.EntryNormal, Data: []byte("hello")}, {Term: 2, Index: 12, Type: raft.EntryNoOp}}},
		{Type: raft.MsgAppResp, From: 1, To: 3, Term: 2, Index: 5, Reject: true, RejectHint: 3},
		{Type: raft.MsgSnap, From: 1, To: 2, Term: 4, Snapshot: &raft.Snapshot{Index: 50, Term: 3, Peers: []raft.ID{1, 2, 3}, Data: []byte{1, 2, 3}}},
		// Read index: the heartbeat's round travels in Index, a request's
		// context as the Data of one entry, in fields every version encodes.
		{Type: raft.MsgHeartbeat, From: 1, To: 2, Term: 4, Commit: 9, Index: 17},
		{Type: raft.MsgHeartbeatResp, From: 2, To: 1, Term: 4, Index: 17},
		{Type: raft.MsgReadIndex, From: 2, To: 1, Term: 4, Entries: []raft.Entry{{Data: []byte("req-1")}}},
		{Type: raft.MsgReadIndexResp, From: 1, To: 2, Term: 4, Index: 42, Entries: []raft.Entry{{Data: []byte("req-1")}}},
	}
	for _, m := range msgs {
		got, err := decodeRaftMsg(encodeRaftMsg(nil, &m))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip %v:\n got %+v\nwant %+v (%v)", m, got, m, err)
		}
	}
}

func FuzzRaftCodec(f *testing.F) {
	m := raft.Message{Type: raft.MsgApp, From: 3, To: 1, Entries: []raft.Entry{{Term: 1, Index: 1, Data: []byte("x")}},
		Snapshot: &raft.Snapshot{Index: 1, Peers: []raft.ID{1}}}
	f.Add(encodeRaftMsg(nil, &m))
	f.Add(appendRaftPayload(nil, "G", &m))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The other decoder of what a peer sends: the head read before a
		// message is.
		if g, _, ok := raftHead(b); ok && len(g) > len(b) {
			t.Fatalf("group of %d bytes in %d", len(g), len(b))
		}
		m, err := decodeRaftMsg(b)
		if err != nil {
			return
		}
		if m.Snapshot != nil && m.Snapshot.Local != nil {
			t.Fatalf("a local snapshot kind decoded from bytes: %T", m.Snapshot.Local)
		}
		again, err := decodeRaftMsg(encodeRaftMsg(nil, &m))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encode mismatch: %v", err)
		}
	})
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// An entry count is a claim: a message that says it has a million entries
// and has none costs what it holds, not a million entries (48 MiB).
func TestRaftCodecDoesNotAllocateByClaimedCount(t *testing.T) {
	b := []byte{raftCodecVersion, byte(raft.MsgApp)}
	for range 7 {
		b = binary.AppendUvarint(b, 1)
	}
	b = append(b, 0) // flags
	b = binary.AppendUvarint(b, 1<<20)
	b = append(b, bytes.Repeat([]byte{0xff}, 1<<20)...) // no valid entry
	n := allocated(func() {
		if _, err := decodeRaftMsg(b); err == nil {
			t.Fatal("decoded")
		}
	})
	if n > 4<<20 {
		t.Fatalf("decoding %d bytes allocated %d", len(b), n)
	}
}

// A received message without entries or a snapshot (votes, heartbeats,
// append responses: half of raft's traffic) is decoded without copying
// the route's buffer; one with entries keeps a copy of its own.
func TestRaftCodecCopiesOnlyData(t *testing.T) {
	resp := encodeRaftMsg(nil, &raft.Message{Type: raft.MsgAppResp, From: 2, To: 1, Term: 4, Index: 99, Commit: 98})
	if n := testing.AllocsPerRun(100, func() {
		if _, err := decodeRaftMsg(resp); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("decoding an append response allocates %v times", n)
	}
	app := encodeRaftMsg(nil, &raft.Message{Type: raft.MsgApp, From: 1, To: 2, Term: 4,
		Entries: []raft.Entry{{Term: 4, Index: 100, Data: []byte("payload")}}})
	m, err := decodeRaftMsg(app)
	if err != nil {
		t.Fatal(err)
	}
	clear(app) // the route reuses its buffer
	if len(m.Entries) != 1 || string(m.Entries[0].Data) != "payload" {
		t.Fatalf("entries %+v after the buffer was reused", m.Entries)
	}
}
