package server

import (
	"os"
	"path/filepath"
	"testing"
)

// A damaged protos.json (cut short by a crash of an older writer, or
// overwritten) neither stops the server nor counts a peer as newer than
// it last advertised: a peer it cannot read is a peer never heard.
func TestJetStreamClusterMetaIDsProtosFileDamaged(t *testing.T) {
	c := runJSCluster(t, 3)
	c.waitMetaLeader()
	c.waitPeerProtosKept(t, func(string) int { return routeProto })
	down := c.servers[2].Name()
	for _, bad := range []string{`{"` + down + `": 10`, `["S3"]`, `{"` + down + `": "10"}`, `{"` + down + `": 1e99}`, "\x00\x00"} {
		c.servers[2].Shutdown()
		c.servers[0].Shutdown()
		if err := os.WriteFile(filepath.Join(c.metaStoreDir(0), peerProtosFile), []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		s := c.restartWithPeerDown(t, 0, 2)
		jc := s.js.Load().cluster
		if v := jc.peerProtoKept(down); v != 0 || jc.metaIDsSupported() {
			t.Errorf("file %q: %s counts as route protocol %d (ids: %v)", bad, down, v, jc.metaIDsSupported())
		}
		c.servers[2] = runServer(t, c.opts[2])
		c.waitPeerProtosKept(t, func(string) int { return routeProto })
	}
}
