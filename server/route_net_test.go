//go:build !race

package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// routeNet stands between the servers of a process cluster, so that a test
// can partition them: every route goes through a TCP proxy in front of the
// server it dials, and each server advertises its proxy as its route
// address, so the peers it gossips are proxies too. A cut between two
// servers closes the routes between them and closes every new one as soon
// as the dialling server names itself (its INFO), until the cut heals. The
// servers see what a real partition shows them: connections that break
// and cannot be made again. A silenced pair's routes stay open but carry
// nothing until the heal (every byte held, then delivered, as TCP
// retransmits after a short outage): the servers find out only from
// missing pings and write deadlines. (Network namespaces and iptables would do it
// below TCP; this machine has neither, and a proxy cuts only routes, while
// clients keep reaching every server, as in a partition between racks.)
type routeNet struct {
	t     *testing.T
	mu    sync.Mutex
	cut   map[[2]string]bool // pairs of server names (sorted) cut apart
	quiet map[[2]string]bool // pairs silenced: routes open, nothing passes
	// changed is closed and replaced when quiet or closing changes.
	changed chan struct{}
	closing bool
	conns   map[*proxyConn]struct{}
	lns     []net.Listener
	wg      sync.WaitGroup
	// severed and refused count the routes cuts closed: open ones, and
	// new ones as their dialler named itself; held the open routes
	// silenced.
	severed, refused, held int
}

// proxyConn is one route through a proxy: from dials to (from is "" until
// its INFO named it).
type proxyConn struct {
	dialer, server net.Conn
	from, to       string
}

func pairOf(a, b string) [2]string {
	if a > b {
		a, b = b, a
	}
	return [2]string{a, b}
}

// newRouteNet starts no proxy yet; listen adds them.
func newRouteNet(t *testing.T) *routeNet {
	n := &routeNet{t: t, cut: map[[2]string]bool{}, quiet: map[[2]string]bool{}, conns: map[*proxyConn]struct{}{},
		changed: make(chan struct{})}
	t.Cleanup(n.close)
	return n
}

// listen starts the proxy of server name, whose cluster port is target,
// and returns the proxy's port.
func (n *routeNet) listen(name string, target int) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		n.t.Fatal(err)
	}
	n.mu.Lock()
	n.lns = append(n.lns, l)
	n.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		for {
			d, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", target))
			if err != nil {
				d.Close()
				continue
			}
			n.relay(&proxyConn{dialer: d, server: s, to: name})
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// relay copies both ways until either side closes; the dialer's side is
// read line by line until its INFO names it, then the cut decides.
func (n *routeNet) relay(pc *proxyConn) {
	n.mu.Lock()
	n.conns[pc] = struct{}{}
	n.mu.Unlock()
	done := func() {
		pc.dialer.Close()
		pc.server.Close()
		n.mu.Lock()
		delete(n.conns, pc)
		n.mu.Unlock()
	}
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		n.pass(pc, pc.dialer, pc.server)
		done()
	}()
	go func() {
		defer n.wg.Done()
		defer done()
		br := bufio.NewReaderSize(pc.dialer, 64<<10)
		for pc.from == "" {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if name := infoName(line); name != "" && !n.named(pc, name) {
				return // cut: the route is closed before the server hears it
			}
			if _, err := pc.server.Write(line); err != nil {
				return
			}
		}
		n.pass(pc, pc.server, br)
	}()
}

// pass copies src to dst until either fails, holding each chunk while
// pc's pair is silenced.
func (n *routeNet) pass(pc *proxyConn, dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			if !n.awaitVoice(pc) {
				return
			}
			if _, werr := dst.Write(buf[:k]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// awaitVoice waits while pc's pair is silenced; false once the net closes.
func (n *routeNet) awaitVoice(pc *proxyConn) bool {
	for {
		n.mu.Lock()
		silent := pc.from != "" && n.quiet[pairOf(pc.from, pc.to)]
		ch, closing := n.changed, n.closing
		n.mu.Unlock()
		if closing {
			return false
		}
		if !silent {
			return true
		}
		<-ch
	}
}

// silence holds everything between a and b, both ways, until the heal:
// their routes stay open.
func (n *routeNet) silence(a, b string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.quiet[pairOf(a, b)] = true
	for pc := range n.conns {
		if pc.from != "" && pairOf(pc.from, pc.to) == pairOf(a, b) {
			n.held++
		}
	}
}

// notifyLocked wakes the held copies.
func (n *routeNet) notifyLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// infoName is the server_name of an INFO line ("" for any other line).
func infoName(line []byte) string {
	rest, ok := bytes.CutPrefix(line, []byte("INFO "))
	if !ok {
		return ""
	}
	var info struct {
		Name string `json:"server_name"`
	}
	if json.Unmarshal(bytes.TrimSpace(rest), &info) != nil {
		return ""
	}
	return info.Name
}

// named records who dialled pc and reports whether the route may stay.
func (n *routeNet) named(pc *proxyConn, name string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	pc.from = name
	if n.cut[pairOf(name, pc.to)] {
		n.refused++
		return false
	}
	return true
}

// sever cuts a from b (both ways) and closes the routes between them.
func (n *routeNet) sever(a, b string) {
	n.mu.Lock()
	n.cut[pairOf(a, b)] = true
	var doomed []*proxyConn
	for pc := range n.conns {
		if pc.from != "" && pairOf(pc.from, pc.to) == pairOf(a, b) {
			doomed = append(doomed, pc)
		}
	}
	n.severed += len(doomed)
	n.mu.Unlock()
	for _, pc := range doomed {
		pc.dialer.Close()
		pc.server.Close()
	}
}

// isolate cuts name from every other server in names (silently: their
// routes stay open and carry nothing).
func (n *routeNet) isolate(name string, names []string, silently bool) {
	for _, o := range names {
		if o != name {
			n.cutPair(name, o, silently)
		}
	}
}

// cutPair severs a from b, or silences them.
func (n *routeNet) cutPair(a, b string, silently bool) {
	if silently {
		n.silence(a, b)
	} else {
		n.sever(a, b)
	}
}

// cuts reports how many routes the cuts closed, open and new, and how
// many open ones were silenced.
func (n *routeNet) cuts() (severed, refused, held int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.severed, n.refused, n.held
}

// heal lifts every cut and silence; the servers' next dials get through,
// and what silenced routes held is delivered.
func (n *routeNet) heal() {
	n.mu.Lock()
	clear(n.cut)
	clear(n.quiet)
	n.notifyLocked()
	n.mu.Unlock()
}

// meshed reports whether every pair of names has a route through the
// proxies (a connection whose dialler named itself).
func (n *routeNet) meshed(names []string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	up := map[[2]string]bool{}
	for pc := range n.conns {
		if pc.from != "" && pc.from != pc.to {
			up[pairOf(pc.from, pc.to)] = true
		}
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			if !up[pairOf(a, b)] {
				return false
			}
		}
	}
	return true
}

// healAndMesh lifts every cut and waits until the routes are back between
// every pair (they redial with backoff, up to 2 s apart), so that the next
// fault cuts a whole cluster.
func (n *routeNet) healAndMesh(names []string) {
	n.heal()
	waitFor(n.t, 15*time.Second, "the routes back after a heal", func() bool { return n.meshed(names) })
}

func (n *routeNet) close() {
	n.mu.Lock()
	n.closing = true
	n.notifyLocked()
	for _, l := range n.lns {
		l.Close()
	}
	for pc := range n.conns {
		pc.dialer.Close()
		pc.server.Close()
	}
	n.mu.Unlock()
	n.wg.Wait()
}

// startPartitionableCluster starts three servers of this build whose
// routes all go through net's proxies (server i is named N<i+1>).
func startPartitionableCluster(t *testing.T) (*chaosCluster, *routeNet) {
	rn := newRouteNet(t)
	c := &chaosCluster{procCluster: procCluster{t: t, procs: make([]*serverProcess, 3)}, net: rn}
	var cports, proxies, names []string
	for i := range 3 {
		c.ports = append(c.ports, freePort(t))
		cp := freePort(t)
		cports = append(cports, itoa(cp))
		names = append(names, fmt.Sprintf("N%d", i+1))
		proxies = append(proxies, itoa(rn.listen(names[i], cp)))
	}
	var routes []string
	for _, p := range proxies {
		routes = append(routes, "nats-route://127.0.0.1:"+p)
	}
	// TERN_CHAOS_STALE=1 lets followers answer direct gets from their own
	// state (stale_direct_reads): the chaos must then find stale reads.
	extra := ""
	if os.Getenv("TERN_CHAOS_STALE") == "1" {
		extra = ", stale_direct_reads: true"
	}
	dir := t.TempDir()
	for i := range 3 {
		conf := fmt.Sprintf("server_name: %s\nlisten: 127.0.0.1:%d\njetstream { store_dir: %q%s }\n"+
			"cluster { name: CHAOS, listen: 127.0.0.1:%s, advertise: \"127.0.0.1:%s\", routes: [%s] }\n",
			names[i], c.ports[i], t.TempDir(), extra, cports[i], proxies[i], strings.Join(routes, ", "))
		path := filepath.Join(dir, fmt.Sprintf("n%d.conf", i+1))
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		c.confs = append(c.confs, path)
	}
	for i := range c.confs {
		c.startProc(i, "")
	}
	return c, rn
}

// serverNames is N1..N3, the names startPartitionableCluster gives.
func serverNames(c *chaosCluster) []string {
	var out []string
	for i := range c.procs {
		out = append(out, fmt.Sprintf("N%d", i+1))
	}
	return slices.Clip(out)
}
