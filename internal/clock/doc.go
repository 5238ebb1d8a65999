// Package clock is the time seam of the JetStream and raft layers: every
// clock read and timer of the stream state machine, the raft group loop,
// the raft log, the meta group and JetStream's API waits goes through a
// Clock. Production uses Real (package time, nothing added); tests and
// the simulator use a Manual clock that moves only when told to, so a
// run does not depend on wall time or on the scheduler.
//
// What stays on package time, deliberately: the core NATS layer (client
// ping, auth and stall timers, RTT, the expiry of response permissions,
// route pings and reconnect backoff, TLS handshake and every net.Conn
// deadline, lame duck and shutdown waits, the accept loop's backoff) and
// monitoring (varz uptime, the Now field of every monitoring answer,
// statsz, closed connection records, config reload time). They measure the real network and report real time to
// operators; a simulated clock has nothing to say about them.
//
// The stores (internal/store) and the WAL (internal/wal) read no clock at
// all: a message's timestamp and an expiry cut-off arrive as arguments.
package clock
