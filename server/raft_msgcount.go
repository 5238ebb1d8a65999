package server

import (
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// raftMsgCounts counts the raft messages this server sent and received
// over routes, by type (/jsz?raft=true: raft_sent, raft_received): what
// a restart or a kill costs in pre-votes, heartbeats and appends
// (scripts/stream-scale prints the restarted server's counts until it is
// back in every group).
type raftMsgCounts struct {
	sent, recv [16]atomic.Uint64
	// framesSent and framesRecv count the route frames that carried
	// them (raft_frames_sent, raft_frames_received): a RAFT frame holds
	// one message, a RAFTB frame many (raft_batch.go). batchDropped
	// counts the records dropped because their route had max_pending
	// bytes queued.
	framesSent, framesRecv [2]atomic.Uint64
	batchDropped           atomic.Uint64
}

// The frames counted, by kind.
const (
	frameRAFT = iota
	frameRAFTB
)

var frameNames = [2]string{"RAFT", "RAFTB"}

func (c *raftMsgCounts) noteFrameSent(kind int) { c.framesSent[kind].Add(1) }

func (c *raftMsgCounts) noteFrameRecv(kind int) { c.framesRecv[kind].Add(1) }

// framesByName is frame counts by kind, kinds never counted left out.
func framesByName(counts *[2]atomic.Uint64) map[string]uint64 {
	m := map[string]uint64{}
	for k := range counts {
		if n := counts[k].Load(); n > 0 {
			m[frameNames[k]] = n
		}
	}
	return m
}

func (c *raftMsgCounts) noteSent(t raft.MessageType) {
	if int(t) < len(c.sent) {
		c.sent[t].Add(1)
	}
}

func (c *raftMsgCounts) noteRecv(t raft.MessageType) {
	if int(t) < len(c.recv) {
		c.recv[t].Add(1)
	}
}

// byName is counts by message type name, types never counted left out.
func byName(counts *[16]atomic.Uint64) map[string]uint64 {
	m := map[string]uint64{}
	for t := range counts {
		if n := counts[t].Load(); n > 0 {
			m[raft.MessageType(t).String()] = n
		}
	}
	return m
}

// routeRaftCounts counts the raft frames and records queued on one route
// (/routez raft_frames_out, raft_records_out).
type routeRaftCounts struct {
	frames, records atomic.Uint64
}
