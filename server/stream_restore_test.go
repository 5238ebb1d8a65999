package server

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A restore builds the new store beside the old one without holding
// stream.mu: while the snapshot's messages are read the stream's lock is
// free (info, config and publishes are not held up for a whole restore)
// and the old store still serves its messages; then the new store and
// the state that goes with it are swapped in at once and the old store is
// deleted. (restoreFrom serves replicated streams; a stream on one server
// is the simplest one to call it on.)
func TestRestoreBuildsStoreAside(t *testing.T) {
	for _, storage := range []jetstream.StorageType{jetstream.FileStorage, jetstream.MemoryStorage} {
		t.Run(storage.String(), func(t *testing.T) {
			s := runJSServer(t)
			_, js := jsClient(t, s)
			createStream(t, js, jetstream.StreamConfig{Name: "R", Subjects: []string{"r.>"}, Storage: storage})
			for i := range 3 {
				if _, err := js.Publish(ctx(t), "r.old", []byte(fmt.Sprint("old", i))); err != nil {
					t.Fatal(err)
				}
			}
			mset := s.js.Load().account(globalAccountName).lookup("R")
			meta := streamSnapMeta{Config: mset.config(), First: 5, Last: 6, Applied: 6, Messages: 2, LastID: "id6"}
			meta.Config.MaxMsgs = 100 // the snapshot's config differs from the stream's
			msgs := []snapMsg{{seq: 5, ts: 1, subj: "r.new", msg: []byte("new5")}, {seq: 6, ts: 2, subj: "r.new", msg: []byte("new6")}}
			checked := false
			next := func() (snapMsg, bool, error) {
				if !checked {
					checked = true
					free := make(chan StreamConfig, 1)
					go func() { free <- mset.config() }() // takes mset.mu
					select {
					case cfg := <-free:
						if cfg.MaxMsgs == 100 {
							t.Errorf("the snapshot's config is visible before its store")
						}
					case <-time.After(2 * time.Second):
						t.Errorf("stream.mu is held while the snapshot is read")
					}
					var sm StoreMsg
					if m, err := mset.st().LoadMsg(1, &sm); err != nil || string(m.Msg) != "old0" {
						t.Errorf("during the restore the old store serves %v, %v", m, err)
					}
				}
				if len(msgs) == 0 {
					return snapMsg{}, false, nil
				}
				m := msgs[0]
				msgs = msgs[1:]
				return m, true, nil
			}
			if err := mset.restoreFrom(meta, next); err != nil {
				t.Fatal(err)
			}
			if !checked {
				t.Fatal("the restore read no messages")
			}
			var st StreamState
			mset.st().FastState(&st)
			if st.Msgs != 2 || st.FirstSeq != 5 || st.LastSeq != 6 || mset.config().MaxMsgs != 100 {
				t.Fatalf("after the restore: %+v, max msgs %d", st, mset.config().MaxMsgs)
			}
			if storage == jetstream.FileStorage {
				ents, err := s.js.Load().fs.ReadDir(filepath.Join(mset.jsa.dir, "R"))
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				if slices.Contains(names, "msgs") || !slices.Contains(names, "msgs.1") {
					t.Fatalf("stream directory after the restore: %v (the old store's msgs should be gone)", names)
				}
			}
		})
	}
}
