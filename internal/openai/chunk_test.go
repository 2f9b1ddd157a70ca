package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/fuzzcorpus"
)

func TestChunkDecode(t *testing.T) {
	tests := []struct {
		name    string
		payload string
		want    chunk
		wantErr bool
	}{
		{name: "content", payload: chunkHel, want: chunk{choice: true, content: "Hel"}},
		{name: "no choices, usage", payload: chunkUsage, want: chunk{usage: usage{PromptTokens: 9, CompletionTokens: 2}, hasUsage: true}},
		{name: "usage null", payload: `{"choices":[],"usage":null}`},
		{name: "usage on a choice's chunk", payload: `{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"completion_tokens":7}}`,
			want: chunk{choice: true, finish: "stop", usage: usage{CompletionTokens: 7}, hasUsage: true}},
		{name: "usage then null", payload: `{"usage":{"prompt_tokens":1},"usage":null}`},
		// A usage report that is no object of whole numbers is set aside, not an error: the
		// answer is fine, and the engine estimates its tokens instead.
		{name: "usage of the wrong type", payload: `{"choices":[],"usage":[1]}`, want: chunk{hasUsage: true, badUsage: true}},
		{name: "usage tokens of the wrong type", payload: `{"choices":[],"usage":{"prompt_tokens":1.5}}`, want: chunk{hasUsage: true, badUsage: true}},
		{name: "usage tokens as strings", payload: `{"choices":[],"usage":{"prompt_tokens":"12","completion_tokens":3}}`, want: chunk{hasUsage: true, badUsage: true, usage: usage{CompletionTokens: 3}}},
		{name: "null chunk", payload: `null`},
		{name: "finish reason", payload: chunkStop, want: chunk{choice: true, finish: "stop"}},
		{name: "escapes", payload: `{"choices":[{"delta":{"content":"{\"a\":\"x\\ny\t\/\"}\b\f\r"}}]}`,
			want: chunk{choice: true, content: "{\"a\":\"x\\ny\t/\"}\b\f\r"}},
		{name: "unicode escapes and a surrogate pair", payload: `{"choices":[{"delta":{"content":"\u00e9\ud83d\ude00\ud800"}}]}`,
			want: chunk{choice: true, content: "é😀\uFFFD"}},
		{name: "invalid UTF-8 becomes U+FFFD", payload: "{\"choices\":[{\"delta\":{\"content\":\"a\xffb\"}}]}",
			want: chunk{choice: true, content: "a\uFFFDb"}},
		{name: "keys match ignoring case and escapes", payload: `{"CHOICES":[{"Delta":{"cont\u0065nt":"x"},"finish_REASON":"length"}]}`,
			want: chunk{choice: true, content: "x", finish: "length"}},
		{name: "null fields change nothing", payload: `{"choices":[{"delta":{"content":null,"tool_calls":null},"finish_reason":null}]}`,
			want: chunk{choice: true}},
		{name: "only the first choice counts", payload: `{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`,
			want: chunk{choice: true, content: "a"}},
		{name: "a null choice is still a choice", payload: `{"choices":[null]}`, want: chunk{choice: true}},
		{name: "tool calls", payload: `{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"display_card","arguments":""}},{"index":1,"function":{"arguments":"{\"a\""}}]}}]}`,
			want: chunk{choice: true, calls: []toolCall{{id: "call_1", name: "display_card", hasIndex: true}, {args: `{"a"`, index: 1, hasIndex: true}}}},
		{name: "tool call index: null, negative, large", payload: `{"choices":[{"delta":{"tool_calls":[{"index":null},{"index":-3},{"index":9007199254740993}]}}]}`,
			want: chunk{choice: true, calls: []toolCall{{}, {index: -3, hasIndex: true}, {index: 9007199254740993, hasIndex: true}}}},
		{name: "tool call index that is not an integer", payload: `{"choices":[{"delta":{"tool_calls":[{"index":1.5}]}}]}`, wantErr: true},
		{name: "tool call index that is a string", payload: `{"choices":[{"delta":{"tool_calls":[{"index":"0"}]}}]}`, wantErr: true},
		{name: "tool call index past int's range", payload: `{"choices":[{"delta":{"tool_calls":[{"index":99999999999999999999}]}}]}`, wantErr: true},
		{name: "unknown members of every kind are skipped", payload: `{"id":"x","n":-1.5e+3,"t":true,"f":false,"z":null,"o":{"a":[1,{"b":[]}]},"choices":[{"logprobs":{"x":[0.1]},"delta":{"role":"assistant","content":"hi"}}],"usage":{}}`,
			want: chunk{choice: true, content: "hi", hasUsage: true}},
		{name: "white space everywhere", payload: " { \"choices\" :\t[ { \"delta\" : { \"content\" : \"x\" } } ] }\r\n",
			want: chunk{choice: true, content: "x"}},
		{name: "content of the wrong type", payload: `{"choices":[{"delta":{"content":5}}]}`, wantErr: true},
		{name: "choices of the wrong type", payload: `{"choices":{}}`, wantErr: true},
		{name: "a chunk that is not an object", payload: `[1]`, wantErr: true},
		{name: "trailing data", payload: `{"choices":[]} x`, wantErr: true},
		{name: "truncated", payload: `{"choices":[{"delta":{"content":"x`, wantErr: true},
		{name: "a control character in a string", payload: "{\"id\":\"a\tb\"}", wantErr: true},
		{name: "a bad escape", payload: `{"id":"\x"}`, wantErr: true},
		{name: "a bad number", payload: `{"n":01}`, wantErr: true},
		{name: "a trailing comma", payload: `{"choices":[],}`, wantErr: true},
		{name: "nesting past encoding/json's limit", payload: `{"a":` + strings.Repeat("[", maxChunkDepth) + strings.Repeat("]", maxChunkDepth) + `}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got chunk
			err := got.decode([]byte(tt.payload))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("decode = %+v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if len(got.calls) == 0 {
				got.calls = nil
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decode = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestChunkDecodeReusesCalls checks that a chunk's tool calls never leak into the next one.
func TestChunkDecodeReusesCalls(t *testing.T) {
	var c chunk
	if err := c.decode([]byte(`{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"n","arguments":"x"}},{"id":"b"}]}}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.decode([]byte(`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"y"}}]}}]}`)); err != nil {
		t.Fatal(err)
	}
	if want := []toolCall{{args: "y"}}; !reflect.DeepEqual(c.calls, want) {
		t.Errorf("calls = %+v, want %+v", c.calls, want)
	}
}

func FuzzChunkDecode(f *testing.F) {
	fuzzcorpus.Add(f, "../../testdata/fuzz/FuzzChunkDecode")
	for _, p := range []string{chunkRole, chunkHel, chunkLo, chunkStop, chunkUsage, chunkNoneOf} {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var got chunk
		err := got.decode(payload)
		var want oai.ChatCompletionStreamResponse
		wantErr := json.Unmarshal(payload, &want)
		switch {
		case err != nil && wantErr == nil:
			t.Fatalf("decode(%q) = %v; go-openai accepts it", payload, err)
		case wantErr != nil || hasDuplicateKeys(payload):
			return
		}
		if got.hasUsage != (want.Usage != nil) ||
			want.Usage != nil && (got.usage.PromptTokens != want.Usage.PromptTokens || got.usage.CompletionTokens != want.Usage.CompletionTokens) {
			t.Fatalf("decode(%q): usage %v %+v; go-openai reads %+v", payload, got.hasUsage, got.usage, want.Usage)
		}
		if got.choice != (len(want.Choices) > 0) {
			t.Fatalf("decode(%q): choice = %v, go-openai has %d choices", payload, got.choice, len(want.Choices))
		}
		if !got.choice {
			return
		}
		ch := want.Choices[0]
		if got.content != ch.Delta.Content || got.finish != string(ch.FinishReason) {
			t.Fatalf("decode(%q) = content %q finish %q; go-openai reads %q and %q",
				payload, got.content, got.finish, ch.Delta.Content, ch.FinishReason)
		}
		if len(got.calls) != len(ch.Delta.ToolCalls) {
			t.Fatalf("decode(%q): %d tool calls; go-openai reads %d", payload, len(got.calls), len(ch.Delta.ToolCalls))
		}
		for i, tc := range ch.Delta.ToolCalls {
			w := toolCall{id: tc.ID, name: tc.Function.Name, args: tc.Function.Arguments}
			if tc.Index != nil {
				w.index, w.hasIndex = *tc.Index, true
			}
			if got.calls[i] != w {
				t.Fatalf("decode(%q): tool call %d = %+v; go-openai reads %+v", payload, i, got.calls[i], w)
			}
		}
	})
}

// hasDuplicateKeys reports whether any object in the valid JSON document p names a member twice,
// as encoding/json matches names (ignoring case).
func hasDuplicateKeys(p []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(p))
	type frame struct {
		object bool
		keys   []string
		key    bool // the next token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) || err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if k, ok := tok.(string); ok {
				for _, seen := range top.keys {
					if strings.EqualFold(seen, k) {
						return true
					}
				}
				top.keys = append(top.keys, k)
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}
