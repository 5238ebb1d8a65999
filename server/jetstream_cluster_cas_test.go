package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// casAck is the PubAck or error a writer gets back.
type casAck struct {
	Stream    string    `json:"stream"`
	Seq       uint64    `json:"seq"`
	Duplicate bool      `json:"duplicate"`
	Error     *ApiError `json:"error"`
}

// clusterCASVariant describes how each round's conditional publish is built.
type clusterCASVariant struct {
	name string
	// msg builds writer w's publish in a round expecting `expect`.
	msg func(w, round int, expect uint64) *nats.Msg
	// wantErr is the err_code every loser must get (0: losers are duplicates).
	wantErr uint16
}

var clusterCASVariants = []clusterCASVariant{
	{"LastSubjectSequence", func(w, round int, expect uint64) *nats.Msg {
		m := nats.NewMsg("cas.key")
		m.Header.Set(JSExpectedLastSubjSeq, strconv.FormatUint(expect, 10))
		m.Data = []byte(fmt.Sprintf("w%d-r%d", w, round))
		return m
	}, 10071},
	{"LastSubjectSequenceSubjectWildcard", func(w, round int, expect uint64) *nats.Msg {
		// Writers race on different subjects that all match cas.*: the
		// expectation reads the last sequence of any of them.
		m := nats.NewMsg(fmt.Sprintf("cas.k%d", w%4))
		m.Header.Set(JSExpectedLastSubjSeq, strconv.FormatUint(expect, 10))
		m.Header.Set(JSExpectedLastSubjSeqSubj, "cas.*")
		m.Data = []byte(fmt.Sprintf("w%d-r%d", w, round))
		return m
	}, 10071},
	{"LastSequence", func(w, round int, expect uint64) *nats.Msg {
		m := nats.NewMsg("cas.any")
		m.Header.Set(JSExpectedLastSeq, strconv.FormatUint(expect, 10))
		return m
	}, 10071},
	{"MsgId", func(w, round int, expect uint64) *nats.Msg {
		m := nats.NewMsg("cas.id")
		m.Header.Set(JSMsgId, fmt.Sprintf("round-%d", round))
		return m
	}, 0},
}

const clusterCASWriters, clusterCASRounds = 16, 200

func TestJetStreamClusterConcurrentExpected(t *testing.T) {
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(storage.String(), func(t *testing.T) {
			c := runJSCluster(t, 3)
			for _, v := range clusterCASVariants {
				t.Run(v.name, func(t *testing.T) { runClusterCASRounds(t, c, storage, v, false) })
			}
			t.Run("LeaderStepdownMidway", func(t *testing.T) { runClusterCASRounds(t, c, storage, clusterCASVariants[0], true) })
		})
	}
}

func runClusterCASRounds(t *testing.T, c *jsTestCluster, storage jetstream.StorageType, v clusterCASVariant, stepdown bool) {
	name := "CAS" + strconv.Itoa(int(time.Now().UnixNano()%1e9))
	_, js := jsClient(t, c.servers[0])
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: name, Subjects: []string{"cas.>"},
		Replicas: 3, Storage: storage}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { js.DeleteStream(ctx(t), name) })
	// Writers spread over every server, several per connection.
	conns := make([]*nats.Conn, 8)
	for i := range conns {
		conns[i] = connectNATS(t, c.servers[i%len(c.servers)].ClientURL())
	}
	var expect uint64
	stored := 0
	for round := 0; round < clusterCASRounds; round++ {
		if stepdown && round == clusterCASRounds/2 {
			stepdownStream(t, conns[0], name)
		}
		acks := make([]casAck, clusterCASWriters)
		errs := make([]error, clusterCASWriters)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := 0; w < clusterCASWriters; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				acks[w], errs[w] = clusterCASPublish(conns[w%len(conns)], v.msg(w, round, expect))
			}()
		}
		close(start)
		wg.Wait()
		winners := 0
		for w := range acks {
			switch {
			case errs[w] != nil:
				t.Fatalf("round %d writer %d: %v", round, w, errs[w])
			case acks[w].Error == nil && !acks[w].Duplicate:
				winners++
				expect = acks[w].Seq
			case v.wantErr == 0 && acks[w].Duplicate:
			case acks[w].Error != nil && acks[w].Error.ErrCode == v.wantErr && v.wantErr != 0:
			default:
				t.Fatalf("round %d writer %d: unexpected answer %+v (err %+v)", round, w, acks[w], acks[w].Error)
			}
		}
		if winners != 1 {
			t.Fatalf("round %d: %d winners", round, winners)
		}
		stored++
	}
	checkReplicasAgree(t, c, name, uint64(stored))
}

func clusterCASPublish(nc *nats.Conn, m *nats.Msg) (casAck, error) {
	var ack casAck
	for attempt := 0; attempt < 20; attempt++ {
		resp, err := nc.RequestMsg(m, 5*time.Second)
		if err == nats.ErrNoResponders { // between leaders: retry
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if err != nil {
			return ack, err
		}
		ack = casAck{}
		if err := json.Unmarshal(resp.Data, &ack); err != nil {
			return ack, err
		}
		if ack.Error != nil && ack.Error.ErrCode == 10008 {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		return ack, nil
	}
	return ack, fmt.Errorf("no answer after retries")
}

func stepdownStream(t *testing.T, nc *nats.Conn, name string) {
	t.Helper()
	resp, err := nc.Request("$JS.API.STREAM.LEADER.STEPDOWN."+name, nil, 5*time.Second)
	if err != nil {
		t.Fatalf("stepdown: %v", err)
	}
	var r struct {
		Success bool      `json:"success"`
		Error   *ApiError `json:"error"`
	}
	if json.Unmarshal(resp.Data, &r); !r.Success {
		t.Fatalf("stepdown refused: %s", resp.Data)
	}
}

// checkReplicasAgree waits until every replica applied the same entries
// and compares their digests and per-subject state.
func checkReplicasAgree(t *testing.T, c *jsTestCluster, name string, msgs uint64) {
	t.Helper()
	agree := func() (bool, string) {
		reps := c.replicas(name)
		var desc []string
		want := 3
		if sa := c.servers[0].js.Load().cluster.assignment(globalAccountName, name); sa != nil {
			want = len(sa.Peers)
		}
		ok := len(reps) == want
		for _, m := range reps {
			var st StreamState
			m.st().FastState(&st)
			m.mu.Lock()
			a, d, li, in := m.applied, m.digest, m.lastIndex, m.installs
			m.mu.Unlock()
			desc = append(desc, fmt.Sprintf("%s: msgs %d applied %d digest %x index %d installs %d",
				m.jsa.js.srv.Name(), st.Msgs, a, d, li, in))
			r0 := reps[0]
			r0.mu.Lock()
			a0, d0 := r0.applied, r0.digest
			r0.mu.Unlock()
			ok = ok && st.Msgs == msgs && a == a0 && d == d0
		}
		return ok, strings.Join(desc, "; ")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, desc := agree()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas do not converge: %s", desc)
		}
		time.Sleep(10 * time.Millisecond)
	}
	reps := c.replicas(name)
	want := reps[0].st().SubjectsState(">")
	for _, m := range reps[1:] {
		got := m.st().SubjectsState(">")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("per-subject state differs:\n%v\n%v", got, want)
		}
	}
}
