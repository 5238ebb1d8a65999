package conf

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// itemType identifies the kind of item produced by the lexer.
type itemType int

const (
	itemEOF      itemType = iota
	itemError             // val is the message
	itemKey               // a map key
	itemString            // a quoted or block string, already unescaped
	itemBare              // an unquoted word; the parser gives it a type
	itemVariable          // $NAME; val is NAME
	itemInclude           // include directive; val is the path
	itemMapStart
	itemMapEnd
	itemArrayStart
	itemArrayEnd
)

// item is one lexical token. off is the byte offset where it starts (for
// errors, where the problem was found).
type item struct {
	typ itemType
	val string
	off int
}

type frameKind int

const (
	frameTop   frameKind = iota // the implicit top-level map
	frameMap                    // { ... }
	frameArray                  // [ ... ]
	frameValue                  // a lone value (an environment variable)
)

// frame is one level of nesting the lexer is inside.
type frame struct {
	kind frameKind
	open int // offset of the opening bracket; -1 if there is none
}

// maxDepth bounds how deeply maps and arrays may nest.
const maxDepth = 128

type stateFn func(*lexer) stateFn

// lexer is a pull lexer: a state machine over the input that queues items
// until the parser asks for them. Syntax characters are all ASCII, so it
// scans bytes; multi-byte runes simply pass through inside words.
type lexer struct {
	src     string
	pos     int
	state   stateFn
	frames  []frame
	queue   []item
	budget  int   // state transitions left; guards against lexer bugs
	key     item  // most recent key, for error messages
	emitted bool  // whether any item has been produced yet
	lines   []int // offsets of line starts, built on first use
}

// newLexer lexes src as a whole file, or, if single is set, as one value.
func newLexer(src string, single bool) *lexer {
	lx := &lexer{src: src, budget: 8*len(src) + 64}
	if strings.HasPrefix(src, "\uFEFF") {
		lx.pos = len("\uFEFF")
	}
	if single {
		lx.frames = []frame{{kind: frameValue, open: -1}}
		lx.state = lexSingle
	} else {
		lx.frames = []frame{{kind: frameTop, open: -1}}
		lx.state = lexKeyStart
	}
	return lx
}

// nextItem runs the state machine until an item is available. After an
// error or the end of input it keeps returning itemEOF.
func (lx *lexer) nextItem() item {
	for len(lx.queue) == 0 {
		if lx.state == nil {
			return item{typ: itemEOF, off: len(lx.src)}
		}
		lx.budget--
		if lx.budget < 0 {
			lx.state = lx.errorf(lx.pos, "internal error: lexer stopped making progress")
			continue
		}
		lx.state = lx.state(lx)
	}
	it := lx.queue[0]
	lx.queue = lx.queue[1:]
	return it
}

func (lx *lexer) emit(typ itemType, val string, off int) {
	lx.queue = append(lx.queue, item{typ: typ, val: val, off: off})
	lx.emitted = true
}

// fail queues an error item.
func (lx *lexer) fail(off int, format string, args ...any) {
	lx.queue = append(lx.queue, item{typ: itemError, val: fmt.Sprintf(format, args...), off: off})
}

// errorf queues an error item and stops the lexer.
func (lx *lexer) errorf(off int, format string, args ...any) stateFn {
	lx.fail(off, format, args...)
	return nil
}

// position converts a byte offset into a 1-based line and column (counted
// in characters).
func (lx *lexer) position(off int) (line, col int) {
	if lx.lines == nil {
		lx.lines = []int{0}
		for i := 0; i < len(lx.src); i++ {
			if lx.src[i] == '\n' {
				lx.lines = append(lx.lines, i+1)
			}
		}
	}
	off = max(0, min(off, len(lx.src)))
	i := sort.SearchInts(lx.lines, off+1) - 1
	return i + 1, utf8.RuneCountInString(lx.src[lx.lines[i]:off]) + 1
}

func isBlank(c byte) bool   { return c == ' ' || c == '\t' || c == '\v' || c == '\f' }
func isNewline(c byte) bool { return c == '\n' || c == '\r' }
func isSpace(c byte) bool   { return isBlank(c) || isNewline(c) }
func isLetter(c byte) bool  { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isValueEnd reports whether c ends an unquoted value.
func isValueEnd(c byte) bool {
	return isSpace(c) || c == ',' || c == ';' || c == '}' || c == ']'
}

// isKeyEnd reports whether c ends an unquoted key.
func isKeyEnd(c byte) bool {
	return isValueEnd(c) || c == ':' || c == '=' || c == '{' || c == '['
}

// isVariableRef reports whether a bare word is a $NAME reference. Words like
// bcrypt hashes ($2a$11$...) do not start with a letter or '_' after the '$'
// and stay plain strings.
func isVariableRef(w string) bool {
	return len(w) > 1 && w[0] == '$' && (w[1] == '_' || isLetter(w[1]))
}

func (lx *lexer) eof() bool      { return lx.pos >= len(lx.src) }
func (lx *lexer) cur() byte      { return lx.src[lx.pos] }
func (lx *lexer) top() *frame    { return &lx.frames[len(lx.frames)-1] }
func (lx *lexer) pop()           { lx.frames = lx.frames[:len(lx.frames)-1] }
func (lx *lexer) at(c byte) bool { return !lx.eof() && lx.cur() == c }

func (lx *lexer) skipBlanks() {
	for !lx.eof() && isBlank(lx.cur()) {
		lx.pos++
	}
}

func (lx *lexer) skipSpace() {
	for !lx.eof() && isSpace(lx.cur()) {
		lx.pos++
	}
}

func (lx *lexer) atComment() bool {
	return lx.at('#') || strings.HasPrefix(lx.src[lx.pos:], "//")
}

// skipFiller skips whitespace, newlines and comments.
func (lx *lexer) skipFiller() {
	for {
		lx.skipSpace()
		if !lx.atComment() {
			return
		}
		for !lx.eof() && !isNewline(lx.cur()) {
			lx.pos++
		}
	}
}

// atLineEnd reports whether the input at pos ends a value: end of input, a
// newline or a comment.
func (lx *lexer) atLineEnd() bool {
	return lx.eof() || isNewline(lx.cur()) || lx.atComment()
}

// describe names the input at off for error messages.
func (lx *lexer) describe(off int) string {
	if off >= len(lx.src) {
		return "end of input"
	}
	r, _ := utf8.DecodeRuneInString(lx.src[off:])
	if r == '\n' || r == '\r' {
		return "newline"
	}
	return fmt.Sprintf("%q", r)
}

// lineQuoted reads a quoted string that must close on the same line and
// contains no escapes (quoted keys and include paths).
func (lx *lexer) lineQuoted() (string, bool) {
	start := lx.pos
	q := lx.cur()
	end := strings.IndexAny(lx.src[start+1:], string(q)+"\n")
	if end < 0 || lx.src[start+1+end] != q {
		return "", false
	}
	lx.pos = start + end + 2
	return lx.src[start+1 : start+1+end], true
}
