package server

import (
	"encoding/json"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"github.com/nats-io/nats-server/v2/internal/vfs"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"
)

// JetStreamAPILevel is the API level Tern implements (2.10 features).
const JetStreamAPILevel = 0

// jetStream is the server's JetStream subsystem.
type jetStream struct {
	mu       lockorder.Mutex[lockorder.JetStream]
	srv      *Server
	storeDir string
	accounts map[string]*jsAccount
	apiTotal atomic.Int64
	apiErrs  atomic.Int64
	cluster  *jsCluster // nil on a single server
	// fs is the file system under every store, raft log and snapshot
	// (Options.fsys; the OS by default).
	fs vfs.FS
	// storageLost: clustered, and the meta group's log was missing at
	// start (a wiped disk or a new server): stream_repair.go groupLost.
	storageLost atomic.Bool
	// storageWiped: storageLost, and a peer held meta state then (or an
	// earlier start found so and has not caught up yet): this server's
	// storage was lost, not new (jetstream_meta_wiped.go).
	storageWiped atomic.Bool
	// scrub is the background scrub (stream_scrub.go); nil when off.
	scrub atomic.Pointer[scrubber]
	// restarts restarts the replicas whose group halted
	// (stream_halt_restart.go); nil on a single server.
	restarts atomic.Pointer[haltRestarts]
	// brokenStores counts this server's running streams whose store is
	// broken now (storeBroken: a panic or a write error; a stopped or
	// restarted replica no longer counts): /jsz stores_broken, and
	// /healthz looks for them only when there are some.
	brokenStores atomic.Int64
	// syncs runs the file streams' periodic store syncs on one timer
	// (stream_sync_sched.go).
	syncs *syncSchedule
	// discard deletes replicas' old store entries behind a restart
	// (stream_discard.go); nil on a single server and under a raft host.
	discard *storeDiscard
	// incSource: the raft directory holds the empty file incarnation
	// records link to (stream_incarnation_link.go).
	incSource atomic.Bool
}

// jsAccount is JetStream for one account.
type jsAccount struct {
	mu      lockorder.RWMutex[lockorder.JSAccount]
	js      *jetStream
	acc     *Account
	dir     string
	streams map[string]*stream
	// claims holds the names of streams being created or updated
	// (stream_lifecycle.go claim).
	claims  map[string]*nameClaim
	apiSubs []*subscription
	// usedCache serves checkStorage (jetstream_limits.go).
	usedCache usageCache
}

// testHookEnableAccounts, set only by tests, runs at start just before the
// accounts' JetStream is enabled (to stretch that moment).
var testHookEnableAccounts func()

// enableJetStream starts JetStream for every account that has it.
func (s *Server) enableJetStream() error {
	o := s.getOpts()
	js := &jetStream{srv: s, storeDir: filepath.Join(o.StoreDir, "jetstream"), accounts: map[string]*jsAccount{}, fs: o.fsys,
		syncs: newSyncSchedule(s.clock)}
	if js.fs == nil {
		js.fs = vfs.Default
	}
	js.fs = budgetFS(js.fs, o)
	if err := vfs.MkdirAllSynced(js.fs, js.storeDir, 0o750); err != nil {
		return fmt.Errorf("could not create storage directory %q: %v", js.storeDir, err)
	}
	if s.clusteredJetStream() {
		if s.getOpts().ServerName == "" {
			return fmt.Errorf("jetstream cluster requires `server_name` to be set")
		}
		// Set before js is published: route hooks read js.cluster.
		js.cluster = &jsCluster{js: js, streams: map[string]map[string]*streamAssignment{}, changed: make(chan struct{}),
			leaders: newLeaderMap()}
		js.cluster.restart.heldAtStart = s.metaHeld.Load()
		if o.raftHost == nil {
			js.discard = newStoreDiscard(js.fs)
			js.startDiscard()
		}
	}
	s.js.Store(js)
	s.registerJetStreamRouteHooks()
	if js.cluster != nil {
		js.startJetStreamCluster()
	}
	s.Noticef("Starting JetStream")
	s.Noticef("  Store Directory: %q", o.StoreDir)
	s.Noticef("  API Level: %d", JetStreamAPILevel)
	if hook := testHookEnableAccounts; hook != nil {
		hook()
	}
	for _, acc := range s.jsAccounts(o) {
		if err := js.enableAccount(acc); err != nil {
			return err
		}
	}
	js.startHaltRestarts() // before any replica starts
	if js.cluster != nil {
		// Only now: the meta state restored at start starts the replicas
		// of these accounts (an account not enabled yet would be skipped).
		js.cluster.startMetaGroup()
	}
	js.startScrub()
	return nil
}

// jsAccounts lists the accounts that get JetStream: those marked in the
// config, or the global account when no account asks for it.
func (s *Server) jsAccounts(o *Options) []*Account {
	var out []*Account
	for _, a := range o.Accounts {
		if a.jetstream {
			out = append(out, s.accs.lookup(a.Name))
		}
	}
	if len(out) == 0 && len(o.Accounts) == 0 {
		out = append(out, s.globalAccount())
	}
	return out
}

func (js *jetStream) enableAccount(acc *Account) error {
	if acc == js.srv.SystemAccount() {
		return errSystemJetStream // opts_validate.go
	}
	jsa := &jsAccount{js: js, acc: acc, dir: filepath.Join(js.storeDir, acc.Name, "streams"), streams: map[string]*stream{}}
	if err := vfs.MkdirAllSynced(js.fs, jsa.dir, 0o750); err != nil {
		return err
	}
	js.mu.Lock()
	js.accounts[acc.Name] = jsa
	js.mu.Unlock()
	if js.cluster == nil {
		if err := jsa.recoverStreams(); err != nil {
			return err
		}
	}
	return jsa.subscribeAPI()
}

func (js *jetStream) account(name string) *jsAccount {
	js.mu.Lock()
	defer js.mu.Unlock()
	return js.accounts[name]
}

// accountList returns the JetStream accounts (a copy, safe to range over
// without js.mu).
func (js *jetStream) accountList() []*jsAccount {
	js.mu.Lock()
	defer js.mu.Unlock()
	accs := make([]*jsAccount, 0, len(js.accounts))
	for _, a := range js.accounts {
		accs = append(accs, a)
	}
	return accs
}

// shutdown stops every stream, syncing stores.
func (js *jetStream) shutdown() {
	js.stopHaltRestarts()
	js.stopScrub()
	for _, jsa := range js.accountList() {
		for _, sub := range jsa.apiSubs {
			jsa.acc.unsubscribe(sub)
		}
		for _, mset := range jsa.streamList() {
			mset.stop(false)
		}
	}
	js.syncs.stop()
	js.stopDiscard()
}

func (jsa *jsAccount) lookup(name string) *stream {
	jsa.mu.RLock()
	defer jsa.mu.RUnlock()
	return jsa.streams[name]
}

// streamList returns the streams sorted by name.
func (jsa *jsAccount) streamList() []*stream {
	jsa.mu.RLock()
	out := make([]*stream, 0, len(jsa.streams))
	for _, m := range jsa.streams {
		out = append(out, m)
	}
	jsa.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// streamMeta is what a stream directory records about the stream.
type streamMeta struct {
	Config  StreamConfig `json:"config"`
	Created time.Time    `json:"created"`
}

const streamMetaFile = "meta.json"

// recoverStreams reopens the streams found in the account's directory.
func (jsa *jsAccount) recoverStreams() error {
	entries, err := jsa.js.fs.ReadDir(jsa.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		b, err := vfs.ReadFile(jsa.js.fs, filepath.Join(jsa.dir, e.Name(), streamMetaFile))
		if err != nil {
			jsa.js.srv.Warnf("JetStream: skipping stream directory %q: %v", e.Name(), err)
			continue
		}
		var meta streamMeta
		if err := json.Unmarshal(b, &meta); err != nil {
			jsa.js.srv.Errorf("JetStream: stream %q has a corrupt %s: %v", e.Name(), streamMetaFile, err)
			continue
		}
		if _, err := jsa.addStream(&meta.Config, meta.Created, true); err != nil {
			jsa.js.srv.Errorf("JetStream: could not recover stream %q: %v", meta.Config.Name, err)
			continue
		}
		jsa.js.srv.Noticef("  Restored stream %q in account %q", meta.Config.Name, jsa.acc.Name)
	}
	return nil
}

func (js *jetStream) writeFileSync(path string, data []byte) error {
	return vfs.WriteFileAtomic(js.fs, path, data)
}

// sleepOnClock is sleepOrShutdown on the server's clock, for JetStream's
// loops: it waits d; true if the server is shutting down (a manual clock
// that is not advanced does not hold Shutdown up).
func (s *Server) sleepOnClock(d time.Duration) bool {
	t := s.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return s.shutdown.Load()
	case <-s.quit:
		return true
	}
}
