package server

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watchUntilNil reads a watcher's initial values up to the nil marker.
func watchUntilNil(t *testing.T, w jetstream.KeyWatcher) []jetstream.KeyValueEntry {
	t.Helper()
	var got []jetstream.KeyValueEntry
	for {
		select {
		case e := <-w.Updates():
			if e == nil {
				return got
			}
			got = append(got, e)
		case <-time.After(5 * time.Second):
			t.Fatalf("no end of initial values after %d entries", len(got))
		}
	}
}

func nextUpdate(t *testing.T, w jetstream.KeyWatcher) jetstream.KeyValueEntry {
	t.Helper()
	select {
	case e := <-w.Updates():
		if e == nil {
			t.Fatal("unexpected nil marker")
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no update")
	}
	return nil
}

func entryStr(e jetstream.KeyValueEntry) string {
	return fmt.Sprintf("%s=%s@%d/%s", e.Key(), e.Value(), e.Revision(), e.Operation())
}

func entriesStr(es []jetstream.KeyValueEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = entryStr(e)
	}
	return out
}

// KV on one server with nats.go's jetstream package: every call that
// reads through an ordered consumer (watch, keys, history, purge deletes).
func TestKVWatchKeysHistory(t *testing.T) {
	for _, st := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(st.String(), func(t *testing.T) {
			s := runJSServer(t)
			_, js := jsClient(t, s)
			kv, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "B", History: 5, Storage: st})
			if err != nil {
				t.Fatal(err)
			}
			put := func(k, v string) {
				if _, err := kv.PutString(ctx(t), k, v); err != nil {
					t.Fatal(err)
				}
			}
			put("a", "1")          // 1
			put("b", "1")          // 2
			put("a", "2")          // 3
			put("c.x", "1")        // 4
			kv.Delete(ctx(t), "b") // 5

			// WatchAll: the last of each key (deletes included), then the marker.
			w, err := kv.WatchAll(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			got := entriesStr(watchUntilNil(t, w))
			if want := []string{"a=2@3/KeyValuePutOp", "c.x=1@4/KeyValuePutOp", "b=@5/KeyValueDeleteOp"}; !slices.Equal(got, want) {
				t.Fatalf("watch all initial: %v, want %v", got, want)
			}
			put("d", "1") // 6
			if e := nextUpdate(t, w); entryStr(e) != "d=1@6/KeyValuePutOp" || e.Delta() != 0 {
				t.Fatalf("watch update: %s delta %d", entryStr(e), e.Delta())
			}
			w.Stop()

			// Watch one key with history; UpdatesOnly; MetaOnly; filtered.
			w, _ = kv.Watch(ctx(t), "a", jetstream.IncludeHistory())
			if got := entriesStr(watchUntilNil(t, w)); !slices.Equal(got, []string{"a=1@1/KeyValuePutOp", "a=2@3/KeyValuePutOp"}) {
				t.Fatalf("watch a with history: %v", got)
			}
			w.Stop()
			w, _ = kv.WatchAll(ctx(t), jetstream.UpdatesOnly())
			put("a", "3") // 7
			if e := nextUpdate(t, w); entryStr(e) != "a=3@7/KeyValuePutOp" {
				t.Fatalf("updates only: %s", entryStr(e))
			}
			w.Stop()
			w, _ = kv.WatchAll(ctx(t), jetstream.MetaOnly())
			for _, e := range watchUntilNil(t, w) {
				if len(e.Value()) != 0 {
					t.Fatalf("meta only entry has a value: %s", entryStr(e))
				}
			}
			w.Stop()
			w, _ = kv.WatchFiltered(ctx(t), []string{"c.>", "d"})
			if got := entriesStr(watchUntilNil(t, w)); !slices.Equal(got, []string{"c.x=1@4/KeyValuePutOp", "d=1@6/KeyValuePutOp"}) {
				t.Fatalf("watch filtered: %v", got)
			}
			w.Stop()

			// Keys and ListKeys leave deleted keys out.
			keys, err := kv.Keys(ctx(t))
			slices.Sort(keys)
			if err != nil || !slices.Equal(keys, []string{"a", "c.x", "d"}) {
				t.Fatalf("keys: %v %v", keys, err)
			}
			lk, _ := kv.ListKeys(ctx(t))
			var listed []string
			for k := range lk.Keys() {
				listed = append(listed, k)
			}
			slices.Sort(listed)
			if !slices.Equal(listed, keys) {
				t.Fatalf("list keys: %v", listed)
			}

			h, err := kv.History(ctx(t), "a")
			if err != nil || !slices.Equal(entriesStr(h), []string{"a=1@1/KeyValuePutOp", "a=2@3/KeyValuePutOp", "a=3@7/KeyValuePutOp"}) {
				t.Fatalf("history: %v %v", entriesStr(h), err)
			}

			// Purge, then PurgeDeletes removes the markers of deleted keys.
			if err := kv.Purge(ctx(t), "a"); err != nil {
				t.Fatal(err)
			}
			if h, _ := kv.History(ctx(t), "a"); len(h) != 1 || h[0].Operation() != jetstream.KeyValuePurge {
				t.Fatalf("history after purge: %v", entriesStr(h))
			}
			if err := kv.PurgeDeletes(ctx(t), jetstream.DeleteMarkersOlderThan(-1)); err != nil {
				t.Fatal(err)
			}
			if _, err := kv.History(ctx(t), "b"); !errors.Is(err, jetstream.ErrKeyNotFound) {
				t.Fatalf("history of a purged delete: %v", err)
			}
			w, _ = kv.WatchAll(ctx(t))
			if got := entriesStr(watchUntilNil(t, w)); !slices.Equal(got, []string{"c.x=1@4/KeyValuePutOp", "d=1@6/KeyValuePutOp"}) {
				t.Fatalf("watch after purge deletes: %v", got)
			}
			w.Stop()
			status, err := kv.Status(ctx(t))
			if err != nil || status.Bucket() != "B" || status.History() != 5 || status.Values() != 2 {
				t.Fatalf("status: %v %+v", err, status)
			}
			// An empty bucket's watch sends the marker at once.
			empty, _ := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "E", Storage: st})
			w, _ = empty.WatchAll(ctx(t))
			if got := watchUntilNil(t, w); len(got) != 0 {
				t.Fatalf("empty bucket watch: %v", entriesStr(got))
			}
			w.Stop()
			if _, err := empty.Keys(ctx(t)); !errors.Is(err, jetstream.ErrNoKeysFound) {
				t.Fatalf("keys of an empty bucket: %v", err)
			}
		})
	}
}

// countingStore counts the store's last-per-subject NumPending calls
// (each one scans every subject of the stream).
type countingStore struct {
	StreamStore
	lps atomic.Int64
}

func (c *countingStore) NumPending(from uint64, filters []string, lastPerSubject bool) uint64 {
	if lastPerSubject {
		c.lps.Add(1)
	}
	return c.StreamStore.NumPending(from, filters, lastPerSubject)
}

// A watch of a bucket counts its num_pending from its own list, not by a
// scan of every subject per delivered message (a 20,000-key watch took
// minutes: quadratic).
func TestKVWatchNoScanPerDelivery(t *testing.T) {
	s := runJSServer(t)
	_, js := jsClient(t, s)
	kv, err := js.CreateKeyValue(ctx(t), jetstream.KeyValueConfig{Bucket: "B", Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	const keys = 2000
	for i := 0; i < keys; i++ {
		js.PublishAsync(fmt.Sprintf("$KV.B.k%d", i), []byte("v"))
	}
	<-js.PublishAsyncComplete()
	mset := s.js.Load().account("$G").lookup("KV_B")
	cs := &countingStore{StreamStore: mset.st()}
	mset.mu.Lock()
	mset.setStore(cs)
	mset.mu.Unlock()
	w, err := kv.WatchAll(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := watchUntilNil(t, w); len(got) != keys {
		t.Fatalf("watch: %d keys", len(got))
	}
	w.Stop()
	if n := cs.lps.Load(); n > 10 {
		t.Fatalf("%d last-per-subject scans for a %d-key watch", n, keys)
	}
}
