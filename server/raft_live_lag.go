package server

// Own lag in node liveness: a peer is deemed down after raftLiveTimeout
// without a read from it, but a starved process reads late too. On a
// saturated machine (a 10,000-stream server restarted beside six spinning
// processes, issue 20) the servers deemed each other down after 1.0-2.0 s
// of "silence" while their own raft clock ticked 0.5-2.0 s late: the
// peers had sent, the bytes waited unread. Each such verdict woke every
// group the peer led into ranked elections (thousands of campaigns), and
// the elections loaded the machine more.
//
// So the silence that counts is the silence less this server's own lag
// meanwhile: the time its raft clock ticked late since the peer was last
// heard. The clock notes each tick's lateness (raftLag.note); a peer is
// down once silence - lag exceeds raftLiveTimeout. A healthy process
// ticks on time, so a real death (a hung peer; a killed one closes its
// route at once) is seen as fast as before. A reader busy with what the
// peer sent (route.busy) is not silence either: the peer spoke.

// raftLagRing is how many ticks raftLag remembers: 64 ticks span at least
// 3.2 s (raftTick 50 ms), more than any silence that decides.
const raftLagRing = 64

// raftLag is the raft clock's running sum of tick lateness, with the sum
// before each of the last raftLagRing ticks. Only the clock's goroutine
// touches it (checkLiveness).
type raftLag struct {
	total  int64 // ns of lateness summed over every tick
	at     [raftLagRing]int64
	before [raftLagRing]int64 // total before the tick at at[i]
	n      int                // ticks noted
}

// note records a tick at wall time now (ns) that came late ns late.
func (l *raftLag) note(now, late int64) {
	i := l.n % raftLagRing
	l.at[i], l.before[i] = now, l.total
	l.total += max(late, 0)
	l.n++
}

// since is the lateness summed over the ticks after wall time t (ns);
// when t is older than every tick remembered, over those remembered.
func (l *raftLag) since(t int64) int64 {
	from := l.total
	for j := 1; j <= min(l.n, raftLagRing); j++ {
		i := (l.n - j) % raftLagRing
		if l.at[i] <= t {
			break
		}
		from = l.before[i]
	}
	return l.total - from
}

// raftBusyReadMax bounds how long a reader busy with what a peer sent
// keeps the peer live: a peer hung in the middle of a frame is deemed
// down then (its route's read deadline is far longer).
var raftBusyReadMax = 5 * raftLiveTimeout

// peerSpoke reports whether route r's peer counts as heard from recently
// enough to be live.
func peerSpoke(r *route, now int64, lag *raftLag) bool {
	heard := r.heard.Load()
	silence := now - heard
	if silence <= int64(raftLiveTimeout) {
		return true
	}
	if r.busy.Load() && silence <= int64(raftBusyReadMax) {
		return true
	}
	return silence-min(lag.since(heard), int64(raftLagCreditMax)) <= int64(raftLiveTimeout)
}

// raftLagCreditMax bounds the own lag a peer's silence is excused for: a
// hung peer is deemed down within 5 s whatever this server's clock did (a
// test's manual clock may jump by hours in one tick).
var raftLagCreditMax = 4 * raftLiveTimeout
