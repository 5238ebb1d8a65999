package server

import (
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"sync/atomic"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// msgHandler receives messages for internal subscriptions (system services,
// imports, JetStream API). c is the publishing client (nil when internal).
type msgHandler func(sub *subscription, c *client, acc *Account, subject, reply string, hdr, msg []byte)

// subscription is one SUB of a client, or an internal one with a handler.
type subscription struct {
	client  *client
	route   *client // set for interest a route told us about
	icb     msgHandler
	subject string
	queue   string
	sid     string
	max     atomic.Int64 // auto-unsubscribe after max deliveries; 0 = none
	nm      atomic.Int64 // messages delivered
	closed  atomic.Bool
	// afterRoutes: an internal subscriber called only once the message
	// is queued to the routes (see subscribeInternalAfterRoutes).
	afterRoutes bool
	// localOnly: interest this server does not announce to its routes
	// (subscribeLocalOnly).
	localOnly bool
	// routeOrigin: an internal subscriber told which route brought a
	// routed message (subscribeInternalRouteOrigin).
	routeOrigin bool
}

// Account is an isolated subject space with its own users.
type Account struct {
	Name string

	mu         lockorder.RWMutex[lockorder.Account]
	sl         *sublist.Sublist[*subscription]
	jetstream  bool
	jsLimits   *jsLimits // nil: the server's limits
	imports    []*streamImport
	svcImp     []*serviceImport
	exports    map[string]*export // export subject → export
	nclients   atomic.Int32
	srv        *Server
	cfgImports []importSpec
	pushWatch  atomic.Pointer[[]pushWatcher] // push consumers' deliver subjects (consumer_push_interest.go)
}

// NewAccount returns an account with an empty subject space.
func NewAccount(name string) *Account {
	return &Account{Name: name, sl: sublist.New[*subscription](), exports: map[string]*export{}}
}

// GetName returns the account name.
func (a *Account) GetName() string { return a.Name }

// NumConnections returns the number of clients bound to the account.
func (a *Account) NumConnections() int { return int(a.nclients.Load()) }

// subscribeInternal registers an internal subscription on subject.
func (a *Account) subscribeInternal(subject, queue string, cb msgHandler) (*subscription, error) {
	sub := &subscription{icb: cb, subject: subject, queue: queue, sid: "internal"}
	if err := a.insertSub(sub); err != nil {
		return nil, err
	}
	return sub, nil
}

// subscribeInternalAfterRoutes is subscribeInternal for a callback that
// must run after the message it gets has been queued to every route that
// wants it. The clustered JetStream API needs that order: a server that
// leaves a request to a stream's leader on another server must have sent
// it there before it acts on anything it hears next from that server
// (jetstream_resign.go).
func (a *Account) subscribeInternalAfterRoutes(subject string, cb msgHandler) (*subscription, error) {
	sub := &subscription{icb: cb, subject: subject, sid: "internal", afterRoutes: true}
	if err := a.insertSub(sub); err != nil {
		return nil, err
	}
	return sub, nil
}

// subscribeLocalOnly is subscribeInternal for a subscription that only
// watches what reaches this server anyway: its interest is not announced
// to the routes.
func (a *Account) subscribeLocalOnly(subject string, cb msgHandler) (*subscription, error) {
	sub := &subscription{icb: cb, subject: subject, sid: "internal", localOnly: true}
	if err := a.insertSub(sub); err != nil {
		return nil, err
	}
	return sub, nil
}

// subscribeInternalRouteOrigin is subscribeInternal for a callback that
// must know where a message came from: c is the route's connection for a
// message routed here, the publishing client for a client's publish here
// and nil for this server's own publishes (other internal subscribers get
// nil for routed messages too).
func (a *Account) subscribeInternalRouteOrigin(subject string, cb msgHandler) (*subscription, error) {
	sub := &subscription{icb: cb, subject: subject, sid: "internal", routeOrigin: true}
	if err := a.insertSub(sub); err != nil {
		return nil, err
	}
	return sub, nil
}

// insertSub adds a subscription to the account's routing table and tells
// the cluster about new interest.
func (a *Account) insertSub(sub *subscription) error {
	if err := a.sl.Insert(sub.subject, sub.queue, sub); err != nil {
		return err
	}
	if a.srv != nil && sub.route == nil && !sub.localOnly {
		a.srv.interestChanged(a, sub, 1)
	}
	a.deliverInterestChanged(sub.subject)
	return nil
}

func (a *Account) unsubscribe(sub *subscription) {
	if sub.closed.Swap(true) {
		return
	}
	if a.sl.Remove(sub.subject, sub.queue, sub) == nil && a.srv != nil && sub.route == nil && !sub.localOnly {
		a.srv.interestChanged(a, sub, -1)
	}
	a.deliverInterestChanged(sub.subject)
}

// registry of accounts on a server.
type accounts struct {
	mu     lockorder.RWMutex[lockorder.Accounts]
	byName map[string]*Account
}

func (r *accounts) lookup(name string) *Account {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

// register adds acc unless an account of that name exists; it returns the
// account that is registered under the name.
func (r *accounts) register(acc *Account) *Account {
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.byName[acc.Name]; ok {
		return old
	}
	r.byName[acc.Name] = acc
	return acc
}

func (r *accounts) all() []*Account {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Account, 0, len(r.byName))
	for _, a := range r.byName {
		out = append(out, a)
	}
	return out
}
