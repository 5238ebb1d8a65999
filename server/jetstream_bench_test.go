package server

import (
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// BenchmarkJSPublish compares plain publishes with publishes carrying
// Nats-Expected-Last-Subject-Sequence on a one-server file stream, with
// many publishes in flight (async, as the bench tools do).
func BenchmarkJSPublish(b *testing.B) {
	for _, expected := range []bool{false, true} {
		name := "Plain"
		if expected {
			name = "ExpectedLastSubjectSequence"
		}
		b.Run(name, func(b *testing.B) { benchJSPublish(b, expected) })
	}
}

func benchJSPublish(b *testing.B, expected bool) {
	s := runJSServer(b)
	nc, js := jsClient(b, s)
	_ = nc
	if _, err := js.CreateStream(ctx(b), jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}}); err != nil {
		b.Fatal(err)
	}
	const keys = 256 // one publish per key in flight, so every expectation holds
	last := make([]uint64, keys)
	payload := make([]byte, 128)
	b.ResetTimer()
	for i := 0; i < b.N; {
		n := min(256, b.N-i)
		futures := make([]jetstream.PubAckFuture, 0, n)
		for j := 0; j < n; j++ {
			k := (i + j) % keys
			m := nats.NewMsg("b.k" + strconv.Itoa(k))
			m.Data = payload
			if expected {
				m.Header.Set(JSExpectedLastSubjSeq, strconv.FormatUint(last[k], 10))
			}
			f, err := js.PublishMsgAsync(m)
			if err != nil {
				b.Fatal(err)
			}
			futures = append(futures, f)
		}
		for j, f := range futures {
			select {
			case ack := <-f.Ok():
				last[(i+j)%keys] = ack.Sequence
			case err := <-f.Err():
				b.Fatal(err)
			}
		}
		i += n
	}
}
