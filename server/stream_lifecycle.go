package server

import (
	"encoding/json"
	"github.com/nats-io/nats-server/v2/internal/store"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func limitsOf(cfg *StreamConfig) StoreLimits {
	l := StoreLimits{}
	if cfg.MaxMsgs > 0 && cfg.Discard == DiscardOld {
		l.MaxMsgs = cfg.MaxMsgs
	}
	if cfg.MaxBytes > 0 && cfg.Discard == DiscardOld {
		l.MaxBytes = cfg.MaxBytes
	}
	if cfg.MaxMsgsPer > 0 {
		l.MaxMsgsPerSubject = cfg.MaxMsgsPer
	}
	return l
}

// addStream creates (or, when recovering, reopens) a stream. The name and
// subjects are claimed under jsa.mu; the store is opened and the stream
// subscribed without it (subscribing takes routeTable.mu, ranked before
// jsAccount.mu), and the stream is published in jsa.streams only once it
// runs. A second create of the same name waits for the first to finish
// and then decides again, as if the two had run one after the other.
func (jsa *jsAccount) addStream(cfg *StreamConfig, created time.Time, recovering bool) (*stream, *ApiError) {
	done, e := jsa.claim(cfg.Name, cfg.Subjects, func() *ApiError {
		if _, ok := jsa.streams[cfg.Name]; ok {
			return errStreamNameExist()
		}
		return overlapsOthers(cfg.Subjects, jsa.othersSubjects(nil))
	})
	if e != nil {
		return nil, e
	}
	mset, e := jsa.makeStream(cfg, created, recovering)
	jsa.mu.Lock()
	if mset != nil {
		jsa.streams[cfg.Name] = mset
	}
	jsa.unclaimLocked(cfg.Name, done)
	jsa.mu.Unlock()
	return mset, e
}

// nameClaim marks a stream name with a create or an update in progress.
type nameClaim struct {
	subjects []string      // a create's subjects, for the overlap checks
	done     chan struct{} // closed when the create or update has finished
}

// claim waits until no create or update of name is in progress, then,
// under jsa.mu, runs check (nil: none) and, if it passes, claims the name.
// The caller ends the claim with unclaimLocked.
func (jsa *jsAccount) claim(name string, subjects []string, check func() *ApiError) (done chan struct{}, e *ApiError) {
	for {
		jsa.mu.Lock()
		if p := jsa.claims[name]; p != nil {
			jsa.mu.Unlock()
			<-p.done
			continue
		}
		if check != nil {
			if e := check(); e != nil {
				jsa.mu.Unlock()
				return nil, e
			}
		}
		if jsa.claims == nil {
			jsa.claims = map[string]*nameClaim{}
		}
		p := &nameClaim{subjects: subjects, done: make(chan struct{})}
		jsa.claims[name] = p
		jsa.mu.Unlock()
		return p.done, nil
	}
}

// unclaimLocked ends a claim; the caller holds jsa.mu.
func (jsa *jsAccount) unclaimLocked(name string, done chan struct{}) {
	delete(jsa.claims, name)
	close(done)
}

// othersSubjects yields the subjects of every stream but skip and of
// every create in progress. The caller holds jsa.mu.
func (jsa *jsAccount) othersSubjects(skip *stream) func(yield func([]string) bool) {
	return func(yield func([]string) bool) {
		for _, other := range jsa.streams {
			if other != skip && !yield(other.cfg.Subjects) {
				return
			}
		}
		for _, p := range jsa.claims {
			if !yield(p.subjects) {
				return
			}
		}
	}
}

// testHookMakeStream, set only by tests, runs as a claimed create starts
// its slow part (to hold the claim open).
var testHookMakeStream func(name string)

// makeStream opens the store of a claimed stream, writes its metadata
// (unless recovering) and starts it. Called without jsa.mu.
func (jsa *jsAccount) makeStream(cfg *StreamConfig, created time.Time, recovering bool) (*stream, *ApiError) {
	if hook := testHookMakeStream; hook != nil {
		hook(cfg.Name)
	}
	dir := filepath.Join(jsa.dir, cfg.Name)
	store, err := jsa.openStore(dir, cfg)
	if err != nil {
		return nil, errStreamCreate(err)
	}
	mset := &stream{jsa: jsa, name: cfg.Name, quoted: strconv.Quote(cfg.Name), cfg: *cfg, created: created, ddmap: map[string]*dedupeEntry{}}
	mset.setStore(store)
	if !recovering {
		if cfg.FirstSeq > 1 {
			_ = store.SkipMsgs(cfg.FirstSeq - 1)
		}
		meta, _ := json.Marshal(streamMeta{Config: *cfg, Created: created})
		if err := vfs.MkdirAllSynced(jsa.js.fs, dir, 0o750); err != nil {
			store.Delete()
			return nil, errStreamCreate(err)
		}
		if err := jsa.js.writeFileSync(filepath.Join(dir, streamMetaFile), meta); err != nil {
			store.Delete()
			jsa.js.fs.RemoveAll(dir)
			return nil, errStreamCreate(err)
		}
	} else {
		if !mset.loadDedupeState() {
			mset.rebuildDedupe()
		}
	}
	if recovering && cfg.Storage == FileStorage {
		// Before the stream listens: an interest stream keeps a message
		// only if a consumer matches it, so its consumers must be back first.
		mset.recoverConsumers()
	}
	if err := mset.start(); err != nil {
		mset.stop(!recovering)
		return nil, errStreamCreate(err)
	}
	return mset, nil
}

// openStore opens the store of the stream whose directory is dir (its
// messages in dir/msgs).
func (jsa *jsAccount) openStore(dir string, cfg *StreamConfig) (StreamStore, error) {
	return jsa.openStoreIn(dir, filepath.Join(dir, "msgs"), cfg)
}

// openStoreIn opens a store with its messages in msgs, a directory of the
// stream's directory dir (a restored replica's store is in msgs.<n>).
func (jsa *jsAccount) openStoreIn(dir, msgs string, cfg *StreamConfig) (StreamStore, error) {
	limits := limitsOf(cfg)
	if cfg.Storage == MemoryStorage {
		return store.NewMemStore(limits), nil
	}
	if err := vfs.MkdirAllSynced(jsa.js.fs, dir, 0o750); err != nil {
		return nil, err
	}
	return store.OpenFileStore(jsa.js.fs, msgs, fileStoreConfig(cfg, jsa.js.srv.Errorf), limits)
}

// openReplicaStore opens the empty store of a replica whose directory dir
// was just emptied (startReplica): a file store is made in dir/msgs by its
// first write, unsynced (store.FileStoreConfig.New).
func (jsa *jsAccount) openReplicaStore(dir string, cfg *StreamConfig) (StreamStore, error) {
	if cfg.Storage == MemoryStorage {
		return store.NewMemStore(limitsOf(cfg)), nil
	}
	fc := fileStoreConfig(cfg, jsa.js.srv.Errorf)
	fc.New = true
	return store.OpenFileStore(jsa.js.fs, filepath.Join(dir, "msgs"), fc, limitsOf(cfg))
}

// fileStoreBlockSize is the block size of streams' file stores (0: the
// store's default); a variable for tests.
var fileStoreBlockSize uint64

// fileStoreConfig is what the file store needs of a stream's configuration.
func fileStoreConfig(cfg *StreamConfig, logf func(string, ...any)) FileStoreConfig {
	fc := FileStoreConfig{BlockSize: fileStoreBlockSize, Logf: logf}
	if cfg.Compression == S2Compression {
		fc.Compression = "s2"
	}
	return fc
}

// start subscribes the stream to its subjects and starts its timers.
func (mset *stream) start() error {
	if err := mset.subscribe(); err != nil {
		return err
	}
	o := mset.jsa.js.srv.getOpts()
	if mset.cfg.Storage == FileStorage {
		mset.syncer = newGroupCommit(mset, o.syncEachWrite(), o.backgroundSync())
	}
	mset.mu.Lock()
	mset.scheduleExpiryLocked()
	mset.mu.Unlock()
	return nil
}

// subscribe makes the stream's subscriptions match its config: its
// subjects, and direct get when allowed. Missing ones are added before the
// ones no longer wanted are removed, so a subject the stream keeps across
// an update never goes without a listener (a publish in that gap would be
// lost). Callers are serialised by the stream's name claim (claim).
func (mset *stream) subscribe() error {
	mset.mu.Lock()
	cfg := mset.cfg
	have := mset.subs
	mset.mu.Unlock()
	type spec struct {
		subject, queue string
		cb             msgHandler
	}
	var want []spec
	for _, subj := range cfg.Subjects {
		want = append(want, spec{subj, "", mset.inbound})
	}
	if cfg.AllowDirect {
		prefix := "$JS.API.DIRECT.GET." + cfg.Name
		want = append(want, spec{prefix, "_sys_", mset.directGet}, spec{prefix + ".>", "_sys_", mset.directGet})
	}
	key := func(subject, queue string) string { return queue + " " + subject }
	wanted := map[string]bool{}
	for _, w := range want {
		wanted[key(w.subject, w.queue)] = true
	}
	acc := mset.jsa.acc
	present := map[string]bool{}
	var subs, drop []*subscription
	for _, sub := range have {
		if k := key(sub.subject, sub.queue); wanted[k] && !present[k] {
			present[k] = true
			subs = append(subs, sub)
		} else {
			drop = append(drop, sub)
		}
	}
	var added []*subscription
	for _, w := range want {
		if present[key(w.subject, w.queue)] {
			continue
		}
		sub, err := acc.subscribeInternal(w.subject, w.queue, w.cb)
		if err != nil {
			for _, a := range added {
				acc.unsubscribe(a)
			}
			return err
		}
		added = append(added, sub)
	}
	mset.mu.Lock()
	if mset.closed { // stopped meanwhile: stop took (or will not see) these
		mset.mu.Unlock()
		for _, a := range added {
			acc.unsubscribe(a)
		}
		return nil
	}
	mset.subs = append(subs, added...)
	mset.mu.Unlock()
	for _, sub := range drop {
		acc.unsubscribe(sub)
	}
	return nil
}

// stop unsubscribes, stops timers and closes (or deletes) the store.
func (mset *stream) stop(deleteData bool) error {
	mset.mu.Lock()
	if mset.closed {
		mset.mu.Unlock()
		return nil
	}
	// Closed first, so a concurrent subscribe drops what it adds.
	mset.closed = true
	subs := append(mset.subs, mset.ingest...)
	mset.subs, mset.ingest = nil, nil
	if mset.expiry != nil {
		mset.expiry.Stop()
	}
	syncer := mset.syncer
	csubs, released := mset.stopConsumersLocked(!deleteData)
	for _, sub := range csubs {
		if sub != nil {
			subs = append(subs, sub)
		}
	}
	mset.mu.Unlock()
	flushConsumers(released)
	for _, sub := range subs {
		mset.jsa.acc.unsubscribe(sub)
	}
	if syncer != nil {
		syncer.stop()
	}
	defer mset.forgetStoreBroken() // stream_store_failure.go
	if deleteData {
		err := mset.storeSafely("delete", mset.st().Delete)
		vfs.RemoveAllSynced(mset.jsa.js.fs, filepath.Join(mset.jsa.dir, mset.name))
		return err
	}
	err := mset.storeSafely("stop", mset.st().Stop)
	if err == nil && !mset.isClustered() && mset.cfg.Storage == FileStorage {
		mset.saveDedupeState()
	}
	return err
}

// inbound is the internal subscription handler for the stream's subjects.
func (mset *stream) inbound(_ *subscription, c *client, _ *Account, subject, reply string, hdr, msg []byte) {
	if mset.isClustered() {
		mset.proposeInbound(c, subject, reply, hdr, msg)
		return
	}
	if e := mset.jsa.checkStorage(mset, storedMsgSize(subject, hdr, msg)); e != nil {
		if reply != "" {
			mset.jsa.js.srv.deliver(c, mset.jsa.acc, reply, "", nil, mset.pubAckJSON(pubOutcome{err: e}, ""))
		}
		return
	}
	if err := mset.storeFailure(); err != nil { // its store panicked (stream_store_panic.go)
		if reply != "" {
			mset.jsa.js.srv.deliver(c, mset.jsa.acc, reply, "", nil, mset.pubAckJSON(pubOutcome{err: errStoreFailed(err)}, ""))
		}
		return
	}
	m := inMsg{subj: strings.Clone(subject), hdr: hdr, msg: msg, ts: mset.jsa.js.srv.clock.Now().UnixNano()}
	mset.mu.Lock()
	if mset.closed {
		mset.mu.Unlock()
		return
	}
	out := mset.processJetStreamMsg(&m)
	first := out.err == nil && !out.dup && mset.expiry == nil && mset.cfg.MaxAge > 0
	if first {
		mset.scheduleExpiryLocked()
	}
	syncer, noAck := mset.syncer, mset.cfg.NoAck
	var sends []*consumer
	if out.err == nil && !out.dup && len(mset.consumers) > 0 {
		sends = mset.pumpConsumersLocked()
	}
	mset.mu.Unlock()
	flushConsumers(sends)
	if reply == "" || noAck {
		return
	}
	ack := mset.pubAckJSON(out, mset.jsa.js.srv.getOpts().JetStreamDomain)
	switch {
	case syncer != nil && syncer.always && out.err == nil && c != nil && c.route == nil:
		deferSyncedAck(c, mset, syncer, reply, ack) // after this read, an fsync
	case syncer != nil && syncer.always && out.err == nil:
		syncer.ackAfterSync(strings.Clone(reply), ack) // after an fsync
	case syncer != nil && out.err == nil && c != nil && c.route == nil:
		deferAck(c, mset, reply, ack) // after this read's write to the OS
	case syncer != nil && out.err == nil:
		if err := mset.storeSafely("flush", mset.st().Flush); err != nil {
			ack = mset.pubAckJSON(pubOutcome{err: errStoreFailed(err)}, "")
		}
		mset.jsa.js.srv.deliver(c, mset.jsa.acc, reply, "", nil, ack)
	default:
		mset.jsa.js.srv.deliver(c, mset.jsa.acc, reply, "", nil, ack)
	}
}

// rebuildDedupe restores the duplicate window and the last message id from
// the stored messages after a restart.
func (mset *stream) rebuildDedupe() {
	var st StreamState
	mset.st().FastState(&st)
	if st.Msgs == 0 {
		return
	}
	var sm StoreMsg
	if m, err := mset.st().LoadMsg(st.LastSeq, &sm); err == nil {
		mset.lmsgID = string(getHeader(JSMsgId, m.Hdr))
	}
	cutoff := st.LastTime.UnixNano() - int64(mset.cfg.Duplicates)
	var found []*dedupeEntry
	for seq := st.LastSeq; seq >= st.FirstSeq && seq > 0; seq-- {
		m, err := mset.st().LoadMsg(seq, &sm)
		if err == ErrStoreMsgNotFound {
			continue
		}
		if err != nil || m.TS < cutoff {
			break
		}
		if id := getHeader(JSMsgId, m.Hdr); len(id) > 0 {
			found = append(found, &dedupeEntry{id: string(id), seq: m.Seq, ts: m.TS})
		}
	}
	for i := len(found) - 1; i >= 0; i-- {
		mset.ddmap[found[i].id] = found[i]
		mset.ddarr = append(mset.ddarr, found[i])
	}
}

// scheduleExpiryLocked arms the max_age timer for the oldest message, or
// stops it when the stream has no max_age (any more).
func (mset *stream) scheduleExpiryLocked() {
	if mset.cfg.MaxAge <= 0 && mset.expiry != nil {
		mset.expiry.Stop()
		mset.expiry = nil
	}
	if mset.cfg.MaxAge <= 0 || mset.closed {
		return
	}
	var st StreamState
	mset.st().FastState(&st)
	if st.Msgs == 0 {
		mset.expiry = nil
		return
	}
	// A message expires once older than max_age (ExpireBefore keeps
	// ts == cutoff): 1ns past its max_age is the first moment it can go.
	clk := mset.jsa.js.srv.clock
	wait := clk.Until(st.FirstTime.Add(mset.cfg.MaxAge + 1))
	wait = max(wait, 10*time.Millisecond)
	if mset.expiry != nil {
		mset.expiry.Reset(wait)
		return
	}
	mset.expiry = clk.AfterFunc(wait, mset.expire)
}

// expire removes messages older than max_age. The cut-off is chosen here,
// once, and applied as an operation: a replicated stream's leader puts
// that operation through the log, so every replica removes the same
// messages at the same point (a follower's timer does nothing). The
// leader re-arms the timer when the operation is applied, and retries
// after expiryRetry should the proposal be lost.
func (mset *stream) expire() {
	mset.mu.Lock()
	if mset.closed {
		mset.mu.Unlock()
		return
	}
	if mset.cfg.MaxAge <= 0 { // max_age removed since the timer was armed
		mset.expiry = nil
		mset.mu.Unlock()
		return
	}
	cutoff := mset.jsa.js.srv.clock.Now().Add(-mset.cfg.MaxAge).UnixNano()
	if !mset.replicated {
		mset.applyExpire(cutoff)
		mset.scheduleExpiryLocked()
		mset.mu.Unlock()
		mset.flushConsumersOut()
		return
	}
	lead := mset.leader
	if lead && mset.expiry != nil {
		mset.expiry.Reset(expiryRetry)
	}
	mset.mu.Unlock()
	if lead {
		mset.propose(&streamEntry{op: streamOpExpire, cutoff: cutoff})
	}
}

const expiryRetry = time.Second

// applyExpire is the deterministic expiry operation.
func (mset *stream) applyExpire(cutoff int64) {
	n, err := mset.st().ExpireBefore(cutoff)
	if err != nil {
		mset.storeWriteFailed(err) // stream_store_failure.go
	}
	if n > 0 {
		mset.consumersTrimmedLocked()
	}
}
