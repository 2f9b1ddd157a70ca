package schema

import (
	"encoding/json"
	"strings"
)

// Bounds of a completion cap (see CompletionCap).
const (
	// BytesPerToken converts the longest answer's bytes into tokens. The byte-pair tokenizers
	// of the models the gateway's profiles serve (OpenAI's o200k and cl100k, Llama 3's, Qwen
	// 2.5's) write English prose at about four characters a token, Spanish at about three,
	// and JSON's quotes, colons and key names at one to three; three bytes a token fits the
	// longest answer a schema allows in either language.
	BytesPerToken = 3
	// MaxCompletionCap is the largest cap CompletionCap returns: the completion limit of
	// gpt-4o and gpt-4o-mini (16,384 tokens). A larger max_tokens is a 400 there, and a
	// vLLM server rejects a cap over its context length.
	MaxCompletionCap = 16384
	// numberBytes is the longest JSON number encoding/json writes for a float64
	// (-1.7976931348623157e+308), integerBytes the longest int64 (-9223372036854775808).
	numberBytes  = 24
	integerBytes = 20
)

// Open says how long CompletionCap counts what a schema leaves unbounded: Items items for an
// array without maxItems, and Chars characters for a string without maxLength. A contract
// takes both from what its prompt asks for.
type Open struct {
	Items, Chars int
}

// CompletionCap returns the completion cap, in tokens, of an answer to the JSON schema raw:
// the longest JSON document valid against it, in bytes, from the schema's own bounds
// (maxLength of strings and the longest enum value, maxItems of arrays, every property
// present, with its key, quotes, colon and comma; the longest number), with open for what
// the schema leaves unbounded, divided by BytesPerToken and at most MaxCompletionCap. The
// cap thus never cuts an answer the gateway's validation accepts, up to MaxCompletionCap,
// and it stops a model that writes on without end (13,668 tokens of prose, seen on a real
// llama-server) at the longest answer that could be valid. A schema that does not parse
// gets MaxCompletionCap.
func CompletionCap(raw []byte, open Open) int {
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return MaxCompletionCap
	}
	w := capWalker{root: root, open: open}
	n := w.longest(root, 0)
	tokens := (n + BytesPerToken - 1) / BytesPerToken
	return max(1, min(tokens, MaxCompletionCap))
}

type capWalker struct {
	root any
	open Open
}

// maxRefDepth bounds the references followed in one branch, so that a recursive schema
// counts as long as the cap allows rather than forever.
const maxRefDepth = 16

// unbounded is what a branch too deep to follow counts: enough to reach MaxCompletionCap.
const unbounded = MaxCompletionCap * BytesPerToken

// longest returns the length in bytes of the longest JSON value valid against the schema v.
func (w capWalker) longest(v any, depth int) int {
	s, ok := v.(map[string]any)
	if !ok {
		return w.open.Chars + 2 // true: anything; counted as an open string
	}
	if ref, ok := s["$ref"].(string); ok {
		if depth >= maxRefDepth {
			return unbounded
		}
		return w.longest(w.resolve(ref), depth+1)
	}
	if enum, ok := s["enum"].([]any); ok {
		n := 0
		for _, e := range enum {
			b, _ := json.Marshal(e)
			n = max(n, len(b))
		}
		return n
	}
	if c, ok := s["const"]; ok {
		b, _ := json.Marshal(c)
		return len(b)
	}
	for _, key := range [...]string{"anyOf", "oneOf"} {
		if branches, ok := s[key].([]any); ok {
			n := 0
			for _, b := range branches {
				n = max(n, w.longest(b, depth))
			}
			return n
		}
	}
	var types []string
	switch t := s["type"].(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			if name, ok := x.(string); ok {
				types = append(types, name)
			}
		}
	}
	if len(types) == 0 {
		return w.open.Chars + 2
	}
	n := 0
	for _, t := range types {
		n = max(n, w.ofType(s, t, depth))
	}
	return n
}

// ofType returns the length of the longest value of type t valid against s.
func (w capWalker) ofType(s map[string]any, t string, depth int) int {
	bound := func(key string, open int) int {
		if f, ok := s[key].(float64); ok && f >= 0 {
			return int(f)
		}
		return open
	}
	switch t {
	case "object":
		props, _ := s["properties"].(map[string]any)
		n := 2 // {}
		for key, p := range props {
			n += len(key) + 4 + w.longest(p, depth) // "key":value,
		}
		return n
	case "array":
		return 2 + bound("maxItems", w.open.Items)*(w.longest(s["items"], depth)+1)
	case "string":
		return 2 + bound("maxLength", w.open.Chars)
	case "number":
		return numberBytes
	case "integer":
		return integerBytes
	case "boolean":
		return len("false")
	default:
		return len("null")
	}
}

// resolve returns the schema a local reference points to, nil for any other.
func (w capWalker) resolve(ref string) any {
	path, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	var v any = w.root
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		if part == "" {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[strings.NewReplacer("~1", "/", "~0", "~").Replace(part)]
	}
	return v
}
