package conf

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestIncludeForms(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "users.conf", "users = [ {user: a} ]\n")
	writeFile(t, dir, "auth/perms.conf", "timeout 2\ninclude 'more.conf' # relative to auth/\n")
	writeFile(t, dir, "auth/more.conf", "extra: yes")
	writeFile(t, dir, "js.conf", "store_dir: '/tmp/js'")
	main := writeFile(t, dir, "main.conf", `port: 1
include "users.conf"
authorization {
  include auth/perms.conf
}
jetstream { include js.conf; max_mem: 1k }
INCLUDE js.conf
`)
	got, err := ParseFile(main)
	if err != nil {
		t.Fatal(err)
	}
	want := m{
		"port":          int64(1),
		"users":         a{m{"user": "a"}},
		"authorization": m{"timeout": int64(2), "extra": true},
		"jetstream":     m{"store_dir": "/tmp/js", "max_mem": int64(1000)},
		"store_dir":     "/tmp/js",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

func TestIncludeOrderAndVariables(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "inc.conf", "a: 5\nuser { password: $PASS }\nINC_VAR = 9\n")
	main := writeFile(t, dir, "main.conf", "a 1\nPASS = secret\ninclude inc.conf\nb: $INC_VAR\nc: $a\n")
	got, err := ParseFile(main)
	if err != nil {
		t.Fatal(err)
	}
	want := m{
		"a": int64(5), "PASS": "secret", "user": m{"password": "secret"},
		"INC_VAR": int64(9), "b": int64(9), "c": int64(5),
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %#v\nwant %#v", got, want)
	}
}

func TestIncludeAbsolutePath(t *testing.T) {
	dir := t.TempDir()
	inc := writeFile(t, dir, "sub/abs.conf", "x: 1")
	main := writeFile(t, t.TempDir(), "main.conf", "include \""+filepath.ToSlash(inc)+"\"\n")
	got, err := ParseFile(main)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m{"x": int64(1)}) {
		t.Fatalf("got %#v", got)
	}
}

func TestIncludeFromStringUsesWorkingDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "w.conf", "w: true")
	t.Chdir(dir)
	got, err := Parse("include w.conf\nz 1")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m{"w": true, "z": int64(1)}) {
		t.Fatalf("got %#v", got)
	}
}

func TestIncludeErrors(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.conf", "x 1\ninclude b.conf\n")
	b := writeFile(t, dir, "b.conf", "include a.conf\n")
	_, err := ParseFile(a)
	checkErr(t, err, b+":1:9", "include cycle")

	self := writeFile(t, dir, "self.conf", "m {\n  include './self.conf'\n}")
	_, err = ParseFile(self)
	checkErr(t, err, self+":2:11", "include cycle")

	missing := writeFile(t, dir, "missing.conf", "a 1\n  include nothere.conf\n")
	_, err = ParseFile(missing)
	checkErr(t, err, missing+":2:11", `cannot read include file "nothere.conf"`)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want ErrNotExist in chain, got %v", err)
	}

	bad := writeFile(t, dir, "bad.conf", "ok 1\nv: \"oops\n")
	outer := writeFile(t, dir, "outer.conf", "include bad.conf\n")
	_, err = ParseFile(outer)
	checkErr(t, err, bad+":2:4", "unterminated quoted string")

	dirInc := writeFile(t, dir, "dirinc.conf", "include sub\n")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = ParseFile(dirInc)
	checkErr(t, err, dirInc+":1:9", "not a regular file")
}
