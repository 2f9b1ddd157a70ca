package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/coach"
)

// chunk is what the adapter reads of one streamed chat.completion.chunk: the first choice's
// content, tool calls and finish reason, and the token usage an endpoint reports (OpenAI: in a
// last chunk whose choices are empty, when the request set stream_options.include_usage).
// Everything else is validated as JSON and skipped.
//
// go-openai decodes every chunk by reflection into its full response type, which cost about a
// third of the gateway's CPU per relayed delta and most of its allocations per turn. decode
// reads the same bytes in one pass and allocates only the strings it returns. It accepts every
// payload go-openai accepts and reads the same values from it, which FuzzChunkDecode checks
// against go-openai's own types: encoding/json's key folding, escapes, replacement of invalid
// UTF-8 and null handling. It is more lenient only where go-openai would reject a payload for a
// field the adapter never reads (a "created" that is a string, say). Duplicate member names,
// which no endpoint sends, take the last value, as in encoding/json, except where encoding/json
// would resurrect elements of an earlier, longer duplicate of tool_calls from the slice's
// spare capacity.
type chunk struct {
	// choice records that the chunk has at least one choice.
	choice  bool
	content string
	finish  string
	// calls is reused from chunk to chunk; decode resets it.
	calls []toolCall
	// usage is the chunk's usage member when it is an object (hasUsage); null or absent leaves
	// hasUsage false. badUsage marks a usage member that is no object of whole numbers: the
	// answer is still good, and the engine estimates its tokens instead.
	usage    usage
	hasUsage bool
	badUsage bool
}

// reported returns the chunk's usage for a fragment, or nil when it has none.
func (c *chunk) reported() *coach.Usage {
	if !c.hasUsage || c.badUsage {
		return nil
	}
	return &coach.Usage{PromptTokens: c.usage.PromptTokens, CompletionTokens: c.usage.CompletionTokens}
}

// usage is the part of a chunk's usage object the adapter reads. It arrives once per stream,
// so encoding/json decodes it: the same rules as go-openai's by construction.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// toolCall is one element of delta.tool_calls. index is the call it is a piece of, when the
// endpoint said (hasIndex): the one field that tells the calls of an answer apart.
type toolCall struct {
	id, name, args string
	index          int
	hasIndex       bool
}

// maxChunkDepth is encoding/json's nesting limit, so that both reject the same payloads.
const maxChunkDepth = 10000

var (
	errChunkSyntax = errors.New("invalid JSON in a stream chunk")
	errChunkDepth  = errors.New("a stream chunk nests too deep")
)

// chunkTypeError is a member whose JSON type the response type cannot hold.
type chunkTypeError struct{ field string }

func (e *chunkTypeError) Error() string {
	return "stream chunk: " + e.field + " has the wrong JSON type"
}

// decode reads payload, the JSON after "data:", into c.
func (c *chunk) decode(payload []byte) error {
	c.choice, c.content, c.finish, c.calls = false, "", "", c.calls[:0]
	c.usage, c.hasUsage, c.badUsage = usage{}, false, false
	d := chunkDecoder{b: payload}
	d.space()
	var err error
	switch d.peek() {
	case '{':
		err = d.object(1, func(k quoted, depth int) error {
			switch {
			case d.key(k, "choices"):
				return d.choices(c, depth)
			case d.key(k, "usage"):
				return d.usage(c, depth)
			default:
				return d.skip(depth)
			}
		})
	case 'n':
		err = d.literal("null")
	default:
		if err = d.skip(1); err == nil {
			err = &chunkTypeError{"the chunk"}
		}
	}
	if err != nil {
		return err
	}
	if d.space(); d.i != len(d.b) {
		return d.syntax()
	}
	return nil
}

// chunkDecoder walks one JSON document; i is the offset of the next byte.
type chunkDecoder struct {
	b []byte
	i int
}

func (d *chunkDecoder) syntax() error {
	return fmt.Errorf("%w at offset %d", errChunkSyntax, d.i)
}

func (d *chunkDecoder) peek() byte {
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *chunkDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// isNull consumes a null, which leaves any field as it was (encoding/json's rule for strings
// and structs; the callers handle slices).
func (d *chunkDecoder) isNull() (bool, error) {
	if d.peek() != 'n' {
		return false, nil
	}
	return true, d.literal("null")
}

func (d *chunkDecoder) literal(lit string) error {
	if !bytes.HasPrefix(d.b[d.i:], []byte(lit)) {
		return d.syntax()
	}
	d.i += len(lit)
	return nil
}

// quoted is a scanned JSON string, quotes included, with what the scan saw in it, so that
// reading its value never scans it again.
type quoted struct {
	q     []byte
	flags strFlags
}

// strFlags say what a string holds besides plain ASCII.
type strFlags uint8

const (
	strEscape  strFlags = 1 << iota // a backslash escape
	strUnicode                      // a \u escape
	strHigh                         // a byte of 0x80 or above
)

// object reads an object whose '{' is next, calling member with each member's name once the
// decoder stands at its value, which member must consume. depth counts the object.
func (d *chunkDecoder) object(depth int, member func(key quoted, depth int) error) error {
	if depth > maxChunkDepth {
		return errChunkDepth
	}
	d.i++ // '{'
	d.space()
	if d.peek() == '}' {
		d.i++
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.syntax()
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		d.space()
		if d.peek() != ':' {
			return d.syntax()
		}
		d.i++
		d.space()
		if err := member(key, depth+1); err != nil {
			return err
		}
		d.space()
		switch d.peek() {
		case ',':
			d.i++
			d.space()
		case '}':
			d.i++
			return nil
		default:
			return d.syntax()
		}
	}
}

// array reads an array whose '[' is next, calling elem with each element's index once the
// decoder stands at it; it returns the number of elements.
func (d *chunkDecoder) array(depth int, elem func(i, depth int) error) (int, error) {
	if depth > maxChunkDepth {
		return 0, errChunkDepth
	}
	d.i++ // '['
	d.space()
	if d.peek() == ']' {
		d.i++
		return 0, nil
	}
	for n := 0; ; n++ {
		if err := elem(n, depth+1); err != nil {
			return 0, err
		}
		d.space()
		switch d.peek() {
		case ',':
			d.i++
			d.space()
		case ']':
			d.i++
			return n + 1, nil
		default:
			return 0, d.syntax()
		}
	}
}

// key reports whether the member name key names the field name the way encoding/json matches
// it: equal after unescaping, ignoring case (Unicode simple folding).
func (d *chunkDecoder) key(key quoted, name string) bool {
	if key.flags&strEscape == 0 {
		raw := key.q[1 : len(key.q)-1]
		return string(raw) == name || bytes.EqualFold(raw, []byte(name))
	}
	return strings.EqualFold(key.value(), name)
}

// skip validates and consumes any value.
func (d *chunkDecoder) skip(depth int) error {
	switch c := d.peek(); {
	case c == '{':
		return d.object(depth, func(_ quoted, depth int) error { return d.skip(depth) })
	case c == '[':
		_, err := d.array(depth, func(_, depth int) error { return d.skip(depth) })
		return err
	case c == '"':
		_, err := d.str()
		return err
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	default:
		return d.syntax()
	}
}

// number consumes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *chunkDecoder) number() error {
	if d.peek() == '-' {
		d.i++
	}
	switch c := d.peek(); {
	case c == '0':
		d.i++
	case c >= '1' && c <= '9':
		d.digits()
	default:
		return d.syntax()
	}
	if d.peek() == '.' {
		d.i++
		if !d.digits() {
			return d.syntax()
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.i++
		if c := d.peek(); c == '+' || c == '-' {
			d.i++
		}
		if !d.digits() {
			return d.syntax()
		}
	}
	return nil
}

func (d *chunkDecoder) digits() bool {
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// str validates and consumes a string whose '"' is next.
func (d *chunkDecoder) str() (quoted, error) {
	start := d.i
	var flags strFlags
	d.i++
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			return quoted{d.b[start:d.i], flags}, nil
		case c == '\\':
			if d.i+1 >= len(d.b) {
				return quoted{}, d.syntax()
			}
			flags |= strEscape
			switch d.b[d.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				d.i += 2
			case 'u':
				if d.i+6 > len(d.b) || !isHex4(d.b[d.i+2:d.i+6]) {
					return quoted{}, d.syntax()
				}
				flags |= strUnicode
				d.i += 6
			default:
				return quoted{}, d.syntax()
			}
		case c < ' ':
			return quoted{}, d.syntax()
		default:
			if c >= utf8.RuneSelf {
				flags |= strHigh
			}
			d.i++
		}
	}
	return quoted{}, d.syntax()
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// field reads a string field: null leaves *dst as it was, another type is an error.
func (d *chunkDecoder) field(dst *string, field string) error {
	if ok, err := d.opens('"', field, 0); !ok {
		return err
	}
	s, err := d.str()
	if err != nil {
		return err
	}
	*dst = s.value()
	return nil
}

// value returns the string's value as encoding/json decodes it. The common escapes are
// decoded here; \u escapes and invalid UTF-8, whose surrogate and replacement rules are
// subtle, go to encoding/json itself.
func (s quoted) value() string {
	raw := s.q[1 : len(s.q)-1]
	if s.flags&strUnicode != 0 || s.flags&strHigh != 0 && !utf8.Valid(raw) {
		var v string
		_ = json.Unmarshal(s.q, &v) // s.q is valid, so this cannot fail
		return v
	}
	if s.flags&strEscape == 0 {
		return string(raw)
	}
	esc := bytes.IndexByte(raw, '\\')
	out := make([]byte, esc, len(raw))
	copy(out, raw[:esc])
	for i := esc; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		default: // '"', '\\', '/'
			c = raw[i]
		}
		out = append(out, c)
	}
	return string(out)
}

// expect checks that a member holds an object (or null, which changes nothing).
func (d *chunkDecoder) expect(field string, depth int, member func(key quoted, depth int) error) error {
	if ok, err := d.opens('{', field, depth); !ok {
		return err
	}
	return d.object(depth, member)
}

// opens reports whether the member's value, next, starts with open ('"', '{' or '['). It
// consumes a null and reports false with no error; it skips a value of another type and
// reports false with the error encoding/json gives for field.
func (d *chunkDecoder) opens(open byte, field string, depth int) (bool, error) {
	if null, err := d.isNull(); null || err != nil {
		return false, err
	}
	if d.peek() != open {
		if err := d.skip(depth); err != nil {
			return false, err
		}
		return false, &chunkTypeError{field}
	}
	return true, nil
}

// choices reads the choices array. Like encoding/json decoding into a slice, null or []
// empties it, and a later duplicate of the member merges into its first element.
func (d *chunkDecoder) choices(c *chunk, depth int) error {
	if ok, err := d.opens('[', "choices", depth); !ok {
		if err == nil { // null
			c.choice, c.content, c.finish, c.calls = false, "", "", c.calls[:0]
		}
		return err
	}
	n, err := d.array(depth, func(i, depth int) error {
		if i > 0 {
			return d.skip(depth)
		}
		if !c.choice {
			c.choice, c.content, c.finish, c.calls = true, "", "", c.calls[:0]
		}
		return d.expect("choices[0]", depth, func(k quoted, depth int) error {
			switch {
			case d.key(k, "delta"):
				return d.expect("delta", depth, func(k quoted, depth int) error { return d.delta(c, k, depth) })
			case d.key(k, "finish_reason"):
				return d.field(&c.finish, "finish_reason")
			default:
				return d.skip(depth)
			}
		})
	})
	if err == nil && n == 0 {
		c.choice, c.content, c.finish, c.calls = false, "", "", c.calls[:0]
	}
	return err
}

// usage reads the usage member: null forgets an earlier one, as encoding/json sets a pointer
// to nil; an object is decoded by encoding/json into the one read before, if any, as
// encoding/json decodes a duplicate member into the same pointer.
func (d *chunkDecoder) usage(c *chunk, depth int) error {
	if null, err := d.isNull(); null || err != nil {
		c.usage, c.hasUsage, c.badUsage = usage{}, false, false
		return err
	}
	start := d.i
	if err := d.skip(depth); err != nil {
		return err
	}
	c.hasUsage = true
	// Counts are read as raw JSON first, so that 12.5, 1e3 or "12" marks the report unusable
	// rather than failing a stream whose answer is fine.
	var raw struct {
		PromptTokens     json.RawMessage `json:"prompt_tokens"`
		CompletionTokens json.RawMessage `json:"completion_tokens"`
	}
	if err := json.Unmarshal(d.b[start:d.i], &raw); err != nil {
		c.badUsage = true
		return nil
	}
	for _, f := range []struct {
		n   json.RawMessage
		dst *int
	}{{raw.PromptTokens, &c.usage.PromptTokens}, {raw.CompletionTokens, &c.usage.CompletionTokens}} {
		if f.n == nil || string(f.n) == "null" {
			continue
		}
		v, err := strconv.Atoi(string(f.n))
		if err != nil {
			c.badUsage = true
			continue
		}
		*f.dst = v
	}
	return nil
}

// delta reads one member of choices[0].delta.
func (d *chunkDecoder) delta(c *chunk, k quoted, depth int) error {
	switch {
	case d.key(k, "content"):
		return d.field(&c.content, "content")
	case d.key(k, "tool_calls"):
		return d.toolCalls(c, depth)
	default:
		return d.skip(depth)
	}
}

// toolCalls reads delta.tool_calls with encoding/json's slice rules: elements merge into the
// ones already there, the slice ends at the new length, and null empties it.
func (d *chunkDecoder) toolCalls(c *chunk, depth int) error {
	if ok, err := d.opens('[', "tool_calls", depth); !ok {
		if err == nil { // null
			c.calls = c.calls[:0]
		}
		return err
	}
	n, err := d.array(depth, func(i, depth int) error {
		if i >= len(c.calls) {
			c.calls = append(c.calls, toolCall{})
		}
		tc := &c.calls[i]
		return d.expect("tool_calls[]", depth, func(k quoted, depth int) error {
			switch {
			case d.key(k, "index"):
				return d.index(tc)
			case d.key(k, "id"):
				return d.field(&tc.id, "tool_calls[].id")
			case d.key(k, "function"):
				return d.expect("function", depth, func(k quoted, depth int) error {
					switch {
					case d.key(k, "name"):
						return d.field(&tc.name, "function.name")
					case d.key(k, "arguments"):
						return d.field(&tc.args, "function.arguments")
					default:
						return d.skip(depth)
					}
				})
			default:
				return d.skip(depth)
			}
		})
	})
	if err != nil {
		return err
	}
	c.calls = c.calls[:n]
	return nil
}

// index reads tool_calls[].index as encoding/json reads it into go-openai's *int: null unsets
// it, an integer in int's range sets it, and any other value is an error.
func (d *chunkDecoder) index(tc *toolCall) error {
	if null, err := d.isNull(); null || err != nil {
		tc.index, tc.hasIndex = 0, false
		return err
	}
	start := d.i
	if c := d.peek(); c != '-' && (c < '0' || c > '9') {
		if err := d.skip(0); err != nil {
			return err
		}
		return &chunkTypeError{"tool_calls[].index"}
	}
	if err := d.number(); err != nil {
		return err
	}
	n, ok := parseInt(d.b[start:d.i])
	if !ok {
		return &chunkTypeError{"tool_calls[].index"}
	}
	tc.index, tc.hasIndex = n, true
	return nil
}

// parseInt reads a JSON number that is an integer in int's range, without allocating.
func parseInt(b []byte) (int, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 {
		return 0, false
	}
	const limit = uint64(1) << (strconv.IntSize - 1) // |math.MinInt|
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false // a fraction or an exponent: encoding/json will not put it in an int
		}
		if n > limit/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		if n > limit {
			return 0, false
		}
	}
	if !neg && n == limit {
		return 0, false
	}
	if neg {
		return int(-n), true
	}
	return int(n), true
}
