// Package logcap owns the bound on the gateway's log lines: whatever a field holds (an
// endpoint's error body, a model's answer, a learner's text), no line written is longer than
// MaxLine bytes, and a clipped line is still one valid JSON object that says it was clipped.
package logcap

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxLine bounds a log line in bytes, its newline included.
const MaxLine = 16 << 10

// Writer passes each line (one Write, as zerolog writes an event) to w, clipping any longer than
// limit bytes: the longest string values of the JSON object are cut, each to the same length,
// until the line fits, and "truncated":true is added. A line that is not a JSON object, or that
// no cut of its strings makes fit, is replaced by its level, time and message (cut) with
// "truncated":true and the byte count it had. A limit of 0 means MaxLine.
func Writer(w io.Writer, limit int) io.Writer {
	if limit <= 0 {
		limit = MaxLine
	}
	return &writer{w: w, limit: limit}
}

type writer struct {
	w     io.Writer
	limit int
}

// Write writes p, clipped to fit. It reports len(p) written when the clipped line was, so that
// zerolog sees no short write.
func (c *writer) Write(p []byte) (int, error) {
	if len(p) <= c.limit {
		return c.w.Write(p)
	}
	if _, err := c.w.Write(clip(p, c.limit)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// clip returns line cut to at most limit bytes, newline included.
func clip(line []byte, limit int) []byte {
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if dec.Decode(&obj) == nil && obj != nil {
		obj["truncated"] = true
		longest := longestString(obj)
		// Binary search for the greatest per-string cap whose line fits.
		lo, hi := 0, longest
		var best []byte
		for lo <= hi {
			mid := (lo + hi) / 2
			if b := encode(capStrings(obj, mid).(map[string]any)); len(b) <= limit {
				best, lo = b, mid+1
			} else {
				hi = mid - 1
			}
		}
		if best != nil {
			return best
		}
	}
	return fallback(obj, len(line), limit)
}

// fallback is the line's level, time and message, cut to fit, for a line whose shape (not its
// strings) is too big, or that is not JSON.
func fallback(obj map[string]any, size, limit int) []byte {
	out := map[string]any{"truncated": true, "bytes": size}
	for _, k := range []string{"level", "time"} {
		if v, ok := obj[k].(string); ok && len(v) < 64 {
			out[k] = v
		}
	}
	msg, _ := obj["message"].(string)
	if msg == "" {
		msg = "a log line too long to keep"
	}
	out["message"] = cut(msg, limit/2)
	b := encode(out)
	for len(b) > limit {
		out["message"] = "a log line too long to keep"
		b = encode(out)
	}
	return b
}

func longestString(v any) int {
	n := 0
	switch v := v.(type) {
	case string:
		n = len(v)
	case map[string]any:
		for _, e := range v {
			n = max(n, longestString(e))
		}
	case []any:
		for _, e := range v {
			n = max(n, longestString(e))
		}
	}
	return n
}

// capStrings returns a copy of v whose strings longer than n bytes are cut to n.
func capStrings(v any, n int) any {
	switch v := v.(type) {
	case string:
		return cut(v, n)
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = capStrings(e, n)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = capStrings(e, n)
		}
		return out
	}
	return v
}

// cut returns s cut to n bytes on a UTF-8 boundary, marked with "…" when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// encode marshals obj as one line, without escaping HTML characters (which would grow it).
func encode(obj map[string]any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return []byte(`{"truncated":true,"message":"a log line that could not be re-encoded"}` + "\n")
	}
	return b.Bytes()
}
