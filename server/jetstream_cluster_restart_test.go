package server

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamClusterRestartedReplicaAnswersNothingEarly: a server of a
// 3-server cluster restarts; a replica of an R3 stream holding many
// messages is registered before its group starts and rebuilds its store
// from the log. Reads sent through that server from the moment it accepts
// clients get the stream's real state or 10008, never an answer from the
// replica's empty or partial store ("no message found", too few messages).
func TestJetStreamClusterRestartedReplicaAnswersNothingEarly(t *testing.T) {
	c := runJSCluster(t, 3)
	nc := connectNATS(t, c.servers[0].ClientURL())
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	st := createStream(t, js, jetstream.StreamConfig{Name: "RST", Subjects: []string{"rst.>"}, Replicas: 3, AllowDirect: true})
	const n, keys = 20000, 10
	for i := 0; i < n; i++ {
		if _, err := js.PublishAsync(fmt.Sprintf("rst.k%d", i%keys), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(30 * time.Second):
				t.Fatal("publishes not acknowledged")
			}
		}
	}
	nc.Close()
	down := c.stopFollower(st.CachedInfo().Cluster.Leader)
	var early, answered, unavailable int
	for round := 0; round < 3; round++ {
		if round > 0 {
			c.servers[down].Shutdown()
		}
		c.servers[down] = runServer(t, c.opts[down])
		rc := connectNATS(t, c.servers[down].ClientURL())
		deadline := time.Now().Add(2 * time.Second)
		for i := 0; time.Now().Before(deadline); i++ {
			key := fmt.Sprintf("rst.k%d", i%keys)
			code, got, err := restartRead(rc, i%3, key)
			switch {
			case err != nil: // a timeout while the cluster settles
			case code == 10008:
				unavailable++
			case code != 0:
				t.Fatalf("round %d: %s answered error %d", round, key, code)
			case got < n && i%3 == 1:
				t.Fatalf("round %d: STREAM.INFO says %d messages, the stream has %d", round, got, n)
			case got == 0:
				early++
			default:
				answered++
			}
		}
		rc.Close()
	}
	t.Logf("%d reads answered, %d temporarily unavailable, %d early", answered, unavailable, early)
	if early > 0 || answered == 0 {
		t.Fatalf("%d answers came from a replica that was not serving, %d correct answers", early, answered)
	}
}

// restartRead sends STREAM.MSG.GET (kind 0) or a direct get (2) of key's
// last message, or STREAM.INFO (1), and returns the error code, or the
// message's sequence / the stream's message count.
func restartRead(nc *nats.Conn, kind int, key string) (int, uint64, error) {
	get := kind != 1
	subj, body := "$JS.API.STREAM.INFO.RST", []byte(nil)
	switch kind {
	case 0:
		subj, body = "$JS.API.STREAM.MSG.GET.RST", []byte(`{"last_by_subj":"`+key+`"}`)
	case 2:
		subj = "$JS.API.DIRECT.GET.RST." + key
	}
	msg, err := nc.Request(subj, body, 2*time.Second)
	if err != nil {
		return 0, 0, err
	}
	if kind == 2 {
		if st := msg.Header.Get("Status"); st != "" {
			return 0, 0, nil // 404: the key has thousands of messages
		}
		seq, err := strconv.ParseUint(msg.Header.Get(JSSequence), 10, 64)
		return 0, seq, err
	}
	var resp struct {
		Error   *ApiError `json:"error"`
		Message *struct {
			Seq uint64 `json:"seq"`
		} `json:"message"`
		State *struct {
			Msgs uint64 `json:"messages"`
		} `json:"state"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, 0, err
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == 10037 && strings.Contains(resp.Error.Description, "no message found"):
		return 0, 0, nil // the key has thousands of messages: an early answer
	case resp.Error != nil:
		return int(resp.Error.ErrCode), 0, nil
	case get && resp.Message != nil:
		return 0, resp.Message.Seq, nil
	case !get && resp.State != nil:
		return 0, resp.State.Msgs, nil
	}
	return 0, 0, fmt.Errorf("unexpected answer %s", msg.Data)
}
