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
	stAfterObj              // after a member's value: ',' or '}'
	stAfterArr              // after an element: ',' or ']'
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

// The first allocations of the frame and key stacks. Typical documents nest
// at most four deep with short member names, so they fit without growing.
const (
	minFrames = 4
	minKeys   = 2 * MaxKey
)

// parser is the Extractor's scalar state. Reset assigns it whole; its zero
// value is the initial state but for path. Its fields are ordered by size
// so that it packs without padding.
type parser struct {
	err error
	off int64

	// path is the path to the current value: the frames of the open
	// containers, capped so a Handler appending to it cannot overwrite the
	// stack. It is never nil; the Path of a top-level string is empty.
	path Path

	lit      string // the rest of the literal being matched
	id       int    // what Match returned for the current string
	nscratch int    // decoded bytes batched in Extractor.scratch

	// buf collects a member name or a captured value inside the key stack,
	// the scratch buffer or the capture buffer; its capacity is the room
	// left before growing or truncating, and full records that bytes were
	// dropped for lack of room.
	buf []byte

	unit rune              // the \u code unit being read
	high rune              // a pending high surrogate, 0 if none
	pend [utf8.UTFMax]byte // a raw UTF-8 sequence the previous chunk cut

	state uint8
	str   uint8
	mode  uint8
	num   uint8
	nhex  uint8 // how many hex digits of unit have been read
	npend uint8 // the length of pend
	full  bool

	// streaming caches which of Write's fast paths applies: with no error,
	// inStream when the next byte continues the raw text of a streamed
	// string and inEscape when it continues an escape or a UTF-8 sequence
	// in one.
	streaming uint8
}

// Extractor tokenizes one JSON document fed to it in chunks of any size and
// reports the string values its Handler selects, calling the Handler from
// within Write. It examines every input byte a bounded number of times. Its
// stacks start small and grow only when a document nests deeper, names
// longer members or captures a longer value than any before, so reading
// documents of a familiar shape, including after Reset, does not allocate.
// An Extractor must be created with New and is not safe for concurrent use.
type Extractor struct {
	h Handler
	parser

	// scratch batches the decoded escapes of a streamed value, and holds a
	// captured value that fits: a string is never both streamed and
	// captured.
	scratch [scratchSize]byte

	// frames is as long as the deepest path the Extractor has room for.
	// keys holds the names of the frames in path end to end, which their
	// Keys alias, and the name being read in the room after them. capbuf
	// holds captured values that outgrow scratch.
	frames []Frame
	keys   []byte
	capbuf []byte
}

// New returns an Extractor that reports to h, which must not be nil.
func New(h Handler) *Extractor {
	return &Extractor{h: h, parser: parser{path: Path{}}}
}

// Reset returns the Extractor to its initial state, keeping its buffers and
// Handler, so it can read another document or retry one from the start.
func (e *Extractor) Reset() {
	e.parser = parser{path: Path{}}
	e.keys = e.keys[:0]
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
	if n := len(chunk); e.streaming == inStream && uint(n-1) < 8 {
		// The common case when a model streams text a few bytes at a time:
		// the chunk continues a streamed value and is plain text. Deciding
		// that with one 8-byte test and no loop keeps it to a few
		// nanoseconds.
		x := loadShort(chunk)
		if anySpecial(x)&highLow[n] == 0 {
			e.off += int64(n)
			e.h.Text(e.id, e.path, chunk)
			return nil
		}
		return e.short(chunk, x, 0)
	}
	return e.write(chunk)
}

// write is Write for every chunk the fast path in Write does not take.
func (e *Extractor) write(chunk []byte) error {
	if e.streaming == inEscape && uint(len(chunk)-1) < 8 {
		return e.resume(chunk)
	}
	if e.err != nil {
		return e.err
	}
	i, err := e.run(chunk, 0)
	if err == nil && (e.state != stString || e.mode != mStream) {
		// Nothing is batched for the Handler outside a streamed value, so
		// finish needs only to count the bytes.
		e.off += int64(i)
		e.streaming = notStreaming
		return nil
	}
	return e.finish(i, err)
}

// finish ends a Write that consumed chunk[:i] and stopped with err.
func (e *Extractor) finish(i int, err error) error {
	e.flush()
	e.off += int64(i)
	if err != nil {
		e.err = fmt.Errorf("%w at offset %d", err, e.off)
		e.streaming = notStreaming
		return e.err
	}
	e.streaming = notStreaming
	if e.state == stString && e.mode == mStream {
		e.streaming = inEscape
		if e.str == sPlain {
			e.streaming = inStream
		}
	}
	return nil
}

// Values of parser.streaming.
const (
	notStreaming uint8 = iota
	inStream
	inEscape
)

// short is Write for a chunk of at most eight bytes that continues the
// plain text of a streamed value from index start; x is the chunk as
// loadShort returns it. It decodes the escapes and UTF-8 sequences the
// chunk holds whole, stepping from one byte plainLen would stop at to the
// next without scanning again, and leaves anything else to the state
// machine.
func (e *Extractor) short(chunk []byte, x uint64, start int) error {
	n := len(chunk)
	m := marks(x) & lowBytes[n] &^ lowBytes[start]
	ns := e.nscratch
	i := n
	for m != 0 {
		i = bits.TrailingZeros64(m) / 8
		r, size := decodeAt(chunk, i)
		if size == 0 {
			break
		}
		if r >= 0 {
			// An escape or an invalid byte ends the run; a valid UTF-8
			// sequence stays in it. Eight bytes decode to far less than
			// scratch holds, so unlike stream this needs no check for room.
			ns = e.text(ns, chunk[start:i])
			ns += utf8.EncodeRune(e.scratch[ns:], r)
			start = i + size
		}
		m &^= lowBytes[i+size]
		i = n
	}
	e.nscratch = e.text(ns, chunk[start:i])
	if i == n {
		// Still in the plain text of the streamed value.
		e.flush()
		e.off += int64(n)
		e.streaming = inStream
		return nil
	}
	var err error
	switch c := chunk[i]; {
	case c == '\\':
		// An escape the chunk cuts, usually; the state machine holds it.
		e.str = sEsc
		if i+1 == n {
			i = n
			break
		}
		if chunk[i+1] == 'u' && n-i < 6 {
			// The digits a \u escape has so far, read as escape would.
			u := rune(0)
			for _, c := range chunk[i+2:] {
				u = u<<4 | rune(unhex[c])
			}
			if u >= 0 {
				e.str, e.unit, e.nhex = sHex, u, uint8(n-i-2)
				i = n
				break
			}
		}
		if i, err = e.escape(chunk, i+1); err == nil && i < n {
			i, err = e.run(chunk, i)
		}
	case c >= utf8.RuneSelf:
		// A sequence the chunk cuts, held so that Text never splits it.
		e.npend = uint8(copy(e.pend[:], chunk[i:]))
		e.str = sUTF8
		i = n
	default:
		i, err = e.run(chunk, i)
	}
	return e.finish(i, err)
}

// Close reports whether the document is complete: nil when a complete
// top-level value was read, io.ErrUnexpectedEOF when it is incomplete, and
// the error Write returned if there was one.
func (e *Extractor) Close() error {
	if e.err != nil {
		return e.err
	}
	if e.state == stNumber && len(e.path) == 0 && numberComplete(e.num) {
		// A top-level number has no closing byte; the end of input ends it.
		e.state = stDone
	}
	if e.state != stDone {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// resume is Write for a chunk of one to eight bytes that continues a
// streamed value inside an escape or a UTF-8 sequence that the previous
// chunk cut. The rest of a \u escape or a one-character escape, the usual
// cases, is decoded here; anything else goes through the state machine.
// Then short takes the rest of the chunk.
func (e *Extractor) resume(chunk []byte) error {
	n := len(chunk)
	i := 0
	switch e.str {
	case sHex:
		if k := 4 - int(e.nhex); k <= n && e.high == 0 {
			u := e.unit
			for _, c := range chunk[:k] {
				u = u<<4 | rune(unhex[c])
			}
			// A negative digit value makes u negative, like hex4.
			if u >= 0 && (u < 0xD800 || u >= 0xE000) {
				e.nscratch = utf8.EncodeRune(e.scratch[:], u)
				e.str = sPlain
				i = k
			}
		}
	case sEsc:
		if d := simpleEscape[chunk[0]]; d != 0 && e.high == 0 {
			e.scratch[0] = d
			e.nscratch = 1
			e.str = sPlain
			i = 1
		}
	}
	if e.str != sPlain {
		var err error
		if i, err = e.escape(chunk, 0); err != nil || i == n {
			return e.finish(i, err)
		}
	}
	return e.short(chunk, loadShort(chunk), i)
}

// run consumes b from index i and returns how far it got: it finishes the
// token under way, then reads tokens.
func (e *Extractor) run(b []byte, i int) (int, error) {
	var err error
	switch e.state {
	case stString:
		i, err = e.string(b, i)
	case stNumber:
		i, err = e.number(b, i)
	case stLiteral:
		i, err = e.literal(b, i)
	}
	if err == nil && i < len(b) {
		i, err = e.tokens(b, i)
	}
	return i, err
}

// tokens consumes b from index i, where no token is under way, and returns
// how far it got. Strings, numbers and literals are read to their end or to
// the end of b from here, so that a chunk costs one loop however many
// tokens it holds, and what a byte does in each state comes from the table
// actions, so that each byte costs a lookup and one jump rather than a
// chain of branches that the order of tokens makes hard to predict.
func (e *Extractor) tokens(b []byte, i int) (int, error) {
	var err error
	for i < len(b) {
		c := b[i]
		// The state is below stString here; the mask spares a bounds check.
		switch actions[e.state&7][c] {
		case aSpace:
		case aString:
			e.beginValue()
			if i, err = e.string(b, i+1); err != nil {
				return i, err
			}
			continue
		case aKey:
			e.beginString(mKey)
			e.beginKey()
			if i, err = e.string(b, i+1); err != nil {
				return i, err
			}
			continue
		case aNumber:
			e.state, e.num = stNumber, nInt
			if c == '0' {
				e.num = nZero
			} else if c == '-' {
				e.num = nMinus
			}
			if i, err = e.number(b, i+1); err != nil {
				return i, err
			}
			continue
		case aLiteral:
			e.state = stLiteral
			switch c {
			case 't':
				e.lit = "rue"
			case 'f':
				e.lit = "alse"
			default:
				e.lit = "ull"
			}
			if i, err = e.literal(b, i+1); err != nil {
				return i, err
			}
			continue
		case aObject:
			if err = e.push(-1, stObjFirst); err != nil {
				return i, err
			}
		case aArray:
			if err = e.push(0, stArrFirst); err != nil {
				return i, err
			}
		case aPop:
			e.pop()
		case aColon:
			e.state = stValue
		case aMember:
			e.state = stObjKey
		case aElement:
			e.path[len(e.path)-1].Index++
			e.state = stValue
		default:
			return i, ErrSyntax
		}
		i++
	}
	return i, nil
}

// What a byte does between tokens, by state: see actions.
const (
	aError   uint8 = iota // the byte cannot continue valid JSON
	aSpace                // whitespace, skipped
	aString               // starts a string value
	aKey                  // starts a member name
	aNumber               // starts a number
	aLiteral              // starts true, false or null
	aObject               // opens an object
	aArray                // opens an array
	aPop                  // closes the innermost object or array
	aColon                // separates a member name from its value
	aMember               // separates the members of an object
	aElement              // separates the elements of an array
)

// actions[state][c] is what byte c does in a state between tokens. States
// above stDone are inside tokens and never index it.
var actions [8][256]uint8

// beginValue starts a string value, asking the Handler what to do with it.
func (e *Extractor) beginValue() {
	id, act := e.h.Match(e.path)
	if act > Capture {
		act = Skip
	}
	e.beginString(uint8(act))
	e.id = id
	if act == Capture {
		e.buf = e.scratch[:0:min(scratchSize, MaxCapture)]
		if e.capbuf != nil {
			e.buf = e.capbuf[:0]
		}
	}
}

// push opens a container, entering state: an object when index is -1, an
// array when it is 0.
func (e *Extractor) push(index int, state uint8) error {
	d := len(e.path)
	if d == len(e.frames) && !e.growFrames() {
		return ErrTooDeep
	}
	e.frames[d] = Frame{Index: index}
	e.path = e.frames[: d+1 : d+1]
	e.state = state
	return nil
}

// pop closes the innermost container, which completes a value.
func (e *Extractor) pop() {
	d := len(e.path) - 1
	e.keys = e.keys[:len(e.keys)-len(e.path[d].Key)]
	e.path = e.path[:d:d]
	e.endValue()
}

// growFrames doubles the room for frames and reports whether there was
// room to grow.
func (e *Extractor) growFrames() bool {
	if len(e.frames) == MaxDepth {
		return false
	}
	frames := make([]Frame, min(max(2*len(e.frames), minFrames), MaxDepth))
	copy(frames, e.frames)
	e.frames = frames
	return true
}

// beginKey starts reading the name of the next member of the innermost
// object into the room after the names of the enclosing members, where the
// name of its previous member was.
func (e *Extractor) beginKey() {
	f := &e.path[len(e.path)-1]
	e.keys = e.keys[:len(e.keys)-len(f.Key)]
	f.Key = nil
	n := len(e.keys)
	if cap(e.keys)-n < MaxKey {
		e.growKeys()
	}
	e.buf = e.keys[n : n : n+MaxKey]
}

// growKeys makes room for a name of MaxKey bytes after the names in keys.
// The Keys in frames move along, so a Path never shows a copy that no
// longer follows the document.
func (e *Extractor) growKeys() {
	n := len(e.keys)
	keys := make([]byte, n, min(max(2*cap(e.keys), n+MaxKey, minKeys), MaxDepth*MaxKey))
	copy(keys, e.keys)
	off := 0
	for i := range e.path {
		f := &e.path[i]
		if f.Key != nil {
			end := off + len(f.Key)
			f.Key = keys[off:end:end]
			off = end
		}
	}
	// Frames past the path are overwritten before they are used again;
	// clearing them lets the old names be freed now.
	clear(e.frames[len(e.path):])
	e.keys = keys
}

// endValue moves past a completed value.
func (e *Extractor) endValue() {
	switch {
	case len(e.path) == 0:
		e.state = stDone
	case e.path[len(e.path)-1].Index < 0:
		e.state = stAfterObj
	default:
		e.state = stAfterArr
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
		if e.str != sPlain {
			var err error
			if i, err = e.escape(b, i); err != nil {
				return i, err
			}
			continue
		}
		switch e.mode {
		case mStream:
			i = e.stream(b, i)
		case mSkip:
			// Skipped text is never decoded, so its UTF-8 needs no care.
			if rest := len(b) - i; rest <= 8 {
				m := special(loadShort(b[i:]), 0) & lowBytes[rest]
				i += min(bits.TrailingZeros64(m)/8, rest)
			} else {
				i += plainLen(b[i:], 0)
			}
		default:
			i = e.plain(b, i)
		}
		if i == len(b) {
			break
		}
		switch c := b[i]; {
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
	}
	return i, nil
}

// escape runs the state machine for an escape or a raw UTF-8 sequence that
// a chunk cut, from b[i:] until the string is back in plain text or b ends.
func (e *Extractor) escape(b []byte, i int) (int, error) {
	for i < len(b) {
		c := b[i]
		switch e.str {
		case sHex:
			// Read the rest of the four digits in one go.
			u, k := e.unit, e.nhex
			for {
				v := unhex[c]
				if v < 0 {
					e.unit, e.nhex = u, k
					return i, ErrSyntax
				}
				u = u<<4 | rune(v)
				k++
				i++
				if k == 4 || i == len(b) {
					break
				}
				c = b[i]
			}
			e.unit, e.nhex = u, k
			if k < 4 {
				return i, nil
			}
			e.codeUnit()
			if e.str == sPlain {
				return i, nil
			}
			continue
		case sEsc:
			switch d := simpleEscape[c]; {
			case d != 0:
				if e.high != 0 {
					e.high = 0
					e.putRune(utf8.RuneError)
				}
				e.putRune(rune(d))
				e.str = sPlain
				return i + 1, nil
			case c == 'u':
				e.str, e.unit, e.nhex = sHex, 0, 0
			default:
				return i, ErrSyntax
			}
		case sHigh:
			if c != '\\' {
				// The high surrogate has no partner; c is read as plain text.
				e.high = 0
				e.putRune(utf8.RuneError)
				e.str = sPlain
				return i, nil
			}
			e.str = sEsc
		case sUTF8:
			e.pend[e.npend] = c
			p := e.pend[:e.npend+1]
			if !utf8.FullRune(p) {
				e.npend++
				break
			}
			e.npend = 0
			e.str = sPlain
			if r, size := utf8.DecodeRune(p); size == len(p) {
				e.putRune(r)
				return i + 1, nil
			}
			// c does not continue the held sequence. The held bytes are a lead
			// byte and continuation bytes, each invalid on its own, and c is
			// read as plain text.
			for range len(p) - 1 {
				e.putRune(utf8.RuneError)
			}
			return i, nil
		default:
			return i, nil
		}
		i++
	}
	return i, nil
}

// plain consumes the raw text and escapes of a member name or captured
// value from b[i:] without the state machine and returns where it stopped:
// at the end of b or at a byte that needs the state machine (a quote, a
// control byte, an escape that is malformed or that b cuts short, or a UTF-8
// sequence that is invalid or that b cuts short).
func (e *Extractor) plain(b []byte, i int) int {
	if rest := len(b) - i; rest <= 8 && cap(e.buf)-len(e.buf) >= 8 && !e.full {
		// The usual case in a chunk a few bytes long: ASCII up to the end
		// of b or up to a quote, escape or control byte, which the state
		// machine then takes. All eight bytes of x are stored, since buf
		// has room for them, but only the run is kept.
		x := loadShort(b[i:])
		k := min(bits.TrailingZeros64(special(x, hiBits)&lowBytes[rest])/8, rest)
		if k == rest || b[i+k] < utf8.RuneSelf {
			n := len(e.buf)
			binary.LittleEndian.PutUint64(e.buf[n:n+8], x)
			e.buf = e.buf[:n+k]
			return i + k
		}
	}
	start := i
	for i < len(b) {
		if rest := len(b) - i; rest <= 8 {
			m := special(loadShort(b[i:]), hiBits) & lowBytes[rest]
			i += min(bits.TrailingZeros64(m)/8, rest)
		} else {
			i += plainLen(b[i:], hiBits)
		}
		if i == len(b) {
			break
		}
		r, size := decodeAt(b, i)
		if size == 0 {
			break
		}
		if r < 0 {
			i += size
			continue
		}
		e.keep(b[start:i])
		e.putRune(r)
		i += size
		start = i
	}
	e.keep(b[start:i])
	return i
}

// stream is plain for a streamed value, which hands runs of raw text to the
// Handler without copying and batches decoded escapes in scratch.
func (e *Extractor) stream(b []byte, i int) int {
	ns := e.nscratch
	start := i
	for i < len(b) {
		i += plainLen(b[i:], hiBits)
		if i == len(b) {
			break
		}
		r, size := decodeAt(b, i)
		if size == 0 {
			break
		}
		if r < 0 {
			i += size
			continue
		}
		ns = e.text(ns, b[start:i])
		if ns > scratchSize-utf8.UTFMax {
			e.h.Text(e.id, e.path, e.scratch[:ns])
			ns = 0
		}
		ns += utf8.EncodeRune(e.scratch[ns:], r)
		i += size
		start = i
	}
	e.nscratch = e.text(ns, b[start:i])
	return i
}

// text hands the Handler the ns decoded bytes batched in scratch, then run,
// raw text that follows them, and returns how many bytes stay batched: none
// once run is handed over, ns when run is empty.
func (e *Extractor) text(ns int, run []byte) int {
	if len(run) == 0 {
		return ns
	}
	if ns > 0 {
		e.h.Text(e.id, e.path, e.scratch[:ns])
	}
	e.h.Text(e.id, e.path, run)
	return 0
}

// decodeAt reads what stopped a run of plain text at b[i] in a member name
// or a value: a valid UTF-8 sequence, which stays raw and is returned with r
// < 0; an escape, returned decoded; or an invalid UTF-8 byte, which reads as
// U+FFFD. size is how many bytes it spans, 0 when the state machine must take
// the byte: a quote, a control byte, or an escape or sequence that b cuts
// short or that is malformed.
func decodeAt(b []byte, i int) (r rune, size int) {
	c := b[i]
	if c >= utf8.RuneSelf {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r != utf8.RuneError || size > 1:
			return -1, size
		case !utf8.FullRune(b[i:]):
			return 0, 0
		}
		return utf8.RuneError, 1
	}
	if c != '\\' || i+1 == len(b) {
		return 0, 0
	}
	if d := simpleEscape[b[i+1]]; d != 0 {
		return rune(d), 2
	}
	return unicodeEscape(b[i:])
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
		f := &e.path[len(e.path)-1]
		f.Key = e.buf[:len(e.buf):len(e.buf)]
		f.trunc = e.full
		e.keys = e.keys[:len(e.keys)+len(e.buf)]
		e.state = stColon
		return
	case mStream:
		e.flush()
		e.h.End(e.id, e.path, nil)
	case mCapture:
		e.h.End(e.id, e.path, e.buf[:len(e.buf):len(e.buf)])
	}
	e.endValue()
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

// flushScratch is the part of flush that is kept out of line, so that flush
// inlines.
//
//go:noinline
func (e *Extractor) flushScratch() {
	e.h.Text(e.id, e.path, e.scratch[:e.nscratch])
	e.nscratch = 0
}

// keep appends whole UTF-8 sequences to buf, cutting at a sequence boundary
// and dropping the rest of the string once buf is full.
func (e *Extractor) keep(p []byte) {
	if len(p) > cap(e.buf)-len(e.buf) || e.full {
		p = e.fit(p)
	}
	// fit left room for p, so this never allocates.
	e.buf = append(e.buf, p...)
}

// fit returns as much of p as buf has room for, which is nothing once bytes
// were dropped. A captured value that outgrows the scratch buffer moves to
// the capture buffer, which is made once with room for MaxCapture bytes;
// buf never grows otherwise.
func (e *Extractor) fit(p []byte) []byte {
	if e.full {
		return nil
	}
	if e.mode == mCapture && e.capbuf == nil {
		e.capbuf = make([]byte, 0, MaxCapture)
		e.buf = append(e.capbuf, e.buf...)
	}
	room := cap(e.buf) - len(e.buf)
	if len(p) <= room {
		return p
	}
	for room > 0 && !utf8.RuneStart(p[room]) {
		room--
	}
	e.full = true
	return p[:room]
}

// Constants for testing the eight bytes of a uint64 at once.
const (
	loBits = 0x0101010101010101 // 0x01 in every byte
	hiBits = 0x8080808080808080 // 0x80 in every byte
)

// highLow[n] selects the high bits of the low n bytes of a uint64.
var highLow = [9]uint64{0, 0x80, 0x8080, 0x808080, 0x80808080, 0x8080808080, 0x808080808080, 0x80808080808080, 0x8080808080808080}

// lowBytes[n] selects the low n bytes of a uint64.
var lowBytes = [9]uint64{0, 0xff, 0xffff, 0xffffff, 0xffffffff, 0xffffffffff, 0xffffffffffff, 0xffffffffffffff, 0xffffffffffffffff}

// plainLen returns how many leading bytes of b are printable ASCII other
// than '"' and '\\', counting bytes >= 0x80 as plain too when high is 0
// rather than hiBits. b must not be empty. It tests eight bytes per step
// without branching on their values: a branch that ends a per-byte loop
// mispredicts on almost every chunk when a model's output arrives a few
// bytes at a time, and costs more than the scanning itself.
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

// anySpecial is special with high hiBits in fewer steps. A byte whose xor
// with '"' or '\\' is not zero but borrows when one is subtracted is
// >= 0x80, which x marks anyway, so those tests need no mask.
func anySpecial(x uint64) uint64 {
	return (x - loBits*0x20) | x | ((x ^ loBits*'"') - loBits) | ((x ^ loBits*'\\') - loBits)
}

// special sets the high bit of the first byte of x that is a control byte,
// '"' or '\\', or (when high is hiBits) >= 0x80. Bits of later bytes may be
// set spuriously by a borrow, which only propagates upward from a byte that
// matched, so only the lowest set bit is meaningful.
func special(x, high uint64) uint64 {
	q := x ^ (loBits * '"')
	s := x ^ (loBits * '\\')
	ctl := (x - loBits*0x20) &^ x
	return (x&high | ctl | (q-loBits)&^q | (s-loBits)&^s) & hiBits
}

// marks sets the high bit of every byte of x that special would mark with
// high hiBits. It tests the low seven bits of each byte, where no carry can
// cross into the next byte, so every bit it sets is meaningful.
func marks(x uint64) uint64 {
	t := x &^ hiBits
	ctl := t + loBits*(0x80-0x20)           // high bit clear where t < 0x20
	quote := (t ^ loBits*'"') + loBits*0x7f // high bit clear where t == '"'
	bs := (t ^ loBits*'\\') + loBits*0x7f   // high bit clear where t == '\\'
	// A byte that is >= 0x80 or special if ASCII keeps its high bit.
	return ^(ctl & quote & bs &^ x) & hiBits
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
	for st := range stDone + 1 {
		a := &actions[st]
		for _, c := range []byte(" \t\n\r") {
			a[c] = aSpace
		}
		switch st {
		case stValue, stArrFirst:
			a['"'] = aString
			for _, c := range []byte("-0123456789") {
				a[c] = aNumber
			}
			a['t'], a['f'], a['n'] = aLiteral, aLiteral, aLiteral
			a['{'], a['['] = aObject, aArray
			if st == stArrFirst {
				a[']'] = aPop
			}
		case stObjFirst, stObjKey:
			a['"'] = aKey
			if st == stObjFirst {
				a['}'] = aPop
			}
		case stColon:
			a[':'] = aColon
		case stAfterObj:
			a[','], a['}'] = aMember, aPop
		case stAfterArr:
			a[','], a[']'] = aElement, aPop
		}
	}
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
