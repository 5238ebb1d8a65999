package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"hash/fnv"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/internal/raft"
	"github.com/nats-io/nats-server/v2/internal/vfs"
)

// The meta group: every JetStream server of the cluster is a member. Its
// log holds stream assignments (which servers replicate which stream);
// every server applies them and starts or stops its replicas.

const metaGroupName = "_meta_"

// streamAssignment places a stream on servers.
type streamAssignment struct {
	Account string       `json:"account"`
	Config  StreamConfig `json:"config"`
	Peers   []string     `json:"peers"`
	Created time.Time    `json:"created"`
	// Removed lists servers taken out with STREAM.PEER.REMOVE; they are
	// not picked as replacements for this stream again.
	Removed []string `json:"removed,omitempty"`
}

// groupName is the name of the stream's raft group (jetstream_group_name.go).
func (sa *streamAssignment) groupName() string { return streamGroupName(sa.Account, sa.Config.Name) }

// firstLeader is the member that campaigns as soon as a new stream's group
// starts; the choice is spread over the members by the stream's identity.
func (sa *streamAssignment) firstLeader() string {
	if len(sa.Peers) == 0 {
		return ""
	}
	return sa.Peers[sa.firstLeaderIndex()]
}

// firstLeaderIndex is the first leader's index in sa.Peers (not empty): it
// depends only on the stream's identity and the number of peers, so the
// meta leader can put the member it wants there (jetstream_first_leader.go).
func (sa *streamAssignment) firstLeaderIndex() int {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s %s %d", sa.Account, sa.Config.Name, sa.Created.UnixNano())
	return int(h.Sum32() % uint32(len(sa.Peers)))
}

// metaEntry is one meta log entry.
type metaEntry struct {
	Op     string            `json:"op"` // "add", "del", "upd"
	SA     *streamAssignment `json:"sa"`
	Origin string            `json:"origin"`
	Reply  string            `json:"reply,omitempty"`
	// "peers": the server taken out and its replacement (older versions
	// send only SA.Peers, the whole new list).
	Remove string `json:"remove,omitempty"`
	Add    string `json:"add,omitempty"`
	// Scale marks an "upd" that changes the replica count: SA.Peers is
	// the new placement, taken together with the configuration, if the
	// placement is still From.
	Scale bool     `json:"scale,omitempty"`
	From  []string `json:"from,omitempty"`
	// ID is the client's request id, shared by its held copies, and At
	// the proposing leader's clock (UnixNano): an entry of an id applied
	// already is skipped (jetstream_meta_reqid.go). Older versions send
	// none.
	ID string `json:"rid,omitempty"`
	At int64  `json:"at,omitempty"`
	// Copy marks an entry proposed for a held request's copy: only a
	// copy is skipped for an id applied already (an original may repeat
	// an earlier request's id: a client reusing a fixed reply subject).
	Copy bool `json:"copy,omitempty"`
	// stoppedLead: the stream's leader as this server knew it when it
	// applied a deletion (not encoded; jetstream_delete_answer.go).
	stoppedLead string
}

// jsCluster is JetStream's cluster state on one server.
type jsCluster struct {
	mu      lockorder.Mutex[lockorder.JSCluster]
	js      *jetStream
	meta    *raftGroup
	peers   []string
	streams map[string]map[string]*streamAssignment // account → stream → assignment
	changed chan struct{}                           // closed and replaced when streams changes
	// placed counts the assignments naming each server (kept with
	// streams, so placing a stream does not scan every assignment).
	placed map[string]int
	// assigned is how many assignments streams holds, all accounts
	// together, kept with placed (the meta group asks after every applied
	// batch whether a snapshot is due: counting 10,000 assignments each
	// time held jc.mu for O(N)).
	assigned int
	// firstLeads counts the replicated assignments whose first leader
	// (streamAssignment.firstLeader) is each server, kept with placed
	// (jetstream_first_leader.go).
	firstLeads map[string]int
	// subjects indexes each account's stream subjects for the overlap
	// check of a create (jetstream_subject_index.go).
	subjects map[string]*subjectIndex
	leaders  *leaderMap
	// graceWaiters counts requests waiting for a leader to become known
	// before they are answered 10008 (jetstream_leader_grace.go).
	graceWaiters atomic.Int32
	// metaHolds counts meta requests held over a leader's death
	// (jetstream_meta_hold.go).
	metaHolds atomic.Int32
	usage     remoteUsage // the other servers' account usage (jetstream_usage.go)
	usageSend usageSender // reportUsage's caller only (jetstream_usage.go)
	// leavers are the replicas leaving under a raftHost (stepLeavers).
	leavers []*leaver
	// balance is what the leader balancer's last round saw (jetstream_balance.go).
	balance balanceState
	// replay holds replicas whose group directory is contested until the
	// meta log is applied as far as it was committed at start
	// (jetstream_group_name.go).
	replay metaReplay
	// replayOut: placements leaving this server out met while the meta
	// log replays, acted on at its end (jetstream_replay_leaves.go).
	replayOut replayLeaves
	// sharedOld: the old-form group names two streams share, replaced
	// under mu and read without it (jetstream_group_name_shared.go).
	sharedOld oldNameSet
	// restart counts the replicas started from what this server held
	// and those current since (jetstream_restart_progress.go).
	restart restartProgress
	catchUp catchUpView // jetstream_balance_hold.go
	// reqs: the request ids of the last meta entries applied with one,
	// changed only at apply (jetstream_meta_reqid.go).
	reqs metaReqs
	// recent: the stream writes this server's clients sent lately
	// (jetstream_meta_repeat.go).
	recent recentWrites
	// protos: the route protocol each peer last advertised, kept on disk
	// (jetstream_meta_protos.go).
	protos peerProtos
	// holdWake is closed when the meta leader or a peer's health changes,
	// made only while a held request waits (jetstream_meta_hold_wake.go).
	holdWake chan struct{}
}

// streamsChangedLocked wakes everyone waiting for an assignment change.
func (jc *jsCluster) streamsChangedLocked() {
	close(jc.changed)
	jc.changed = make(chan struct{})
}

func (js *jetStream) groupDir(sa *streamAssignment) string {
	return filepath.Join(js.storeDir, "_raft_", sa.groupName())
}

// clusteredJetStream reports whether JetStream runs replicated here.
func (s *Server) clusteredJetStream() bool {
	o := s.getOpts()
	return o.JetStream && (o.Cluster.Port != 0 && len(o.Routes) > 0 || o.raftHost != nil)
}

// startJetStreamCluster sets up the cluster state (js.cluster, made before
// js was published); startMetaGroup starts
// the meta group once the JetStream accounts are enabled.
func (js *jetStream) startJetStreamCluster() {
	s := js.srv
	// Transfers a previous run was receiving are of no use now.
	js.fs.RemoveAll(filepath.Join(js.storeDir, "_raft_", spoolDirName))
	jc := js.cluster
	jc.loadPeerProtos() // after the route hook is set (jetstream_meta_protos.go)
	if sys := s.SystemAccount(); sys != nil {
		_, _ = sys.subscribeInternal("$JSC.LEADER.>", "", jc.leaderAnnounced)
		_, _ = sys.subscribeInternal(leaderListSubject, "", jc.leaderListed)
		_, _ = sys.subscribeInternal(streamInfoAskPrefix+">", "", jc.streamInfoAsked)
		_, _ = sys.subscribeInternal(resignAckPrefix+">", "", jc.resignationAcked)
		_, _ = sys.subscribeInternalRouteOrigin(catchUpSubject, jc.catchUpHeard) // jetstream_balance_hold.go
		_, _ = sys.subscribeInternalRouteOrigin(metaCopySubject, jc.metaCopied)  // jetstream_meta_copy.go
	}
	_ = js.subscribeSysAPI()
	jc.startUsageReports()
	if s.getOpts().raftHost != nil {
		return // the host calls reannounce
	}
	s.wg.Add(1)
	go jc.reannounceLoop()
	s.wg.Add(1)
	go jc.balanceLoop() // jetstream_balance.go
}

// startMetaGroup waits for the cluster's peers and starts the meta group.
// The members are the servers named by the configured routes (and this
// one); once known they are remembered in the meta directory. It runs after
// the accounts are enabled: a meta snapshot stored here is restored while
// the group starts, and its assignments start their replicas only in
// accounts already enabled (nothing starts a skipped one later).
func (jc *jsCluster) startMetaGroup() {
	s := jc.js.srv
	if s.getOpts().raftHost != nil {
		// The simulator wrote the members to peers.json: no waiting, and
		// the group starts on the host's goroutine.
		if err := jc.startMeta(jc.waitForPeers()); err != nil {
			s.Errorf("JetStream cluster: could not start the meta group: %v", err)
		}
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		peers := jc.waitForPeers()
		if peers == nil {
			return
		}
		if err := jc.startMeta(peers); err != nil {
			s.Errorf("JetStream cluster: could not start the meta group: %v", err)
		}
	}()
}

func (jc *jsCluster) metaDir() string { return filepath.Join(jc.js.storeDir, "_raft_", metaGroupName) }

// waitForPeers returns the meta membership: remembered, or learned from
// the routes once every configured peer is connected.
func (jc *jsCluster) waitForPeers() []string {
	s := jc.js.srv
	file := filepath.Join(jc.metaDir(), "peers.json")
	if b, err := vfs.ReadFile(jc.js.fs, file); err == nil {
		var peers []string
		if json.Unmarshal(b, &peers) == nil && len(peers) > 0 {
			return peers
		}
	}
	want := s.expectedClusterSize()
	for !s.shutdown.Load() {
		names := []string{s.Name()}
		for _, r := range s.routeList() {
			names = append(names, r.remote.Name)
		}
		if len(names) >= want {
			sort.Strings(names)
			_ = vfs.MkdirAllSynced(jc.js.fs, jc.metaDir(), 0o750)
			b, _ := json.Marshal(names)
			if err := jc.js.writeFileSync(file, b); err != nil {
				s.Errorf("JetStream cluster: %v", err)
			}
			return names
		}
		if s.sleepOnClock(50 * time.Millisecond) {
			return nil
		}
	}
	return nil
}

// expectedClusterSize counts the distinct configured route targets other
// than this server (its cluster listen address, or the address it
// advertises: a proxy or NAT in front of it), plus this server.
func (s *Server) expectedClusterSize() int {
	own := s.ClusterAddr()
	advertised := s.getOpts().Cluster.Advertise
	seen := map[string]bool{}
	for _, u := range s.getOpts().Routes {
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil {
			continue
		}
		if own != nil && port == fmt.Sprint(own.Port) && (host == "127.0.0.1" || host == "localhost" || host == own.IP.String()) {
			continue
		}
		if advertised != "" && u.Host == advertised {
			continue
		}
		seen[u.Host] = true
	}
	return len(seen) + 1
}

func (jc *jsCluster) startMeta(peers []string) error {
	s := jc.js.srv
	wiped, err := jc.metaStorageWiped() // jetstream_meta_wiped.go
	if err != nil {
		return err
	}
	log, salvaged, err := jc.openMetaLog(len(peers)) // jetstream_meta_repair.go
	if err != nil {
		return err
	}
	recovering, err := jc.checkMetaMark(log, len(peers), salvaged)
	if err != nil {
		log.Close()
		return err
	}
	recovering = recovering || wiped && len(peers) > 1
	ids := make([]raft.ID, len(peers))
	for i, p := range peers {
		ids[i] = raftID(p)
	}
	hs, _, _ := log.InitialState()
	jc.mu.Lock()
	jc.peers = peers
	jc.replay = metaReplay{to: hs.Commit, done: hs.Commit == 0}
	jc.mu.Unlock()
	jc.prunePeerProtos() // jetstream_meta_protos.go
	last, _ := log.LastIndex()
	lastTerm, _ := log.Term(last)
	sm := &metaSM{jc: jc, rec: metaRecovery{active: recovering, log: log}, caughtUp: last, openTerm: lastTerm}
	g, err := s.startRaftGroup(metaGroupName, ids, log, sm)
	if err != nil {
		log.Close()
		return err
	}
	jc.mu.Lock()
	jc.meta = g
	jc.mu.Unlock()
	s.Noticef("JetStream cluster: meta group started with %v", peers)
	return nil
}

// metaLeader reports whether this server leads the meta group (and has
// applied its whole log).
func (jc *jsCluster) isMetaLeader() bool {
	jc.mu.Lock()
	g := jc.meta
	jc.mu.Unlock()
	if g == nil {
		return false
	}
	st := g.softState()
	return st.Role == raft.Leader && st.LeaderReady
}

func (jc *jsCluster) metaLeaderKnown() bool {
	jc.mu.Lock()
	g := jc.meta
	jc.mu.Unlock()
	return g != nil && g.softState().Lead != raft.None
}

// metaGroup is the meta group (nil until it starts) and the number of
// its members.
func (jc *jsCluster) metaGroup() (*raftGroup, int) {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return jc.meta, len(jc.peers)
}

// metaLeaderName maps the meta group's leader id back to a server name.
func (jc *jsCluster) metaLeaderName() string {
	jc.mu.Lock()
	g, peers := jc.meta, jc.peers
	jc.mu.Unlock()
	if g == nil {
		return ""
	}
	lead := g.softState().Lead
	for _, p := range peers {
		if lead != raft.None && raftID(p) == lead {
			return p
		}
	}
	return ""
}

// metaSM applies meta entries (snapshots: jetstream_meta_snapshot.go).
type metaSM struct {
	jc       *jsCluster
	applied  uint64 // touched only on the group goroutine
	snapshot uint64
	rec      metaRecovery // jetstream_meta_repair.go
	// caughtUp is the last index of what this server applies catching
	// up: its meta log's last entry when it opened, raised to the commit
	// index when a recovering member caught up (group goroutine only).
	caughtUp uint64
	// openTerm is the term of the log's last entry at open: an entry of a
	// later term was proposed since, even at an index up to caughtUp (the
	// log's uncommitted tail was cut by a leader since), so it ends the
	// replay and its call is answered (Apply). replayOver says an applied
	// entry ended the replay (metaSM.replaying).
	openTerm   uint64
	replayOver bool
	// deferring mirrors jsCluster.replayOut.active, so that it is set
	// only when it changes (metaSM.deferLeaves), not for every entry.
	deferring bool
}

// startOf says how a create starts its replica, replaying telling whether
// its entry is applied catching up the meta log (metaSM.replaying: replayed
// from this server's own log, or learned from the leader while it recovers
// after losing state): such a create may have run its group here before,
// and its replica must never lead the group's first term again; only one
// applied as it is committed is a creation. The same boundary decides
// whether the create's call is answered: an entry of a later term than the
// log's last at the open, at an index of the log's cut tail, was never in
// this server's log (the log it kept is a prefix of the one it had), so it
// was never applied here and starts a new replica.
func startOf(replaying bool) replicaStart {
	if replaying {
		return startReplayed
	}
	return startCreated
}

// leaderChanged wakes the held meta requests (jetstream_meta_hold_wake.go).
func (m *metaSM) leaderChanged(raft.SoftState) { m.jc.wakeHolds() }

// noteTerm notes an applied entry's term: one past the bootstrap's was
// written by an elected leader, so the cluster has run (Server.metaHeld).
func (m *metaSM) noteTerm(term uint64) {
	if term > 1 {
		m.jc.js.srv.metaHeld.Store(true)
	}
}

// Apply applies committed meta entries in order. An entry it cannot
// decode halts the group (the error stops it and marks it unhealthy, as a
// stream's group halts): skipping it would let this server's assignments
// differ from the others' from then on.
func (m *metaSM) Apply(ents []raft.Entry) error {
	var starts startBatch // new local replicas, started together at the end
	defer func() {
		starts.start(m.jc)
		m.jc.replayedTo(m.applied) // jetstream_group_name.go
		m.endReplayIfDone()        // jetstream_replay_leaves.go
	}()
	for i := range ents {
		if ents[i].Type != raft.EntryNormal || len(ents[i].Data) == 0 {
			m.applied = ents[i].Index
			m.noteTerm(ents[i].Term)
			continue
		}
		var me metaEntry
		err := json.Unmarshal(ents[i].Data, &me)
		if err == nil && me.SA == nil {
			err = errors.New("no stream assignment")
		}
		if err != nil {
			err = fmt.Errorf("meta entry %d cannot be decoded (%v); this server applies no more meta entries "+
				"until it runs a version that can", ents[i].Index, err)
			m.jc.js.srv.Errorf("JetStream cluster: %v", err)
			return err
		}
		m.applied = ents[i].Index
		m.noteTerm(ents[i].Term)
		replaying := m.replaying(ents[i])
		m.deferLeaves(replaying)
		if replaying && !m.rec.active {
			// Applied again from this server's own log at a restart: its
			// caller was answered before, or its connection to this server
			// is gone; one connected elsewhere whose entry was committed or
			// applied only around the crash is not answered (it times out,
			// and a retried create finds the stream). Answering every
			// create of the log again started a goroutine per stream that
			// waited for its leader and built its info while the groups
			// started (10,000 streams: ~3,700 such goroutines contending
			// with the groups' leader updates on jc.leaders).
			me.Reply = ""
		}
		m.jc.apply(&me, &starts, startOf(replaying))
	}
	return nil
}

// startBatch collects the assignments of new replicas a batch of meta
// entries starts here, so that they start in parallel (startReplicas): a
// restarting server replays thousands of creates, each opening and syncing
// a stream's files. Anything else applied flushes the batch first, so every
// entry still takes effect in log order.
// A second create of a name within one batch finds the first applied
// (old != nil) and flushes the batch before it acts.
type startBatch struct {
	created, replayed []*streamAssignment // by replicaStart
}

func (b *startBatch) add(sa *streamAssignment, how replicaStart) {
	if how == startCreated {
		b.created = append(b.created, sa)
	} else {
		b.replayed = append(b.replayed, sa)
	}
}

// start starts the replicas collected and empties the batch.
func (b *startBatch) start(jc *jsCluster) {
	created, replayed := b.created, b.replayed
	b.created, b.replayed = nil, nil
	jc.startReplicas(created, startCreated)
	jc.startReplicas(replayed, startReplayed)
}

// apply records an assignment change and acts on it locally: a new
// replica of a plain create joins starts (nil: at once), anything else
// starts what starts holds first. how is startCreated for an entry applied
// as it is committed, startReplayed for one this server applies catching
// up (startOf).
func (jc *jsCluster) apply(me *metaEntry, starts *startBatch, how replicaStart) {
	if testHookMetaApply != nil {
		testHookMetaApply(jc.js.srv, me)
	}
	if jc.appliedReq(me) { // a copy of a request applied already
		return
	}
	sa := me.SA
	jc.mu.Lock()
	accStreams := jc.streams[sa.Account]
	if accStreams == nil {
		accStreams = map[string]*streamAssignment{}
		jc.streams[sa.Account] = accStreams
	}
	old := accStreams[sa.Config.Name]
	var outcome *ApiError
	switch me.Op {
	case "add":
		if old != nil && !sameConfig(&old.Config, &sa.Config) {
			outcome = errStreamNameExist()
		} else if old == nil {
			accStreams[sa.Config.Name] = sa
			// A stream deleted under this name may have left its leader's
			// resignation (heard after the deletion's apply): a tombstone
			// of a term the new group may not reach for long, hiding the
			// new stream's leaders (jetstream_delete_answer.go).
			jc.leaders.forgetResigned(leaderKey(sa.Account, sa.Config.Name))
		} else {
			sa = old
		}
	case "del":
		if old == nil {
			outcome = errStreamNotFound()
		} else {
			delete(accStreams, sa.Config.Name)
			me.stoppedLead = jc.leaders.takeLeader(leaderKey(sa.Account, sa.Config.Name), jc.js.srv.clock.Now())
		}
	case "upd", "peers":
		// Assignments are replaced, never changed in place: readers keep
		// using the one they looked up without holding jc.mu.
		if old == nil {
			outcome = errStreamNotFound()
		} else {
			nsa := *old
			switch {
			case me.Op == "upd" && me.Scale && me.From != nil && !slices.Equal(old.Peers, me.From):
				// The placement changed since the scale was computed (a
				// peer removal): refused rather than undoing that.
				outcome = errClusterNotAvail()
			case me.Op == "upd":
				nsa.Config = sa.Config
				if me.Scale {
					nsa.Peers = slices.Clone(sa.Peers)
				} else {
					nsa.Config.Replicas = old.Config.Replicas // only a scale changes it
				}
			case me.Remove != "" || me.Add != "":
				// A change relative to the placement at apply time, so
				// two removals in a row both take effect.
				peers := slices.DeleteFunc(slices.Clone(old.Peers), func(p string) bool { return p == me.Remove })
				if me.Add != "" && !slices.Contains(peers, me.Add) {
					peers = append(peers, me.Add)
				}
				nsa.Peers = peers
				if me.Remove != "" && !slices.Contains(nsa.Removed, me.Remove) {
					nsa.Removed = append(slices.Clone(nsa.Removed), me.Remove)
				}
			default:
				nsa.Peers = slices.Clone(sa.Peers)
			}
			if outcome == nil {
				accStreams[sa.Config.Name] = &nsa
				sa = &nsa
			}
		}
	}
	jc.recordReqLocked(me, outcome)
	jc.countPlacedLocked(old, -1)
	jc.countPlacedLocked(accStreams[sa.Config.Name], 1)
	if outcome == nil && (me.Op == "add" && old == nil || me.Op == "del") {
		jc.oldNameChangedLocked(sa.Account, sa.Config.Name) // jetstream_group_name_shared.go
	}
	switch {
	case outcome != nil:
	case me.Op == "add" && old == nil:
		jc.indexSubjectsLocked(sa.Account, sa)
	case me.Op != "peers":
		jc.indexSubjectsLocked(sa.Account, nil) // subjects may have changed
	}
	jc.streamsChangedLocked()
	jc.mu.Unlock()
	switch {
	case outcome != nil:
	case starts != nil && me.Op == "add" && old == nil && jc.isPeer(sa) && jc.js.account(sa.Account) != nil:
		starts.add(sa, how)
	default:
		if starts != nil {
			starts.start(jc)
		}
		jc.applyLocal(me, sa, old, how)
	}
	if me.Origin == jc.js.srv.Name() && me.Reply != "" {
		if testHookMetaAnswer != nil {
			testHookMetaAnswer(jc.js.srv, me)
		}
		go jc.respondMeta(me, sa, outcome)
	}
}

func (jc *jsCluster) isPeer(sa *streamAssignment) bool {
	for _, p := range sa.Peers {
		if p == jc.js.srv.Name() {
			return true
		}
	}
	return false
}

// warnNoAccount logs that sa is placed here while its account has no
// JetStream here (its replica cannot start).
func (jc *jsCluster) warnNoAccount(sa *streamAssignment) {
	if jc.isPeer(sa) {
		jc.js.srv.Warnf("JetStream cluster: stream %q is placed here but account %q has no JetStream here", sa.Config.Name, sa.Account)
	}
}

// applyLocal starts, stops or updates this server's replica.
func (jc *jsCluster) applyLocal(me *metaEntry, sa, old *streamAssignment, how replicaStart) {
	op := me.Op
	jsa := jc.js.account(sa.Account)
	if jsa == nil {
		jc.warnNoAccount(sa)
		return
	}
	if op == "peers" || me.Scale {
		jc.applyPlacement(jsa, sa)
	}
	if op == "del" && !jc.isPeer(sa) && jc.leftBehind(jsa, sa) {
		// A replica that left the placement (or whose leave the replay
		// deferred) and kept its log: the deletion is final.
		jsa.stopReplica(sa.Config.Name, true, sa)
		return
	}
	switch {
	case op == "peers": // the placement was all
	case op == "upd":
		// The leader puts the configuration in the stream's log, also
		// one that a scale takes out of the placement (it leads until
		// its removal commits). It answers a plain update once it
		// applied it and listens to the new subjects (applyEntry), as
		// nats-server's stream leader answers; a scale is answered by
		// the meta call's origin (respondMeta).
		if mset := jsa.lookup(sa.Config.Name); mset != nil && mset.isLeader() {
			cfg := sa.Config
			e := &streamEntry{op: streamOpConfig, cfg: &cfg}
			if !me.Scale {
				e.origin, e.reply = jc.js.srv.Name(), me.Reply
			}
			mset.propose(e)
		}
		if jc.isPeer(sa) { // an operator's way back for a halted replica
			jc.js.reviveHalted(sa.Account, sa.Config.Name) // stream_halt_revive.go
		}
	case !jc.isPeer(sa): // add and del concern the stream's servers only
	case op == "add":
		if old == nil || jsa.lookup(sa.Config.Name) == nil {
			if _, err := jsa.startReplica(sa, how); err != nil && !errors.Is(err, errReplicaDeferred) {
				jc.js.srv.Errorf("JetStream cluster: starting replica of %q: %v", sa.Config.Name, err)
			}
		}
	case op == "del":
		jsa.stopReplica(sa.Config.Name, true, sa)
	}
}

// applyPlacement acts on a stream's new peer list: a removed server drops
// its replica, an added one starts an empty replica that joins the group
// (its log and membership come from the leader), the leader reconciles.
func (jc *jsCluster) applyPlacement(jsa *jsAccount, sa *streamAssignment) {
	mset := jsa.lookup(sa.Config.Name)
	switch {
	case !jc.isPeer(sa) && jc.deferLeave(sa): // replaying: acted on at its end
	case !jc.isPeer(sa) && mset != nil:
		jc.startLeaving(jsa, mset, sa)
	case !jc.isPeer(sa): // a log a replica that left kept is retired (stream_retire.go)
		jsa.stopReplica(sa.Config.Name, true, nil)
		jc.js.retireGroupDir(sa)
	case mset == nil:
		if _, err := jsa.startReplica(sa, startJoin); err != nil && !errors.Is(err, errReplicaDeferred) {
			jc.js.srv.Errorf("JetStream cluster: joining stream %q: %v", sa.Config.Name, err)
		}
	case mset.isLeader():
		mset.reconcilePeers()
	}
}

// leaveAndStop removes a replica that left the placement once the group
// no longer counts it, so the others are never left without a leader or a
// quorum (stopping at once lost the quorum when several replicas left
// together: R3 -> R1 left the last one electing forever). A leader takes
// itself out of the membership (it keeps leading until that commits, then
// hands leadership over); a follower waits until the membership it knows
// leaves it out (membership follows the log), or until the leader the other
// servers know stops talking to it (a removed member is not sent the entry
// that removes it: it sees no leader while the others see one). It stops without waiting when
// it can matter to no quorum: a leader of a group without any server of
// the placement (a stale replica revived by replaying the meta log), or a
// replica that holds nothing and has heard no leader for replicaOrphanAfter.
func (jc *jsCluster) leaveAndStop(jsa *jsAccount, mset *stream, sa *streamAssignment) {
	l := jc.newLeaver(jsa, mset, sa)
	for !l.step() {
		if jc.js.srv.sleepOnClock(leaveLookEvery) {
			return
		}
	}
}

// leaveLookEvery is how often a leaving replica looks at its group.
const leaveLookEvery = 100 * time.Millisecond

// leaver is a replica on its way out (leaveAndStop, or a raftHost calling
// stepLeavers).
type leaver struct {
	jc   *jsCluster
	jsa  *jsAccount
	mset *stream
	sa   *streamAssignment
	g    *raftGroup
	lv   leaving
}

func (jc *jsCluster) newLeaver(jsa *jsAccount, mset *stream, sa *streamAssignment) *leaver {
	mset.mu.Lock()
	g := mset.group
	mset.mu.Unlock()
	return &leaver{jc: jc, jsa: jsa, mset: mset, sa: sa, g: g,
		lv: leaving{me: raftID(jc.js.srv.Name()), start: jc.js.srv.clock.Now()}}
}

// step looks at the group once; true when the replica is done leaving
// (stopped, rejoined or kept).
func (l *leaver) step() bool {
	if testHookLeaveStep != nil {
		testHookLeaveStep(l)
	}
	jc, s, sa := l.jc, l.jc.js.srv, l.sa
	if l.g == nil || l.g.healthy() != nil {
		l.jsa.stopReplicaIf(l.mset)
		return true
	}
	st := l.g.statusSnapshot()
	if st.ID == 0 { // filled in by the group's first pass
		return false
	}
	cur := jc.assignment(sa.Account, sa.Config.Name)
	lead := jc.streamLeader(sa.Account, sa.Config.Name)
	switch l.lv.next(st, cur, cur != nil && jc.isPeer(cur), l.mset.isLeader(), lead != "" && lead != s.Name(), s.clock.Now()) {
	case leaveRejoin:
		l.jsa.rejoinReplica(l.mset, cur)
		return true
	case leaveStay:
		return true
	case leaveStop:
		l.jsa.stopReplicaIf(l.mset)
		return true
	case leaveReconcile:
		l.mset.reconcilePeers()
	}
	return false
}

// testHookLeaveStep, set only by tests, runs as a leaver's step begins
// (to hold its next look at the group).
var testHookLeaveStep func(l *leaver)

// stepLeavers steps every leaving replica once (a raftHost calls it every
// leaveLookEvery, in place of leaveAndStop's goroutines).
func (jc *jsCluster) stepLeavers() {
	jc.mu.Lock()
	ls := jc.leavers
	jc.leavers = nil
	jc.mu.Unlock()
	var left []*leaver
	for _, l := range ls {
		if !l.step() {
			left = append(left, l)
		}
	}
	jc.mu.Lock()
	jc.leavers = append(left, jc.leavers...)
	jc.mu.Unlock()
}

// leaving is what leaveAndStop remembers between its looks at the group.
type leaving struct {
	me          raft.ID
	start       time.Time
	leaderless  time.Time // since when no leader is known (zero: one is)
	heardLeader bool
}

type leaveStep int

const (
	leaveWait      leaveStep = iota // look again later
	leaveReconcile                  // lead the membership change, then look again
	leaveStop                       // stop the replica
	leaveStay                       // placed here again before it left: keep it
	leaveRejoin                     // placed here again after its removal: a new one joins
)

// next decides from the group's status st and the stream's assignment cur
// (nil when deleted; placedHere when it names this server). leading says
// this replica leads; otherLeader that the servers know a leader elsewhere.
func (lv *leaving) next(st raft.Status, cur *streamAssignment, placedHere, leading, otherLeader bool, now time.Time) leaveStep {
	// Knows a membership that leaves it out (a replica that joined knows
	// none until the leader's log reaches it).
	removed := len(st.Peers) > 0 && !slices.Contains(st.Peers, lv.me)
	lv.heardLeader = lv.heardLeader || st.Lead != raft.None
	if st.Lead != raft.None {
		lv.leaderless = time.Time{}
	} else if lv.leaderless.IsZero() {
		lv.leaderless = now
	}
	// A leader other servers know of that no longer talks to us: its
	// membership has left us out (a removed member never gets the entry
	// that removes it).
	shunned := !lv.leaderless.IsZero() && now.Sub(lv.leaderless) > replicaShunnedAfter && otherLeader
	placed := cur != nil && slices.ContainsFunc(st.Peers, func(id raft.ID) bool {
		return slices.ContainsFunc(cur.Peers, func(p string) bool { return raftID(p) == id })
	})
	switch {
	case placedHere && (removed || shunned):
		return leaveRejoin
	case placedHere:
		return leaveStay
	case leading && !placed:
		return leaveStop
	case leading:
		return leaveReconcile
	case removed, shunned:
		return leaveStop
	case !lv.heardLeader && st.LastIndex == 0 && now.Sub(lv.start) > replicaOrphanAfter:
		return leaveStop
	}
	return leaveWait
}

// replicaOrphanAfter is how long a replica that left the placement, holds
// nothing and heard no leader waits before it stops; replicaShunnedAfter
// how long one waits without hearing the leader the others follow.
var (
	replicaOrphanAfter  = 10 * time.Second
	replicaShunnedAfter = 2 * time.Second
)

// startLeaving runs leaveAndStop for mset unless the server is stopping.
func (jc *jsCluster) startLeaving(jsa *jsAccount, mset *stream, sa *streamAssignment) {
	s := jc.js.srv
	if s.shutdown.Load() {
		return
	}
	if s.getOpts().raftHost != nil { // the host steps it
		l := jc.newLeaver(jsa, mset, sa)
		jc.mu.Lock()
		jc.leavers = append(jc.leavers, l)
		jc.mu.Unlock()
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		jc.leaveAndStop(jsa, mset, sa)
	}()
}

func (jc *jsCluster) assignment(account, stream string) *streamAssignment {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return jc.streams[account][stream]
}

// countPlacedLocked adds d to the placement count of each of sa's peers,
// and to the count of assignments.
func (jc *jsCluster) countPlacedLocked(sa *streamAssignment, d int) {
	if sa == nil {
		return
	}
	jc.assigned += d
	if jc.placed == nil {
		jc.placed = map[string]int{}
	}
	for _, p := range sa.Peers {
		if jc.placed[p] += d; jc.placed[p] == 0 {
			delete(jc.placed, p)
		}
	}
	jc.countFirstLeadLocked(sa, d)
}

// streamCount is how many streams the account has.
func (jc *jsCluster) streamCount(account string) int {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	return len(jc.streams[account])
}

// eachSubjects calls f with the subjects of each of the account's streams
// but skip, in no order, until f returns false. It copies the assignments
// first: f runs without jc.mu.
func (jc *jsCluster) eachSubjects(account, skip string, f func([]string) bool) {
	jc.mu.Lock()
	list := make([]*streamAssignment, 0, len(jc.streams[account]))
	for name, sa := range jc.streams[account] {
		if name != skip {
			list = append(list, sa)
		}
	}
	jc.mu.Unlock()
	for _, sa := range list {
		if !f(sa.Config.Subjects) {
			return
		}
	}
}

// assignments lists the account's assignments sorted by stream name.
func (jc *jsCluster) assignments(account string) []*streamAssignment {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	out := make([]*streamAssignment, 0, len(jc.streams[account]))
	for _, sa := range jc.streams[account] {
		out = append(out, sa)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Config.Name < out[j].Config.Name })
	return out
}

// proposeMeta hands an entry to the meta group.
func (jc *jsCluster) proposeMeta(me *metaEntry, fail func(*ApiError)) {
	jc.mu.Lock()
	g := jc.meta
	jc.mu.Unlock()
	if g == nil {
		fail(errClusterNotAvail())
		return
	}
	// A refused proposal is not answered: another server may have become
	// the meta leader, received the same request and applied it
	// (stream.proposed); the client times out.
	b, _ := json.Marshal(me)
	g.Propose(b, nil)
}

// streamSubject reports whether subject belongs to a stream of the account.
func (jc *jsCluster) streamSubject(account, subject string) bool {
	jc.mu.Lock()
	defer jc.mu.Unlock()
	for _, sa := range jc.streams[account] {
		if matchesAny(subject, sa.Config.Subjects) {
			return true
		}
	}
	return false
}
