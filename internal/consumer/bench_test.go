package consumer

import "testing"

// BenchmarkDeliverAck: first deliveries in batches of 64, each message then
// acknowledged: the apply cost every replica pays per message of an
// explicit-ack consumer (b.N counts messages).
func BenchmarkDeliverAck(b *testing.B) {
	s := &State{}
	var out Outcome
	src := countSource{}
	s.Apply(&Entry{Op: OpCreate, Gen: 1, Config: &Config{AckPolicy: AckExplicit}}, src, &out)
	seqs := make([]uint64, 64)
	ack := Entry{Op: OpAck}
	deliver := Entry{Op: OpDeliver, Gen: 1, Seqs: seqs}
	b.ReportAllocs()
	next := uint64(1)
	for i := 0; i < b.N; i += len(seqs) {
		for j := range seqs {
			seqs[j] = next + uint64(j)
		}
		s.Apply(&deliver, src, &out)
		for j := range seqs {
			ack.Seq = next + uint64(j)
			s.Apply(&ack, src, &out)
		}
		next += uint64(len(seqs))
	}
}

// countSource: every sequence is stored, num_pending in O(1).
type countSource struct{}

func (countSource) Bounds() (uint64, uint64)                          { return 1, 1 << 40 }
func (countSource) Contains(uint64) bool                              { return true }
func (countSource) NumPending(from uint64, _ []string, _ bool) uint64 { return 1<<40 - from + 1 }
func (countSource) LastMatching([]string) uint64                      { return 1 << 40 }
func (countSource) SeqAtTime(int64) uint64                            { return 1 }
