package server

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/minio/highwayhash"
	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"github.com/nats-io/nats-server/v2/internal/wal"
)

// The log mark (issue 19; ARCHITECTURE.md "A lost or cut raft log"). A
// raft log that lost its directory, its last segments or the tail of one
// opens as a shorter log, or an empty one, whose term and vote may be
// older too: the write-ahead log alone cannot tell a cut from a torn
// write. A member with such a log could vote for a candidate missing
// entries it acknowledged, or vote twice in a term. The mark, a small
// file beside the group's directory (so deleting the directory leaves it),
// records a position of the log known durable — the last entry and the
// term and vote — and the group's identity (a stream's incarnation). A
// log that opens less up to date than its mark, or with an older term or
// another vote, lost durable state: the member repairs itself as one
// whose log was unreadable (stream_repair.go).
//
// The mark is written where it costs nothing on the write path: when the
// log closes (a clean stop; exact), and at most every logMarkEvery while
// it runs or as its group goes to sleep, with all it holds synced. In
// between it is advanced in place without an fsync (one small write, no
// flush: logMarkSoftEvery while the group runs, and each time it goes to
// sleep), to the log's committed prefix (an uncommitted tail a new leader
// replaces is never in it): written after what it records is durable, it
// is a lower bound whether or not it reaches the disk before a crash
// (lost in a power cut, the previous one is back; torn, it fails its
// checksum and counts as none). A process that crashed finds it as
// written, so a log cut since its group last slept or ran a second is
// detected; a power cut may leave only the last synced one. It is still a
// lower bound: entries written after the last mark and cut before a crash
// are not detected, and a member that finds its log below the mark knows
// only that it lost something at or past it. That is why a detected loss
// makes the member abstain from elections until it has caught up (no
// floor), rather than vote with the mark as a floor.

// logMarkEvery is the most often a running log writes its mark synced.
const logMarkEvery = time.Minute

// logMarkSoftEvery is the most often a running log advances its mark
// without syncing it.
const logMarkSoftEvery = time.Second

// logMarkSize is the mark file's size: the text, a newline, spaces.
const logMarkSize = 128

var logMarkKey = []byte("tern-raft-log-mark-checksum-key!")

// logMark is what a mark file holds.
type logMark struct {
	id   string           // the group's identity (no spaces)
	last raft.LogPosition // the log's last entry, durable when written
	term uint64           // the hard state's term and vote then
	vote uint64
}

// logMarkPath is the mark file of a group directory.
func logMarkPath(groupDir string) string { return filepath.Clean(groupDir) + ".logmark" }

func logMarkSum(b []byte) uint64 {
	h, err := highwayhash.New64(logMarkKey)
	if err != nil {
		panic(err) // the key is 32 bytes
	}
	h.Write(b)
	return h.Sum64()
}

// encode is the mark file's content.
func (m logMark) encode() []byte {
	b := fmt.Appendf(nil, "tern-logmark-1 %s %d %d %d %d", m.id, m.last.Term, m.last.Index, m.term, m.vote)
	b = fmt.Appendf(b, " %016x\n", logMarkSum(b))
	for len(b) < logMarkSize {
		b = append(b, ' ')
	}
	return b
}

var errLogMarkBad = errors.New("raft log mark damaged")

// decodeLogMark reads a mark file's content.
func decodeLogMark(b []byte) (logMark, error) {
	line, _, ok := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if !ok || len(f) != 7 || string(f[0]) != "tern-logmark-1" {
		return logMark{}, errLogMarkBad
	}
	var n [4]uint64
	for i := range n {
		v, err := strconv.ParseUint(string(f[i+2]), 10, 64)
		if err != nil {
			return logMark{}, errLogMarkBad
		}
		n[i] = v
	}
	sum, err := strconv.ParseUint(string(f[6]), 16, 64)
	if err != nil || sum != logMarkSum(line[:bytes.LastIndexByte(line, ' ')]) {
		return logMark{}, errLogMarkBad
	}
	return logMark{id: string(f[1]), last: raft.LogPosition{Term: n[0], Index: n[1]}, term: n[2], vote: n[3]}, nil
}

// lostBy says what a log ending at last with hard state hs lost of what
// the mark records as durable; "" when nothing. Terms never go down, a
// vote is cast once per term, and a log's last position only goes down in
// the up-to-date order when a conflicting uncommitted tail is replaced by
// a shorter one and the process stops before the rest arrives (a rare
// false alarm: the member repairs itself needlessly, which is safe).
func (m logMark) lostBy(last raft.LogPosition, hs wal.HardState) string {
	switch {
	case last.Max(m.last) != last:
		return fmt.Sprintf("its raft log ends at term %d index %d, below term %d index %d it held durably", last.Term, last.Index, m.last.Term, m.last.Index)
	case hs.Term < m.term:
		return fmt.Sprintf("its raft log's term %d is below term %d it held durably", hs.Term, m.term)
	case hs.Term == m.term && m.vote != 0 && hs.Vote != m.vote:
		return fmt.Sprintf("its raft log lost its vote in term %d", m.term)
	}
	return ""
}

// keptHardState is the term and vote a member that lost durable state
// keeps: its own when they are not older than the mark's; otherwise one
// term above the mark's and no vote, so it cannot vote twice in the
// mark's term (a vote in a later term is the abstention's window:
// ARCHITECTURE.md).
func (m logMark) keptHardState(hs raft.HardState) raft.HardState {
	if hs.Term > m.term || hs.Term == m.term && (m.vote == 0 || uint64(hs.Vote) == m.vote) {
		return raft.HardState{Term: hs.Term, Vote: hs.Vote}
	}
	return raft.HardState{Term: m.term + 1}
}

// errLogLost: a raft log that opened less up to date than its mark.
var errLogLost = errors.New("raft log lost durable entries")

// markState is a walLog's mark bookkeeping (group goroutine only, and
// Close after the group stopped).
type markState struct {
	path    string // "" when the log keeps no mark
	id      string
	written logMark   // what the file holds (zero: nothing)
	synced  logMark   // what it holds synced (or held at the open)
	dirOK   bool      // the file's directory entry is synced (or was there at the open)
	at      time.Time // when the running log last considered writing it synced
	softAt  time.Time // when it last considered advancing it unsynced
	now     time.Time // the group's last tick
	off     bool      // the log lost durable state: never write a mark
}

// useMark makes the log keep the mark at path for the group id, after
// checking the log against the mark already there. It returns errLogLost
// (wrapped, saying what was lost) when the log lost durable state, and
// the mark read then; the log then writes no mark. A mark of another
// identity (an earlier group of the same name) or damaged is ignored and
// replaced.
func (l *walLog) useMark(path, id string) (logMark, error) {
	l.mark = markState{path: path, id: id}
	b, err := vfs.ReadFile(l.fs, path)
	if err != nil {
		return logMark{}, nil
	}
	// Found, its directory entry is taken as durable: made unsynced in a
	// crashed run, it is synced with the directory by the next group
	// directory made beside it (vfs.MkdirAllSynced), and a mark lost is
	// only a loss not detected.
	l.mark.dirOK = true
	m, err := decodeLogMark(b)
	if err != nil || m.id != id {
		return logMark{}, nil
	}
	l.mark.written, l.mark.synced = m, m
	if what := m.lostBy(logLast(l), l.w.HardState()); what != "" {
		l.mark.off = true
		return m, fmt.Errorf("%w: %s", errLogLost, what)
	}
	return m, nil
}

// current is the mark of what the log holds now.
func (l *walLog) currentMark() logMark {
	hs := l.w.HardState()
	return logMark{id: l.mark.id, last: logLast(l), term: hs.Term, vote: hs.Vote}
}

// committedMark is the mark of what the log holds committed now (its
// last entry when all of it is): ok false when the commit index's term is
// no longer in the log.
func (l *walLog) committedMark() (m logMark, ok bool) {
	m = l.currentMark()
	if c := l.w.HardState().Commit; c < m.last.Index {
		t, err := l.w.Term(c)
		if err != nil {
			return logMark{}, false
		}
		m.last = raft.LogPosition{Term: t, Index: c}
	}
	return m, true
}

// writeMark stores m unless the file holds it already: in place, synced
// (one fsync; its directory's too when the file is new to it), or, for
// soft, only written, and only when it is ahead of the mark there. A
// write torn by a crash fails the checksum and the mark is ignored, as a
// missing one is. A group hosted by the simulator keeps no mark: its
// closes are not ordered by the simulation, and the writes made replays
// differ.
func (l *walLog) writeMark(m logMark, soft bool) error {
	if l.mark.path == "" || l.mark.off || l.inline || m.last.IsZero() && m.term == 0 {
		return nil
	}
	if m == l.mark.synced || soft && (m == l.mark.written || m.last.Max(l.mark.written.last) != m.last) {
		return nil
	}
	err := l.putMark(m, soft)
	if err == nil && !soft && !l.mark.dirOK {
		err = l.fs.SyncDir(filepath.Dir(l.mark.path))
	}
	if err != nil {
		// The mark is an aid: its file failing does not stop the group.
		// No more writes; what the file holds (if anything) was written
		// after it was durable, still a lower bound.
		l.mark.off = true
		return nil
	}
	l.mark.written = m
	if !soft {
		l.mark.synced, l.mark.dirOK = m, true
	}
	return nil
}

// putMark writes m into the mark file (made if missing) unless it holds
// it, and syncs the file unless soft.
func (l *walLog) putMark(m logMark, soft bool) error {
	f, err := l.fs.OpenFile(l.mark.path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	if m != l.mark.written {
		_, err = f.WriteAt(m.encode(), 0)
	}
	if err == nil && !soft {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// markIfDue writes the mark synced when logMarkEvery has passed since
// the last time, or advances it unsynced when logMarkSoftEvery has, and
// everything the log holds is synced (a clock reading of the group
// loop's; the first call starts the periods).
func (l *walLog) markIfDue(now time.Time) error {
	if l.mark.path == "" || l.mark.off {
		return nil
	}
	l.mark.now = now
	if l.mark.at.IsZero() {
		l.mark.at, l.mark.softAt = now, now
	}
	soft := now.Sub(l.mark.softAt) >= logMarkSoftEvery
	if soft {
		l.mark.softAt = now
	}
	return l.markAt(now, soft)
}

// markIdle writes the mark as the group goes to sleep: synced at most
// every logMarkEvery too (a group woken by each of a trickle of writes
// would otherwise add an fsync to each), by the last tick's time, and
// otherwise advanced unsynced.
func (l *walLog) markIdle() error {
	if l.mark.path == "" || l.mark.off {
		return nil
	}
	return l.markAt(l.mark.now, true)
}

// markAt writes the mark synced if logMarkEvery passed since the last
// write considered (or none was yet), else advances it unsynced for soft,
// when the log's entries, term and vote are synced (its commit index need
// not be: the mark does not record it).
func (l *walLog) markAt(now time.Time, soft bool) error {
	if !l.w.EntriesDurable() || len(l.owed) > 0 {
		return nil
	}
	if l.mark.at.IsZero() || now.Sub(l.mark.at) >= logMarkEvery {
		l.mark.at = now
		return l.writeMark(l.currentMark(), false)
	}
	if !soft {
		return nil
	}
	m, ok := l.committedMark()
	if !ok {
		return nil
	}
	return l.writeMark(m, true)
}

// removeLogMark removes the mark of a group directory that goes.
func removeLogMark(fs vfs.FS, groupDir string) {
	p := logMarkPath(groupDir)
	if err := fs.Remove(p); err == nil {
		fs.SyncDir(filepath.Dir(p))
	}
}
