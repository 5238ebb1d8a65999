package store

// Verify reads every block back, checking every record's checksum, as a
// read of each would: a live message without a valid record is dropped
// and listed as lost (State().Lost). It returns the number of messages
// lost so far. Blocks are read one at a time; the block cache stays
// bounded (trimCaches).
func (fs *fileStore) Verify() int {
	fs.mu.Lock()
	defer fs.unlock()
	for i := 0; i < len(fs.blocks); i++ {
		fs.blockCache(fs.blocks[i])
	}
	return len(fs.lost.Msgs)
}

// CheckpointMismatched says whether the store, at open, found a checkpoint
// that does not fit its block files (one listed is missing) and rebuilt
// its state from the blocks there are. In a copy of files that never
// change (a linked snapshot) that is damage: a block went missing, and
// with it messages, or the tombstones that deleted others, which the
// counts of what is left may not show.
func (fs *fileStore) CheckpointMismatched() bool {
	fs.mu.Lock()
	defer fs.unlock()
	return fs.ckptMismatch
}
