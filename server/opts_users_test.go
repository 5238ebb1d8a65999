package server

import (
	"strings"
	"testing"
)

// The same user name or nkey twice, in two accounts, twice in one, or in an
// account and the authorization block, is a config error as in nats-server
// (issue 16: one of them won at random).
func TestConfigDuplicateUsers(t *testing.T) {
	const nk = "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"
	for name, c := range map[string]struct{ conf, want string }{
		"two accounts": {`accounts { A { users = [{user: u, password: a}] }, B { users = [{user: u, password: b}] } }`,
			`Duplicate user "u" detected`},
		"one account": {`accounts { A { users = [{user: u, password: a}, {user: u, password: b}] } }`,
			`Duplicate user "u" detected`},
		"authorization": {`authorization { users = [{user: u, password: a}, {user: u, password: b}] }`,
			`Duplicate user "u" detected`},
		"account and authorization": {"accounts { A { users = [{user: u, password: a}] } }\nauthorization { users = [{user: u, password: b}] }",
			`Duplicate user "u" detected`},
		"nkey in two accounts": {`accounts { A { users = [{nkey: ` + nk + `}] }, B { users = [{nkey: ` + nk + `}] } }`,
			`Duplicate nkey "` + nk + `" detected`},
	} {
		_, err := ProcessConfigFile(optsWriteConf(t, t.TempDir(), "dup.conf", c.conf))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %s", name, err, c.want)
			continue
		}
		if !strings.Contains(err.Error(), "dup.conf:") {
			t.Errorf("%s: error without a position: %v", name, err)
		}
	}
	// Distinct names in several accounts are fine.
	if _, err := ProcessConfigFile(optsWriteConf(t, t.TempDir(), "ok.conf",
		`accounts { A { users = [{user: a, password: a}] }, B { users = [{user: b, password: b}, {nkey: `+nk+`}] } }`)); err != nil {
		t.Fatal(err)
	}
	// Options set by an embedder are checked too.
	o := testOptions()
	o.Users = []*User{{Username: "u", Password: "a"}, {Username: "u", Password: "b"}}
	if _, err := NewServer(o); err == nil || !strings.Contains(err.Error(), `duplicate user "u"`) {
		t.Fatalf("NewServer with a duplicate user: %v", err)
	}
}
