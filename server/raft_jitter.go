package server

import (
	"hash/fnv"
	"math/rand/v2"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// Election-timeout jitter. raft's default source is a PCG seeded with the
// node's id alone, so every group on a server drew the same sequence of
// timeouts: in all the groups whose leader died, the k-th draw of one
// survivor was below the k-th draw of the other in the same way, and that
// survivor won nearly every election (3,000 streams, kill -9 of n2: n1
// took 917 of its 1,000 leaderships; draws of n0 18 11 15 18 17 ..., of n1
// 19 12 13 16 15 ...). Ties in the same draw made both survivors campaign
// in the same tick in every such group and split the vote.
//
// Each group gets its own source here, seeded with the group's name, the
// server's id and a salt drawn once per process, so the survivors' draws
// are independent in every group and the dead server's leaderships split
// evenly. Under a raftHost (the simulator) the salt is zero: a seed
// replays the same run.
var raftJitterSalt = rand.Uint64()

// raftJitter is Config.Rand for this server's replica of group.
func raftJitter(group string, id raft.ID, salt uint64) func(int) int {
	return rand.New(rand.NewPCG(raftSeed(group), uint64(id)^salt)).IntN
}

// raftSeed is Config.Seed of group: the same on every server (no salt),
// for the survivors of a dead leader's server agree on which of them
// campaigns first in each group (internal/raft/ranked.go).
func raftSeed(group string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(group))
	return h.Sum64()
}
