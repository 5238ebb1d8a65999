package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestJetStreamAccountLimits(t *testing.T) {
	js := limitedAccount(t, "max_mem: 2KB, max_file: 1MB, max_streams: 1")
	info, err := js.AccountInfo(ctx(t))
	if err != nil || info.Limits.MaxMemory != 2048 || info.Limits.MaxStore != 1<<20 || info.Limits.MaxStreams != 1 {
		t.Fatalf("limits %+v %v", info, err)
	}
	createStream(t, js, jetstream.StreamConfig{Name: "M", Subjects: []string{"m"}, Storage: jetstream.MemoryStorage})
	if _, err := js.CreateStream(ctx(t), jetstream.StreamConfig{Name: "N", Subjects: []string{"n"}}); apiCode(err) != 10027 {
		t.Fatalf("second stream: %v", err)
	}
	payload := []byte(strings.Repeat("x", 400))
	stored := 0
	var lastErr error
	for i := 0; i < 10; i++ {
		if _, err := js.Publish(ctx(t), "m", payload); err != nil {
			lastErr = err
			break
		}
		stored++
	}
	if stored == 0 || stored == 10 || apiCode(lastErr) != 10023 {
		t.Fatalf("stored %d before the 2KB limit, last error %v", stored, lastErr)
	}
}

// TestJetStreamAccountLimitsShared: two streams share the account's
// max_file. A publish reads its own stream's size each time and the sum
// over the others at most usageRefresh old, so once that long has passed
// since the last write to A, B stops exactly where A's bytes leave it.
func TestJetStreamAccountLimitsShared(t *testing.T) {
	const limit = 16 << 10
	js := limitedAccount(t, "max_file: 16KB")
	a := createStream(t, js, jetstream.StreamConfig{Name: "A", Subjects: []string{"a"}})
	createStream(t, js, jetstream.StreamConfig{Name: "B", Subjects: []string{"b"}})
	payload := []byte(strings.Repeat("x", 1000))
	for i := 0; i < 8; i++ {
		if _, err := js.Publish(ctx(t), "a", payload); err != nil {
			t.Fatal(err)
		}
	}
	wrote := time.Now()
	info, err := a.Info(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	per := info.State.Bytes / 8
	room := (limit - info.State.Bytes) / per
	// The sum over the other streams may be usageRefresh old: that bound
	// is what is being checked, so the wait is for it to pass.
	time.Sleep(time.Until(wrote.Add(2 * usageRefresh)))
	stored := uint64(0)
	for ; stored <= room; stored++ {
		if _, err = js.Publish(ctx(t), "b", payload); err != nil {
			break
		}
	}
	if apiCode(err) != 10023 || stored != room {
		t.Fatalf("B stored %d beside A's %d bytes (room for %d of %d bytes), then %v", stored, info.State.Bytes, room, per, err)
	}
}

// limitedAccount starts a server from a config file whose account L has
// the given jetstream limits, and connects to it as L's user.
func limitedAccount(t *testing.T, limits string) jetstream.JetStream {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "l.conf")
	os.WriteFile(conf, []byte(`
listen: 127.0.0.1:-1
jetstream { store_dir: "`+dir+`" }
accounts { L { users: [{user: l, password: l}], jetstream: { `+limits+` } } }
`), 0o644)
	o, err := ProcessConfigFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	o.NoLog, o.NoSigs = true, true
	s := runServer(t, o)
	nc := connectNATS(t, s.ClientURL(), nats.UserInfo("l", "l"))
	js, _ := jetstream.New(nc)
	return js
}
