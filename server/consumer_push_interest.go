package server

import (
	"slices"

	"github.com/nats-io/nats-server/v2/internal/sublist"
)

// Interest in push consumers' deliver subjects. A push consumer delivers
// only while its deliver subject has a subscriber (push_bound, nats-server's
// "active"). The account keeps the push consumers it has (an immutable
// list replaced under Account.mu, read without it); every local subscribe
// or unsubscribe whose subject covers a deliver subject schedules that
// consumer's recheck, which runs on its own goroutine (subscribing holds
// locks the stream's must not nest in).

type pushWatcher struct {
	subj string
	o    *consumer
}

// hasInterest reports whether subject has a subscriber in acc.
func hasInterest(acc *Account, subject string) bool {
	r := matchSubject(acc, subject)
	return len(r.Plain) > 0 || len(r.Queues) > 0
}

// watchDeliver registers o's deliver subject subj.
func (a *Account) watchDeliver(o *consumer, subj string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var list []pushWatcher
	if cur := a.pushWatch.Load(); cur != nil {
		list = slices.Clone(*cur)
	}
	list = append(list, pushWatcher{subj: subj, o: o})
	a.pushWatch.Store(&list)
}

// unwatchDeliver removes every registration of o.
func (a *Account) unwatchDeliver(o *consumer) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.pushWatch.Load()
	if cur == nil {
		return
	}
	list := slices.DeleteFunc(slices.Clone(*cur), func(w pushWatcher) bool { return w.o == o })
	a.pushWatch.Store(&list)
}

// deliverInterestChanged: a subscription on subject came or went.
func (a *Account) deliverInterestChanged(subject string) {
	list := a.pushWatch.Load()
	if list == nil {
		return
	}
	for _, w := range *list {
		if sublist.MatchLiteral(w.subj, subject) {
			w.o.kickInterest()
		}
	}
}

// kickInterest schedules a recheck of o's interest (one at a time).
func (o *consumer) kickInterest() {
	if o.push.kick.CompareAndSwap(false, true) {
		go o.recheckInterest()
	}
}

// recheckInterest updates push_bound: a consumer that gained interest
// delivers what waits; one that lost it starts its inactivity clock.
func (o *consumer) recheckInterest() {
	mset := o.mset
	o.push.kick.Store(false)
	mset.mu.Lock()
	if o.closed || !o.leadsLocked() {
		mset.mu.Unlock()
		return
	}
	p := o.push
	active := hasInterest(mset.jsa.acc, p.subj)
	if active == p.active {
		mset.mu.Unlock()
		return
	}
	p.active = active
	if !active {
		o.armIdleLocked()
		mset.mu.Unlock()
		return
	}
	o.queueOutLocked(o.pumpLocked(nil))
	mset.mu.Unlock()
	o.flushOut()
}
