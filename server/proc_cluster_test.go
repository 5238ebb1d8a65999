package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// procCluster is the config files, client ports and processes of servers
// run as separate processes (the chaos, damage and power-loss tests).
type procCluster struct {
	t     *testing.T
	confs []string
	ports []int
	procs []*serverProcess
}

// newProcCluster writes the config files of n servers named prefix1 to
// prefixN, routed to each other in the cluster named cluster (alone, with
// no cluster block, when n is 1); js(i) is the contents of server i's
// jetstream block. The files sit in a directory of their own (off any
// store directory a test damages). It starts no server.
func newProcCluster(t *testing.T, n int, prefix, cluster string, js func(i int) string) procCluster {
	c := procCluster{t: t, procs: make([]*serverProcess, n)}
	var cports, routes []string
	for range n {
		c.ports = append(c.ports, freePort(t))
		cports = append(cports, itoa(freePort(t)))
	}
	for _, p := range cports {
		routes = append(routes, "nats-route://127.0.0.1:"+p)
	}
	dir := t.TempDir()
	for i := range n {
		conf := fmt.Sprintf("server_name: %s%d\nlisten: 127.0.0.1:%d\njetstream { %s }\n", prefix, i+1, c.ports[i], js(i))
		if n > 1 {
			conf += fmt.Sprintf("cluster { name: %s, listen: 127.0.0.1:%s, routes: [%s] }\n", cluster, cports[i], strings.Join(routes, ", "))
		}
		path := filepath.Join(dir, fmt.Sprintf("%s%d.conf", strings.ToLower(prefix), i+1))
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		c.confs = append(c.confs, path)
	}
	return c
}

// startProc starts server i from binary ("" = this build) and waits until
// it listens.
func (c *procCluster) startProc(i int, binary string) *serverProcess {
	if binary == "" {
		binary = serverBinary(c.t)
	}
	c.procs[i] = startProcessBinary(c.t, binary, c.ports[i], "-c", c.confs[i])
	return c.procs[i]
}

// urls is the client URLs of every server, for a client that reconnects.
func (c *procCluster) urls() string {
	u := make([]string, len(c.ports))
	for i, p := range c.ports {
		u[i] = fmt.Sprintf("nats://127.0.0.1:%d", p)
	}
	return strings.Join(u, ",")
}

// logs is the last tail bytes of each started server's output, for a
// failure's message.
func (c *procCluster) logs(tail int) string {
	var b strings.Builder
	for i, p := range c.procs {
		if p == nil {
			continue
		}
		out := p.output()
		if len(out) > tail {
			out = out[len(out)-tail:]
		}
		name := strings.TrimSuffix(filepath.Base(c.confs[i]), ".conf")
		fmt.Fprintf(&b, "--- %s\n%s\n", strings.ToUpper(name), out)
	}
	return b.String()
}
