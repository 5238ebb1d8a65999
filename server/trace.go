package server

import "strings"

// tracing reports whether protocol tracing (-V) is on.
func (c *client) tracing() bool { return c.srv.logging.trace.Load() }

// traceIn logs an operation received from the client, as nats-server's
// "<<- [OP args]" trace lines.
func (c *client) traceIn(op string, args ...[]byte) {
	var b strings.Builder
	b.WriteString(op)
	for _, a := range args {
		if len(a) > 0 {
			b.WriteByte(' ')
			b.Write(a)
		}
	}
	c.srv.Tracef("%s - <<- [%s]", c, b.String())
}

// traceOut logs a protocol line sent to the client.
func (c *client) traceOut(line string) {
	c.srv.Tracef("%s - ->> [%s]", c, strings.TrimRight(line, "\r\n"))
}

func (c *client) tracePub(subject, reply []byte, hdr int, msg []byte) {
	if hdr >= 0 {
		c.traceIn("HPUB", subject, reply, []byte(itoa(hdr)), []byte(itoa(len(msg))))
	} else {
		c.traceIn("PUB", subject, reply, []byte(itoa(len(msg))))
	}
	c.srv.Tracef("%s - <<- MSG_PAYLOAD: [%q]", c, msg)
}
