// Package extract owns the gateway's streaming view of a model's JSON
// output: an incremental JSON tokenizer that follows the path to every value
// as the output arrives chunk by chunk and hands the decoded text of the
// string values a Handler selects to that Handler as soon as the bytes
// arrive, so the text can be relayed to a client while it is generated.
//
// Decoding matches encoding/json. All escapes are decoded; a surrogate pair
// written as two \u escapes becomes one 4-byte UTF-8 sequence; a lone or
// mismatched surrogate becomes U+FFFD; and every raw input byte that does not
// belong to a valid UTF-8 sequence becomes U+FFFD (one per byte, as
// utf8.DecodeRune counts them). Text handed to a Handler is therefore always
// valid UTF-8, and the concatenation of a value's Text calls equals what
// json.Unmarshal decodes for it. Member names are decoded the same way before
// they are offered for matching.
//
// Only the first complete top-level value is read; anything but whitespace
// after it is a syntax error.
package extract

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// Action says what the Extractor does with a string value.
type Action uint8

// The actions a Handler can choose for a string value. Match results outside
// this set are treated as Skip.
const (
	Skip    Action = iota // ignore the value
	Stream                // hand decoded text to Handler.Text as it arrives, then Handler.End(id, p, nil)
	Capture               // buffer the decoded value (up to MaxCapture bytes) and hand it whole to Handler.End
)

// MaxCapture bounds a captured value in bytes. Longer values are truncated at
// a UTF-8 sequence boundary so the captured text stays valid UTF-8, and End
// is still called.
const MaxCapture = 256

// MaxKey bounds stored member names in bytes.
const MaxKey = 64

// MaxDepth bounds nesting: at most MaxDepth objects and arrays may be open at
// once. Deeper input makes Write return ErrTooDeep.
const MaxDepth = 128

// Errors returned by Write and Close, wrapped with the offset of the
// offending byte; test for them with errors.Is.
var (
	// ErrSyntax reports a byte that cannot continue valid JSON.
	ErrSyntax = errors.New("extract: invalid JSON")
	// ErrTooDeep reports an object or array nested deeper than MaxDepth.
	ErrTooDeep = errors.New("extract: JSON nested deeper than MaxDepth")
)

// Frame is one level of the path to a value: the member key inside an
// object, or the element index inside an array.
type Frame struct {
	// Key is the decoded member name inside an object and nil inside an array.
	// It holds at most MaxKey bytes: a longer name is truncated at a UTF-8
	// sequence boundary and Is then reports false for every key. It is only
	// valid during the Handler call that received it.
	Key []byte
	// Index is the element index inside an array and -1 inside an object.
	Index int

	// trunc records that Key was truncated, so that a long name cannot
	// masquerade as a short one that happens to equal its prefix.
	trunc bool
}

// Is reports whether f is a member of an object whose full name is key. It
// does not allocate.
func (f Frame) Is(key string) bool {
	return f.Index < 0 && !f.trunc && string(f.Key) == key
}

// Path is the list of frames from the root value's member down to a value:
// root-level members have len(p) == 1, and a top-level string (not inside
// any object or array) has len(p) == 0. It aliases the Extractor's internal
// stack, so it is valid only during a Handler call and must never be retained.
type Path []Frame

// Handler receives extraction events. Implementations must not retain text,
// value or p after returning, and must not call back into the Extractor's
// Write, Close or Reset.
type Handler interface {
	// Match is called once when a string value begins at path p (p ends with
	// the member or element holding the string). Strings used as member names
	// are never offered. The returned id is passed back to Text and End.
	Match(p Path) (id int, act Action)
	// Text receives the next piece of decoded text of a streamed value. text
	// is valid UTF-8, never splits a UTF-8 sequence and is never empty. A run
	// of raw text is a subslice of the chunk passed to Write and decoded
	// escapes come from an internal buffer, so one chunk may yield several
	// calls.
	Text(id int, p Path, text []byte)
	// End is called when a streamed or captured string value ends; value is
	// the captured text (nil for Stream, non-nil for Capture).
	End(id int, p Path, value []byte)
}

// Parser states between and inside tokens.
const (
	stValue    uint8 = iota // a value is expected: at the start, after ':', after ',' in an array
	stArrFirst              // after '[': a value or ']'
	stObjFirst              // after '{': a member name or '}'
	stObjKey                // after ',' in an object: a member name
	stColon                 // after a member name: ':'
	stAfter                 // after a value inside a container: ',' or its closer
	stDone                  // the top-level value is complete: only whitespace may follow
	stString                // inside a string; see parser.str and parser.mode
	stNumber                // inside a number; see parser.num
	stLiteral               // inside true, false or null; see parser.lit
)

// String sub-states.
const (
	sPlain uint8 = iota // raw bytes
	sEsc                // after '\'
	sHex                // inside the four hex digits of \u
	sHigh               // after a high surrogate escape, hoping for the low one
	sUTF8               // holding a raw UTF-8 sequence the previous chunk cut short
)

// String modes. The first three equal the Action values so a Match result
// converts directly.
const (
	mSkip uint8 = iota
	mStream
	mCapture
	mKey // a member name, decoded into the key stack
)

// Number sub-states, following the JSON number grammar.
const (
	nMinus     uint8 = iota // after '-'
	nZero                   // after a leading 0
	nInt                    // in integer digits
	nDot                    // after '.'
	nFrac                   // in fraction digits
	nExp                    // after 'e' or 'E'
	nExpSign                // after the exponent's sign
	nExpDigits              // in exponent digits
)

// scratchSize bounds how many decoded escape bytes are batched into one Text
// call.
const scratchSize = 128

// parser is the Extractor's scalar state. Its zero value is the initial
// state, which is what makes Reset a single assignment.
type parser struct {
	err   error
	off   int64
	depth int

	// plainStream caches that Write's fast path applies: no error, and the
	// next byte continues the raw text of a streamed string.
	plainStream bool

	state uint8
	str   uint8
	mode  uint8
	num   uint8
	lit   string // the rest of the literal being matched

	id       int               // what Match returned for the current string
	unit     rune              // the \u code unit being read
	nhex     uint8             // how many of its hex digits have been read
	high     rune              // a pending high surrogate, 0 if none
	pend     [utf8.UTFMax]byte // a raw UTF-8 sequence the previous chunk cut
	npend    uint8             // its length
	nscratch int               // decoded bytes batched in Extractor.scratch

	// buf collects a member name or a captured value inside the key stack or
	// capture buffer; full records that bytes were dropped for lack of room.
	buf  []byte
	full bool
}

// Extractor tokenizes one JSON document fed to it in chunks of any size and
// reports the string values its Handler selects, calling the Handler from
// within Write. It examines every input byte a bounded number of times and,
// once created, does not allocate. An Extractor must be created with New and
// is not safe for concurrent use.
type Extractor struct {
	h Handler
	parser

	scratch [scratchSize]byte
	capbuf  [MaxCapture]byte
	frames  [MaxDepth]Frame
	keys    [MaxDepth][MaxKey]byte
}

// New returns an Extractor that reports to h, which must not be nil.
func New(h Handler) *Extractor {
	return &Extractor{h: h}
}

// Reset returns the Extractor to its initial state, keeping its buffers and
// Handler, so it can read another document or retry one from the start.
func (e *Extractor) Reset() {
	e.parser = parser{}
}

// Offset returns how many bytes have been consumed. After an error it is the
// offset of the byte that caused it.
func (e *Extractor) Offset() int64 {
	return e.off
}

// Write consumes the next chunk of the document, calling the Handler for the
// values it completes or continues. It returns an error wrapping ErrSyntax at
// the first byte that cannot continue valid JSON and ErrTooDeep at the first
// container past MaxDepth; after an error every later Write returns the same
// error without doing any work.
func (e *Extractor) Write(chunk []byte) error {
	if n := len(chunk); e.plainStream && uint(n-1) < 8 {
		// The common case when a model streams text a few bytes at a time:
		// the chunk continues a streamed value and is plain text. Deciding
		// that with one 8-byte test and no loop keeps it to a few
		// nanoseconds.
		if special(loadShort(chunk), hiBits)&lowBytes[n] == 0 {
			e.off += int64(n)
			e.h.Text(e.id, e.path(), chunk)
			return nil
		}
	}
	return e.write(chunk)
}

// write is Write for every chunk the fast path in Write does not take.
func (e *Extractor) write(chunk []byte) error {
	if e.err != nil {
		return e.err
	}
	i, err := e.run(chunk, 0)
	e.flush()
	e.off += int64(i)
	if err != nil {
		e.err = fmt.Errorf("%w at offset %d", err, e.off)
		e.plainStream = false
		return e.err
	}
	e.plainStream = e.state == stString && e.str == sPlain && e.mode == mStream
	return nil
}

// Close reports whether the document is complete: nil when a complete
// top-level value was read, io.ErrUnexpectedEOF when it is incomplete, and
// the error Write returned if there was one.
func (e *Extractor) Close() error {
	if e.err != nil {
		return e.err
	}
	if e.state == stNumber && e.depth == 0 && numberComplete(e.num) {
		// A top-level number has no closing byte; the end of input ends it.
		e.state = stDone
	}
	if e.state != stDone {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// path returns the path to the current value, capped so a Handler appending
// to it cannot overwrite the stack.
func (e *Extractor) path() Path {
	return e.frames[:e.depth:e.depth]
}

// run consumes b from index i and returns how far it got.
func (e *Extractor) run(b []byte, i int) (int, error) {
	var err error
	for i < len(b) && err == nil {
		switch e.state {
		case stString:
			i, err = e.string(b, i)
		case stNumber:
			i, err = e.number(b, i)
		case stLiteral:
			i, err = e.literal(b, i)
		default:
			i, err = e.structural(b, i)
		}
	}
	return i, err
}

// structural skips whitespace and consumes one structural byte or the first
// byte of a value.
func (e *Extractor) structural(b []byte, i int) (int, error) {
	c := b[i]
	for c == ' ' || c == '\n' || c == '\r' || c == '\t' {
		i++
		if i == len(b) {
			return i, nil
		}
		c = b[i]
	}
	switch e.state {
	case stValue, stArrFirst:
		if c == ']' && e.state == stArrFirst {
			e.pop()
			return i + 1, nil
		}
		if err := e.value(c); err != nil {
			return i, err
		}
		return i + 1, nil
	case stObjFirst, stObjKey:
		switch {
		case c == '"':
			e.beginString(mKey)
			e.buf = e.keys[e.depth-1][:0]
			return i + 1, nil
		case c == '}' && e.state == stObjFirst:
			e.pop()
			return i + 1, nil
		}
	case stColon:
		if c == ':' {
			e.state = stValue
			return i + 1, nil
		}
	case stAfter:
		f := &e.frames[e.depth-1]
		inObject := f.Index < 0
		switch {
		case c == ',' && inObject:
			e.state = stObjKey
			return i + 1, nil
		case c == ',':
			f.Index++
			e.state = stValue
			return i + 1, nil
		case c == '}' && inObject, c == ']' && !inObject:
			e.pop()
			return i + 1, nil
		}
	}
	return i, ErrSyntax
}

// value starts the value whose first byte is c.
func (e *Extractor) value(c byte) error {
	switch c {
	case '"':
		id, act := e.h.Match(e.path())
		if act > Capture {
			act = Skip
		}
		e.beginString(uint8(act))
		e.id = id
		if act == Capture {
			e.buf = e.capbuf[:0]
		}
	case '{':
		return e.push(-1)
	case '[':
		return e.push(0)
	case 't':
		e.state, e.lit = stLiteral, "rue"
	case 'f':
		e.state, e.lit = stLiteral, "alse"
	case 'n':
		e.state, e.lit = stLiteral, "ull"
	case '-':
		e.state, e.num = stNumber, nMinus
	case '0':
		e.state, e.num = stNumber, nZero
	default:
		if c < '1' || c > '9' {
			return ErrSyntax
		}
		e.state, e.num = stNumber, nInt
	}
	return nil
}

// push opens a container: an object when index is -1, an array when it is 0.
func (e *Extractor) push(index int) error {
	if e.depth == MaxDepth {
		return ErrTooDeep
	}
	e.frames[e.depth] = Frame{Index: index}
	e.depth++
	if index < 0 {
		e.state = stObjFirst
	} else {
		e.state = stArrFirst
	}
	return nil
}

// pop closes the innermost container, which completes a value.
func (e *Extractor) pop() {
	e.depth--
	e.endValue()
}

// endValue moves past a completed value.
func (e *Extractor) endValue() {
	if e.depth == 0 {
		e.state = stDone
	} else {
		e.state = stAfter
	}
}

// literal matches the rest of true, false or null.
func (e *Extractor) literal(b []byte, i int) (int, error) {
	for ; i < len(b); i++ {
		if b[i] != e.lit[0] {
			return i, ErrSyntax
		}
		e.lit = e.lit[1:]
		if e.lit == "" {
			e.endValue()
			return i + 1, nil
		}
	}
	return i, nil
}

// number consumes number bytes. A number has no closing byte, so it ends at
// the first byte that cannot continue it, which is left for the caller.
func (e *Extractor) number(b []byte, i int) (int, error) {
	for ; i < len(b); i++ {
		c := b[i]
		digit := c >= '0' && c <= '9'
		switch e.num {
		case nMinus:
			switch {
			case c == '0':
				e.num = nZero
			case digit:
				e.num = nInt
			default:
				return i, ErrSyntax
			}
		case nZero, nInt, nFrac:
			switch {
			case digit && e.num != nZero:
			case c == '.' && e.num != nFrac:
				e.num = nDot
			case c == 'e' || c == 'E':
				e.num = nExp
			default:
				e.endValue()
				return i, nil
			}
		case nDot:
			if !digit {
				return i, ErrSyntax
			}
			e.num = nFrac
		case nExp:
			switch {
			case c == '+' || c == '-':
				e.num = nExpSign
			case digit:
				e.num = nExpDigits
			default:
				return i, ErrSyntax
			}
		case nExpSign:
			if !digit {
				return i, ErrSyntax
			}
			e.num = nExpDigits
		case nExpDigits:
			if !digit {
				e.endValue()
				return i, nil
			}
		}
	}
	return i, nil
}

// numberComplete reports whether a number may end in sub-state n.
func numberComplete(n uint8) bool {
	return n == nZero || n == nInt || n == nFrac || n == nExpDigits
}

// beginString enters a string in the given mode.
func (e *Extractor) beginString(mode uint8) {
	e.state, e.str, e.mode = stString, sPlain, mode
	e.high = 0
	e.full = false
}

// string consumes string bytes until the closing quote or the end of b.
func (e *Extractor) string(b []byte, i int) (int, error) {
	for i < len(b) {
		c := b[i]
		switch e.str {
		case sPlain:
			if e.mode == mSkip {
				// Skipped text is never decoded, so its UTF-8 needs no care.
				i += plainLen(b[i:], 0)
			} else {
				i = e.plain(b, i)
			}
			if i == len(b) {
				break
			}
			switch c = b[i]; {
			case c == '"':
				e.endString()
				return i + 1, nil
			case c == '\\':
				e.str = sEsc
			case c < 0x20:
				return i, ErrSyntax
			case !utf8.FullRune(b[i:]):
				// Hold the start of a sequence the chunk cuts short, so Text
				// never splits it.
				e.npend = uint8(copy(e.pend[:], b[i:]))
				e.str = sUTF8
				i = len(b) - 1
			default:
				e.putRune(utf8.RuneError)
			}
			i++
		case sEsc:
			switch d := simpleEscape[c]; {
			case d != 0:
				if e.high != 0 {
					e.high = 0
					e.putRune(utf8.RuneError)
				}
				e.putRune(rune(d))
				e.str = sPlain
			case c == 'u':
				e.str, e.unit, e.nhex = sHex, 0, 0
			default:
				return i, ErrSyntax
			}
			i++
		case sHex:
			v := unhex[c]
			if v < 0 {
				return i, ErrSyntax
			}
			e.unit = e.unit<<4 | rune(v)
			e.nhex++
			if e.nhex == 4 {
				e.codeUnit()
			}
			i++
		case sHigh:
			if c == '\\' {
				e.str = sEsc
				i++
				continue
			}
			// The high surrogate has no partner; c is read as plain text.
			e.high = 0
			e.putRune(utf8.RuneError)
			e.str = sPlain
		case sUTF8:
			e.pend[e.npend] = c
			p := e.pend[:e.npend+1]
			if !utf8.FullRune(p) {
				e.npend++
				i++
				continue
			}
			e.npend = 0
			e.str = sPlain
			if r, size := utf8.DecodeRune(p); size == len(p) {
				e.putRune(r)
				i++
				continue
			}
			// c does not continue the held sequence. The held bytes are a lead
			// byte and continuation bytes, each invalid on its own, and c is
			// read as plain text.
			for range len(p) - 1 {
				e.putRune(utf8.RuneError)
			}
		}
	}
	return i, nil
}

// plain consumes the raw text and escapes of a decoded string from b[i:]
// without the state machine and returns where it stopped: at the end of b or
// at a byte that needs the state machine (a quote, a control byte, an escape
// that is malformed or that b cuts short, or a UTF-8 sequence that is invalid
// or that b cuts short).
func (e *Extractor) plain(b []byte, i int) int {
	start := i
	for i < len(b) {
		i += plainLen(b[i:], hiBits)
		if i == len(b) {
			break
		}
		c := b[i]
		if c >= utf8.RuneSelf {
			if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size > 1 {
				i += size
				continue
			}
			break
		}
		if c != '\\' || i+1 == len(b) {
			break
		}
		r, size := rune(simpleEscape[b[i+1]]), 2
		if r == 0 {
			if r, size = unicodeEscape(b[i:]); size == 0 {
				break
			}
		}
		if i > start {
			e.text(b[start:i])
		}
		e.putRune(r)
		i += size
		start = i
	}
	if i > start {
		e.text(b[start:i])
	}
	return i
}

// unicodeEscape decodes the \u escape at the start of b, or the surrogate
// pair of them, as encoding/json does, and returns its size. It returns size
// 0 for the cases it leaves to the state machine: a malformed escape, or b
// ending before the escape can be decided.
func unicodeEscape(b []byte) (rune, int) {
	if len(b) < 6 || b[1] != 'u' {
		return 0, 0
	}
	u := hex4(b[2:6])
	switch {
	case u < 0:
		return 0, 0
	case u < 0xD800 || u >= 0xE000:
		return u, 6
	case u >= 0xDC00:
		return utf8.RuneError, 6 // a low surrogate without a high one
	case len(b) < 12:
		return 0, 0
	}
	if b[6] == '\\' && b[7] == 'u' {
		if r := utf16.DecodeRune(u, hex4(b[8:12])); r != utf8.RuneError {
			return r, 12
		}
	}
	// The high surrogate has no partner; what follows it is read on its own.
	return utf8.RuneError, 6
}

// hex4 returns the value of the four hex digits in b, or a negative number
// if one is not a hex digit.
func hex4(b []byte) rune {
	// unhex is -1 for a non-digit, which sets the sign bit of the result.
	return rune(unhex[b[0]])<<12 | rune(unhex[b[1]])<<8 | rune(unhex[b[2]])<<4 | rune(unhex[b[3]])
}

// codeUnit handles a \u escape completed by the state machine, pairing
// surrogates as encoding/json does. It is the incremental counterpart of
// unicodeEscape, for escapes that chunks cut.
func (e *Extractor) codeUnit() {
	u := e.unit
	e.str = sPlain
	if e.high != 0 {
		r := utf16.DecodeRune(e.high, u)
		e.high = 0
		if r != utf8.RuneError {
			e.putRune(r)
			return
		}
		e.putRune(utf8.RuneError)
	}
	switch {
	case u >= 0xD800 && u < 0xDC00:
		e.high = u
		e.str = sHigh
	case u >= 0xDC00 && u < 0xE000:
		e.putRune(utf8.RuneError)
	default:
		e.putRune(u)
	}
}

// endString finishes the current string.
func (e *Extractor) endString() {
	switch e.mode {
	case mKey:
		f := &e.frames[e.depth-1]
		f.Key = e.buf[:len(e.buf):len(e.buf)]
		f.trunc = e.full
		e.state = stColon
		return
	case mStream:
		e.flush()
		e.h.End(e.id, e.path(), nil)
	case mCapture:
		e.h.End(e.id, e.path(), e.buf[:len(e.buf):len(e.buf)])
	}
	e.endValue()
}

// text takes a run of raw input that is valid UTF-8 and ends on a sequence
// boundary. Streamed runs go to the Handler without copying.
func (e *Extractor) text(p []byte) {
	switch e.mode {
	case mStream:
		e.flush()
		e.h.Text(e.id, e.path(), p)
	case mCapture, mKey:
		e.keep(p)
	}
}

// putRune takes one decoded rune. Streamed runes are batched in the scratch
// buffer so a run of escapes costs one Text call.
func (e *Extractor) putRune(r rune) {
	switch e.mode {
	case mStream:
		if len(e.scratch)-e.nscratch < utf8.UTFMax {
			e.flush()
		}
		e.nscratch = len(utf8.AppendRune(e.scratch[:e.nscratch], r))
	case mCapture, mKey:
		var b [utf8.UTFMax]byte
		e.keep(utf8.AppendRune(b[:0], r))
	}
}

// flush hands batched decoded bytes to the Handler. It is split from
// flushScratch so that it inlines: most calls find nothing to flush.
func (e *Extractor) flush() {
	if e.nscratch > 0 {
		e.flushScratch()
	}
}

// flushScratch is the part of flush that does not inline.
func (e *Extractor) flushScratch() {
	e.h.Text(e.id, e.path(), e.scratch[:e.nscratch])
	e.nscratch = 0
}

// keep appends whole UTF-8 sequences to buf, cutting at a sequence boundary
// and dropping the rest of the string once buf is full.
func (e *Extractor) keep(p []byte) {
	if e.full {
		return
	}
	if room := cap(e.buf) - len(e.buf); len(p) > room {
		for room > 0 && !utf8.RuneStart(p[room]) {
			room--
		}
		p = p[:room]
		e.full = true
	}
	e.buf = append(e.buf, p...)
}

// Constants for testing the eight bytes of a uint64 at once.
const (
	loBits = 0x0101010101010101 // 0x01 in every byte
	hiBits = 0x8080808080808080 // 0x80 in every byte
)

// lowBytes[n] selects the low n bytes of a uint64.
var lowBytes = [9]uint64{0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff, 0xffffffffffffffff}

// plainLen returns how many leading bytes of b are printable ASCII other
// than '"' and '\\', counting bytes >= 0x80 as plain too when high is 0
// rather than hiBits. b must not be empty. It tests eight bytes per step without branching on
// their values: a branch that ends a per-byte loop mispredicts on almost
// every chunk when a model's output arrives a few bytes at a time, and costs
// more than the scanning itself.
func plainLen(b []byte, high uint64) int {
	n := len(b)
	if n < 8 {
		// The zero bytes loadShort puts above b look like control bytes;
		// mask them off.
		m := special(loadShort(b), high) & lowBytes[n]
		return min(bits.TrailingZeros64(m)/8, n)
	}
	i := 0
	for ; i+8 <= n; i += 8 {
		if m := special(binary.LittleEndian.Uint64(b[i:]), high); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	// Test the remaining n-i bytes as the top of the last eight.
	m := special(binary.LittleEndian.Uint64(b[n-8:]), high) >> (8 * (8 - (n - i)))
	return i + min(bits.TrailingZeros64(m)/8, n-i)
}

// loadShort returns the 1 to 8 bytes of b as a little-endian uint64, zero
// above them, reading only within b and without a loop: overlapping loads
// store the same byte twice in the same place.
func loadShort(b []byte) uint64 {
	n := len(b)
	if n >= 4 {
		return uint64(binary.LittleEndian.Uint32(b)) |
			uint64(binary.LittleEndian.Uint32(b[n-4:]))<<(8*(n-4))
	}
	return uint64(b[0]) | uint64(b[n/2])<<(8*(n/2)) | uint64(b[n-1])<<(8*(n-1))
}

// special sets the high bit of the first byte of x that is a control byte,
// '"' or '\', or (when high is hiBits) >= 0x80. Bits of later bytes may be
// set spuriously by a borrow, which only propagates upward from a byte that
// matched, so only the lowest set bit is meaningful.
func special(x, high uint64) uint64 {
	q := x ^ (loBits * '"')
	s := x ^ (loBits * '\\')
	ctl := (x - loBits*0x20) &^ x
	return (x&high | ctl | (q-loBits)&^q | (s-loBits)&^s) & hiBits
}

var (
	// unhex maps hex digits to their value and everything else to -1.
	unhex [256]int8
	// simpleEscape maps the character after '\\' in a one-character escape
	// to the byte it stands for and everything else to 0.
	simpleEscape = [256]byte{
		'"': '"', '\\': '\\', '/': '/',
		'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t',
	}
)

func init() {
	for c := range 256 {
		switch {
		case c >= '0' && c <= '9':
			unhex[c] = int8(c - '0')
		case c >= 'a' && c <= 'f':
			unhex[c] = int8(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			unhex[c] = int8(c - 'A' + 10)
		default:
			unhex[c] = -1
		}
	}
}
