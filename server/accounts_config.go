package server

import "fmt"

// importSpec is an import as the config file writes it, wired at start.
type importSpec struct {
	service bool
	account string // exporting account
	subject string // subject in the exporting account
	to      string // service: local subject; stream: prefix
}

// configureAccounts registers the configured accounts and wires their imports.
func (s *Server) configureAccounts(o *Options) error {
	s.gacc.srv = s
	return s.registerAccounts(o.Accounts)
}

// registerAccounts registers accounts new to the server (at start, or added
// by a reload) and wires their imports, which may name any registered account.
func (s *Server) registerAccounts(accs []*Account) error {
	for _, acc := range accs {
		acc.srv = s
		if reg := s.accs.register(acc); reg != acc {
			return fmt.Errorf("duplicate account name %q", acc.Name)
		}
	}
	for _, acc := range accs {
		for _, im := range acc.cfgImports {
			from := s.accs.lookup(im.account)
			if from == nil {
				return fmt.Errorf("account %q: import from unknown account %q", acc.Name, im.account)
			}
			var err error
			if im.service {
				err = acc.AddServiceImport(from, im.to, im.subject)
			} else {
				err = acc.AddStreamImport(from, im.subject, im.to)
			}
			if err != nil {
				return fmt.Errorf("account %q: import %q from %q: %v", acc.Name, im.subject, im.account, err)
			}
		}
	}
	return nil
}
