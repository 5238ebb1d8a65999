// Package conf parses the NATS server configuration file format.
//
// The format is a relaxed superset of JSON:
//
//   - the top level is an implicit map (it may also be wrapped in braces);
//   - keys and values are separated by ':', '=' or plain whitespace, and an
//     entry may be terminated by ';' or ',';
//   - '#' and '//' start comments that run to the end of the line;
//   - maps are written { ... } and arrays [ ... ] (elements separated by
//     commas or newlines), nested freely;
//   - strings may be bare words, "double quoted" (with escapes), 'single
//     quoted' (raw) or ( ... ) blocks ending with ')' alone on a line;
//   - bare words are typed: integers (with optional size suffixes such as
//     1k, 4MB, 2GiB), floats, booleans (true/false/yes/no/on/off), Zulu
//     datetimes; anything else stays a string;
//   - every key is a variable that later values can reference as $NAME,
//     looked up in the enclosing maps (innermost first) and then in the
//     environment;
//   - "include path" merges another file's entries at that point.
//
// Values are returned as int64, float64, bool, string, time.Time, []any and
// map[string]any. Keys keep the case they were written with.
package conf

import (
	"fmt"
	"os"
	"path/filepath"
)

// Token wraps a value parsed by ParseFileWithChecks with the place it came
// from. For map entries the position is that of the key; for array elements
// it is that of the element.
type Token struct {
	Value  any
	File   string
	Line   int
	Column int
	// UsedVariable is set on an entry that was referenced as $NAME by a
	// later value, so callers can avoid warning about it as unknown.
	UsedVariable bool
}

// Position returns "file:line:col". Input that did not come from a file is
// reported as "<string>".
func (t *Token) Position() string {
	return formatPos(t.File, t.Line, t.Column)
}

// Error is a parse error located in the input.
type Error struct {
	File   string // "" when parsing a string
	Line   int    // 1-based
	Column int    // 1-based, in characters
	Msg    string
	Err    error // underlying error, if any (for example a failed include read)

	syntax bool // produced by the lexer
}

func (e *Error) Error() string {
	return formatPos(e.File, e.Line, e.Column) + ": " + e.Msg
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }

// stringSource names input that did not come from a file.
const stringSource = "<string>"

func formatPos(file string, line, col int) string {
	if file == "" {
		file = stringSource
	}
	return fmt.Sprintf("%s:%d:%d", file, line, col)
}

// Parse parses data (no file, includes relative to the working directory)
// into a map.
func Parse(data string) (map[string]any, error) {
	return parseSource(data, "", options{}, nil)
}

// ParseFile reads and parses a file.
func ParseFile(path string) (map[string]any, error) {
	return parseFile(path, options{})
}

// ParseWithChecks is Parse but every value, at every level, is wrapped in
// *Token so callers can report positions.
func ParseWithChecks(data string) (map[string]any, error) {
	return parseSource(data, "", options{checks: true}, nil)
}

// ParseFileWithChecks is ParseFile but every value, at every level, is
// wrapped in *Token so callers can report positions.
func ParseFileWithChecks(path string) (map[string]any, error) {
	return parseFile(path, options{checks: true})
}

// Unwrap returns v with a *Token wrapper removed. Values nested inside the
// token's maps or slices are left as they are.
func Unwrap(v any) any {
	if t, ok := v.(*Token); ok {
		return t.Value
	}
	return v
}

func parseFile(path string, opts options) (map[string]any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("error reading config file: %w", err)
	}
	return parseSource(string(data), path, opts, []string{absPath(path)})
}

func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}

// readRegularFile reads an included file, refusing devices, pipes and
// directories so an include can never block or read forever.
func readRegularFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return os.ReadFile(path)
}
