package server

import (
	"errors"
	"github.com/nats-io/nats-server/v2/internal/lockorder"
	"strings"

	"github.com/nats-io/nats-server/v2/internal/sublist"
	"github.com/nats-io/nuid"
)

// export is a service or stream an account offers to others.
type export struct {
	service  bool
	accounts map[string]bool // allowed importers; empty = public
}

type streamImport struct {
	from    *Account
	subject string
	prefix  string
	sub     *subscription
}

// serviceImport maps requests on a local subject to another account and
// routes responses back through generated reply subjects.
type serviceImport struct {
	to      *Account
	local   string
	remote  string
	mapping *svcMapping
	sub     *subscription
	respSub *subscription
	prefix  string // "_R_.<id>."
	mu      lockorder.Mutex[lockorder.ServiceImport]
	replies map[string]string // token → original reply (bounded)
}

const maxPendingServiceReplies = 64 * 1024

var errNotExported = errors.New("not authorized to import: no matching export")

// AddServiceExport offers subject as a service to accounts (nil = everyone).
func (a *Account) AddServiceExport(subject string, accounts []*Account) error {
	return a.addExport(subject, true, accounts)
}

// AddStreamExport offers messages on subject to accounts (nil = everyone).
func (a *Account) AddStreamExport(subject string, accounts []*Account) error {
	return a.addExport(subject, false, accounts)
}

func (a *Account) addExport(subject string, service bool, accounts []*Account) error {
	if !sublist.ValidSubject(subject) {
		return sublist.ErrInvalidSubject
	}
	e := &export{service: service, accounts: map[string]bool{}}
	for _, acc := range accounts {
		e.accounts[acc.Name] = true
	}
	a.mu.Lock()
	a.exports[subject] = e
	a.mu.Unlock()
	return nil
}

// exportAllows reports whether importer may import subject from a.
func (a *Account) exportAllows(subject string, service bool, importer *Account) bool {
	a.mu.RLock()
	defer a.mu.RUnlock()
	for pattern, e := range a.exports {
		if e.service != service || !sublist.SubjectIsSubsetMatch(subject, pattern) {
			continue
		}
		if len(e.accounts) == 0 || e.accounts[importer.Name] {
			return true
		}
	}
	return false
}

// AddStreamImport delivers messages published in from on subject to this
// account, under prefix when one is given.
func (a *Account) AddStreamImport(from *Account, subject, prefix string) error {
	if !from.exportAllows(subject, false, a) {
		return errNotExported
	}
	si := &streamImport{from: from, subject: subject, prefix: prefix}
	sub, err := from.subscribeInternal(subject, "", func(_ *subscription, c *client, _ *Account, subj, reply string, hdr, msg []byte) {
		from := subj
		if si.prefix != "" {
			subj = si.prefix + "." + subj
		}
		if clusterOnlySubject(from) || clusterOnlySubject(subj) || clusterOnlySubject(reply) {
			a.srv.refuseClusterOnly("a stream import of account "+a.Name, from) // cluster_only.go
			return
		}
		a.srv.deliver(c, a, subj, reply, hdr, msg)
	})
	if err != nil {
		return err
	}
	si.sub = sub
	a.mu.Lock()
	a.imports = append(a.imports, si)
	a.mu.Unlock()
	return nil
}

// AddServiceImport makes requests to `to` in this account reach subject
// `from` in destination.
func (a *Account) AddServiceImport(destination *Account, to, from string) error {
	if from == "" {
		from = to
	}
	if to == "" {
		to = from
	}
	if !destination.exportAllows(from, true, a) {
		return errNotExported
	}
	mapping, err := newSvcMapping(to, from)
	if err != nil {
		return err
	}
	si := &serviceImport{to: destination, local: to, remote: from, mapping: mapping, replies: map[string]string{}}
	si.prefix = "_R_." + nuid.Next() + "."
	resp, err := destination.subscribeInternal(si.prefix+">", "", func(_ *subscription, c *client, _ *Account, subj, _ string, hdr, msg []byte) {
		if orig, ok := si.takeReply(subj); ok {
			a.srv.deliver(c, a, orig, "", hdr, msg)
		}
	})
	if err != nil {
		return err
	}
	sub, err := a.subscribeInternal(to, "", func(_ *subscription, c *client, _ *Account, subj, reply string, hdr, msg []byte) {
		si.forward(a, c, subj, reply, hdr, msg)
	})
	if err != nil {
		destination.unsubscribe(resp)
		return err
	}
	si.sub, si.respSub = sub, resp
	a.mu.Lock()
	a.svcImp = append(a.svcImp, si)
	a.mu.Unlock()
	return nil
}

func (si *serviceImport) forward(a *Account, c *client, subject, reply string, hdr, msg []byte) {
	remote := si.mapping.apply(subject)
	if clusterOnlySubject(remote) {
		a.srv.refuseClusterOnly("a service import of account "+a.Name, remote) // cluster_only.go
		return
	}
	mapped := ""
	if reply != "" {
		mapped = si.prefix + nuid.Next()
		si.mu.Lock()
		if len(si.replies) >= maxPendingServiceReplies {
			clear(si.replies)
		}
		si.replies[mapped] = strings.Clone(reply)
		si.mu.Unlock()
	}
	n := a.srv.deliver(c, si.to, remote, mapped, hdr, msg)
	if n == 0 && reply != "" && c != nil && c.opts.NoResponders {
		si.takeReply(mapped)
		c.sendNoResponders(a, subject, reply)
	}
}

func (si *serviceImport) takeReply(subject string) (string, bool) {
	if !strings.HasPrefix(subject, si.prefix) {
		return "", false
	}
	si.mu.Lock()
	defer si.mu.Unlock()
	orig, ok := si.replies[subject]
	delete(si.replies, subject)
	return orig, ok
}
