package conf

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// fuzzReadFile stands in for the file system so fuzzed includes never touch
// real files.
func fuzzReadFile(path string) ([]byte, error) {
	if strings.Contains(path, "missing") {
		return nil, os.ErrNotExist
	}
	return []byte("included_key = 1\nincluded_map { a: [1, $included_key] }\n"), nil
}

func FuzzParse(f *testing.F) {
	for _, tc := range valueTests {
		f.Add(tc.in)
	}
	for _, tc := range errorTests {
		f.Add(tc.in)
	}
	for _, s := range []string{
		realisticConfig,
		"include a.conf\nx: $included_key",
		"m { include 'missing.conf' }",
		"v: $HOME\nw: $PATH",
		"a (\n)\nb: \"\\ud800\"",
		"{\"a\": {\"b\": [1, {\"c\": null}]}}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, checks := range []bool{false, true} {
			start := time.Now()
			got, err := parseSource(in, "fuzz.conf", options{checks: checks, readFile: fuzzReadFile}, nil)
			if d := time.Since(start); d > 5*time.Second {
				t.Fatalf("parsing %d bytes took %v", len(in), d)
			}
			if err != nil {
				checkFuzzError(t, in, got, err)
				continue
			}
			if got == nil {
				t.Fatalf("nil map without error for %q", in)
			}
			if checks {
				checkAllTokens(t, got, map[unsafe.Pointer]bool{})
			}
		}
	})
}

func checkFuzzError(t *testing.T, in string, got map[string]any, err error) {
	if got != nil {
		t.Fatalf("map returned with error %v", err)
	}
	if strings.Contains(err.Error(), "internal error") {
		t.Fatalf("input %q: %v", in, err)
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Line < 1 || pe.Column < 1 {
		t.Fatalf("input %q: error without a position: %v", in, err)
	}
}

// checkAllTokens asserts that in checks mode every value at every level is
// a located *Token. Variables can make containers shared, so each one is
// visited once.
func checkAllTokens(t *testing.T, v any, seen map[unsafe.Pointer]bool) {
	if p := containerPointer(v); p != nil {
		if seen[p] {
			return
		}
		seen[p] = true
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			tok, ok := e.(*Token)
			if !ok || tok.Line < 1 || tok.Column < 1 {
				t.Fatalf("key %q: %#v is not a located token", k, e)
			}
			checkAllTokens(t, tok.Value, seen)
		}
	case []any:
		for i, e := range v {
			tok, ok := e.(*Token)
			if !ok || tok.Line < 1 || tok.Column < 1 {
				t.Fatalf("element %d: %#v is not a located token", i, e)
			}
			checkAllTokens(t, tok.Value, seen)
		}
	}
}

func containerPointer(v any) unsafe.Pointer {
	switch v := v.(type) {
	case map[string]any:
		return reflect.ValueOf(v).UnsafePointer()
	case []any:
		if len(v) > 0 {
			return unsafe.Pointer(&v[0])
		}
	}
	return nil
}
