package server

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// snapMsgs decodes the message part of a capture's encoding.
func snapMsgs(t *testing.T, b []byte) []string {
	t.Helper()
	r := &raftReader{b: b}
	var out []string
	for r.err == nil && len(r.b) > 0 {
		seq, ts := r.uvarint(), r.varint()
		subj, hdr, msg := string(r.bytes()), r.bytes(), r.bytes()
		out = append(out, fmt.Sprintf("%d %d %s %q %q", seq, ts, subj, hdr, msg))
	}
	if r.err != nil {
		t.Fatalf("bad encoding: %v", r.err)
	}
	return out
}

// storeContents lists what a capture of the store would encode now.
func storeContents(t *testing.T, st StreamStore) []string {
	t.Helper()
	var s StreamState
	st.FastState(&s)
	var b []byte
	var sm StoreMsg
	for seq := s.FirstSeq; s.Msgs > 0 && seq <= s.LastSeq; seq++ {
		if m, err := st.LoadMsg(seq, &sm); err == nil {
			b = appendSnapMsg(b, m)
		}
	}
	return snapMsgs(t, b)
}

func fillCaptureStore(t *testing.T, st StreamStore, n int) {
	for i := range n {
		hdr := []byte(nil)
		if i%3 == 0 {
			hdr = []byte("NATS/1.0\r\nK: " + strconv.Itoa(i) + "\r\n\r\n")
		}
		if _, err := st.StoreMsg("k."+strconv.Itoa(i%50), hdr, []byte("v"+strconv.Itoa(i)), int64(1000+i)); err != nil {
			t.Fatal(err)
		}
	}
	st.RemoveMsg(7) // deleted before the snapshot's point: not in it
}

// TestSnapshotCaptureSurvivesRemovals: a snapshot encoded while later
// entries remove messages (deletes, erasures, subject purges, limits)
// still holds exactly the messages of its point, for every store.
func TestSnapshotCaptureSurvivesRemovals(t *testing.T) {
	forEachStore(t, func(t *testing.T, mk storeFactory) {
		for _, concurrent := range []bool{false, true} {
			t.Run("concurrent="+strconv.FormatBool(concurrent), func(t *testing.T) {
				st := mk(t, StoreLimits{MaxMsgsPerSubject: 40})
				defer st.Stop()
				fillCaptureStore(t, st, 2000)
				want := storeContents(t, st)
				var s StreamState
				st.FastState(&s)
				c := captureMessages(st, s.FirstSeq, s.LastSeq)
				type result struct {
					b   []byte
					err error
				}
				done := make(chan result, 1)
				run := func() { b, err := c.encode(st, nil); done <- result{b, err} }
				if concurrent {
					go run()
				}
				rng := rand.New(rand.NewPCG(1, 2))
				for i := range 600 {
					switch i % 4 {
					case 0:
						st.RemoveMsg(uint64(rng.IntN(2000)) + 1)
					case 1:
						st.EraseMsg(uint64(rng.IntN(2000)) + 1)
					case 2: // the per-subject limit drops the subject's oldest
						st.StoreMsg("k."+strconv.Itoa(rng.IntN(50)), nil, []byte("new"), 5000)
					case 3:
						st.PurgeEx("k."+strconv.Itoa(rng.IntN(50)), 0, 1)
					}
				}
				if !concurrent {
					run()
				}
				r := <-done
				if r.err != nil {
					t.Fatalf("encode: %v", r.err)
				}
				if got := snapMsgs(t, r.b); !slices.Equal(got, want) {
					t.Fatalf("snapshot holds %d messages, the point had %d", len(got), len(want))
				}
				// Detached: removals no longer reach the capture.
				st.RemoveMsg(s.LastSeq)
				if c.saved != nil {
					t.Fatal("capture still watching after encode")
				}
			})
		}
	})
}

// capturedStore fills a store with n messages and captures all of them.
func capturedStore(t *testing.T, mk storeFactory, n int) (StreamStore, *snapCapture) {
	st := mk(t, StoreLimits{})
	t.Cleanup(func() { st.Stop() })
	fillCaptureStore(t, st, n)
	var s StreamState
	st.FastState(&s)
	return st, captureMessages(st, s.FirstSeq, s.LastSeq)
}

// TestSnapshotCaptureBoundsCopies: a mass removal ahead of the encoder
// gives the snapshot up once the copies would exceed snapSavedMax.
func TestSnapshotCaptureBoundsCopies(t *testing.T) {
	setForTest(t, &snapSavedMax, 4096)
	forEachStore(t, func(t *testing.T, mk storeFactory) {
		st, c := capturedStore(t, mk, 500)
		if _, err := st.PurgeEx("k.1", 0, 0); err != nil { // 10 messages: kept
			t.Fatal(err)
		}
		if c.abandoned.Load() {
			t.Fatal("abandoned after a small removal")
		}
		if _, err := st.Compact(400); err != nil {
			t.Fatal(err)
		}
		if _, err := c.encode(st, nil); err != errSnapshotAbandoned {
			t.Fatalf("encode after a mass removal: %v, want %v", err, errSnapshotAbandoned)
		}
	})
}

// TestSnapshotCaptureAbandonedByPurge: a purge during the encoding gives
// the snapshot up instead of producing one that is missing messages.
func TestSnapshotCaptureAbandonedByPurge(t *testing.T) {
	forEachStore(t, func(t *testing.T, mk storeFactory) {
		st, c := capturedStore(t, mk, 100)
		if _, err := st.Purge(); err != nil {
			t.Fatal(err)
		}
		if _, err := c.encode(st, nil); err != errSnapshotAbandoned {
			t.Fatalf("encode after purge: %v, want %v", err, errSnapshotAbandoned)
		}
	})
}
