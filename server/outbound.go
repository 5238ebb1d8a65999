package server

import (
	"errors"
	"github.com/nats-io/nats-server/v2/internal/lattrace"
	"net"
	"strconv"
	"time"
)

var errClosed = errors.New("connection closed")

func itoa(n int) string { return strconv.Itoa(n) }

// writeLoop flushes queued output until the connection closes.
func (c *client) writeLoop() {
	defer c.srv.wg.Done()
	defer close(c.out.done)
	for range c.out.sig {
		if c.route != nil {
			c.yieldToRaftSenders() // outbuf_batch.go
		}
		c.mu.Lock()
		chunks, n := c.out.take()
		closing := c.closing
		wd := c.srv.getOpts().WriteDeadline
		c.mu.Unlock()
		if n > 0 && !c.write(chunks, n, wd) {
			return
		}
		c.mu.Lock()
		c.out.recycle(chunks)
		if c.out.stc != nil && c.out.pending < stallBytes {
			close(c.out.stc)
			c.out.stc = nil
		}
		pendingClose := c.closing && c.out.pending == 0
		c.mu.Unlock()
		if closing || pendingClose {
			c.nc.Close()
			return
		}
	}
}

// write sends the chunks with one writev; on failure it closes the
// connection and reports false. Only the write loop calls it.
func (c *client) write(chunks [][]byte, size int, wd time.Duration) bool {
	_ = c.nc.SetWriteDeadline(time.Now().Add(wd))
	c.out.wbufs = append(c.out.wbufs[:0], chunks...)
	c.out.writes.Add(1)
	if lattrace.On {
		lattrace.Mark("write", boolInt(c.route != nil)*1000000+size)
	}
	n, err := c.out.wbufs.WriteTo(c.nc)
	if lattrace.On {
		lattrace.Mark("write.done", boolInt(c.route != nil))
	}
	if err == nil {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.srv.Noticef("%s - Slow Consumer Detected: WriteDeadline of %v exceeded with %d of %d bytes written", c, wd, n, size)
		c.srv.stats.slowConsumers.Add(1)
		c.markClosed(SlowConsumerWriteDeadline)
	} else {
		c.markClosed(WriteError)
	}
	c.nc.Close()
	return false
}

// markClosed records the first close reason; it reports whether this call
// was the first.
func (c *client) markClosed(reason ClosedState) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.closing = true
	c.reason = reason
	c.stopTimersLocked()
	return true
}

func (c *client) stopTimersLocked() {
	if c.pingTimer != nil {
		c.pingTimer.Stop()
	}
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
}

// closeConnection flushes what is queued (bounded by the write deadline)
// and closes the socket.
func (c *client) closeConnection(reason ClosedState) {
	if c.markClosed(reason) {
		c.out.signal()
	}
}

// closeNow closes without flushing (slow consumers: the peer is not reading).
func (c *client) closeNow(reason ClosedState) {
	c.markClosed(reason)
	c.nc.Close()
	c.out.signal()
}

// queueLocked queues protocol output (PONG, +OK, -ERR, INFO, PING) under
// mu. It counts against max_pending as messages do, so a client that sends
// PINGs and never reads is closed as a slow consumer instead of growing the
// server's memory. It returns false when the client is closing or became a
// slow consumer.
func (c *client) queueLocked(b []byte) bool {
	if c.closing {
		return false
	}
	c.out.write(b)
	return c.checkPendingLocked()
}

// checkPendingLocked checks the pending limit after data was appended under
// mu. It returns false when the client became a slow consumer.
func (c *client) checkPendingLocked() bool {
	if int64(c.out.pending) <= c.srv.maxPending.Load() || c.closing {
		return true
	}
	c.srv.Noticef("%s - Slow Consumer Detected: MaxPending of %d Exceeded", c, c.srv.maxPending.Load())
	c.srv.stats.slowConsumers.Add(1)
	c.closing = true
	c.reason = SlowConsumerPendingBytes
	c.stopTimersLocked()
	c.out.drop()
	go c.nc.Close()
	c.out.signal()
	return false
}

// teardown runs once when the read loop ends: it drops subscriptions and
// deregisters the client.
func (c *client) teardown() {
	c.closeConnection(ClientClosed)
	<-c.out.done
	closed := c.connInfo(time.Now().UTC(), true)
	closed.Subs = c.subjects()
	c.mu.Lock()
	subs := c.subs
	c.subs = nil
	acc := c.acc
	c.mu.Unlock()
	if acc != nil {
		for _, sub := range subs {
			acc.unsubscribe(sub)
		}
		acc.nclients.Add(-1)
	}
	c.srv.removeClient(c, closed)
}

// pingLoop arms the next server PING.
func (c *client) setPingTimer() {
	d := c.srv.getOpts().PingInterval
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return
	}
	c.pingTimer = time.AfterFunc(d, c.processPingTimer)
}

func (c *client) processPingTimer() {
	max := c.srv.getOpts().MaxPingsOut
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if c.pingOut+1 > max {
		c.mu.Unlock()
		c.srv.Debugf("%s - Stale Client Connection - Closing", c)
		c.srv.stats.staleConnections.Add(1)
		c.sendErrAndClose("Stale Connection", StaleConnection)
		return
	}
	c.pingOut++
	c.rttStart = time.Now()
	c.queueLocked([]byte("PING\r\n"))
	c.mu.Unlock()
	c.out.signal()
	c.setPingTimer()
}

// boolInt is 1 for true (lattrace marks).
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
