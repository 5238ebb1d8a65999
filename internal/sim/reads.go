package sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// simRead is a client's linearizable read of one key through
// raft.Node.ReadIndex: issued on a node, answered by a ReadState, served
// from the node's KV once it has applied the ReadState's index.
type simRead struct {
	ctx    string
	node   *simNode
	inc    uint64 // the node's incarnation: a crash loses the read
	key    string
	issued uint64 // checker order when the client asked
	index  uint64 // the ReadState's index; 0 until answered
}

// issueRead has a client read a random key on n.
func (c *Cluster) issueRead(n *simNode) {
	c.nextRead++
	ctx := "r" + strconv.Itoa(c.nextRead)
	rd := &simRead{ctx: ctx, node: n, inc: n.inc, key: "k" + strconv.Itoa(c.rng.IntN(4)), issued: c.chk.order()}
	if err := n.drv.Node.ReadIndex([]byte(ctx)); err != nil {
		return
	}
	c.stats.Reads++
	c.reads = append(c.reads, rd)
	c.process(n)
}

// onReadStates records the answers a node's Ready carries.
func (c *Cluster) onReadStates(n *simNode, rs []raft.ReadState) {
	for _, s := range rs {
		i := slices.IndexFunc(c.reads, func(rd *simRead) bool { return rd.ctx == string(s.Ctx) })
		if i < 0 {
			continue
		}
		rd := c.reads[i]
		if rd.node != n || rd.inc != n.inc || rd.index != 0 {
			continue // served already (a duplicated message) or lost in a crash
		}
		if s.Index == 0 {
			c.fail(fmt.Errorf("node %d: read %s answered at index 0", n.id, s.Ctx))
			return
		}
		rd.index = s.Index
	}
}

// serveReads serves the answered reads of n that its KV has caught up with,
// and forgets reads lost in a crash.
func (c *Cluster) serveReads(n *simNode) {
	c.reads = slices.DeleteFunc(c.reads, func(rd *simRead) bool {
		return rd.node == n && rd.inc != n.inc
	})
	for i := 0; i < len(c.reads); i++ {
		rd := c.reads[i]
		if rd.node != n || rd.index == 0 || n.kv.applied < rd.index {
			continue
		}
		c.reads = slices.Delete(c.reads, i, i+1)
		i--
		ctx := rd.ctx
		c.stats.ReadsServed++
		val := n.kv.Get(rd.key)
		c.tracef("node %d serves read %s: %s=%s (read index %d, applied %d)", n.id, ctx, rd.key, val, rd.index, n.kv.applied)
		if err := c.chk.checkRead(rd.key, val, rd.issued); err != nil {
			c.fail(fmt.Errorf("node %d read %s: %w", n.id, ctx, err))
			return
		}
	}
}

// kvWrite is a write that changed a key, as first applied anywhere.
type kvWrite struct {
	index uint64
	acked uint64 // checker order when it was first applied (acknowledged)
}

// order returns the next number of the checker's total order of write
// acknowledgements and read requests.
func (c *checker) order() uint64 {
	c.seq++
	return c.seq
}

// recordWrite notes a compare-and-set entry that succeeded when first
// applied (values are unique, so a key holding the new value after the
// entry means the entry set it).
func (c *checker) recordWrite(e *raft.Entry, kv *KV) {
	f := strings.Fields(string(e.Data))
	if len(f) != 4 || f[0] != "cas" || kv.Get(f[1]) != f[3] {
		return
	}
	if c.writes == nil {
		c.writes = map[string][]kvWrite{}
		c.valueAt = map[string]uint64{}
	}
	c.writes[f[1]] = append(c.writes[f[1]], kvWrite{index: e.Index, acked: c.order()})
	c.valueAt[f[1]+"="+f[3]] = e.Index
}

// checkRead verifies that a read of key that returned val, requested at
// checker order issued, is not older than any write to key acknowledged
// before it was requested.
func (c *checker) checkRead(key, val string, issued uint64) error {
	var got uint64 // index of the write that set val; 0: the key was absent
	if val != "-" {
		idx, ok := c.valueAt[key+"="+val]
		if !ok {
			return fmt.Errorf("%s=%s was never written", key, val)
		}
		got = idx
	}
	ws := c.writes[key]
	for i := len(ws) - 1; i >= 0; i-- {
		if ws[i].acked < issued {
			if ws[i].index > got {
				return fmt.Errorf("stale read: %s=%s (written at %d) but the write at %d was acknowledged before the read was requested",
					key, val, got, ws[i].index)
			}
			break
		}
	}
	return nil
}
