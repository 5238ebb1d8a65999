// Command mkstreams creates N R3 file streams S0..S<N-1> (subject s.<i>)
// one after another and publishes one message into each; scripts/idle-cpu
// uses it. Usage: mkstreams -s URL -n N
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	url := flag.String("s", nats.DefaultURL, "server URL")
	n := flag.Int("n", 100, "streams to create")
	flag.Parse()
	nc, err := nats.Connect(*url)
	if err != nil {
		log.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		log.Fatal(err)
	}
	t0 := time.Now()
	for i := range *n {
		name := "S" + strconv.Itoa(i)
		cfg := jetstream.StreamConfig{Name: name, Subjects: []string{"s." + strconv.Itoa(i)}, Replicas: 3, Storage: jetstream.FileStorage}
		if err := retry(func(ctx context.Context) error { _, err := js.CreateOrUpdateStream(ctx, cfg); return err }); err != nil {
			log.Fatalf("creating %s: %v", name, err)
		}
		if err := retry(func(ctx context.Context) error {
			_, err := js.Publish(ctx, "s."+strconv.Itoa(i), []byte("x"))
			return err
		}); err != nil {
			log.Fatalf("publishing into %s: %v", name, err)
		}
	}
	fmt.Printf("created %d streams in %.1f s\n", *n, time.Since(t0).Seconds())
}

// retry runs f with a 10 s timeout, up to 60 times.
func retry(f func(context.Context) error) error {
	var err error
	for range 60 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err = f(ctx)
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	return err
}
