// Package sim is a deterministic simulator for internal/raft: a few nodes,
// each running the real raft.Driver over a fake disk that loses unsynced
// writes on a crash, talking through a fake network that drops, delays,
// reorders and duplicates messages and can be partitioned. Everything random
// comes from one seeded PCG, so a seed replays the same run exactly.
// Invariants are checked after every step (see checker). Clients also read
// through raft.Node.ReadIndex (reads.go); the checker verifies each read
// against the writes acknowledged before it was requested.
package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// KV is the replicated state machine: a map with compare-and-set. A command
// is "cas KEY EXPECTED NEW" (EXPECTED "-" means absent); its outcome is "ok"
// or "fail:CURRENT". Every applied index extends a digest, a hash chain of
// (index, outcome), so replicas can be compared at any index.
type KV struct {
	data        map[string]string
	applied     uint64
	appliedTerm uint64
	digest      uint64
}

// NewKV returns an empty machine.
func NewKV() *KV { return &KV{data: map[string]string{}} }

// Get returns the value of key, or "-" if absent.
func (k *KV) Get(key string) string {
	if v, ok := k.data[key]; ok {
		return v
	}
	return "-"
}

// Applied returns the last applied index and the digest there.
func (k *KV) Applied() (uint64, uint64) { return k.applied, k.digest }

// CAS encodes a compare-and-set command.
func CAS(key, expected, next string) []byte {
	return []byte("cas " + key + " " + expected + " " + next)
}

// apply applies one entry and returns its outcome.
func (k *KV) apply(e *raft.Entry) string {
	var outcome string
	switch e.Type {
	case raft.EntryNoOp:
		outcome = "noop"
	case raft.EntryConfChange:
		cc, err := raft.UnmarshalConfChange(e.Data)
		outcome = fmt.Sprintf("conf:%d:%d:%v", cc.Type, cc.ID, err)
	default:
		outcome = k.cas(string(e.Data))
	}
	k.applied, k.appliedTerm = e.Index, e.Term
	k.digest = chain(k.digest, e.Index, outcome)
	return outcome
}

func (k *KV) cas(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) != 4 || f[0] != "cas" {
		return "bad"
	}
	if cur := k.Get(f[1]); cur != f[2] {
		return "fail:" + cur
	}
	k.data[f[1]] = f[3]
	return "ok"
}

// chain extends a digest with (index, outcome): FNV-1a over the previous
// digest, the index and the outcome.
func chain(d, index uint64, outcome string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for _, x := range [2]uint64{d, index} {
		for range 8 {
			h = (h ^ (x & 0xff)) * prime
			x >>= 8
		}
	}
	for i := 0; i < len(outcome); i++ {
		h = (h ^ uint64(outcome[i])) * prime
	}
	return h
}

// Snapshot encodes the whole state, digest included.
func (k *KV) Snapshot() []byte {
	keys := make([]string, 0, len(k.data))
	for key := range k.data {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d %d %d\n", k.applied, k.appliedTerm, k.digest)
	for _, key := range keys {
		fmt.Fprintf(&b, "%s %s\n", key, k.data[key])
	}
	return []byte(b.String())
}

// Restore replaces the state with a snapshot made by Snapshot.
func (k *KV) Restore(data []byte) error {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	head := strings.Fields(lines[0])
	if len(head) != 3 {
		return fmt.Errorf("sim: bad snapshot header %q", lines[0])
	}
	var nums [3]uint64
	for i, s := range head {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("sim: bad snapshot header %q", lines[0])
		}
		nums[i] = n
	}
	kv := map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 2 {
			return fmt.Errorf("sim: bad snapshot line %q", l)
		}
		kv[f[0]] = f[1]
	}
	k.data, k.applied, k.appliedTerm, k.digest = kv, nums[0], nums[1], nums[2]
	return nil
}
