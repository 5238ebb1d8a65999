package server

import (
	"bytes"
	"errors"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// The object store on one server with nats.go's jetstream package: Get,
// List, Watch and links read through ordered push consumers.
func TestObjectStoreOneServer(t *testing.T) {
	for _, st := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(st.String(), func(t *testing.T) {
			s := runJSServer(t)
			_, js := jsClient(t, s)
			obs, err := js.CreateObjectStore(ctx(t), jetstream.ObjectStoreConfig{Bucket: "O", Storage: st})
			if err != nil {
				t.Fatal(err)
			}
			big := make([]byte, 5<<20)
			rand.New(rand.NewSource(1)).Read(big)
			info, err := obs.Put(ctx(t), jetstream.ObjectMeta{Name: "big", Opts: &jetstream.ObjectMetaOptions{ChunkSize: 32 * 1024}}, bytes.NewReader(big))
			if err != nil || info.Size != uint64(len(big)) || info.Chunks != 160 {
				t.Fatalf("put: %v %+v", err, info)
			}
			got, err := obs.GetBytes(ctx(t), "big")
			if err != nil || !bytes.Equal(got, big) {
				t.Fatalf("get bytes: %v (%d bytes)", err, len(got))
			}
			r, err := obs.Get(ctx(t), "big")
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if _, err := buf.ReadFrom(r); err != nil || !bytes.Equal(buf.Bytes(), big) {
				t.Fatalf("get: %v (%d bytes)", err, buf.Len())
			}
			r.Close()
			if _, err := obs.PutString(ctx(t), "small", "hello"); err != nil {
				t.Fatal(err)
			}
			if v, err := obs.GetString(ctx(t), "small"); err != nil || v != "hello" {
				t.Fatalf("get string: %q %v", v, err)
			}

			// Watch sees the current objects, the nil marker, then changes.
			w, err := obs.Watch(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			var initial []string
			for oi := range w.Updates() {
				if oi == nil {
					break
				}
				initial = append(initial, oi.Name)
			}
			if !slices.Equal(initial, []string{"big", "small"}) {
				t.Fatalf("watch initial: %v", initial)
			}

			if _, err := obs.AddLink(ctx(t), "link", info); err != nil {
				t.Fatal(err)
			}
			if v, err := obs.GetBytes(ctx(t), "link"); err != nil || !bytes.Equal(v, big) {
				t.Fatalf("get through link: %v", err)
			}
			other, _ := js.CreateObjectStore(ctx(t), jetstream.ObjectStoreConfig{Bucket: "O2", Storage: st})
			if _, err := obs.AddBucketLink(ctx(t), "blink", other); err != nil {
				t.Fatal(err)
			}
			if err := obs.UpdateMeta(ctx(t), "small", jetstream.ObjectMeta{Name: "small2", Description: "renamed"}); err != nil {
				t.Fatal(err)
			}
			if gi, err := obs.GetInfo(ctx(t), "small2"); err != nil || gi.Description != "renamed" || gi.Size != 5 {
				t.Fatalf("get info after update meta: %v %+v", err, gi)
			}
			if err := obs.Delete(ctx(t), "big"); err != nil {
				t.Fatal(err)
			}
			if _, err := obs.GetBytes(ctx(t), "big"); !errors.Is(err, jetstream.ErrObjectNotFound) {
				t.Fatalf("get of a deleted object: %v", err)
			}
			var seen []string
			deadline := time.After(5 * time.Second)
			for len(seen) < 4 {
				select {
				case oi := <-w.Updates():
					seen = append(seen, oi.Name)
				case <-deadline:
					t.Fatalf("watch updates: %v", seen)
				}
			}
			w.Stop()

			list, err := obs.List(ctx(t))
			var names []string
			for _, oi := range list {
				names = append(names, oi.Name)
			}
			slices.Sort(names)
			if err != nil || !slices.Equal(names, []string{"blink", "link", "small2"}) {
				t.Fatalf("list: %v %v", names, err)
			}
			if err := obs.Seal(ctx(t)); err != nil {
				t.Fatal(err)
			}
			status, err := obs.Status(ctx(t))
			if err != nil || !status.Sealed() || status.Bucket() != "O" {
				t.Fatalf("status: %v %+v", err, status)
			}
			if _, err := obs.PutString(ctx(t), "x", "y"); err == nil {
				t.Fatal("put into a sealed bucket succeeded")
			}
		})
	}
}
