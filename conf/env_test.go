package conf

import (
	"reflect"
	"testing"
)

func TestEnvVariables(t *testing.T) {
	env := map[string]string{
		"TERN_T_PORT":   "4222",
		"TERN_T_SIZE":   "1MB",
		"TERN_T_WORDS":  "hello world",
		"TERN_T_QUOTED": `"quoted # text"`,
		"TERN_T_BOOL":   "TRUE",
		"TERN_T_FLOAT":  "2.5",
		"TERN_T_MAP":    "{a: 1, b: [x, 2]}",
		"TERN_T_ARR":    "[1, 2]",
		"TERN_T_A":      "$TERN_T_B",
		"TERN_T_B":      "7",
		"TERN_T_EMPTY":  "",
		"TERN_T_HASH":   "$2a$11$abc/def",
		"TERN_T_URL":    "nats://h:4222",
		"TERN_T_SPACES": "  42  ",
		"TERN_T_BAD":    "{a: ",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	tests := []struct {
		in   string
		want any
	}{
		{"v: $TERN_T_PORT", int64(4222)},
		{"v: $TERN_T_SIZE", int64(1 << 20)},
		{"v: $TERN_T_WORDS", "hello world"},
		{"v: $TERN_T_QUOTED", "quoted # text"},
		{"v: $TERN_T_BOOL", true},
		{"v: $TERN_T_FLOAT", 2.5},
		{"v: $TERN_T_MAP", m{"a": int64(1), "b": a{"x", int64(2)}}},
		{"v: $TERN_T_ARR", a{int64(1), int64(2)}},
		{"v: $TERN_T_A", int64(7)},
		{"v: $TERN_T_EMPTY", ""},
		{"v: $TERN_T_HASH", "$2a$11$abc/def"},
		{"v: $TERN_T_URL", "nats://h:4222"},
		{"v: $TERN_T_SPACES", int64(42)},
		{"v: $TERN_T_BAD", "{a: "},
		{"TERN_T_PORT = 1\nv: $TERN_T_PORT", int64(1)},
		{"m { v: [$TERN_T_PORT] }\nv: $m", m{"v": a{int64(4222)}}},
	}
	for _, tc := range tests {
		got, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		if !reflect.DeepEqual(got["v"], tc.want) {
			t.Fatalf("Parse(%q)[v] = %#v, want %#v", tc.in, got["v"], tc.want)
		}
	}
}

func TestEnvErrors(t *testing.T) {
	t.Setenv("TERN_T_C1", "$TERN_T_C2")
	t.Setenv("TERN_T_C2", "[1, $TERN_T_C1]")
	t.Setenv("TERN_T_SELF", "$TERN_T_SELF")
	t.Setenv("TERN_T_UNDEF", "{x: $TERN_T_NOT_SET_ANYWHERE}")
	t.Setenv("TERN_T_BIG", "99999999999999999999")

	_, err := Parse("a 1\nb: $TERN_T_C1")
	checkErr(t, err, "<string>:2:4", "cyclic environment variable reference: $TERN_T_C1 -> $TERN_T_C2 -> $TERN_T_C1")
	_, err = Parse("x {\n  y: $TERN_T_SELF\n}")
	checkErr(t, err, "<string>:2:6", "cyclic environment variable reference: $TERN_T_SELF -> $TERN_T_SELF")
	_, err = Parse("u $TERN_T_UNDEF")
	checkErr(t, err, "<string>:1:3", "undefined variable $TERN_T_NOT_SET_ANYWHERE")
	_, err = Parse("n: $TERN_T_BIG")
	checkErr(t, err, "<string>:1:4", "out of range")
}

func TestEnvWithChecks(t *testing.T) {
	t.Setenv("TERN_T_CMAP", "{a: 1}")
	path := writeFile(t, t.TempDir(), "env.conf", "x: 1\n  v: $TERN_T_CMAP\n")
	got, err := ParseFileWithChecks(path)
	if err != nil {
		t.Fatal(err)
	}
	v := got["v"].(*Token)
	inner := v.Value.(map[string]any)["a"].(*Token)
	if inner.Value != int64(1) || inner.Position() != path+":2:6" {
		t.Fatalf("env map entry %+v at %s, want value 1 at the reference", inner, inner.Position())
	}
}
