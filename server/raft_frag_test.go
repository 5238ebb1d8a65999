package server

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/routeproto"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// feedFrags runs the route read loop's RAFTF handling over a byte stream.
func feedFrags(t *testing.T, r *route, s *Server) error {
	t.Helper()
	lim := routeLimitsFor(MAX_PAYLOAD_SIZE, routeProto)
	for {
		line, err := r.br.ReadSlice('\n')
		if err != nil {
			return nil // end of input
		}
		var op routeproto.Op
		if err := routeproto.Parse(line, &lim, &op); err != nil {
			return err
		}
		if op.Kind != routeproto.RaftFrag {
			t.Fatalf("unexpected line %q", line)
		}
		if err := s.routeRaftFrag(r, &op); err != nil {
			return err
		}
	}
}

func piece(id, total, off int, data string) string {
	return fmt.Sprintf("RAFTF %d %d %d %d\r\n%s\r\n", id, total, off, len(data), data)
}

// raftTestHead is the head of a raft payload for group g: its name, the
// codec version and the message type.
func raftTestHead(g string, typ raft.MessageType) string {
	return string(append(binary.AppendUvarint(nil, uint64(len(g))), g...)) + string([]byte{raftCodecVersion, byte(typ)})
}

// serverWithGroup is a bare server that runs a raft group named G (which
// receives nothing: its inbox is nil, so deliveries are dropped).
func serverWithGroup() *Server {
	s := &Server{}
	s.raft.groups = map[string]*raftGroup{"G": {}}
	return s
}

func TestRaftFragReassembly(t *testing.T) {
	s := serverWithGroup()
	h := raftTestHead("G", raft.MsgApp) // 4 bytes
	// Two messages interleaved, an orphan later piece of an unknown id
	// (skipped, and the stream stays in step), and a piece out of order.
	in := piece(1, 8, 0, h+"ab") + piece(2, 6, 0, h) + piece(9, 10, 5, "zzzzz") +
		piece(1, 8, 6, "cd") + piece(3, 4, 2, "qq") + piece(2, 6, 4, "yz")
	r := &route{br: bufio.NewReader(strings.NewReader(in))}
	if err := feedFrags(t, r, s); err != nil {
		t.Fatal(err)
	}
	if len(r.frags.open) != 0 || len(r.frags.order) != 0 {
		t.Fatalf("left open: %v %v", r.frags.open, r.frags.order)
	}
	// A gap drops the reassembly.
	r = &route{br: bufio.NewReader(strings.NewReader(piece(4, 12, 0, h+"ab") + piece(4, 12, 9, "ghi")))}
	if err := feedFrags(t, r, s); err != nil || len(r.frags.open) != 0 {
		t.Fatalf("gap: %v, open %v", err, r.frags.open)
	}
	// The oldest is evicted beyond raftFragMaxOpen.
	var b strings.Builder
	for id := 1; id <= raftFragMaxOpen+1; id++ {
		b.WriteString(piece(id, 10, 0, h))
	}
	r = &route{br: bufio.NewReader(strings.NewReader(b.String()))}
	if err := feedFrags(t, r, s); err != nil || len(r.frags.open) != raftFragMaxOpen || r.frags.open[1] != nil {
		t.Fatalf("eviction: %v, open %d", err, len(r.frags.open))
	}
	// Malformed input is an error (the route closes), never a panic.
	for _, bad := range []string{
		"RAFTF 1 4 0 5\r\nabcde\r\n",   // beyond total
		"RAFTF 1 4 0\r\n",              // missing field
		"RAFTF 1 -4 0 1\r\nx\r\n",      // negative total
		"RAFTF 1 6 0 4\r\n" + h + "XX", // bad piece end
		"RAFTF 1 6 0 4\r\nabcdXX",      // bad piece end of a skipped message
	} {
		r = &route{br: bufio.NewReader(strings.NewReader(bad))}
		if err := feedFrags(t, r, s); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A transfer is reassembled only when its first piece shows a message
// this server can take: a group it runs, and no more bytes than such a
// message can have. The rest is skipped unread and nothing is kept.
func TestRaftFragSkipsUnwantedTransfers(t *testing.T) {
	s := serverWithGroup()
	h := raftTestHead("G", raft.MsgApp)
	for name, in := range map[string]string{
		"unknown group":          piece(1, 10, 0, raftTestHead("H", raft.MsgApp)+"ab"),
		"malformed head":         piece(1, 10, 0, "\xff\xff"),
		"append over the bound":  piece(1, raftMaxMsg+1, 0, h),
		"snapshot with no spool": piece(1, raftFragMaxTotal, 0, raftTestHead("G", raft.MsgSnap)),
	} {
		r := &route{br: bufio.NewReader(strings.NewReader(in + piece(1, 10, 6, "zz")))}
		if err := feedFrags(t, r, s); err != nil || len(r.frags.open) != 0 {
			t.Errorf("%s: %v, open %d", name, err, len(r.frags.open))
		}
	}
}

// A spool file that cannot be written still has its piece read in full,
// so the route's stream stays in step (the transfer alone is dropped).
func TestRaftFragSpoolWriteFailure(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "spool")
	if err != nil {
		t.Fatal(err)
	}
	f.Close() // writes now fail
	fr := &raftFrag{total: 10, spool: &spoolFile{File: f, fs: vfs.Default}}
	src := bytes.NewReader([]byte("0123456789rest"))
	werr, rerr := fr.read(src, 10)
	if werr == nil || rerr != nil || fr.have() != 10 || src.Len() != 4 {
		t.Fatalf("werr %v rerr %v have %d left %d", werr, rerr, fr.have(), src.Len())
	}
}
