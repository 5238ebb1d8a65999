package server

import (
	"time"

	"github.com/nats-io/nats-server/v2/internal/lockorder"
)

// groupCommit makes a file stream durable. With sync_interval "always" a
// publish is acknowledged only after an fsync that covers it; one fsync
// covers every publish that arrived while the previous one ran (group
// commit). Every file stream also syncs its store every interval, from
// the server's sync schedule (stream_sync_sched.go): no goroutine or
// timer of its own, so thousands of idle streams cost no stacks and
// share their wake-ups.
type groupCommit struct {
	mu      lockorder.Mutex[lockorder.GroupCommit]
	mset    *stream
	always  bool
	pending []pendingAck
	spare   []pendingAck // the previous batch's slice, reused
	stopped bool
	sig     chan struct{}
	quit    chan struct{}
	done    chan struct{}
	sched   *syncSchedule
	item    *syncItem // this stream's place in sched
	every   time.Duration
}

type pendingAck struct {
	reply string
	ack   []byte
}

func newGroupCommit(mset *stream, always bool, interval time.Duration) *groupCommit {
	if interval <= 0 {
		interval = 2 * time.Minute
	}
	g := &groupCommit{mset: mset, always: always, sig: make(chan struct{}, 1),
		quit: make(chan struct{}), done: make(chan struct{}),
		sched: mset.jsa.js.syncs, every: interval}
	g.item = &syncItem{g: g, index: -1}
	g.sched.add(g.item, interval)
	if !always { // nothing waits for a sync: the schedule is enough
		close(g.done)
		return g
	}
	go g.loop()
	return g
}

// periodic is the schedule's sync; a failure is handled after mu (it
// takes stream.mu: stream_store_failure.go).
func (g *groupCommit) periodic() {
	if err := g.periodicLocked(); err != nil {
		g.mset.storeSyncFailed(err)
	}
}

// periodicLocked syncs under mu, so stop waits for it and no sync starts
// (nor is scheduled) after stop.
func (g *groupCommit) periodicLocked() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return nil
	}
	err := g.mset.storeSafely("sync", g.mset.st().Sync)
	if err != nil {
		g.mset.jsa.js.srv.Errorf("JetStream: stream %q sync failed: %v", g.mset.name, err)
	}
	g.sched.add(g.item, g.every)
	return err
}

// ackAfterSync queues an ack to be sent once the message is on disk.
func (g *groupCommit) ackAfterSync(reply string, ack []byte) {
	g.queue(reply, ack)
	g.signal()
}

// queue adds an ack to the next sync without starting it (signal does):
// a client's read buffer queues all its publishes, then signals once, so
// one fsync covers them. After stop (the stream's store was stopped,
// synced) the ack goes at once.
func (g *groupCommit) queue(reply string, ack []byte) {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		g.mset.jsa.js.srv.deliver(nil, g.mset.jsa.acc, reply, "", nil, ack)
		return
	}
	g.pending = append(g.pending, pendingAck{reply, ack})
	g.mu.Unlock()
}

// signal starts a sync of what is queued (if one is not pending already).
func (g *groupCommit) signal() {
	select {
	case g.sig <- struct{}{}:
	default:
	}
}

func (g *groupCommit) loop() {
	defer close(g.done)
	for {
		select {
		case <-g.sig:
			g.flush()
		case <-g.quit:
			g.flush()
			return
		}
	}
}

// flush syncs once and releases every ack waiting for it.
func (g *groupCommit) flush() {
	g.mu.Lock()
	batch := g.pending
	g.pending, g.spare = g.spare[:0], nil
	g.mu.Unlock()
	if len(batch) == 0 {
		g.mu.Lock()
		g.spare = batch
		g.mu.Unlock()
		return
	}
	defer func() {
		clear(batch)
		g.mu.Lock()
		g.spare = batch[:0]
		g.mu.Unlock()
	}()
	err := g.mset.storeSafely("sync", g.mset.st().Sync)
	g.mset.storeWriteFailed(err)
	srv, acc := g.mset.jsa.js.srv, g.mset.jsa.acc
	for _, p := range batch {
		ack := p.ack
		if err != nil {
			ack = g.mset.pubAckJSON(pubOutcome{err: errStoreFailed(err)}, "")
		}
		srv.deliver(nil, acc, p.reply, "", nil, ack)
	}
}

func (g *groupCommit) stop() {
	close(g.quit)
	<-g.done
	g.mu.Lock()
	g.stopped = true
	g.sched.remove(g.item)
	g.mu.Unlock()
	g.flush() // what was queued after the loop's last flush
}
