package server

import (
	"errors"
	"testing"
)

// keepDamaged keeps what an R1 replica's damaged linked snapshot still
// holds only when the store holds nothing the snapshot does not: messages
// below the snapshot's first were removed before it (a purge, an expiry),
// and keeping them brought them back. Such a store is refused with the
// damage error, as one holding more messages or a later last sequence.
func TestKeepDamagedRefusesMessagesBelowFirst(t *testing.T) {
	mset := &stream{}
	meta := &streamSnapMeta{First: 100, Last: 200, Messages: 101}
	damage := errors.New("linked restore lost messages")
	for _, st := range []StreamState{
		{FirstSeq: 50, LastSeq: 150, Msgs: 60},   // purged messages back
		{FirstSeq: 100, LastSeq: 201, Msgs: 50},  // past the snapshot's last
		{FirstSeq: 100, LastSeq: 200, Msgs: 102}, // more than it held
	} {
		if err := mset.keepDamaged(nil, meta, st, damage); !errors.Is(err, damage) {
			t.Fatalf("store %+v kept (%v), want the damage error", st, err)
		}
	}
}
