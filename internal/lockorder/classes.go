package lockorder

// Class names a lock class. Only this package defines classes, so the
// list below is the whole list, in rank order: a goroutine holding a lock
// may take only locks of classes later in the list. LOCKS.md says the
// same in words, with the nestings that exist.
type Class interface{ id() classID }

type classID uint8

const (
	cNone classID = iota
	cServer
	cRoutes
	cJSAccount
	cStream
	cClient
	cAccount
	cServiceImport
	cUsageCache
	cRemoteUsage
	cJetStream
	cJSCluster
	cLeaderMap
	cRaftGroups
	cRaftGroup
	cRaftClock
	cRaftQueue
	cSnapPins
	cGroupCommit
	cSyncSchedule
	cStoreDiscard
	cWalLog
	cWAL
	cFileStoreSync
	cFileStore
	cMemStore
	cSnapCapture
	cSublist
	cAccounts
	cClosedRing
	cPanicLog
	cPoolFile
	cPool
	cMemFS
	cLogging
	cLogger
	cClockManual
	cTest1 // the checker's own tests
	cTest2
	cTest3
	numClasses
)

// classes names each class as LOCKS.md writes it. A class's rank is its
// place in the list above: taken first, lowest.
var classes = [numClasses]struct {
	name string
	rank int
}{
	cServer:        {"Server.mu", int(cServer)},
	cRoutes:        {"routeTable.mu", int(cRoutes)},
	cJSAccount:     {"jsAccount.mu", int(cJSAccount)},
	cStream:        {"stream.mu", int(cStream)},
	cClient:        {"client.mu", int(cClient)},
	cAccount:       {"Account.mu", int(cAccount)},
	cServiceImport: {"serviceImport.mu", int(cServiceImport)},
	cUsageCache:    {"usageCache.mu", int(cUsageCache)},
	cRemoteUsage:   {"remoteUsage.mu", int(cRemoteUsage)},
	cJetStream:     {"jetStream.mu", int(cJetStream)},
	cJSCluster:     {"jsCluster.mu", int(cJSCluster)},
	cLeaderMap:     {"leaderMap.mu", int(cLeaderMap)},
	cRaftGroups:    {"raftGroups.mu", int(cRaftGroups)},
	cRaftGroup:     {"raftGroup.mu", int(cRaftGroup)},
	cRaftClock:     {"raftClock.mu", int(cRaftClock)},
	cRaftQueue:     {"raftQueue.mu", int(cRaftQueue)},
	cSnapPins:      {"snapPins.mu", int(cSnapPins)},
	cGroupCommit:   {"groupCommit.mu", int(cGroupCommit)},
	cSyncSchedule:  {"syncSchedule.mu", int(cSyncSchedule)},
	cStoreDiscard:  {"storeDiscard.mu", int(cStoreDiscard)},
	cWalLog:        {"walLog.mu", int(cWalLog)},
	cWAL:           {"wal.WAL.mu", int(cWAL)},
	cFileStoreSync: {"store.syncLock.mu", int(cFileStoreSync)},
	cFileStore:     {"store.fileStore.mu", int(cFileStore)},
	cMemStore:      {"store.memStore.mu", int(cMemStore)},
	cSnapCapture:   {"snapCapture.mu", int(cSnapCapture)},
	cSublist:       {"sublist.Sublist.mu", int(cSublist)},
	cAccounts:      {"accounts.mu", int(cAccounts)},
	cClosedRing:    {"closedRing.mu", int(cClosedRing)},
	cPanicLog:      {"panicLog.mu", int(cPanicLog)},
	cPoolFile:      {"vfs.poolFile.mu", int(cPoolFile)},
	cPool:          {"vfs.Pool.mu", int(cPool)},
	cMemFS:         {"vfs.MemFS.mu", int(cMemFS)},
	cLogging:       {"logging.mu", int(cLogging)},
	cLogger:        {"logger.Logger.mu", int(cLogger)},
	cClockManual:   {"clock.Manual.mu", int(cClockManual)},
	cTest1:         {"test1", int(cTest1)},
	cTest2:         {"test2", int(cTest2)},
	cTest3:         {"test3", int(cTest3)},
}

// The classes. Each is used by exactly one struct's mu.
type (
	Server        struct{} // server.Server
	Routes        struct{} // server.routeTable
	JSAccount     struct{} // server.jsAccount
	Stream        struct{} // server.stream
	Client        struct{} // server.client
	Account       struct{} // server.Account
	ServiceImport struct{} // server.serviceImport
	UsageCache    struct{} // server.usageCache
	RemoteUsage   struct{} // server.remoteUsage
	JetStream     struct{} // server.jetStream
	JSCluster     struct{} // server.jsCluster
	LeaderMap     struct{} // server.leaderMap
	RaftGroups    struct{} // server.raftGroups
	RaftGroup     struct{} // server.raftGroup
	RaftClock     struct{} // server.raftClock
	RaftQueue     struct{} // server.raftQueue[T], every T
	SnapCapture   struct{} // server.snapCapture
	SnapPins      struct{} // server.snapPins
	GroupCommit   struct{} // server.groupCommit
	SyncSchedule  struct{} // server.syncSchedule
	StoreDiscard  struct{} // server.storeDiscard
	WalLog        struct{} // server.walLog
	WAL           struct{} // wal.WAL
	FileStoreSync struct{} // store.syncLock
	FileStore     struct{} // store.fileStore
	MemStore      struct{} // store.memStore
	Sublist       struct{} // sublist.Sublist[T], every T
	Accounts      struct{} // server.accounts
	ClosedRing    struct{} // server.closedRing
	PanicLog      struct{} // server.panicLog
	PoolFile      struct{} // vfs.poolFile
	Pool          struct{} // vfs.Pool
	MemFS         struct{} // vfs.MemFS
	Logging       struct{} // server.logging
	Logger        struct{} // logger.Logger
	ClockManual   struct{} // clock.Manual

	// Test1, Test2 and Test3 are for the checker's tests, ranked after
	// every other class.
	Test1 struct{}
	Test2 struct{}
	Test3 struct{}
)

func (Server) id() classID        { return cServer }
func (Routes) id() classID        { return cRoutes }
func (JSAccount) id() classID     { return cJSAccount }
func (Stream) id() classID        { return cStream }
func (Client) id() classID        { return cClient }
func (Account) id() classID       { return cAccount }
func (ServiceImport) id() classID { return cServiceImport }
func (UsageCache) id() classID    { return cUsageCache }
func (RemoteUsage) id() classID   { return cRemoteUsage }
func (JetStream) id() classID     { return cJetStream }
func (JSCluster) id() classID     { return cJSCluster }
func (LeaderMap) id() classID     { return cLeaderMap }
func (RaftGroups) id() classID    { return cRaftGroups }
func (RaftGroup) id() classID     { return cRaftGroup }
func (RaftClock) id() classID     { return cRaftClock }
func (RaftQueue) id() classID     { return cRaftQueue }
func (SnapCapture) id() classID   { return cSnapCapture }
func (SnapPins) id() classID      { return cSnapPins }
func (GroupCommit) id() classID   { return cGroupCommit }
func (SyncSchedule) id() classID  { return cSyncSchedule }
func (StoreDiscard) id() classID  { return cStoreDiscard }
func (WalLog) id() classID        { return cWalLog }
func (WAL) id() classID           { return cWAL }
func (FileStoreSync) id() classID { return cFileStoreSync }
func (FileStore) id() classID     { return cFileStore }
func (MemStore) id() classID      { return cMemStore }
func (Sublist) id() classID       { return cSublist }
func (Accounts) id() classID      { return cAccounts }
func (ClosedRing) id() classID    { return cClosedRing }
func (PanicLog) id() classID      { return cPanicLog }
func (PoolFile) id() classID      { return cPoolFile }
func (Pool) id() classID          { return cPool }
func (MemFS) id() classID         { return cMemFS }
func (Logging) id() classID       { return cLogging }
func (Logger) id() classID        { return cLogger }
func (ClockManual) id() classID   { return cClockManual }
func (Test1) id() classID         { return cTest1 }
func (Test2) id() classID         { return cTest2 }
func (Test3) id() classID         { return cTest3 }

// Rank returns class C's name and rank (for tests and LOCKS.md checks).
func Rank[C Class]() (name string, rank int) {
	var c C
	e := classes[c.id()]
	return e.name, e.rank
}
