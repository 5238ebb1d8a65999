package server

import (
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
)

// A wedged leader (issue 20). A group whose goroutine stops in the middle
// of a pass (its disk stalls: a write or fsync of its log blocks for
// minutes; or something it called never returns) while its server runs
// on stays the stream's leader for everyone: its server answers node
// liveness pings (raft_live.go), so the followers of a quiet group sleep
// on and never campaign, and its server keeps the stream's ingest
// subscription, so the publishes routed to it wait unanswered. Awake
// followers do replace it (election timeout plus the live-leader wait),
// but its server still takes its share of the publishes. The stream
// answered no publish through a follower's server, or only some, until
// the disk came back.
//
// So the raft clock (raft_clock.go), one goroutine per server, looks at
// the groups this server leads every raftWedgeScanEvery: a group whose
// goroutine has been inside one pass (raftGroup.beat odd and unchanged)
// for raftWedgeAfter, of the time this server's clock ticked on time (a
// pause of the whole process is no wedge: wedgeWatch.stuck), is wedged. A pass runs from the event that woke the
// goroutine until it waits again, falling asleep included (maybeSleep:
// with a sync_interval, the fsync of the log of a group going quiet, the
// likeliest write to meet a stalled disk, and the WAL's sync turn). No goroutine or timer per group: two
// atomic adds per pass, and per scan an atomic load per group (two for
// a leader). The server then deposes the leadership on its own (depose,
// on a goroutine started for that wedge, as it may wait on the stalled
// stream's lock):
//   - it tells every server that it resigned from the stream in that term
//     (the stream's resignation announcement: jetstream_resign_wake.go),
//     so the followers wake (raft.Node.LeaderStopped) and campaign after
//     their election timeout, without the live-leader wait;
//   - it tells the state machine that it no longer leads (stopServing:
//     the ingest subscription goes, publishes reach the new leader only).
// Its raft node is not touched meanwhile: the group's goroutine owns it.
// Once the goroutine comes back, a node still leading in the deposed term
// resigns (raft.Node.Resign: a member holding its whole log campaigns at
// once) and the state machine is not told it leads in that term again
// (wantLocked); a node that heard of a later term follows as usual.
//
// The meta group is deposed the same way (jetstream_meta_wedge.go). A
// wedged meta leader kept every meta call waiting: a create or delete
// through any server was proposed to its stalled group and answered by
// nobody while the stall lasted (with the meta group asleep), or, once
// awake followers elected, through its own server still. Its server
// announces the resignation on $JSC.LEADER._meta_ (the other servers'
// meta members wake and elect), and the meta state machine is told it
// follows, knowing no leader: isMetaLeader is false, so a meta call
// reaching this server is left to the new leader (a read from a client
// connected here gets 10008 if no answer passed within leaderGrace), and
// no meta leader's duty runs here. The
// safety argument below holds for it unchanged: a meta entry is applied,
// and its call answered, once committed.
//
// Why this is safe. Raft's safety never rests on who campaigns when: an
// election needs a quorum of votes in a new term, the wedged node's log
// entries count only once a quorum holds them, and the wedged node, when
// it runs again, meets the higher term in the first answer it gets and
// steps down (or resigns by itself); entries it appended in its old term
// and no quorum holds are overwritten by the new leader, and none of them
// was acknowledged (a publish is answered once applied, that is, once
// committed). Leases (internal/raft/lease.go) are untouched:
// LeaderStopped does not make a follower forget its leader, so it grants
// no vote before it counted an election timeout since the last heartbeat
// it took, as before; and a leader's lease is measured on its own clock
// when a read is asked, so a wedged leader that comes back after
// raftWedgeAfter (far beyond the 300 ms lease) holds none. A read it
// answered before it wedged was answered then. A false alarm (a pass that
// was only slow) costs a leader change, nothing else.

// raftWedgeAfter is how long a leading group's goroutine may stay inside
// one pass before its server deposes it: four election timeouts (2 s),
// about when an awake group's followers replace a leader gone silent
// (an election timeout of 0.5-1 s plus the 1 s live-leader wait).
var raftWedgeAfter = 40 * raftTick

// raftWedgeScanEvery paces the scan: 600 ms, a multiple of both paces of
// the clock (every raftTick, or every raftLivePingEvery when every group
// sleeps: a wedged group asks for no tick either). A scan walks the whole
// registry under its lock: 0.3-0.45 ms with 10,000 groups (a benchmark on
// this shared 2-core machine), so every 200 ms it cost 0.2% of a core per
// server and held up the route readers' deliveries that long.
var raftWedgeScanEvery = 3 * raftLivePingEvery

// wedgeWatch is what the clock's scan knows of a group (the clock's
// goroutine only, under raftGroups.mu).
type wedgeWatch struct {
	beat  uint64    // the group's beat at the last scan
	since time.Time // when the scan first saw that beat
	lag   int64     // the raft clock's lateness summed until since (raftLag.total)
	told  bool      // deposed for this beat
}

// enter marks the start of a pass of the group's loop (group goroutine).
func (g *raftGroup) enter() {
	g.beat.Add(1)
	g.srv.raft.inPass.Add(1)
}

// leave marks the end of a pass (group goroutine): the beat is even while
// the goroutine waits for work, odd while it works.
func (g *raftGroup) leave() {
	g.beat.Add(1)
	g.srv.raft.inPass.Add(-1)
}

// wedged reports whether a group whose beat is now beat has been inside
// the same pass for raftWedgeAfter, once per pass. lag is the raft
// clock's lateness summed so far (raftLag.total): only the time the clock
// ticked on time counts (stuck).
func (w *wedgeWatch) wedged(beat uint64, now time.Time, lag int64) bool {
	if beat%2 == 0 || beat != w.beat {
		*w = wedgeWatch{beat: beat, since: now, lag: lag}
		return false
	}
	if w.told || w.stuck(now, lag) < raftWedgeAfter {
		return false
	}
	w.told = true
	return true
}

// A pause is not a wedge. A process stopped (SIGSTOP, a frozen VM) or
// starved of CPU stops every goroutine alike: a pass under way when the
// scan saw it last is still under way when the scan comes back, late, as
// the raft clock's first tick after the resume may run before the group's
// goroutine does. Measured on the wall clock, every such pass looked
// stuck for the whole pause and was deposed (a leader change each, the
// kind of election wave issue 20 was about). So, as node liveness does
// with a peer's silence (raft_live_lag.go), the scan excuses the clock's
// own lateness meanwhile: a pass is stuck for the time this server ticked
// on time, raftWedgeAfter of it, that is 40 ticks of its raft clock
// however late they come. A stalled disk or a blocked call stops one
// group, not the clock, and is deposed as fast as before.

// stuck is how long the pass has been stuck on this server's clock: the
// wall time since the scan first saw it, less the clock's lateness since.
func (w *wedgeWatch) stuck(now time.Time, lag int64) time.Duration {
	return now.Sub(w.since) - time.Duration(lag-w.lag)
}

// deposable is a state machine whose server can tell everyone its
// leadership ended without its group's goroutine (a stream's, the meta
// group's: jetstream_meta_wedge.go).
type deposable interface {
	// deposed announces that this server stopped leading in term.
	deposed(term uint64)
}

func (sm *streamSM) deposed(term uint64) {
	mset := sm.mset
	if jc := mset.jsa.js.cluster; jc != nil {
		jc.announce(mset.jsa.acc.Name, mset.name, term, true)
	}
}

// checkWedged runs on the raft clock's goroutine at every tick: every
// raftWedgeScanEvery it looks for wedged groups this server leads, and
// deposes them.
func (s *Server) checkWedged(now time.Time) {
	c := &s.raftClock
	if now.Sub(c.wedgeScan) < raftWedgeScanEvery-raftTick/2 {
		return
	}
	c.wedgeScan = now
	if s.raft.inPass.Load() == 0 {
		// No group is inside a pass (an idle server: every group asleep
		// or waiting): nothing can be wedged, and the walk over every
		// group (0.3-0.45 ms per 10,000) is skipped. A watch whose group
		// left its pass resets itself at the next walk (its beat moved).
		return
	}
	var wedged []*raftGroup
	s.raft.mu.Lock()
	for _, g := range s.raft.groups {
		if !g.leads.Load() || g.host {
			if g.wd.beat != 0 {
				g.wd = wedgeWatch{}
			}
			continue
		}
		if _, ok := g.sm.(deposable); ok && g.wd.wedged(g.beat.Load(), now, c.lag.total) {
			wedged = append(wedged, g)
		}
	}
	s.raft.mu.Unlock()
	for _, g := range wedged {
		s.wg.Add(1) // the clock's goroutine is counted: Shutdown's Wait has not returned
		go g.depose(g.wd.stuck(now, c.lag.total))
	}
}

// depose ends the leadership of a wedged group as far as its server can
// without the group's goroutine (see above). It may wait for the stream's
// lock, held by a stalled write, to stop serving: the announcement goes
// first.
func (g *raftGroup) depose(stuck time.Duration) {
	defer g.srv.wg.Done()
	g.mu.Lock()
	st := g.last
	ok := g.failure == nil && st.Role == raft.Leader && st.Term > g.deposed.Load()
	if ok {
		g.deposed.Store(st.Term)
	}
	g.mu.Unlock()
	if !ok {
		return
	}
	g.srv.Warnf("RAFT group %q: wedged for %v in one pass while leading term %d: resigning the leadership",
		g.name, stuck.Round(time.Millisecond), st.Term)
	g.srv.raft.elections.deposed.Add(1)
	g.sm.(deposable).deposed(st.Term)
	g.tell(false)
}

// deposedNow reports whether the group last observed itself leading a
// term its server deposed (the state machine is told it follows).
func (g *raftGroup) deposedNow() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last.Role == raft.Leader && g.last.Term <= g.deposed.Load()
}

// resignIfDeposed makes a node that still leads in a deposed term resign
// (group goroutine, after a pass); it reports whether it did.
func (g *raftGroup) resignIfDeposed() bool {
	d := g.deposed.Load()
	if d == 0 {
		return false
	}
	n := g.drv.Node
	if st := n.SoftState(); st.Role != raft.Leader || st.Term > d {
		return false
	}
	g.srv.Noticef("RAFT group %q: back after its leadership in term %d was deposed: resigning", g.name, d)
	n.Resign()
	g.srv.raft.elections.resigned.Add(1)
	return true
}
