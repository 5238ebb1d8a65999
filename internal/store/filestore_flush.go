package store

// Flush hands buffered records to the operating system: they then survive
// the process being killed (not a power loss; Sync is for that). The
// stream layer flushes before it acknowledges a publish.
func (fs *fileStore) Flush() error {
	fs.mu.Lock()
	defer fs.unlock()
	if fs.closed {
		return nil
	}
	return fs.flush()
}
