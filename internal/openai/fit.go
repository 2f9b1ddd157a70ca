package openai

import (
	"encoding/json"
	"strconv"
)

// Limits are what an endpoint's grammar compiler refuses in a schema that it otherwise takes:
// the schemas a Client sends to it (strict or not, response formats and tool parameters) leave
// out the keywords that would break them, and the gateway's validation of the result still
// applies the full schema.
type Limits struct {
	// MaxRepeat is the largest repetition count the endpoint's grammar compiles; 0 means none
	// is known. llama.cpp's json-schema-to-grammar writes maxLength N as the repetition
	// char{0,N} and maxItems N as ("," item){0,N-1}, and its grammar parser
	// (src/llama-grammar.cpp, parse_sequence) refuses a repetition whose count times the
	// rules it repeats reaches MAX_REPETITION_THRESHOLD (2000), and a minimum count above
	// it: the request fails with "400 Failed to initialize samplers: failed to parse
	// grammar". A maximum above 2000 compiles because the parser then drops it (the
	// repetition becomes unbounded), so a bound past the limit is enforced by nothing there
	// either way. A string bound counts as is; an array bound minus one, twice, since the
	// repeated group may hold a second rule (the item's, when its definition comes later).
	MaxRepeat int
	// PatternOrLength keeps only the pattern of a string schema that has both a pattern and
	// length bounds: vLLM refuses such a schema for xgrammar, which would drop the lengths
	// silently (vllm/v1/structured_output/backend_xgrammar.py,
	// has_xgrammar_unsupported_json_features: "The provided JSON schema contains features
	// not supported by xgrammar.").
	PatternOrLength bool
	// NoMultipleOf leaves out multipleOf, which vLLM refuses for xgrammar (same check).
	NoMultipleOf bool
}

// llamaMaxRepeat is Limits.MaxRepeat for llama.cpp's grammar, whose parser refuses a count
// that reaches MAX_REPETITION_THRESHOLD (2000): 1,999 compiles, 2,000 does not.
const llamaMaxRepeat = 1999

// zero reports whether l changes nothing.
func (l Limits) zero() bool { return l == Limits{} }

// fit returns schema with what l refuses left out, compact and with its members' order kept,
// or schema unchanged when l changes nothing or schema does not parse (the endpoint then
// judges it as it is).
func (l Limits) fit(schema []byte) []byte {
	if l.zero() {
		return schema
	}
	root, err := parseJSON(schema)
	if err != nil {
		return schema
	}
	l.schema(root)
	return appendJSON(nil, root)
}

// Keywords whose values are schemas, lists of schemas, or maps of names to schemas, which fit
// walks into; a property named like a keyword is a name, never a keyword.
var (
	subschemaKeys = []string{"items", "additionalProperties", "not", "contains", "propertyNames",
		"if", "then", "else", "additionalItems", "unevaluatedItems", "unevaluatedProperties"}
	subschemaListKeys = []string{"anyOf", "oneOf", "allOf", "prefixItems", "items"}
	subschemaMapKeys  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
)

// schema removes what l refuses from the schema node v and from every schema inside it.
func (l Limits) schema(v any) {
	o, ok := v.(*object)
	if !ok {
		return
	}
	_, hasPattern := o.get("pattern")
	_, hasFormat := o.get("format")
	for i := 0; i < len(o.members); {
		if l.refuses(o.members[i], hasPattern || hasFormat) {
			o.members = append(o.members[:i], o.members[i+1:]...)
			continue
		}
		i++
	}
	for _, k := range subschemaKeys {
		if s, ok := o.get(k); ok {
			l.schema(s)
		}
	}
	for _, k := range subschemaListKeys {
		if list, ok := o.get(k); ok {
			if list, ok := list.([]any); ok {
				for _, s := range list {
					l.schema(s)
				}
			}
		}
	}
	for _, k := range subschemaMapKeys {
		if m, ok := o.get(k); ok {
			if m, ok := m.(*object); ok {
				for _, s := range m.members {
					l.schema(s.val)
				}
			}
		}
	}
}

// refuses reports whether l leaves out the keyword m of a schema; patterned says whether that
// schema has a pattern or a format.
func (l Limits) refuses(m member, patterned bool) bool {
	switch m.key {
	case "minLength", "maxLength":
		return l.PatternOrLength && patterned || l.MaxRepeat > 0 && count(m.val) > l.MaxRepeat
	case "minItems", "maxItems":
		return l.MaxRepeat > 0 && 2*(count(m.val)-1) > l.MaxRepeat
	case "multipleOf":
		return l.NoMultipleOf
	case "pattern":
		s, _ := m.val.(string)
		return l.MaxRepeat > 0 && maxQuantifier(s) > l.MaxRepeat
	}
	return false
}

// count returns the bound v (a json.Number) as an int, 0 when it is none.
func count(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i < 0 {
		if f, err := n.Float64(); err == nil && f > 0 {
			return int(min(f, 1<<30))
		}
		return 0
	}
	return int(min(i, 1<<30))
}

// maxQuantifier returns the largest count of a {m}, {m,} or {m,n} quantifier in the regular
// expression re, which json-schema-to-grammar turns into the same repetition as a length.
func maxQuantifier(re string) int {
	best := 0
	for i := 0; i < len(re); i++ {
		switch re[i] {
		case '\\':
			i++
		case '{':
			n := 0
			for j := i + 1; j < len(re) && n <= 1<<30; j++ {
				c := re[j]
				switch {
				case c >= '0' && c <= '9':
					n = n*10 + int(c-'0')
				case c == ',' || c == '}':
					best = max(best, n)
					n = 0
					if c == '}' {
						j = len(re)
					}
				default:
					j = len(re)
				}
			}
		}
	}
	return best
}
