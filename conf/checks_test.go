package conf

import "testing"

func TestParseFileWithChecks(t *testing.T) {
	dir := t.TempDir()
	inc := writeFile(t, dir, "inc.conf", "\n  from_inc: yes\n")
	path := writeFile(t, dir, "c.conf", `port: 4222
VAR = "v"
auth {
  user: $VAR
  list: [1,
    two]
}
include inc.conf
`)
	got, err := ParseFileWithChecks(path)
	if err != nil {
		t.Fatal(err)
	}
	expectToken(t, got["port"], int64(4222), path, 1, 1, false)
	expectToken(t, got["VAR"], "v", path, 2, 1, true)
	auth := got["auth"].(*Token)
	if auth.Line != 3 || auth.Column != 1 {
		t.Fatalf("auth at %s", auth.Position())
	}
	am := auth.Value.(map[string]any)
	expectToken(t, am["user"], "v", path, 4, 3, false)
	list := am["list"].(*Token)
	if list.Position() != path+":5:3" {
		t.Fatalf("list at %s", list.Position())
	}
	elems := list.Value.([]any)
	expectToken(t, elems[0], int64(1), path, 5, 10, false)
	expectToken(t, elems[1], "two", path, 6, 5, false)
	expectToken(t, got["from_inc"], true, inc, 2, 3, false)

	plain, err := ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := plain["port"].(*Token); ok {
		t.Fatal("ParseFile must not wrap values")
	}
}

func expectToken(t *testing.T, v any, value any, file string, line, col int, used bool) *Token {
	t.Helper()
	tok, ok := v.(*Token)
	if !ok {
		t.Fatalf("%#v is not a *Token", v)
	}
	if tok.Value != value || tok.File != file || tok.Line != line || tok.Column != col || tok.UsedVariable != used {
		t.Fatalf("token %+v, want value %#v at %s:%d:%d used=%v", tok, value, file, line, col, used)
	}
	if Unwrap(tok) != value {
		t.Fatalf("Unwrap(%+v) = %#v", tok, Unwrap(tok))
	}
	return tok
}

func TestParseWithChecks(t *testing.T) {
	got, err := ParseWithChecks("a: 1\nb {\n  c: x\n}\n")
	if err != nil {
		t.Fatal(err)
	}
	expectToken(t, got["a"], int64(1), "", 1, 1, false)
	b := got["b"].(*Token)
	expectToken(t, b.Value.(map[string]any)["c"], "x", "", 3, 3, false)
	if b.Position() != "<string>:2:1" {
		t.Fatalf("b at %s", b.Position())
	}
}
