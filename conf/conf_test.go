package conf

import (
	"reflect"
	"testing"
	"time"
)

type m = map[string]any
type a = []any

// valueTests are parsed with Parse and compared as a whole. They also seed
// the fuzz corpus.
var valueTests = []struct {
	name string
	in   string
	want m
}{
	// Separators and terminators.
	{"colon", "port: 4222", m{"port": int64(4222)}},
	{"equals", "port = 4222", m{"port": int64(4222)}},
	{"whitespace", "port 4222", m{"port": int64(4222)}},
	{"tab", "port\t4222", m{"port": int64(4222)}},
	{"no space around sep", "port:4222\nhost=h", m{"port": int64(4222), "host": "h"}},
	{"semicolons", "a 1; b 2;", m{"a": int64(1), "b": int64(2)}},
	{"commas", "a: 1, b: 2,", m{"a": int64(1), "b": int64(2)}},
	{"newlines", "a 1\n\n\nb 2\n", m{"a": int64(1), "b": int64(2)}},
	{"crlf", "a 1\r\nb: 'x'\r\n", m{"a": int64(1), "b": "x"}},
	{"empty", "", m{}},
	{"only comments", "# hello\n// world\n   \n", m{}},
	{"bom", "\uFEFFa: 1", m{"a": int64(1)}},
	{"value on next line", "a =\n  1", m{"a": int64(1)}},
	{"value after ': ' prefix", "listen: :4222", m{"listen": ":4222"}},

	// Comments.
	{"hash comment", "# c\na 1 # trailing\n", m{"a": int64(1)}},
	{"slash comment", "// c\na 1 // trailing\n", m{"a": int64(1)}},
	{"comment after semicolon", "a 1; # c\nb 2", m{"a": int64(1), "b": int64(2)}},
	{"url not a comment", "url: nats://host:4222", m{"url": "nats://host:4222"}},
	{"hash inside word", "pass: abc#def", m{"pass": "abc#def"}},

	// Keys.
	{"key case kept", "Port: 1\nport: 2", m{"Port": int64(1), "port": int64(2)}},
	{"double quoted key", `"my key": 1`, m{"my key": int64(1)}},
	{"single quoted key", `'k.x' = 1`, m{"k.x": int64(1)}},
	{"dotted key", "a.b.c 1", m{"a.b.c": int64(1)}},
	{"duplicate key last wins", "a 1\na 2", m{"a": int64(2)}},
	{"include as key", "include: 5", m{"include": int64(5)}},

	// Maps.
	{"map with colon", "a: { b: 1 }", m{"a": m{"b": int64(1)}}},
	{"map with equals", "a = { b = 1 }", m{"a": m{"b": int64(1)}}},
	{"map without sep", "a { b 1 }", m{"a": m{"b": int64(1)}}},
	{"map glued to key", "a{b 1}", m{"a": m{"b": int64(1)}}},
	{"map brace on next line", "a\n{\n b 1\n}", m{"a": m{"b": int64(1)}}},
	{"empty map", "a {}", m{"a": m{}}},
	{"map entries by comma", "a {x 1, y 2, z: 3}", m{"a": m{"x": int64(1), "y": int64(2), "z": int64(3)}}},
	{"map multiline", "a {\n  x 1\n  y: 'two' # c\n}\nb 3", m{"a": m{"x": int64(1), "y": "two"}, "b": int64(3)}},
	{"nested maps", "a { b { c { d: 1 } } }", m{"a": m{"b": m{"c": m{"d": int64(1)}}}}},
	{"map then same line value", "a {x 1}; b 2", m{"a": m{"x": int64(1)}, "b": int64(2)}},
	{"json top level", `{"a": 1, "b": {"c": [1, 2]}}`, m{"a": int64(1), "b": m{"c": a{int64(1), int64(2)}}}},
	{"json with trailing comment", "{\n a: 1\n}\n# done\n", m{"a": int64(1)}},

	// Arrays.
	{"array commas", "a [1, 2, 3]", m{"a": a{int64(1), int64(2), int64(3)}}},
	{"array newlines", "a [\n 1\n 2\n 3\n]", m{"a": a{int64(1), int64(2), int64(3)}}},
	{"array trailing comma", "a: [1, 2,]", m{"a": a{int64(1), int64(2)}}},
	{"array comments", "a [\n 1 # one\n // two\n 2, # x\n]", m{"a": a{int64(1), int64(2)}}},
	{"empty array", "a = []", m{"a": a{}}},
	{"array mixed", `a [1, "two", 'three', four, 5.5, true, {x: 1}, [2]]`,
		m{"a": a{int64(1), "two", "three", "four", 5.5, true, m{"x": int64(1)}, a{int64(2)}}}},
	{"array of maps", "u [\n {user: a, pass: b}\n {user: c}\n]",
		m{"u": a{m{"user": "a", "pass": "b"}, m{"user": "c"}}}},
	{"nested arrays", "a [[1, [2]], []]", m{"a": a{a{int64(1), a{int64(2)}}, a{}}}},
	{"array of urls", "routes = [\n nats://a:6222\n nats://b:6222, nats://c:6222\n]",
		m{"routes": a{"nats://a:6222", "nats://b:6222", "nats://c:6222"}}},

	// Strings.
	{"double quoted", `s: "hello world"`, m{"s": "hello world"}},
	{"double quoted escapes", `s: "a\tb\nc\rd\"e\\f\/g"`, m{"s": "a\tb\nc\rd\"e\\f/g"}},
	{"unicode escape", `s: "caf\u00e9 \u263A"`, m{"s": "café ☺"}},
	{"surrogate pair escape", `s: "\ud83d\ude00"`, m{"s": "😀"}},
	{"hex escape", `s: "\x41\x42"`, m{"s": "AB"}},
	{"double quoted not typed", `a: "4222", b: "true", c: "2m", d: "$X"`, m{"a": "4222", "b": "true", "c": "2m", "d": "$X"}},
	{"double quoted multiline", "s: \"a\nb\"", m{"s": "a\nb"}},
	{"double quoted with comment chars", `s: "a # b // c"`, m{"s": "a # b // c"}},
	{"single quoted raw", `s: 'a\tb "c"'`, m{"s": `a\tb "c"`}},
	{"single quoted multiline", "s: 'a\nb'", m{"s": "a\nb"}},
	{"empty strings", `a: "", b: ''`, m{"a": "", "b": ""}},
	{"block", "b (\n  line one\n  line \"two\" $X\n)\nc 1", m{"b": "\n  line one\n  line \"two\" $X", "c": int64(1)}},
	{"block indented close", "b: (\nx\n  )  \n", m{"b": "\nx"}},
	{"block with parens inside", "b (\n(x) )\n)", m{"b": "\n(x) )"}},
	{"block first line", "b (text\n)", m{"b": "text"}},
	{"bare words", "a: hello, b: 127.0.0.1, c: 0.0.0.0:4222, d: foo/bar.baz", m{"a": "hello", "b": "127.0.0.1", "c": "0.0.0.0:4222", "d": "foo/bar.baz"}},
	{"bare unicode", "a: héllo", m{"a": "héllo"}},
	{"bcrypt", "p: $2a$11$PWIFAL8RsWyGI3jVZtO9Nu8.6jOxzxfZo7c/W0eLk017hjgUKWrhy",
		m{"p": "$2a$11$PWIFAL8RsWyGI3jVZtO9Nu8.6jOxzxfZo7c/W0eLk017hjgUKWrhy"}},
	{"bcrypt 2b", "p: $2b$10$abc", m{"p": "$2b$10$abc"}},
	{"lone dollar", "p: $", m{"p": "$"}},
	{"duration words stay strings", "a: 10s, b: 1h30m, c: 500ms, d: 1.5s", m{"a": "10s", "b": "1h30m", "c": "500ms", "d": "1.5s"}},

	// Numbers.
	{"ints", "a 0, b -12, c 007, d 9223372036854775807, e -9223372036854775808",
		m{"a": int64(0), "b": int64(-12), "c": int64(7), "d": int64(9223372036854775807), "e": int64(-9223372036854775808)}},
	{"decimal sizes", "k 1k, m 2M, g 3g, t 1T, p 1p, e 1E",
		m{"k": int64(1000), "m": int64(2000000), "g": int64(3000000000), "t": int64(1e12), "p": int64(1e15), "e": int64(1e18)}},
	{"binary sizes kb", "a 1kb, b 1KI, c 1KiB", m{"a": int64(1024), "b": int64(1024), "c": int64(1024)}},
	{"binary sizes mb", "a 1MB, b 2mi, c 3mib", m{"a": int64(1 << 20), "b": int64(2 << 20), "c": int64(3 << 20)}},
	{"binary sizes gb", "a 1GB, b 1gi, c 1Gib", m{"a": int64(1 << 30), "b": int64(1 << 30), "c": int64(1 << 30)}},
	{"binary sizes tb", "a 1tb, b 1ti, c 1tib", m{"a": int64(1 << 40), "b": int64(1 << 40), "c": int64(1 << 40)}},
	{"binary sizes pb", "a 1pb, b 1pi, c 1pib", m{"a": int64(1 << 50), "b": int64(1 << 50), "c": int64(1 << 50)}},
	{"binary sizes eb", "a 1eb, b 1ei, c 1eib", m{"a": int64(1 << 60), "b": int64(1 << 60), "c": int64(1 << 60)}},
	{"negative size", "a -2kb", m{"a": int64(-2048)}},
	{"unknown suffix is string", "a 1x, b 4zb, c 1kbb", m{"a": "1x", "b": "4zb", "c": "1kbb"}},
	{"floats", "a 1.5, b -0.25, c 3.0e2, d 1.5E-1", m{"a": 1.5, "b": -0.25, "c": 300.0, "d": 0.15}},
	{"not floats", "a 1., b .5, c 1.2.3, d 1e5, e -", m{"a": "1.", "b": ".5", "c": "1.2.3", "d": "1e5", "e": "-"}},

	// Booleans.
	{"bools true", "a true, b TRUE, c yes, d Yes, e on, f ON", m{"a": true, "b": true, "c": true, "d": true, "e": true, "f": true}},
	{"bools false", "a false, b False, c no, d NO, e off, f Off", m{"a": false, "b": false, "c": false, "d": false, "e": false, "f": false}},
	{"bool-like words", "a truth, b nope", m{"a": "truth", "b": "nope"}},

	// Datetimes.
	{"datetime", "d 2016-05-04T18:53:41Z", m{"d": time.Date(2016, 5, 4, 18, 53, 41, 0, time.UTC)}},
	{"date without time is string", "d 2016-05-04", m{"d": "2016-05-04"}},

	// Variables.
	{"variable top", "PORT = 4222\nport: $PORT", m{"PORT": int64(4222), "port": int64(4222)}},
	{"variable string", "name: 'x y'\nb: $name", m{"name": "x y", "b": "x y"}},
	{"variable into map", "v 1\nm { a: $v }", m{"v": int64(1), "m": m{"a": int64(1)}}},
	{"variable inner first", "v 1\nm { v 2, a: $v }\nb $v", m{"v": int64(1), "m": m{"v": int64(2), "a": int64(2)}, "b": int64(1)}},
	{"variable in array", "v: x\nl [$v, {y: $v}]", m{"v": "x", "l": a{"x", m{"y": "x"}}}},
	{"variable of map", "base {a 1}\nc: $base", m{"base": m{"a": int64(1)}, "c": m{"a": int64(1)}}},
	{"variable underscore", "_v 1\nx $_v", m{"_v": int64(1), "x": int64(1)}},
	{"variable terminators", "v 1\nx [$v,$v]\ny {z $v}", m{"v": int64(1), "x": a{int64(1), int64(1)}, "y": m{"z": int64(1)}}},
}

func TestParseValues(t *testing.T) {
	for _, tc := range valueTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Parse(%q)\n got: %#v\nwant: %#v", tc.in, got, tc.want)
			}
		})
	}
}

const realisticConfig = `
# Tern server configuration
server_name: "tern-1"
listen: 0.0.0.0:4222
http_port: 8222
max_payload: 1MB
max_pending = 64MB
write_deadline: "10s"
ping_interval: "2m"
debug: false
trace: off

ADMIN_HASH = $2a$11$PWIFAL8RsWyGI3jVZtO9Nu8.6jOxzxfZo7c/W0eLk017hjgUKWrhy

authorization {
  timeout: 0.5
  users = [
    {
      user: admin
      password: $ADMIN_HASH
      permissions: {
        publish: { allow: [">"] }
        subscribe: ">"
      }
    }
    { user: "client", password: 's3cr3t',
      permissions { publish = ["req.*", "events.>"], subscribe: { deny: ["_SYS.>"] } } }
  ]
}

accounts {
  APP: {
    jetstream: enabled
    users: [ {user: app, password: app} ]
    exports: [ {stream: "events.>"} ]
  }
  SYS { users = [ { user: sys, password: sys } ] }
}
system_account: SYS

jetstream {
  store_dir: "/var/lib/tern/js"
  max_memory_store: 1GiB
  max_file_store: 10G
}

cluster {
  name: C1
  listen: 0.0.0.0:6222
  routes = [
    nats://host-a:6222
    nats-route://host-b:6222  # second seed
  ]
}
`

func TestParseRealistic(t *testing.T) {
	got, err := Parse(realisticConfig)
	if err != nil {
		t.Fatal(err)
	}
	hash := "$2a$11$PWIFAL8RsWyGI3jVZtO9Nu8.6jOxzxfZo7c/W0eLk017hjgUKWrhy"
	want := m{
		"server_name":    "tern-1",
		"listen":         "0.0.0.0:4222",
		"http_port":      int64(8222),
		"max_payload":    int64(1 << 20),
		"max_pending":    int64(64 << 20),
		"write_deadline": "10s",
		"ping_interval":  "2m",
		"debug":          false,
		"trace":          false,
		"ADMIN_HASH":     hash,
		"authorization": m{
			"timeout": 0.5,
			"users": a{
				m{"user": "admin", "password": hash, "permissions": m{
					"publish":   m{"allow": a{">"}},
					"subscribe": ">",
				}},
				m{"user": "client", "password": "s3cr3t", "permissions": m{
					"publish":   a{"req.*", "events.>"},
					"subscribe": m{"deny": a{"_SYS.>"}},
				}},
			},
		},
		"accounts": m{
			"APP": m{
				"jetstream": "enabled",
				"users":     a{m{"user": "app", "password": "app"}},
				"exports":   a{m{"stream": "events.>"}},
			},
			"SYS": m{"users": a{m{"user": "sys", "password": "sys"}}},
		},
		"system_account": "SYS",
		"jetstream": m{
			"store_dir":        "/var/lib/tern/js",
			"max_memory_store": int64(1 << 30),
			"max_file_store":   int64(10_000_000_000),
		},
		"cluster": m{
			"name":   "C1",
			"listen": "0.0.0.0:6222",
			"routes": a{"nats://host-a:6222", "nats-route://host-b:6222"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got:  %#v\nwant: %#v", got, want)
	}
}

func TestUnwrap(t *testing.T) {
	if got := Unwrap(int64(3)); got != int64(3) {
		t.Fatalf("Unwrap(3) = %v", got)
	}
	tok := &Token{Value: "x"}
	if got := Unwrap(tok); got != "x" {
		t.Fatalf("Unwrap(token) = %v", got)
	}
	if got := Unwrap(nil); got != nil {
		t.Fatalf("Unwrap(nil) = %v", got)
	}
}

func TestTokenPosition(t *testing.T) {
	tok := &Token{File: "/etc/x.conf", Line: 3, Column: 7}
	if got := tok.Position(); got != "/etc/x.conf:3:7" {
		t.Fatalf("Position() = %q", got)
	}
	tok.File = ""
	if got := tok.Position(); got != "<string>:3:7" {
		t.Fatalf("Position() = %q", got)
	}
}
