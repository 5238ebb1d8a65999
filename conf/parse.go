package conf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxIncludeDepth bounds include nesting (cycles are detected separately).
const maxIncludeDepth = 32

type options struct {
	checks   bool                         // wrap values in *Token
	readFile func(string) ([]byte, error) // reads included files
}

// shared is the state common to a parse and everything it includes or
// expands from the environment.
type shared struct {
	options
	includes []string // absolute paths of files being parsed, outermost first
	envStack []string // environment variables being expanded, outermost first
}

// position is where a value or error is reported.
type position struct {
	file      string
	line, col int
}

// parser turns lexer items into values. Each file and each environment
// value gets its own parser; they share *shared.
type parser struct {
	sh     *shared
	lx     *lexer
	file   string
	dir    string           // base directory for relative includes
	scopes []map[string]any // maps being built, outermost first
	fixed  *position        // if set, report every position here
}

func parseSource(src, file string, opts options, includes []string) (map[string]any, error) {
	if opts.readFile == nil {
		opts.readFile = readRegularFile
	}
	sh := &shared{options: opts, includes: includes}
	p := &parser{sh: sh, lx: newLexer(src, false), file: file, dir: dirOf(file)}
	m := make(map[string]any)
	if err := p.parseMap(m, false); err != nil {
		return nil, err
	}
	return m, nil
}

func dirOf(file string) string {
	if file == "" {
		return ""
	}
	return filepath.Dir(file)
}

func (p *parser) pos(off int) position {
	if p.fixed != nil {
		return *p.fixed
	}
	line, col := p.lx.position(off)
	return position{file: p.file, line: line, col: col}
}

func (p *parser) errAt(off int, err error, format string, args ...any) *Error {
	ps := p.pos(off)
	return &Error{File: ps.file, Line: ps.line, Column: ps.col, Msg: fmt.Sprintf(format, args...), Err: err}
}

func (p *parser) syntaxErr(it item) *Error {
	e := p.errAt(it.off, nil, "%s", it.val)
	e.syntax = true
	return e
}

// wrap returns v, or v wrapped in a *Token located at off in checks mode.
func (p *parser) wrap(v any, off int) any {
	if !p.sh.checks {
		return v
	}
	ps := p.pos(off)
	return &Token{Value: v, File: ps.file, Line: ps.line, Column: ps.col}
}

// parseMap reads entries into m until the end of the map (nested) or of
// the input (top level).
func (p *parser) parseMap(m map[string]any, nested bool) error {
	p.scopes = append(p.scopes, m)
	defer func() { p.scopes = p.scopes[:len(p.scopes)-1] }()
	for {
		it := p.lx.nextItem()
		var err error
		switch it.typ {
		case itemEOF:
			if nested {
				return p.errAt(it.off, nil, "unexpected end of input in map")
			}
			return nil
		case itemMapEnd:
			return nil
		case itemKey:
			err = p.parseEntry(m, it)
		case itemInclude:
			err = p.include(m, it)
		case itemError:
			err = p.syntaxErr(it)
		default:
			err = p.errAt(it.off, nil, "internal error: unexpected item in map")
		}
		if err != nil {
			return err
		}
	}
}

func (p *parser) parseEntry(m map[string]any, key item) error {
	v, err := p.parseValue(p.lx.nextItem())
	if err != nil {
		return err
	}
	m[key.val] = p.wrap(v, key.off)
	return nil
}

// parseValue returns the value starting with it. The value itself is never
// wrapped; values nested inside it are wrapped in checks mode.
func (p *parser) parseValue(it item) (any, error) {
	switch it.typ {
	case itemString:
		return it.val, nil
	case itemBare:
		v, err := classify(it.val)
		if err != nil {
			return nil, p.errAt(it.off, nil, "%v", err)
		}
		return v, nil
	case itemVariable:
		return p.resolve(it)
	case itemMapStart:
		m := make(map[string]any)
		return m, p.parseMap(m, true)
	case itemArrayStart:
		return p.parseArray()
	case itemError:
		return nil, p.syntaxErr(it)
	}
	return nil, p.errAt(it.off, nil, "internal error: unexpected item where a value belongs")
}

func (p *parser) parseArray() ([]any, error) {
	arr := []any{}
	for {
		it := p.lx.nextItem()
		if it.typ == itemArrayEnd {
			return arr, nil
		}
		v, err := p.parseValue(it)
		if err != nil {
			return nil, err
		}
		arr = append(arr, p.wrap(v, it.off))
	}
}

// resolve looks a $NAME reference up in the enclosing maps, innermost
// first, and then in the environment.
func (p *parser) resolve(it item) (any, error) {
	for i := len(p.scopes) - 1; i >= 0; i-- {
		v, ok := p.scopes[i][it.val]
		if !ok {
			continue
		}
		if t, ok := v.(*Token); ok {
			t.UsedVariable = true
			return t.Value, nil
		}
		return v, nil
	}
	return p.resolveEnv(it.val, it.off)
}

// resolveEnv parses the environment variable name as a single value. If
// its contents are not valid syntax they are used as a plain string.
func (p *parser) resolveEnv(name string, off int) (any, error) {
	val, ok := os.LookupEnv(name)
	if !ok {
		return nil, p.errAt(off, nil, "undefined variable $%s", name)
	}
	if slices.Contains(p.sh.envStack, name) {
		chain := strings.Join(append(slices.Clone(p.sh.envStack), name), " -> $")
		return nil, p.errAt(off, nil, "cyclic environment variable reference: $%s", chain)
	}
	if strings.TrimSpace(val) == "" {
		return val, nil
	}
	p.sh.envStack = append(p.sh.envStack, name)
	defer func() { p.sh.envStack = p.sh.envStack[:len(p.sh.envStack)-1] }()

	ps := p.pos(off)
	sub := &parser{sh: p.sh, lx: newLexer(val, true), file: p.file, dir: p.dir, fixed: &ps}
	v, err := sub.parseSingle()
	var perr *Error
	if errors.As(err, &perr) && perr.syntax {
		return val, nil
	}
	return v, err
}

// parseSingle parses input lexed in single-value mode.
func (p *parser) parseSingle() (any, error) {
	v, err := p.parseValue(p.lx.nextItem())
	if err != nil {
		return nil, err
	}
	if it := p.lx.nextItem(); it.typ != itemEOF {
		if it.typ == itemError {
			return nil, p.syntaxErr(it)
		}
		return nil, p.errAt(it.off, nil, "internal error: unexpected item after value")
	}
	return v, nil
}

// include parses the named file into m, sharing the variable scopes of the
// including file.
func (p *parser) include(m map[string]any, it item) error {
	path := it.val
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.dir, path)
	}
	abs := absPath(path)
	if slices.Contains(p.sh.includes, abs) {
		return p.errAt(it.off, nil, "include cycle: %q is already being parsed", it.val)
	}
	if len(p.sh.includes) >= maxIncludeDepth {
		return p.errAt(it.off, nil, "includes nested too deeply (limit %d)", maxIncludeDepth)
	}
	data, err := p.sh.readFile(path)
	if err != nil {
		return p.errAt(it.off, err, "cannot read include file %q: %v", it.val, err)
	}
	p.sh.includes = append(p.sh.includes, abs)
	defer func() { p.sh.includes = p.sh.includes[:len(p.sh.includes)-1] }()

	child := &parser{
		sh:     p.sh,
		lx:     newLexer(string(data), false),
		file:   path,
		dir:    filepath.Dir(path),
		scopes: slices.Clone(p.scopes),
	}
	return child.parseMap(m, false)
}
