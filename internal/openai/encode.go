package openai

import (
	"encoding/json"
	"math"
	"strconv"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/ndjson"
)

// encodeRequest returns the body of r: the bytes json.Marshal would write, from appendRequest
// when it knows every field r sets, else from json.Marshal itself. The body is encoded here
// rather than by go-openai because json.Marshal of a typical toulmin request (a 6 KB system
// prompt, a dozen history messages, the strict output schema) takes 45 to 65 µs and 30
// allocations, on the way to the first token: every message's MarshalJSON marshals an alias
// struct that encoding/json then scans and compacts again, and the schema is compacted again
// on every request. appendRequest takes about a tenth of that, with one allocation (see
// BenchmarkRequestEncode and BenchmarkRequestMarshal).
func encodeRequest(r *oai.ChatCompletionRequest) ([]byte, error) {
	if b, ok := appendRequest(make([]byte, 0, requestSize(r)), r); ok {
		return b, nil
	}
	return json.Marshal(r)
}

// requestSize estimates the length of r's body so that its buffer is allocated once: the
// strings and raw JSON it embeds, room for the names and punctuation around them, and an eighth
// more for the escapes of ordinary text (newlines, quotes).
func requestSize(r *oai.ChatCompletionRequest) int {
	n := 256 + len(r.Model)
	for i := range r.Messages {
		m := &r.Messages[i]
		n += 32 + len(m.Role) + len(m.Content) + len(m.ToolCallID)
		for j := range m.ToolCalls {
			tc := &m.ToolCalls[j]
			n += 64 + len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	if rf := r.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		n += 64 + len(rf.JSONSchema.Name) + len(rf.JSONSchema.Description) + rawSize(rf.JSONSchema.Schema)
	}
	for _, t := range r.Tools {
		if f := t.Function; f != nil {
			n += 96 + len(f.Name) + len(f.Description) + rawSize(f.Parameters)
		}
	}
	return n + n/8
}

// rawSize is the length of the raw JSON v holds, zero for any other value.
func rawSize(v any) int {
	switch v := v.(type) {
	case embeddedJSON:
		return len(v)
	case json.RawMessage:
		return len(v)
	}
	return 0
}

// appendRequest appends r as json.Marshal encodes it, byte for byte, for the fields
// (*Client).request sets. It reports false, having appended something unusable, when r sets
// any other field or holds a value of a type it does not encode; the caller then marshals r
// with encoding/json. TestAppendRequestFields notices a field a new go-openai adds.
func appendRequest(dst []byte, r *oai.ChatCompletionRequest) ([]byte, bool) {
	if !onlyEncodedFields(r) {
		return dst, false
	}
	var ok bool
	dst = append(dst, `{"model":`...)
	dst = ndjson.AppendString(dst, r.Model)
	dst = append(dst, `,"messages":`...)
	if r.Messages == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range r.Messages {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendMessage(dst, &r.Messages[i]); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	}
	if r.MaxTokens != 0 {
		dst = append(dst, `,"max_tokens":`...)
		dst = strconv.AppendInt(dst, int64(r.MaxTokens), 10)
	}
	if r.MaxCompletionTokens != 0 {
		dst = append(dst, `,"max_completion_tokens":`...)
		dst = strconv.AppendInt(dst, int64(r.MaxCompletionTokens), 10)
	}
	if r.Temperature != 0 {
		dst = append(dst, `,"temperature":`...)
		if dst, ok = appendFloat32(dst, r.Temperature); !ok {
			return dst, false
		}
	}
	dst = append(dst, `,"stream":`...)
	dst = strconv.AppendBool(dst, r.Stream)
	if rf := r.ResponseFormat; rf != nil {
		dst = append(dst, `,"response_format":{`...)
		if rf.Type != "" {
			dst = append(dst, `"type":`...)
			dst = ndjson.AppendString(dst, string(rf.Type))
		}
		if js := rf.JSONSchema; js != nil {
			if rf.Type != "" {
				dst = append(dst, ',')
			}
			dst = append(dst, `"json_schema":{"name":`...)
			dst = ndjson.AppendString(dst, js.Name)
			if js.Description != "" {
				dst = append(dst, `,"description":`...)
				dst = ndjson.AppendString(dst, js.Description)
			}
			dst = append(dst, `,"schema":`...)
			if dst, ok = appendRaw(dst, js.Schema); !ok {
				return dst, false
			}
			dst = append(dst, `,"strict":`...)
			dst = strconv.AppendBool(dst, js.Strict)
			dst = append(dst, '}')
		}
		dst = append(dst, '}')
	}
	if len(r.Tools) > 0 {
		dst = append(dst, `,"tools":[`...)
		for i := range r.Tools {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendTool(dst, &r.Tools[i]); !ok {
				return dst, false
			}
		}
		dst = append(dst, ']')
	}
	switch tc := r.ToolChoice.(type) {
	case nil:
	case oai.ToolChoice:
		dst = append(dst, `,"tool_choice":{"type":`...)
		dst = ndjson.AppendString(dst, string(tc.Type))
		dst = append(dst, `,"function":{"name":`...)
		dst = ndjson.AppendString(dst, tc.Function.Name)
		dst = append(dst, "}}"...)
	case string:
		dst = append(dst, `,"tool_choice":`...)
		dst = ndjson.AppendString(dst, tc)
	default:
		return dst, false
	}
	if so := r.StreamOptions; so != nil {
		dst = append(dst, `,"stream_options":{`...)
		if so.IncludeUsage {
			dst = append(dst, `"include_usage":true`...)
		}
		dst = append(dst, '}')
	}
	switch v := r.ParallelToolCalls.(type) {
	case nil:
	case bool:
		dst = append(dst, `,"parallel_tool_calls":`...)
		dst = strconv.AppendBool(dst, v)
	default:
		return dst, false
	}
	return append(dst, '}'), true
}

// onlyEncodedFields reports whether r leaves unset every field appendRequest does not encode.
func onlyEncodedFields(r *oai.ChatCompletionRequest) bool {
	return r.TopP == 0 && r.N == 0 && r.Stop == nil && r.PresencePenalty == 0 && r.Seed == nil &&
		r.FrequencyPenalty == 0 && r.LogitBias == nil && !r.LogProbs && r.TopLogProbs == 0 &&
		r.User == "" && r.Functions == nil && r.FunctionCall == nil &&
		!r.Store && r.ReasoningEffort == "" && r.Metadata == nil &&
		r.Prediction == nil && r.ChatTemplateKwargs == nil && r.ServiceTier == "" &&
		r.Verbosity == "" && r.SafetyIdentifier == "" && r.GuidedChoice == nil
}

// appendMessage appends m as its MarshalJSON does, for messages with plain string content.
func appendMessage(dst []byte, m *oai.ChatCompletionMessage) ([]byte, bool) {
	if m.MultiContent != nil || m.Refusal != "" || m.Name != "" || m.ReasoningContent != "" || m.FunctionCall != nil {
		return dst, false
	}
	dst = append(dst, `{"role":`...)
	dst = ndjson.AppendString(dst, m.Role)
	if m.Content != "" {
		dst = append(dst, `,"content":`...)
		dst = ndjson.AppendString(dst, m.Content)
	}
	if len(m.ToolCalls) > 0 {
		dst = append(dst, `,"tool_calls":[`...)
		for i := range m.ToolCalls {
			tc := &m.ToolCalls[i]
			if tc.Index != nil {
				return dst, false
			}
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '{')
			if tc.ID != "" {
				dst = append(dst, `"id":`...)
				dst = ndjson.AppendString(dst, tc.ID)
				dst = append(dst, ',')
			}
			dst = append(dst, `"type":`...)
			dst = ndjson.AppendString(dst, string(tc.Type))
			dst = append(dst, `,"function":{`...)
			if tc.Function.Name != "" {
				dst = append(dst, `"name":`...)
				dst = ndjson.AppendString(dst, tc.Function.Name)
			}
			if tc.Function.Arguments != "" {
				if tc.Function.Name != "" {
					dst = append(dst, ',')
				}
				dst = append(dst, `"arguments":`...)
				dst = ndjson.AppendString(dst, tc.Function.Arguments)
			}
			dst = append(dst, "}}"...)
		}
		dst = append(dst, ']')
	}
	if m.ToolCallID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = ndjson.AppendString(dst, m.ToolCallID)
	}
	return append(dst, '}'), true
}

// appendTool appends t as its MarshalJSON does: a map, so "function" comes before "type".
func appendTool(dst []byte, t *oai.Tool) ([]byte, bool) {
	if len(t.Parameters) > 0 {
		return dst, false
	}
	dst = append(dst, '{')
	if f := t.Function; f != nil {
		dst = append(dst, `"function":{"name":`...)
		dst = ndjson.AppendString(dst, f.Name)
		if f.Description != "" {
			dst = append(dst, `,"description":`...)
			dst = ndjson.AppendString(dst, f.Description)
		}
		if f.Strict {
			dst = append(dst, `,"strict":true`...)
		}
		dst = append(dst, `,"parameters":`...)
		var ok bool
		if dst, ok = appendRaw(dst, f.Parameters); !ok {
			return dst, false
		}
		dst = append(dst, "},"...)
	}
	dst = append(dst, `"type":`...)
	dst = ndjson.AppendString(dst, string(t.Type))
	return append(dst, '}'), true
}

// embeddedJSON is JSON in the form json.Marshal embeds a json.RawMessage in: compact, with <,
// >, &, U+2028 and U+2029 escaped. appendRequest copies it as it is, which is why the schema
// cache keeps schemas in this form; json.Marshal compacts it again to the same bytes.
type embeddedJSON []byte

// embed returns raw in the form json.Marshal embeds it.
func embed(raw []byte) (embeddedJSON, error) {
	return json.Marshal(json.RawMessage(raw))
}

// MarshalJSON returns j.
func (j embeddedJSON) MarshalJSON() ([]byte, error) { return j, nil }

// appendRaw appends v, a schema or function parameters, as json.Marshal embeds it.
func appendRaw(dst []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case embeddedJSON:
		return append(dst, v...), len(v) > 0
	case json.RawMessage:
		// Tool parameters come raw with every request. Compacting them needs encoding/json's
		// scanner anyway, so json.Marshal, which embeds them exactly right, does it.
		b, err := json.Marshal(v)
		return append(dst, b...), err == nil
	}
	return dst, false
}

// appendFloat32 appends f as encoding/json does: like ES6, with an exponent only below 1e-6 or
// from 1e21 on, and without the exponent's leading zero. NaN and infinities do not encode.
func appendFloat32(dst []byte, f float32) ([]byte, bool) {
	f64 := float64(f)
	if math.IsNaN(f64) || math.IsInf(f64, 0) {
		return dst, false
	}
	format := byte('f')
	if abs := float32(math.Abs(f64)); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f64, format, -1, 32)
	if n := len(dst); format == 'e' && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
		dst[n-2] = dst[n-1]
		dst = dst[:n-1]
	}
	return dst, true
}
