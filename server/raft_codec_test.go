package server

import (
	"reflect"
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
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeRaftMsg(b)
		if err != nil {
			return
		}
		again, err := decodeRaftMsg(encodeRaftMsg(nil, &m))
		if err != nil || !reflect.DeepEqual(again, m) {
			t.Fatalf("re-encode mismatch: %v", err)
		}
	})
}
