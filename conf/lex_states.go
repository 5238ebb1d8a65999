package conf

import (
	"strconv"
	"strings"
	"unicode/utf16"
)

// lexKeyStart expects a key, the end of the enclosing map or end of input.
// Stray ';' and ',' between entries are ignored.
func lexKeyStart(lx *lexer) stateFn {
	for {
		lx.skipFiller()
		if !lx.at(',') && !lx.at(';') {
			break
		}
		lx.pos++
	}
	if lx.eof() {
		return lx.endOfInput()
	}
	switch lx.cur() {
	case '}':
		return lx.closeMap()
	case '{':
		return lx.openTopBrace()
	case '"', '\'':
		return lexQuotedKey
	case ']', '[', ':', '=':
		return lx.errorf(lx.pos, "expected a key, found %s", lx.describe(lx.pos))
	}
	return lexBareKey
}

func (lx *lexer) endOfInput() stateFn {
	if open := lx.top().open; open >= 0 {
		return lx.errorf(open, "unterminated map: missing '}'")
	}
	lx.emit(itemEOF, "", lx.pos)
	return nil
}

func (lx *lexer) closeMap() stateFn {
	fr := lx.top()
	switch {
	case fr.kind == frameMap:
		lx.emit(itemMapEnd, "", lx.pos)
		lx.pos++
		lx.pop()
		return lexValueEnd
	case fr.kind == frameTop && fr.open >= 0:
		lx.pos++
		return lexTrailer
	}
	return lx.errorf(lx.pos, "unexpected '}' without a matching '{'")
}

// openTopBrace accepts a '{' wrapping the whole file (JSON style).
func (lx *lexer) openTopBrace() stateFn {
	fr := lx.top()
	if fr.kind != frameTop || fr.open >= 0 || lx.emitted {
		return lx.errorf(lx.pos, "expected a key, found '{'")
	}
	fr.open = lx.pos
	lx.pos++
	return lexKeyStart
}

// lexTrailer allows only whitespace and comments after a closing top-level
// brace.
func lexTrailer(lx *lexer) stateFn {
	lx.skipFiller()
	if !lx.eof() {
		return lx.errorf(lx.pos, "unexpected %s after the closing '}'", lx.describe(lx.pos))
	}
	lx.emit(itemEOF, "", lx.pos)
	return nil
}

func lexQuotedKey(lx *lexer) stateFn {
	start := lx.pos
	key, ok := lx.lineQuoted()
	if !ok {
		return lx.errorf(start, "unterminated quoted key")
	}
	lx.emitKey(key, start)
	return lexKeySep
}

func lexBareKey(lx *lexer) stateFn {
	start := lx.pos
	for !lx.eof() && !isKeyEnd(lx.cur()) {
		lx.pos++
	}
	key := lx.src[start:lx.pos]
	if strings.EqualFold(key, "include") && lx.isIncludeDirective() {
		return lexInclude
	}
	lx.emitKey(key, start)
	return lexKeySep
}

func (lx *lexer) emitKey(key string, off int) {
	lx.key = item{typ: itemKey, val: key, off: off}
	lx.emit(itemKey, key, off)
}

// isIncludeDirective reports whether the word "include" just read is the
// directive rather than a key: it must be followed by whitespace and then
// by something other than a key separator.
func (lx *lexer) isIncludeDirective() bool {
	p := lx.pos
	if p >= len(lx.src) || !isSpace(lx.src[p]) {
		return false
	}
	for p < len(lx.src) && isBlank(lx.src[p]) {
		p++
	}
	return p >= len(lx.src) || (lx.src[p] != ':' && lx.src[p] != '=')
}

// lexKeySep consumes the optional ':' or '=' between a key and its value.
func lexKeySep(lx *lexer) stateFn {
	lx.skipSpace()
	if lx.at(':') || lx.at('=') {
		lx.pos++
		lx.skipSpace()
	}
	return lexValue
}

// lexValue dispatches on the first character of a value.
func lexValue(lx *lexer) stateFn {
	if lx.eof() {
		return lx.missingValue()
	}
	switch lx.cur() {
	case '{':
		return lx.open(frameMap, itemMapStart, lexKeyStart)
	case '[':
		return lx.open(frameArray, itemArrayStart, lexArrayValue)
	case '"':
		return lexDoubleQuoted
	case '\'':
		return lexSingleQuoted
	case '(':
		return lexBlock
	case '}', ']', ',', ';', '\n', '\r':
		return lx.missingValue()
	}
	return lexBare
}

func (lx *lexer) missingValue() stateFn {
	if k := lx.top().kind; k == frameMap || k == frameTop {
		return lx.errorf(lx.key.off, "missing value for key %q (found %s)",
			lx.key.val, lx.describe(lx.pos))
	}
	return lx.errorf(lx.pos, "expected a value, found %s", lx.describe(lx.pos))
}

func (lx *lexer) open(kind frameKind, typ itemType, next stateFn) stateFn {
	if len(lx.frames) > maxDepth {
		return lx.errorf(lx.pos, "maps and arrays nested too deeply (limit %d)", maxDepth)
	}
	lx.emit(typ, "", lx.pos)
	lx.frames = append(lx.frames, frame{kind: kind, open: lx.pos})
	lx.pos++
	return next
}

func lexDoubleQuoted(lx *lexer) stateFn {
	start := lx.pos
	lx.pos++
	var b strings.Builder
	seg := lx.pos
	for !lx.eof() {
		switch lx.cur() {
		case '"':
			b.WriteString(lx.src[seg:lx.pos])
			lx.pos++
			lx.emit(itemString, b.String(), start)
			return lexValueEnd
		case '\\':
			b.WriteString(lx.src[seg:lx.pos])
			if !lx.unescape(&b) {
				return nil
			}
			seg = lx.pos
		default:
			lx.pos++
		}
	}
	return lx.errorf(start, "unterminated quoted string")
}

var simpleEscapes = map[byte]string{
	't': "\t", 'n': "\n", 'r': "\r", '"': "\"", '\\': "\\", '/': "/",
}

// unescape decodes the escape sequence at pos (which is on the backslash).
// A backslash at the very end leaves pos at the end so the caller reports
// the string as unterminated.
func (lx *lexer) unescape(b *strings.Builder) bool {
	at := lx.pos
	if at+1 >= len(lx.src) {
		lx.pos = len(lx.src)
		return true
	}
	c := lx.src[at+1]
	lx.pos += 2
	if s, ok := simpleEscapes[c]; ok {
		b.WriteString(s)
		return true
	}
	switch c {
	case 'u':
		return lx.unescapeHex(b, at, 4)
	case 'x':
		return lx.unescapeHex(b, at, 2)
	}
	lx.fail(at, "invalid escape sequence '\\' followed by %s", lx.describe(at+1))
	return false
}

// unescapeHex decodes n hex digits after \u or \x. \x yields a raw byte; \u
// yields a character, combining UTF-16 surrogate pairs.
func (lx *lexer) unescapeHex(b *strings.Builder, at, n int) bool {
	v, ok := lx.hexDigits(n)
	if !ok {
		lx.fail(at, "invalid escape sequence: expected %d hex digits after \\%c", n, lx.src[at+1])
		return false
	}
	if n == 2 {
		b.WriteByte(byte(v))
		return true
	}
	r := rune(v)
	if utf16.IsSurrogate(r) && strings.HasPrefix(lx.src[lx.pos:], `\u`) {
		save := lx.pos
		lx.pos += 2
		if low, ok := lx.hexDigits(4); ok && utf16.DecodeRune(r, rune(low)) != '\uFFFD' {
			r = utf16.DecodeRune(r, rune(low))
		} else {
			lx.pos = save
		}
	}
	b.WriteRune(r)
	return true
}

// hexDigits reads exactly n hex digits at pos.
func (lx *lexer) hexDigits(n int) (uint64, bool) {
	if lx.pos+n > len(lx.src) {
		return 0, false
	}
	v, err := strconv.ParseUint(lx.src[lx.pos:lx.pos+n], 16, 32)
	if err != nil {
		return 0, false
	}
	lx.pos += n
	return v, true
}

// lexSingleQuoted reads a raw string; it may span lines.
func lexSingleQuoted(lx *lexer) stateFn {
	start := lx.pos
	end := strings.IndexByte(lx.src[start+1:], '\'')
	if end < 0 {
		return lx.errorf(start, "unterminated quoted string")
	}
	lx.emit(itemString, lx.src[start+1:start+1+end], start)
	lx.pos = start + end + 2
	return lexValueEnd
}

// lexBlock reads a raw ( ... ) block. It ends at a line holding only ')';
// the value is everything between '(' and the newline before that line.
func lexBlock(lx *lexer) stateFn {
	start := lx.pos
	for i := start + 1; ; {
		nl := strings.IndexByte(lx.src[i:], '\n')
		if nl < 0 {
			return lx.errorf(start, "unterminated block: missing ')' on a line of its own")
		}
		end := i + nl
		line := lx.src[end+1:]
		if e := strings.IndexByte(line, '\n'); e >= 0 {
			line = line[:e]
		}
		if strings.TrimSpace(line) == ")" {
			lx.emit(itemString, strings.TrimSuffix(lx.src[start+1:end], "\r"), start)
			lx.pos = end + 1 + strings.IndexByte(line, ')') + 1
			return lexValueEnd
		}
		i = end + 1
	}
}

// lexBare reads an unquoted word: a variable reference or a value to be
// typed by the parser.
func lexBare(lx *lexer) stateFn {
	start := lx.pos
	for !lx.eof() && !isValueEnd(lx.cur()) {
		lx.pos++
	}
	word := lx.src[start:lx.pos]
	if isVariableRef(word) {
		lx.emit(itemVariable, word[1:], start)
	} else {
		lx.emit(itemBare, word, start)
	}
	return lexValueEnd
}

// lexValueEnd checks what follows a value, which depends on the container.
func lexValueEnd(lx *lexer) stateFn {
	lx.skipBlanks()
	switch lx.top().kind {
	case frameArray:
		return lx.arrayValueEnd()
	case frameValue:
		return lexSingleEnd
	}
	if lx.atLineEnd() || lx.at('}') {
		return lexKeyStart
	}
	if lx.at(',') || lx.at(';') {
		lx.pos++
		return lexKeyStart
	}
	return lx.errorf(lx.pos, "expected newline, ',' or ';' after value, found %s", lx.describe(lx.pos))
}

func (lx *lexer) arrayValueEnd() stateFn {
	if lx.atLineEnd() || lx.at(']') {
		return lexArrayValue
	}
	if lx.at(',') {
		lx.pos++
		return lexArrayValue
	}
	return lx.errorf(lx.pos, "expected ',' or ']' after array element, found %s", lx.describe(lx.pos))
}

// lexArrayValue expects an array element or the end of the array.
func lexArrayValue(lx *lexer) stateFn {
	lx.skipFiller()
	if lx.eof() {
		return lx.errorf(lx.top().open, "unterminated array: missing ']'")
	}
	switch lx.cur() {
	case ']':
		lx.emit(itemArrayEnd, "", lx.pos)
		lx.pos++
		lx.pop()
		return lexValueEnd
	case ',':
		return lx.errorf(lx.pos, "unexpected ',' in array")
	}
	return lexValue
}

// lexInclude reads the path of an include directive.
func lexInclude(lx *lexer) stateFn {
	lx.skipBlanks()
	start := lx.pos
	if lx.atLineEnd() {
		return lx.errorf(start, "missing file name after include")
	}
	var path string
	switch c := lx.cur(); c {
	case '"', '\'':
		p, ok := lx.lineQuoted()
		if !ok {
			return lx.errorf(start, "unterminated quoted string")
		}
		path = p
	case '{', '[', '(', '}', ']', ',', ';':
		return lx.errorf(start, "expected a file name after include, found %s", lx.describe(start))
	default:
		for !lx.eof() && !isValueEnd(lx.cur()) {
			lx.pos++
		}
		path = lx.src[start:lx.pos]
	}
	if path == "" {
		return lx.errorf(start, "empty file name after include")
	}
	lx.emit(itemInclude, path, start)
	return lexValueEnd
}

// lexSingle starts lexing a lone value (environment variable contents).
func lexSingle(lx *lexer) stateFn {
	lx.skipSpace()
	return lexValue
}

func lexSingleEnd(lx *lexer) stateFn {
	lx.skipFiller()
	if !lx.eof() {
		return lx.errorf(lx.pos, "unexpected %s after value", lx.describe(lx.pos))
	}
	lx.emit(itemEOF, "", lx.pos)
	return nil
}
