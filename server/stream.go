package server

import (
	"encoding/binary"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"hash/fnv"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/clock"
	cstate "github.com/nats-io/nats-server/v2/internal/consumer"
)

// inMsg is one publish as it enters a stream: everything the apply
// function needs, with the timestamp already chosen.
type inMsg struct {
	subj  string
	reply string
	hdr   []byte
	msg   []byte
	ts    int64 // unix nanos, stamped before apply
}

// pubOutcome is the result of applying one inMsg.
type pubOutcome struct {
	seq uint64
	dup bool
	err *ApiError
}

// dedupeEntry remembers a Nats-Msg-Id within the duplicate window.
type dedupeEntry struct {
	id  string
	seq uint64
	ts  int64
}

// stream is a JetStream stream. Its mu serialises apply, so everything
// processJetStreamMsg reads is stable while it runs.
type stream struct {
	mu      lockorder.Mutex[lockorder.Stream]
	jsa     *jsAccount
	name    string       // cfg.Name, never changes: read without mu
	quoted  string       // name as a JSON string, for pub acks (strconv.Quote is slow per ack)
	cfg     StreamConfig // written by updates under jsa.mu and mu
	created time.Time
	store   atomic.Pointer[storeRef] // replaced only when a snapshot is installed
	// storeGen counts restores: restore n builds its store in msgs.<n>
	// beside the current one (group goroutine only).
	storeGen uint64

	ddmap  map[string]*dedupeEntry
	ddarr  []*dedupeEntry // ordered by ts (apply order)
	ddhead int
	lmsgID string // Nats-Msg-Id of the last stored message

	applied uint64 // entries applied
	digest  uint64 // running digest of outcomes (index, seq, error code)

	subs       []*subscription
	ingest     []*subscription // leader-only publish subscriptions (replicated)
	group      *raftGroup      // nil for a stream on one server
	replicated bool            // set at creation, never changes: read without mu
	leader     bool            // leads its group and applied its whole log
	resign     resignWindow    // the last time it stopped leading (jetstream_resign.go)
	supersedes supersedeMemo   // what leaderChanged last told the leader map (one leaderChanged at a time: raftGroup.tell)
	lastIndex  uint64          // last raft index applied (replicated)
	snapIndex  uint64          // raft index of the last snapshot taken or installed
	snapEvery  uint64          // entries between snapshots, beyond snapshotEvery (the last one's cost)
	groupDir   string          // the raft group's directory (replicated)
	wal        *walLog         // the raft group's log (replicated)
	alone      bool            // its group has no other member: nobody repairs it (stream_repair.go keepDamaged)
	pins       snapPins        // snapshot directories being read by expansions
	installs   int             // snapshots installed, for tests and monitoring
	received   int             // of which sent by a leader
	expiry     clock.Timer
	syncer     *groupCommit
	closed     bool
	consumers  map[string]*consumer // guarded by mu (consumer_stream.go)
	statesBuf  []*cstate.State      // consumerStatesLocked's, guarded by mu
	ackSub     *subscription        // $JS.ACK.<stream>.> while it has consumers
	applyTS    int64                // stamp of the last applied entry that had one (replicated; derivedTS)
	fcSub      *subscription        // $JS.FC.<stream>.> while it has push consumers (consumer_push_start.go)
	// scrubLost is how many live messages the last scrub pass found
	// without a valid record (stream_scrub.go).
	scrubLost atomic.Int64
	// storeBroken is the panic of a store call, or the store's write
	// error, that made this replica's store refuse writes
	// (stream_store_panic.go, stream_store_failure.go); nil: none.
	// brokenCounted says whether js.brokenStores counts it (brokenNo,
	// brokenYes, brokenGone once the stream stopped).
	storeBroken   atomic.Pointer[error]
	brokenCounted atomic.Int32
}

// storeRef holds the stream's store; installing a snapshot swaps it.
type storeRef struct{ StreamStore }

// st returns the stream's current store.
func (mset *stream) st() StreamStore { return mset.store.Load().StreamStore }

func (mset *stream) setStore(s StreamStore) { mset.store.Store(&storeRef{s}) }

// processJetStreamMsg is the stream's deterministic apply function: the
// outcome and the new state depend only on the current state and the
// entry (no clock, no randomness, no map iteration order). It decides the
// sequence, duplicates, every expectation header, rollups and discard
// limits. The caller holds mset.mu.
func (mset *stream) processJetStreamMsg(m *inMsg) pubOutcome {
	out := mset.decide(m)
	if out.err == nil && !out.dup {
		mset.consumersTrimmedLocked() // limits may have dropped the head
	}
	mset.applied++
	mset.digest = digestStep(mset.digest, mset.applied, out)
	return out
}

func (mset *stream) decide(m *inMsg) pubOutcome {
	cfg := &mset.cfg
	if cfg.Sealed {
		return pubOutcome{err: errSealed()}
	}
	if len(m.hdr) > maxHdrBytes {
		return pubOutcome{err: errHeaderTooBig()}
	}
	if cfg.MaxMsgSize > 0 && len(m.hdr)+len(m.msg) > int(cfg.MaxMsgSize) {
		return pubOutcome{err: errMsgTooBig()}
	}
	var msgID string
	var h jsHdrs
	if len(m.hdr) > 0 {
		h = readJSHeaders(m.hdr)
		if v := h.val[jhExpectedStream]; v != nil && string(v) != cfg.Name {
			return pubOutcome{err: errExpectedStream()}
		}
		msgID = string(h.val[jhMsgID])
		if msgID != "" {
			mset.pruneDedupe(m.ts)
			if dde := mset.ddmap[msgID]; dde != nil {
				return pubOutcome{seq: dde.seq, dup: true}
			}
		}
		if err := mset.checkExpectations(m, &h); err != nil {
			return pubOutcome{err: err}
		}
	}
	rollup, err := mset.rollupOf(h.val[jhRollup])
	if err != nil {
		return pubOutcome{err: err}
	}
	if err := mset.checkDiscardNew(m); err != nil {
		return pubOutcome{err: err}
	}
	seq, serr := mset.storeMsgLocked(m) // stream_store_panic.go
	if serr != nil {
		mset.storeWriteFailed(serr) // stream_store_failure.go
		return pubOutcome{err: errStoreFailed(serr)}
	}
	if msgID != "" {
		mset.recordMsgID(msgID, seq, m.ts)
	}
	mset.lmsgID = msgID
	mset.applyRollup(rollup, m.subj, seq)
	return pubOutcome{seq: seq}
}

// checkExpectations evaluates the Nats-Expected-* headers against the
// applied state.
func (mset *stream) checkExpectations(m *inMsg, h *jsHdrs) *ApiError {
	if v := h.val[jhExpectedLastSeq]; v != nil {
		want, ok := parseUintHeader(v)
		var st StreamState
		mset.st().FastState(&st)
		if !ok || st.LastSeq != want {
			return errWrongLastSeq(st.LastSeq)
		}
	}
	if v := h.val[jhExpectedLastMsgID]; v != nil && string(v) != mset.lmsgID {
		return errWrongLastMsgID(mset.lmsgID)
	}
	seqHdr := h.val[jhExpectedLastSubjSeq]
	subjHdr := h.val[jhExpectedLastSubjSeqSubj]
	if seqHdr == nil {
		if subjHdr != nil {
			return errMissingExpectedSeq()
		}
		return nil
	}
	subj := m.subj
	if len(subjHdr) > 0 {
		subj = string(subjHdr)
	}
	want, ok := parseUintHeader(seqHdr)
	last := mset.st().LastSeqForSubject(subj)
	if !ok || last != want {
		return errWrongLastSeq(last)
	}
	return nil
}

// rollupOf checks a Nats-Rollup header value (nil: none).
func (mset *stream) rollupOf(v []byte) (string, *ApiError) {
	if v == nil {
		return "", nil
	}
	if !mset.cfg.AllowRollup || mset.cfg.DenyPurge {
		return "", errRollupFailed("rollup not permitted")
	}
	switch r := string(v); r {
	case JSMsgRollupSubject, JSMsgRollupAll:
		return r, nil
	default:
		return "", errRollupFailed("rollup value invalid: " + strconv.Quote(r))
	}
}

func (mset *stream) applyRollup(rollup, subj string, seq uint64) {
	switch rollup {
	case JSMsgRollupSubject:
		_, _ = mset.st().PurgeEx(subj, seq, 0)
	case JSMsgRollupAll:
		_, _ = mset.st().PurgeEx("", seq, 0)
	}
}

// checkDiscardNew refuses a message a DiscardNew stream has no room for.
func (mset *stream) checkDiscardNew(m *inMsg) *ApiError {
	cfg := &mset.cfg
	if cfg.Discard != DiscardNew {
		return nil
	}
	// atSubjectLimit: the subject is at max_msgs_per_subject, so storing
	// this message removes the subject's oldest one. Looked up lazily.
	var subjState *SimpleState
	atSubjectLimit := func() bool {
		if cfg.MaxMsgsPer <= 0 {
			return false
		}
		if subjState == nil {
			ss := mset.st().FilteredState(0, m.subj)
			subjState = &ss
		}
		return subjState.Msgs >= uint64(cfg.MaxMsgsPer)
	}
	if cfg.DiscardNewPer && atSubjectLimit() {
		return errStoreFailed(ErrMaxMsgsPerSubject)
	}
	var st StreamState
	mset.st().FastState(&st)
	// As nats-server: a message that replaces one at its subject's limit
	// does not grow the stream, so a full stream still takes it (a full KV
	// bucket keeps accepting updates of existing keys).
	if cfg.MaxMsgs > 0 && st.Msgs >= uint64(cfg.MaxMsgs) && !atSubjectLimit() {
		return errStoreFailed(ErrMaxMsgs)
	}
	if size := storedMsgSize(m.subj, m.hdr, m.msg); cfg.MaxBytes > 0 && st.Bytes+size > uint64(cfg.MaxBytes) {
		if !atSubjectLimit() {
			return errStoreFailed(ErrMaxBytes)
		}
		// Only if dropping the subject's oldest message makes the room.
		var sm StoreMsg
		old, err := mset.st().LoadMsg(subjState.First, &sm)
		if err != nil || storedMsgSize(old.Subj, old.Hdr, old.Msg) < size {
			return errStoreFailed(ErrMaxBytes)
		}
	}
	return nil
}

// pruneDedupe drops message ids older than the window, measured against
// the entry's own timestamp so every replica prunes identically.
func (mset *stream) pruneDedupe(now int64) {
	window := int64(mset.cfg.Duplicates)
	for mset.ddhead < len(mset.ddarr) {
		dde := mset.ddarr[mset.ddhead]
		if now-dde.ts < window {
			break
		}
		if mset.ddmap[dde.id] == dde {
			delete(mset.ddmap, dde.id)
		}
		mset.ddarr[mset.ddhead] = nil
		mset.ddhead++
	}
	if mset.ddhead > 1024 && mset.ddhead*2 > len(mset.ddarr) {
		mset.ddarr = append(mset.ddarr[:0], mset.ddarr[mset.ddhead:]...)
		mset.ddhead = 0
	}
}

func (mset *stream) recordMsgID(id string, seq uint64, ts int64) {
	if mset.cfg.Duplicates <= 0 {
		return
	}
	dde := &dedupeEntry{id: id, seq: seq, ts: ts}
	mset.ddmap[id] = dde
	mset.ddarr = append(mset.ddarr, dde)
}

// digestStep folds one outcome into the running digest.
func digestStep(d, index uint64, out pubOutcome) uint64 {
	var b [27]byte
	binary.BigEndian.PutUint64(b[0:], d)
	binary.BigEndian.PutUint64(b[8:], index)
	binary.BigEndian.PutUint64(b[16:], out.seq)
	if out.err != nil {
		binary.BigEndian.PutUint16(b[24:], out.err.ErrCode)
	}
	if out.dup {
		b[26] = 1
	}
	h := fnv.New64a()
	h.Write(b[:])
	return h.Sum64()
}

// pubAckJSON renders the PubAck (or error) as nats-server does.
func (mset *stream) pubAckJSON(out pubOutcome, domain string) []byte {
	b := make([]byte, 0, 96)
	if out.err != nil {
		b = append(b, `{"error":{"code":`...)
		b = strconv.AppendInt(b, int64(out.err.Code), 10)
		b = append(b, `,"err_code":`...)
		b = strconv.AppendInt(b, int64(out.err.ErrCode), 10)
		b = append(b, `,"description":`...)
		b = strconv.AppendQuote(b, out.err.Description)
		b = append(b, `},"stream":`...)
		b = append(b, mset.quoted...)
		return append(b, `,"seq":0}`...)
	}
	b = append(b, `{"stream":`...)
	b = append(b, mset.quoted...)
	if domain != "" {
		b = append(b, `,"domain":`...)
		b = strconv.AppendQuote(b, domain)
	}
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, out.seq, 10)
	if out.dup {
		b = append(b, `,"duplicate": true`...)
	}
	return append(b, '}')
}
