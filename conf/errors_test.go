package conf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// errorTests must fail at line:col "pos" with a message containing "msg".
// They also seed the fuzz corpus.
var errorTests = []struct {
	name string
	in   string
	pos  string
	msg  string
}{
	{"unterminated double quoted", "a: 1\nb: \"abc\n", "2:4", "unterminated quoted string"},
	{"unterminated single quoted", "x 'abc", "1:3", "unterminated quoted string"},
	{"unterminated quoted in array", "x [1, \"a]", "1:7", "unterminated quoted string"},
	{"undefined variable", "a 1\nb {\n  c: $NOPE_TERN_UNDEFINED\n}", "3:6", "undefined variable $NOPE_TERN_UNDEFINED"},
	{"undefined variable in array", "a [1,\n   $NOPE_TERN_UNDEFINED]", "2:4", "undefined variable"},
	{"variable defined later", "a $later_tern\nlater_tern 1", "1:3", "undefined variable $later_tern"},
	{"variable from sibling map", "m1 { v 1 }\nm2 { x $v }", "2:8", "undefined variable $v"},
	{"unterminated map", "a 1\nb {\n c 2\n", "2:3", "unterminated map"},
	{"unterminated nested map", "a {\n b { c 1 }\n", "1:3", "unterminated map"},
	{"unterminated top brace", "{\n a 1\n", "1:1", "unterminated map"},
	{"unterminated array", "x [1,\n2", "1:3", "unterminated array"},
	{"unterminated block", "b (\nfoo\n)x\n", "1:3", "unterminated block"},
	{"missing value at eof", "a 1\nfoo", "2:1", `missing value for key "foo"`},
	{"missing value at newline", "a 1\nfoo =\n", "2:1", `missing value for key "foo"`},
	{"missing value before brace", "m { k }", "1:5", `missing value for key "k"`},
	{"missing value before semicolon", "k: ;", "1:1", `missing value for key "k"`},
	{"unmatched close brace", "a 1\n}", "2:1", "unexpected '}'"},
	{"close bracket at top", "]", "1:1", "expected a key"},
	{"separator without key", "  : 1", "1:3", "expected a key"},
	{"two values", "a 1 b 2", "1:5", "expected newline"},
	{"two values in map", "m {a 1 b 2}", "1:8", "expected newline"},
	{"array missing comma", "a [1 2]", "1:6", "expected ',' or ']'"},
	{"array leading comma", "a [,1]", "1:4", "unexpected ','"},
	{"array double comma", "a [1,,2]", "1:6", "unexpected ','"},
	{"brace in array", "a [}", "1:4", "expected a value"},
	{"invalid escape", `s "a\qb"`, "1:5", "invalid escape"},
	{"short unicode escape", `s "\u12"`, "1:4", "hex digits"},
	{"bad hex escape", `s "\xZZ"`, "1:4", "hex digits"},
	{"int overflow", "n 9223372036854775808", "1:3", "out of range"},
	{"negative int overflow", "n -9223372036854775809", "1:3", "out of range"},
	{"size overflow", "n 10e", "1:3", "out of range"},
	{"size overflow binary", "n 9000pb", "1:3", "out of range"},
	{"invalid datetime", "d 2016-13-04T18:53:41Z", "1:3", "invalid datetime"},
	{"unterminated quoted key", "\"abc: 1", "1:1", "unterminated quoted key"},
	{"include without path", "include \n", "1:9", "missing file name"},
	{"include with map", "include {a 1}", "1:9", "expected a file name"},
	{"include unterminated", "include \"x.conf", "1:9", "unterminated quoted string"},
	{"content after top brace", "{a 1} b", "1:7", "after the closing '}'"},
	{"second top brace", "{ {", "1:3", "expected a key"},
	{"column counts characters", "é: \"abc", "1:4", "unterminated quoted string"},
	{"column after cyrillic", "ключ: \"abc", "1:7", "unterminated quoted string"},
	{"tab counts one column", "\ta: \"abc", "1:5", "unterminated quoted string"},
	{"too deep", "a " + strings.Repeat("[", 200), "1:", "nested too deeply"},
}

func TestErrorsString(t *testing.T) {
	for _, tc := range errorTests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.in)
			checkErr(t, err, "<string>:"+tc.pos, tc.msg)
		})
	}
}

func TestErrorsFile(t *testing.T) {
	dir := t.TempDir()
	for i, tc := range errorTests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, fmt.Sprintf("e%02d.conf", i), tc.in)
			_, err := ParseFile(path)
			checkErr(t, err, path+":"+tc.pos, tc.msg)
			_, err = ParseFileWithChecks(path)
			checkErr(t, err, path+":"+tc.pos, tc.msg)
		})
	}
}

// checkErr asserts err reads "<prefix>...: ...msg...". A prefix ending in
// ':' (position partly unknown) is matched as is; otherwise it must be the
// full position followed by ": ".
func checkErr(t *testing.T, err error, prefix, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("expected error at %s containing %q, got none", prefix, msg)
	}
	if !strings.HasSuffix(prefix, ":") {
		prefix += ": "
	}
	if !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %q\nwant prefix %q and message containing %q", err, prefix, msg)
	}
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %q is not a *conf.Error", err)
	}
}

func TestErrorFields(t *testing.T) {
	_, err := Parse("a 1\nb: \"x")
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("not a *Error: %v", err)
	}
	if pe.File != "" || pe.Line != 2 || pe.Column != 4 || pe.Msg != "unterminated quoted string" {
		t.Fatalf("unexpected fields %+v", pe)
	}
}

func TestParseFileMissing(t *testing.T) {
	_, err := ParseFile(filepath.Join(t.TempDir(), "nope.conf"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want ErrNotExist, got %v", err)
	}
	_, err = ParseFileWithChecks(filepath.Join(t.TempDir(), "nope.conf"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("want ErrNotExist, got %v", err)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
