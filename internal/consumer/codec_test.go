package consumer

import (
	"encoding/binary"
	"errors"
	"reflect"
	"runtime"
	"testing"
)

func sampleEntries() []Entry {
	cfg := &Config{AckPolicy: AckExplicit, DeliverPolicy: DeliverByStartTime, OptStartTime: 77, AckWait: 5,
		BackOff: []int64{1, 2}, MaxDeliver: 4, MaxAckPending: -1, PauseUntil: 9,
		FilterSubjects: []string{"a.*", "b.>"}, Raw: []byte(`{"durable_name":"C"}`)}
	return []Entry{
		{Op: OpCreate, TS: 1, Consumer: "C", Config: cfg},
		{Op: OpUpdate, TS: -1, Consumer: "C", Config: &Config{}},
		{Op: OpDelete, TS: 3, Consumer: "C"},
		{Op: OpDeliver, TS: 4, Consumer: "C", Gen: 7, Tag: 99, Seqs: []uint64{5, 3, 1 << 63, 0}},
		{Op: OpAck, TS: 5, Consumer: "C", Seq: 10, CSeq: 11},
		{Op: OpAckAll, TS: 5, Consumer: "C", Seq: 10, CSeq: 11},
		{Op: OpNak, TS: 6, Consumer: "C", Seq: 1, CSeq: 2, Delay: -5},
		{Op: OpTerm, TS: 7, Consumer: "C", Seq: 1, CSeq: 2, Text: "poison"},
		{Op: OpProgress, TS: 8, Consumer: "C", Seq: 1, CSeq: 2},
		{Op: OpRedeliverDue, TS: 9, Consumer: "C", Seqs: []uint64{2, 4}},
		{Op: OpPause, TS: 10, Consumer: "C", Until: 100},
		{Op: OpResume, TS: 11, Consumer: "C", Until: 100},
		{Op: OpPin, TS: 12, Consumer: "C", Text: "id"},
		{Op: OpUnpin, TS: 13, Consumer: "C"},
		{Op: OpUnpin, TS: 13, Consumer: "C", Text: "id"},
		{Op: OpResume, TS: 11, Consumer: "C"},
		{Op: OpStreamRemoved, TS: 14, Consumer: "C", Seqs: []uint64{1}, Text: "gone"},
		{Op: OpStreamPurged, TS: 15, Consumer: "C", Seq: 40},
		{Op: OpAcks, TS: 16, Consumer: "C", Seqs: []uint64{7, 3, 9}},
	}
}

func TestEntryRoundTrip(t *testing.T) {
	for _, e := range sampleEntries() {
		got, err := DecodeEntry(AppendEntry(nil, &e))
		if err != nil {
			t.Fatalf("%v: %v", e.Op, err)
		}
		if e.Op == OpCreate || e.Op == OpUpdate {
			e.Gen = 0 // not encoded: the stream sets it at apply
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("%v: round trip\n got %+v\nwant %+v", e.Op, got, e)
		}
	}
}

// TestEntryDecodesVersionOne: entries written before OpAcks existed
// still decode to what they said (the bytes of a version 1 OpAck entry,
// written out by hand).
func TestEntryDecodesVersionOne(t *testing.T) {
	old := []byte{1, byte(OpAck), 10, 1, 'C', 200, 1, 7} // TS 5, "C", Seq 200, CSeq 7
	e, err := DecodeEntry(old)
	if err != nil || !reflect.DeepEqual(e, Entry{Op: OpAck, TS: 5, Consumer: "C", Seq: 200, CSeq: 7}) {
		t.Fatalf("old ack entry: %+v %v", e, err)
	}
	if got := AppendEntry(nil, &e); !reflect.DeepEqual(got, old) {
		t.Fatalf("the ack entry's encoding changed: %x, was %x", got, old)
	}
}

func TestEntryDecodeRefuses(t *testing.T) {
	good := AppendEntry(nil, &Entry{Op: OpAck, Seq: 1})
	bad := [][]byte{nil, {2, byte(OpAck)}, {1, 0}, {1, byte(opMax)}, good[:len(good)-1], append(good, 0)}
	// A list claiming far more items than bytes follow.
	huge := []byte{1, byte(OpDeliver), 0, 0, 0, 0}
	huge = binary.AppendUvarint(huge, 1<<60)
	bad = append(bad, huge)
	for _, b := range bad {
		if _, err := DecodeEntry(b); !errors.Is(err, ErrCodec) {
			t.Fatalf("%x decoded: %v", b, err)
		}
	}
}

// TestDecodeAllocationBounded: a hostile count is refused before anything
// is allocated for it.
func TestDecodeAllocationBounded(t *testing.T) {
	huge := []byte{1, byte(OpDeliver), 0, 0, 0, 0}
	huge = binary.AppendUvarint(huge, 1<<40)
	snap := []byte{snapshotVersion, 1, 0, 0}
	snap = appendConfig(snap, &Config{})
	snap = append(snap, 0xff, 0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0, 0)
	snap = binary.AppendUvarint(snap, 1<<40)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		DecodeEntry(huge)
		RestoreSnapshot(snap)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Fatalf("decoding hostile counts allocated %d bytes", grew)
	}
}

func TestSnapshotRefusesContradictions(t *testing.T) {
	f := newFixture(t, 10, explicit())
	f.deliver(1, 1, 2, 3)
	good := f.s.AppendSnapshot(nil)
	if _, err := RestoreSnapshot(good); err != nil {
		t.Fatal(err)
	}
	// Delivered lowered below a pending message: refused.
	s2 := *f.s
	s2.delivered = SeqPair{1, 1}
	if _, err := RestoreSnapshot(s2.AppendSnapshot(nil)); !errors.Is(err, ErrCodec) {
		t.Fatalf("pending above delivered restored: %v", err)
	}
	for i := range good {
		RestoreSnapshot(good[:i]) // every truncation: no panic
	}
}

func FuzzDecodeEntry(f *testing.F) {
	for _, e := range sampleEntries() {
		f.Add(AppendEntry(nil, &e))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := DecodeEntry(data)
		if err != nil {
			return
		}
		again, err := DecodeEntry(AppendEntry(nil, &e))
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Fatalf("re-encoding %+v: %v", e, err)
		}
		// Whatever decodes can be applied without a panic.
		src := &memSource{}
		src.add("a", 1)
		s := &State{}
		var out Outcome
		s.Apply(&Entry{Op: OpCreate, Gen: 1, Config: &Config{AckPolicy: AckExplicit}}, src, &out)
		if e.Op == OpCreate || e.Op == OpUpdate {
			e.Gen = 2
		}
		pauseAPI := e.Op == OpPause || (e.Op == OpResume && e.Until == 0)
		if pauseAPI && e.Config != nil {
			t.Fatalf("a pause entry decoded with a config: %+v", e)
		}
		s.Apply(&e, src, &out)
		if ackFloorOf(s) != s.floor {
			t.Fatalf("floor cache wrong after %+v", e)
		}
		if pauseAPI { // as the server applies it: with the config derived from the state
			s2 := &State{}
			s2.Apply(&Entry{Op: OpCreate, Gen: 1, Config: &Config{AckPolicy: AckExplicit}}, src, &out)
			e.Config = pauseConfig(s2, &e)
			s2.Apply(&e, src, &out)
			if out.Err == nil && (s2.cfg.PauseUntil != e.Config.PauseUntil || (s2.paused != 0 && s2.paused != e.Until)) {
				t.Fatalf("pause %+v: config %d paused %d", e, s2.cfg.PauseUntil, s2.paused)
			}
		}
	})
}

func FuzzRestoreSnapshot(f *testing.F) {
	fx := newFixture(&testing.T{}, 10, Config{AckPolicy: AckExplicit, MaxDeliver: 2, AckWait: 1})
	fx.deliver(1, 1, 2, 3)
	fx.deliver(5, 1, 2)
	fx.apply(Entry{Op: OpRedeliverDue, TS: 10})
	f.Add(fx.s.AppendSnapshot(nil))
	f.Add((&State{}).AppendSnapshot(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := RestoreSnapshot(data)
		if err != nil {
			return
		}
		if ackFloorOf(s) != s.floor {
			t.Fatal("restored floor wrong")
		}
		again, err := RestoreSnapshot(s.AppendSnapshot(nil))
		if err != nil || again.Digest() != s.Digest() {
			t.Fatalf("snapshot of a restored snapshot: %v", err)
		}
		// A restored state takes any entry without a panic.
		src := &memSource{}
		src.add("a", 1)
		var out Outcome
		for _, e := range sampleEntries() {
			e.Gen = s.gen + 1
			s.Apply(&e, src, &out)
			if ackFloorOf(s) != s.floor {
				t.Fatalf("floor cache wrong after %v", e.Op)
			}
		}
	})
}
