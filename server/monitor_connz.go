package server

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"
)

// Connz is /connz.
type Connz struct {
	ID       string      `json:"server_id"`
	Now      time.Time   `json:"now"`
	NumConns int         `json:"num_connections"`
	Total    int         `json:"total"`
	Offset   int         `json:"offset"`
	Limit    int         `json:"limit"`
	Conns    []*ConnInfo `json:"connections"`
}

// ConnInfo describes one connection.
type ConnInfo struct {
	Cid            uint64     `json:"cid"`
	Kind           string     `json:"kind,omitempty"`
	Type           string     `json:"type,omitempty"`
	IP             string     `json:"ip"`
	Port           int        `json:"port"`
	Start          time.Time  `json:"start"`
	LastActivity   time.Time  `json:"last_activity"`
	Stop           *time.Time `json:"stop,omitempty"`
	Reason         string     `json:"reason,omitempty"`
	RTT            string     `json:"rtt,omitempty"`
	Uptime         string     `json:"uptime"`
	Idle           string     `json:"idle"`
	Pending        int        `json:"pending_bytes"`
	InMsgs         int64      `json:"in_msgs"`
	OutMsgs        int64      `json:"out_msgs"`
	InBytes        int64      `json:"in_bytes"`
	OutBytes       int64      `json:"out_bytes"`
	NumSubs        uint32     `json:"subscriptions"`
	Name           string     `json:"name,omitempty"`
	Lang           string     `json:"lang,omitempty"`
	Version        string     `json:"version,omitempty"`
	AuthorizedUser string     `json:"authorized_user,omitempty"`
	Account        string     `json:"account,omitempty"`
	Subs           []string   `json:"subscriptions_list,omitempty"`
	TLSVersion     string     `json:"tls_version,omitempty"`
	TLSCipher      string     `json:"tls_cipher_suite,omitempty"`
	TLSFirst       bool       `json:"tls_first,omitempty"`
}

// SortOpt is a /connz sort order, named as in nats-server.
type SortOpt string

// The /connz sort orders.
const (
	ByCid      SortOpt = "cid"
	ByStart    SortOpt = "start"
	BySubs     SortOpt = "subs"
	ByPending  SortOpt = "pending"
	ByOutMsgs  SortOpt = "msgs_to"
	ByInMsgs   SortOpt = "msgs_from"
	ByOutBytes SortOpt = "bytes_to"
	ByInBytes  SortOpt = "bytes_from"
	ByLast     SortOpt = "last"
	ByIdle     SortOpt = "idle"
	ByUptime   SortOpt = "uptime"
	ByStop     SortOpt = "stop"
	ByReason   SortOpt = "reason"
)

// ConnState selects open, closed or all connections in /connz.
type ConnState int

// The /connz states.
const (
	ConnOpen ConnState = iota
	ConnClosed
	ConnAll
)

// ConnzOptions are /connz's query options.
type ConnzOptions struct {
	Sort          SortOpt   `json:"sort"`
	Username      bool      `json:"auth"`
	Subscriptions bool      `json:"subscriptions"`
	Offset        int       `json:"offset"`
	Limit         int       `json:"limit"`
	CID           uint64    `json:"cid"`
	State         ConnState `json:"state"`
	User          string    `json:"user"`
	Account       string    `json:"acc"`
}

const defaultConnzLimit = 1024

func (c *client) connInfo(now time.Time, closed bool) *ConnInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	ci := &ConnInfo{
		Cid: c.cid, Kind: "Client", Type: "nats", IP: c.host, Port: c.port, Start: c.start,
		LastActivity: c.lastAct, Uptime: myUptime(now.Sub(c.start)), Idle: myUptime(now.Sub(c.lastAct)),
		Pending: c.out.pending, InMsgs: c.stats.inMsgs.Load(), OutMsgs: c.stats.outMsgs.Load(),
		InBytes: c.stats.inBytes.Load(), OutBytes: c.stats.outBytes.Load(), NumSubs: uint32(len(c.subs)),
		Name: c.opts.Name, Lang: c.opts.Lang, Version: c.opts.Version, AuthorizedUser: c.user,
	}
	if c.rtt > 0 {
		ci.RTT = c.rtt.String()
	}
	c.tlsConnInfo(ci)
	if c.acc != nil {
		ci.Account = c.acc.Name
	}
	if closed {
		t := now
		ci.Stop, ci.Reason = &t, c.reason.String()
	}
	return ci
}

func (c *client) subjects() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.subs))
	for _, s := range c.subs {
		out = append(out, s.subject)
	}
	sort.Strings(out)
	return out
}

func (s *Server) connz(o *ConnzOptions) *Connz {
	now := time.Now().UTC()
	var list []*ConnInfo
	if o.State != ConnClosed {
		s.mu.Lock()
		clients := make([]*client, 0, len(s.clients))
		for _, c := range s.clients {
			clients = append(clients, c)
		}
		s.mu.Unlock()
		for _, c := range clients {
			ci := c.connInfo(now, false)
			if o.Subscriptions {
				ci.Subs = c.subjects()
			}
			list = append(list, ci)
		}
	}
	if o.State == ConnClosed || o.State == ConnAll {
		list = append(list, s.closed.list()...)
	}
	list = filterConns(list, o)
	sortConns(list, string(o.Sort))
	// As nats-server: a negative offset is 0, a limit of 0 or less the
	// default, and an offset past the end gives no connections.
	cz := &Connz{ID: s.id, Now: now, Total: len(list), Offset: max(o.Offset, 0), Limit: o.Limit}
	if cz.Limit <= 0 {
		cz.Limit = defaultConnzLimit
	}
	list = list[min(cz.Offset, len(list)):]
	if len(list) == 0 {
		list = nil
	}
	if len(list) > cz.Limit {
		list = list[:cz.Limit]
	}
	cz.Conns, cz.NumConns = list, len(list)
	if cz.Conns == nil {
		cz.Conns = []*ConnInfo{}
	}
	// Closed entries are shared with the closed ring: hide fields on a
	// copy, never on the stored record.
	for i, ci := range cz.Conns {
		if (!o.Username && ci.AuthorizedUser != "") || (!o.Subscriptions && ci.Subs != nil) {
			cp := *ci
			if !o.Username {
				cp.AuthorizedUser = ""
			}
			if !o.Subscriptions {
				cp.Subs = nil
			}
			cz.Conns[i] = &cp
		}
	}
	return cz
}

func filterConns(list []*ConnInfo, o *ConnzOptions) []*ConnInfo {
	out := list[:0]
	for _, ci := range list {
		if (o.CID != 0 && ci.Cid != o.CID) || (o.User != "" && ci.AuthorizedUser != o.User) ||
			(o.Account != "" && ci.Account != o.Account) {
			continue
		}
		out = append(out, ci)
	}
	return out
}

var connSorts = map[string]func(a, b *ConnInfo) bool{
	"cid":        func(a, b *ConnInfo) bool { return a.Cid < b.Cid },
	"start":      func(a, b *ConnInfo) bool { return a.Start.Before(b.Start) },
	"subs":       func(a, b *ConnInfo) bool { return a.NumSubs > b.NumSubs },
	"pending":    func(a, b *ConnInfo) bool { return a.Pending > b.Pending },
	"msgs_to":    func(a, b *ConnInfo) bool { return a.OutMsgs > b.OutMsgs },
	"msgs_from":  func(a, b *ConnInfo) bool { return a.InMsgs > b.InMsgs },
	"bytes_to":   func(a, b *ConnInfo) bool { return a.OutBytes > b.OutBytes },
	"bytes_from": func(a, b *ConnInfo) bool { return a.InBytes > b.InBytes },
	"last":       func(a, b *ConnInfo) bool { return a.LastActivity.After(b.LastActivity) },
	"idle":       func(a, b *ConnInfo) bool { return a.LastActivity.Before(b.LastActivity) },
	"uptime":     func(a, b *ConnInfo) bool { return a.Start.Before(b.Start) },
	"stop": func(a, b *ConnInfo) bool {
		return a.Stop != nil && b.Stop != nil && a.Stop.After(*b.Stop)
	},
	"reason": func(a, b *ConnInfo) bool { return a.Reason < b.Reason },
}

func sortConns(list []*ConnInfo, by string) {
	less, ok := connSorts[by]
	if !ok {
		less = connSorts["cid"]
	}
	sort.SliceStable(list, func(i, j int) bool { return less(list[i], list[j]) })
}

func (s *Server) handleConnz(r *http.Request) (any, int) {
	o, err := connzOptionsFromQuery(r.URL.Query())
	if err != nil {
		return map[string]string{"error": err.Error()}, http.StatusBadRequest
	}
	return s.connz(o), http.StatusOK
}

// connzOptionsFromQuery reads /connz's query parameters; a number that
// does not parse is an error, as with nats-server.
func connzOptionsFromQuery(q url.Values) (*ConnzOptions, error) {
	o := &ConnzOptions{Sort: SortOpt(q.Get("sort")), State: connStateOf(q.Get("state")), User: q.Get("user"), Account: q.Get("acc")}
	o.Username = q.Get("auth") == "true" || q.Get("auth") == "1"
	o.Subscriptions = q.Get("subs") == "true" || q.Get("subs") == "1" || q.Get("subs") == "detail"
	var err error
	if o.Offset, err = queryInt(q, "offset"); err != nil {
		return nil, err
	}
	if o.Limit, err = queryInt(q, "limit"); err != nil {
		return nil, err
	}
	if v := q.Get("cid"); v != "" {
		if o.CID, err = strconv.ParseUint(v, 10, 64); err != nil {
			return nil, fmt.Errorf("Error decoding uint for 'cid': %v", err)
		}
	}
	if o.Sort != "" {
		if _, ok := connSorts[string(o.Sort)]; !ok {
			return nil, fmt.Errorf("invalid sorting option: %s", o.Sort)
		}
	}
	return o, nil
}

// queryInt reads an integer query parameter (0 when absent).
func queryInt(q url.Values, name string) (int, error) {
	v := q.Get(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("Error decoding int for '%s': %v", name, err)
	}
	return n, nil
}

// connStateOf reads /connz's state parameter ("open" when absent or unknown).
func connStateOf(q string) ConnState {
	switch q {
	case "closed":
		return ConnClosed
	case "all", "any":
		return ConnAll
	}
	return ConnOpen
}
