package server

import (
	"path/filepath"
	"sort"
	"strings"
)

// The "corrupt one replica's store" fault of the stream simulator: a
// server stops, one block file of a linked snapshot on its disk (the
// files a restart restores a replica from; the store's sealed blocks are
// the same inodes) has bits flipped or is deleted, and the server starts
// again. Only under the durable default (a healthy replica holds every
// acknowledged message), with every server up and no replica anywhere
// still repairing: the damage stays on a minority.

// damageStore damages one linked snapshot block of n's disk; false when
// there is none.
func (n *simNode) damageStore() bool {
	w := n.w
	var blocks []string
	n.walkDisk(filepath.Join(w.opts.dir, "jetstream", "_raft_"), func(p string) {
		if strings.HasSuffix(p, ".blk") && strings.Contains(p, string(filepath.Separator)+snapsDir+string(filepath.Separator)) {
			blocks = append(blocks, p)
		}
	})
	if len(blocks) == 0 {
		return false
	}
	sort.Strings(blocks)
	p := blocks[w.rng.IntN(len(blocks))]
	if w.rng.IntN(2) == 0 {
		w.logf("%s: deleting %s", n.name, p)
		_ = n.disk.Remove(p)
		return true
	}
	fi, err := n.disk.Stat(p)
	if err != nil || fi.Size() == 0 {
		return false
	}
	w.logf("%s: flipping bits in %s", n.name, p)
	for i := 0; i < 4; i++ {
		n.disk.FlipBit(p, w.rng.Int64N(fi.Size()), uint(w.rng.IntN(8)))
	}
	return true
}

// walkDisk calls f with every file under dir on n's disk.
func (n *simNode) walkDisk(dir string, f func(string)) {
	ents, err := n.disk.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			n.walkDisk(p, f)
		} else {
			f(p)
		}
	}
}

// repairing reports whether a damaged server has not finished repairing
// every replica it holds (a second damage would leave a majority without
// its state: no leader, a liveness failure the fault must not cause).
func (w *simWorld) repairing() bool {
	n := w.damaged
	if n == nil {
		return false
	}
	if !n.up || n.hasMarker() {
		return true
	}
	jc := n.cluster()
	if jc == nil {
		return true
	}
	for _, cfg := range w.streams {
		sa := jc.assignment(globalAccountName, cfg.Name)
		if sa == nil { // its meta log not replayed yet
			return true
		}
		if !jc.isPeer(sa) {
			continue
		}
		m := n.stream(cfg.Name)
		if m == nil {
			return true
		}
		g := m.groupNow()
		if g == nil || g.drv.Node.Recovering() {
			return true
		}
	}
	w.damaged = nil
	return false
}

// hasMarker reports whether a group directory on n's disk holds the repair
// marker.
func (n *simNode) hasMarker() bool {
	found := false
	n.walkDisk(filepath.Join(n.w.opts.dir, "jetstream", "_raft_"), func(p string) {
		found = found || filepath.Base(p) == repairMarker
	})
	return found
}

// damageFault stops a server, damages its store and starts it again.
func (w *simWorld) damageFault(up []*simNode) {
	n := up[w.rng.IntN(len(up))]
	n.crash()
	if n.damageStore() {
		w.stats.Damages++
		w.damaged = n
	}
	w.at(100+w.rng.Int64N(2000), func() {
		if !n.up {
			n.start()
		}
	})
}
