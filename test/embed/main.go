// Command embed is a program written as one embedding upstream nats-server
// is written; its go.mod switches it to Tern with one replace line. It runs
// a server with JetStream in process, publishes into a stream through
// nats.go, prints what the monitoring API reports, and shuts down.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run() error {
	dir, err := os.MkdirTemp("", "embed")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ns, err := server.NewServer(&server.Options{
		ServerName: "embedded",
		Host:       "127.0.0.1",
		Port:       server.RANDOM_PORT,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
	})
	if err != nil {
		return err
	}
	ns.ConfigureLogger()
	go ns.Start()
	if !ns.ReadyForConnections(5 * time.Second) {
		return fmt.Errorf("server not ready")
	}
	defer ns.WaitForShutdown()
	defer ns.Shutdown()

	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		return err
	}
	ack, err := js.Publish(ctx, "orders.1", []byte("hello"))
	if err != nil {
		return err
	}
	jsz, err := ns.Jsz(nil)
	if err != nil {
		return err
	}
	fmt.Printf("stored at seq %d; server %s has %d stream(s), %d message(s) in %s\n",
		ack.Sequence, ns.Name(), jsz.Streams, jsz.Messages, ns.StoreDir())
	return nil
}
