package server

import (
	"encoding/json"
	"fmt"
	"runtime"
	"time"
)

// ServerInfo identifies the server in system-account responses.
type ServerInfo struct {
	Name      string    `json:"name"`
	Host      string    `json:"host"`
	ID        string    `json:"id"`
	Cluster   string    `json:"cluster,omitempty"`
	Domain    string    `json:"domain,omitempty"`
	Version   string    `json:"ver"`
	Tags      []string  `json:"tags,omitempty"`
	JetStream bool      `json:"jetstream"`
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
}

// DataStats counts messages and bytes.
type DataStats struct {
	Msgs  int64 `json:"msgs"`
	Bytes int64 `json:"bytes"`
}

// ServerStats is the statsz payload answered to $SYS.REQ.SERVER.PING.
type ServerStats struct {
	Start            time.Time `json:"start"`
	Mem              int64     `json:"mem"`
	Cores            int       `json:"cores"`
	CPU              float64   `json:"cpu"`
	Connections      int       `json:"connections"`
	TotalConnections int64     `json:"total_connections"`
	ActiveAccounts   int       `json:"active_accounts"`
	NumSubs          uint32    `json:"subscriptions"`
	Sent             DataStats `json:"sent"`
	Received         DataStats `json:"received"`
	SlowConsumers    int64     `json:"slow_consumers"`
}

type serverAPIResponse struct {
	Server *ServerInfo  `json:"server"`
	Data   any          `json:"data,omitempty"`
	Statsz any          `json:"statsz,omitempty"`
	Error  *sysAPIError `json:"error,omitempty"`
}

type sysAPIError struct {
	Code        int    `json:"code"`
	Description string `json:"description,omitempty"`
}

// startSystemAccount creates the system account and its request handlers.
func (s *Server) startSystemAccount() error {
	o := s.getOpts()
	if o.NoSystemAccount {
		return nil
	}
	name := o.SystemAccount
	if name == "" {
		name = DEFAULT_SYSTEM_ACCOUNT
	}
	acc := s.accs.lookup(name)
	if acc == nil {
		acc = s.accs.register(NewAccount(name))
		acc.srv = s
	}
	s.sysAcc.Store(acc)
	for kind, h := range s.sysHandlers() {
		for _, subj := range []string{"$SYS.REQ.SERVER.PING." + kind, "$SYS.REQ.SERVER." + s.id + "." + kind} {
			if err := s.sysRespond(acc, subj, h, false); err != nil {
				return err
			}
		}
	}
	statsz := func([]byte) any { return s.statsz() }
	for _, subj := range []string{"$SYS.REQ.SERVER.PING", "$SYS.REQ.SERVER.PING.STATSZ", "$SYS.REQ.SERVER." + s.id + ".STATSZ"} {
		if err := s.sysRespond(acc, subj, statsz, true); err != nil {
			return err
		}
	}
	return nil
}

// sysHandlers answer $SYS.REQ.SERVER.PING.<kind> and
// $SYS.REQ.SERVER.<id>.<kind>, given the request's body.
func (s *Server) sysHandlers() map[string]func(req []byte) any {
	return map[string]func(req []byte) any{
		"VARZ": func([]byte) any { return s.varz() },
		"CONNZ": func(req []byte) any {
			var co ConnzOptions
			_ = json.Unmarshal(req, &co)
			return s.connz(&co)
		},
		"SUBSZ":    func([]byte) any { return s.subsz(false, "") },
		"HEALTHZ":  func([]byte) any { return s.healthz() },
		"ACCOUNTZ": func([]byte) any { return s.accountz() },
		"ROUTEZ":   func([]byte) any { return s.routez() },
		"JSZ":      func([]byte) any { return s.jsz() },
	}
}

// sysRespond answers requests on subject in the system account.
func (s *Server) sysRespond(acc *Account, subject string, h func([]byte) any, isStatsz bool) error {
	sub, err := acc.subscribeInternal(subject, "", func(_ *subscription, c *client, _ *Account, _, reply string, _, msg []byte) {
		if reply == "" {
			return
		}
		defer func() {
			if v := recover(); v != nil {
				s.recovered(subject, v)
				b, _ := json.Marshal(&serverAPIResponse{Server: s.serverInfo(), Error: &sysAPIError{Code: 500, Description: internalErrorText}})
				s.deliver(nil, acc, reply, "", nil, b)
			}
		}()
		resp := serverAPIResponse{Server: s.serverInfo()}
		if isStatsz {
			resp.Statsz = h(msg)
		} else {
			resp.Data = h(msg)
		}
		b, _ := json.Marshal(&resp)
		s.deliver(c, acc, reply, "", nil, b)
	})
	if err == nil {
		s.sysSubs = append(s.sysSubs, sub)
	}
	return err
}

func (s *Server) serverInfo() *ServerInfo {
	o := s.getOpts()
	return &ServerInfo{Name: s.name, Host: o.Host, ID: s.id, Cluster: o.Cluster.Name, Domain: o.JetStreamDomain,
		Version: VERSION, Tags: o.Tags, JetStream: s.jetStreamReady(), Seq: s.cidGen.Load(), Time: time.Now().UTC()}
}

func (s *Server) statsz() *ServerStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return &ServerStats{
		Start: s.start, Mem: int64(ms.Sys), Cores: runtime.NumCPU(), Connections: s.NumClients(),
		TotalConnections: s.stats.totalConns.Load(), ActiveAccounts: s.activeAccounts(), NumSubs: s.numSubs(),
		Sent:          DataStats{Msgs: s.stats.outMsgs.Load(), Bytes: s.stats.outBytes.Load()},
		Received:      DataStats{Msgs: s.stats.inMsgs.Load(), Bytes: s.stats.inBytes.Load()},
		SlowConsumers: s.stats.slowConsumers.Load(),
	}
}

func (s *Server) activeAccounts() int {
	n := 0
	for _, a := range s.accs.all() {
		if a.NumConnections() > 0 {
			n++
		}
	}
	return n
}

func (s *Server) numSubs() uint32 {
	var n uint32
	for _, a := range s.accs.all() {
		n += a.sl.Count()
	}
	return n
}

// SystemAccount returns the system account, nil when disabled.
func (s *Server) SystemAccount() *Account { return s.sysAcc.Load() }

// LookupAccount returns a registered account.
func (s *Server) LookupAccount(name string) (*Account, error) {
	if a := s.accs.lookup(name); a != nil {
		return a, nil
	}
	return nil, fmt.Errorf("account not found")
}
