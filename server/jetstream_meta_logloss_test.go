package server

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats.go/jetstream"
)

// A lost or cut meta log on one server (jetstream_meta_repair.go), as
// stream_logloss_test.go for a stream: S3 stops, streams are created (meta
// entries acknowledged by S1 and S2 alone), S1 and S2 stop, S2's meta log
// loses those entries, and S2 and S3 start without S1. No meta leader may
// be elected between them (it would lack the streams and overwrite S1's
// log); once S1 is back every server knows every stream.

func TestJetStreamClusterLostMetaLogDir(t *testing.T) {
	testMetaLogLoss(t, func(t *testing.T, dir string, _ map[string]int64) {
		if err := os.RemoveAll(walDir(dir)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestJetStreamClusterCutMetaLogTail(t *testing.T) {
	testMetaLogLoss(t, func(t *testing.T, dir string, sizes map[string]int64) {
		cutLogTail(t, walDir(dir), sizes)
	})
}

// A bit flipped in the meta log's entries S2 acknowledged alone with S1
// (followed by valid frames: wal.ErrCorrupt, not a torn tail) stopped
// JetStream from starting on S2. Its log is cut back to its valid prefix
// and it recovers as from a cut log.
func TestJetStreamClusterFlippedMetaLogBit(t *testing.T) {
	testMetaLogLoss(t, func(t *testing.T, dir string, sizes map[string]int64) {
		flipLogTail(t, walDir(dir), sizes)
	})
}

func testMetaLogLoss(t *testing.T, damage logLossDamage) {
	c := runJSCluster(t, 3)
	nc, js := jsClient(t, c.servers[0])
	createStream(t, js, jetstream.StreamConfig{Name: "M0", Subjects: []string{"m0"}, Storage: jetstream.MemoryStorage})
	const n = 3
	runLogLoss(t, c, c.servers[1].js.Load().cluster.metaDir(), logLossSteps{
		stopped: func() {
			waitFor(t, 15*time.Second, "a meta leader among S1 and S2", func() bool {
				return c.servers[0].js.Load().cluster.isMetaLeader() || c.servers[1].js.Load().cluster.isMetaLeader()
			})
		},
		write: func() {
			for i := 1; i <= n; i++ { // acknowledged by S1 and S2
				createStreamEventually(t, js, jetstream.StreamConfig{Name: fmt.Sprintf("M%d", i), Subjects: []string{fmt.Sprintf("m%d", i)}, Storage: jetstream.MemoryStorage})
			}
			nc.Close()
		},
		leads: func(s *Server) bool {
			g, _ := s.js.Load().cluster.metaGroup()
			return g != nil && g.softState().Role == raft.Leader
		},
	}, damage)
	waitFor(t, 20*time.Second, "every server knowing every stream", func() bool {
		for _, s := range c.servers {
			jc := s.js.Load().cluster
			for i := 0; i <= n; i++ {
				if jc.assignment(globalAccountName, fmt.Sprintf("M%d", i)) == nil {
					return false
				}
			}
		}
		return true
	})
}
