package wal

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// Salvage cuts the log in dir back to its valid prefix, for an owner that
// can get the rest again (a raft member catching up from its peers) after
// Open failed with ErrCorrupt: the segment holding the first frame that
// does not parse or breaks the log's rules is truncated before it, and the
// segments after it are removed. When the prefix does not hold together
// either (entries missing above its compaction point: a removed segment),
// every segment is removed and the log opens empty. It returns what it
// did, for the owner's log line; the cut is durable when it returns.
func Salvage(fs vfs.FS, dir string, opts Options) (string, error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	w := &WAL{fs: fs, dir: dir, opts: opts, syncTurn: make(chan struct{}, 1)}
	segs, err := w.listSegments()
	if err != nil {
		return "", err
	}
	r := replay{first: 1}
	what := "nothing to cut"
	for i, s := range segs {
		data, err := vfs.ReadFile(fs, s.path)
		if err != nil {
			return "", err
		}
		off, whole := r.prefix(data)
		if whole {
			continue
		}
		if err := cutSegments(fs, dir, segs[i:], off); err != nil {
			return "", err
		}
		what = fmt.Sprintf("cut %s at offset %d of %d, removed %d later segments", filepath.Base(s.path), off, len(data), len(segs)-i-1)
		break
	}
	if r.finish() == nil {
		return what, nil
	}
	if err := cutSegments(fs, dir, segs, 0); err != nil {
		return "", err
	}
	return fmt.Sprintf("removed all %d segments: the valid prefix misses entries", len(segs)), nil
}

// prefix replays the frames of one segment as far as they are valid and
// keep the log's rules; it returns the length of that prefix and whether
// it is the whole segment.
func (r *replay) prefix(data []byte) (int64, bool) {
	var off int64
	for off < int64(len(data)) {
		f, ok := parseFrame(data[off:])
		if !ok || r.apply(f, nil, off) != nil {
			return off, false
		}
		off += f.size
	}
	return off, true
}

// cutSegments truncates segs[0] to off bytes (removes it when off is 0)
// and removes the segments after it, durably: the removals first, so a
// crash meanwhile leaves a log that Salvage cuts again.
func cutSegments(fs vfs.FS, dir string, segs []*segment, off int64) error {
	keep := 0
	if off > 0 {
		keep = 1
	}
	for _, s := range segs[keep:] {
		if err := fs.Remove(s.path); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := fs.SyncDir(dir); err != nil || keep == 0 {
		return err
	}
	f, err := fs.OpenFile(segs[0].path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(off)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
