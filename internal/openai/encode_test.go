package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"reflect"
	"strconv"
	"testing"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/fuzzcorpus"
)

// escapes holds every kind of character encoding/json escapes, and some it does not.
const escapes = "<b>&amp;</b> \"quoted\" back\\slash \u2028\u2029 tab\tnew\nret\rbs\bff\f nul\x00 esc\x1b us\x1f del\x7f" +
	" héllo 日本語 😀 invalid\xff\xc3( truncated\xe2\x80"

func mustEmbed(t testing.TB, raw string) embeddedJSON {
	t.Helper()
	e, err := embed([]byte(raw))
	if err != nil {
		t.Fatalf("embed(%s): %v", raw, err)
	}
	return e
}

func TestAppendRequest(t *testing.T) {
	toulmin, err := prepare(coachSchema.Schema, 0, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	user := []oai.ChatCompletionMessage{{Role: "user", Content: "hi"}}
	schemaFormat := func(js *oai.ChatCompletionResponseFormatJSONSchema) *oai.ChatCompletionResponseFormat {
		return &oai.ChatCompletionResponseFormat{Type: oai.ChatCompletionResponseFormatTypeJSONSchema, JSONSchema: js}
	}
	tests := []struct {
		name string
		req  oai.ChatCompletionRequest
	}{
		{name: "zero request"},
		{name: "no messages", req: oai.ChatCompletionRequest{Model: "m", Messages: []oai.ChatCompletionMessage{}, Stream: true}},
		{name: "escapes in every string", req: oai.ChatCompletionRequest{
			Model: escapes,
			Messages: []oai.ChatCompletionMessage{
				{Role: escapes, Content: escapes, ToolCallID: escapes},
				{Role: "assistant", ToolCalls: []oai.ToolCall{{ID: escapes, Type: oai.ToolType(escapes), Function: oai.FunctionCall{Name: escapes, Arguments: escapes}}}},
			},
			ResponseFormat: schemaFormat(&oai.ChatCompletionResponseFormatJSONSchema{Name: escapes, Description: escapes, Schema: mustEmbed(t, "{\"description\":\"<b>&amp;</b> \u2028\u2029 é\\n\"}")}),
			Tools:          []oai.Tool{{Type: oai.ToolType(escapes), Function: &oai.FunctionDefinition{Name: escapes, Description: escapes}}},
			ToolChoice:     oai.ToolChoice{Type: oai.ToolType(escapes), Function: oai.ToolFunction{Name: escapes}},
		}},
		{name: "empty content", req: oai.ChatCompletionRequest{Model: "m", Messages: []oai.ChatCompletionMessage{{Role: "assistant"}, {}}}},
		{name: "tool calls", req: oai.ChatCompletionRequest{Model: "m", Messages: []oai.ChatCompletionMessage{
			{Role: "assistant", Content: "calling", ToolCalls: []oai.ToolCall{
				{ID: "call_1", Type: oai.ToolTypeFunction, Function: oai.FunctionCall{Name: "display_card", Arguments: `{"content":"<x>"}`}},
				{Type: oai.ToolTypeFunction, Function: oai.FunctionCall{Name: "only_name"}},
				{ID: "call_3", Function: oai.FunctionCall{Arguments: "{}"}},
				{},
			}},
			{Role: "tool", Content: "shown", ToolCallID: "call_1"},
			{Role: "assistant", ToolCalls: []oai.ToolCall{}},
		}}},
		{name: "forced tool", req: oai.ChatCompletionRequest{Model: "m", Messages: user, Stream: true,
			Tools: []oai.Tool{{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{
				Name: "display_card", Description: "Show a card.", Parameters: json.RawMessage(" {\n \"type\": \"object\", \"description\": \"a <card> & \u2028\" }\n"),
			}}},
			ToolChoice: oai.ToolChoice{Type: oai.ToolTypeFunction, Function: oai.ToolFunction{Name: "display_card"}},
		}},
		{name: "tools of every shape", req: oai.ChatCompletionRequest{Model: "m", Messages: user, Tools: []oai.Tool{
			{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{Name: "strict", Strict: true, Parameters: mustEmbed(t, `{"type":"object"}`)}},
			{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{Name: "no_parameters"}},
			{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{Name: "nil_raw", Parameters: json.RawMessage(nil)}},
			{Type: oai.ToolTypeWebSearch},
			{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{}, Parameters: map[string]any{}},
		}}},
		{name: "tool choice without a name", req: oai.ChatCompletionRequest{Model: "m", Messages: user, ToolChoice: oai.ToolChoice{}}},
		{name: "required tool choice and usage", req: oai.ChatCompletionRequest{Model: "m", Messages: user, Stream: true,
			Tools:      []oai.Tool{{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{Name: "display_card", Parameters: mustEmbed(t, `{"type":"object"}`)}}},
			ToolChoice: "required", StreamOptions: &oai.StreamOptions{IncludeUsage: true}}},
		{name: "empty stream options", req: oai.ChatCompletionRequest{Model: "m", Messages: user, StreamOptions: &oai.StreamOptions{}}},
		{name: "json_schema strict", req: oai.ChatCompletionRequest{Model: "m", Messages: user, Stream: true,
			ResponseFormat: schemaFormat(&oai.ChatCompletionResponseFormatJSONSchema{Name: "coach-ai-result", Schema: toulmin.strict, Strict: true})}},
		{name: "json_schema not strict", req: oai.ChatCompletionRequest{Model: "m", Messages: user,
			ResponseFormat: schemaFormat(&oai.ChatCompletionResponseFormatJSONSchema{Name: "coach-ai-result", Schema: toulmin.compact})}},
		{name: "json_schema with a description and a raw schema", req: oai.ChatCompletionRequest{Model: "m", Messages: user,
			ResponseFormat: schemaFormat(&oai.ChatCompletionResponseFormatJSONSchema{Name: "n", Description: "d", Schema: json.RawMessage(coachSchema.Schema), Strict: true})}},
		{name: "json_schema without a schema", req: oai.ChatCompletionRequest{Model: "m", Messages: user,
			ResponseFormat: schemaFormat(&oai.ChatCompletionResponseFormatJSONSchema{Name: "n"})}},
		{name: "json_schema without a type", req: oai.ChatCompletionRequest{Model: "m", Messages: user,
			ResponseFormat: &oai.ChatCompletionResponseFormat{JSONSchema: &oai.ChatCompletionResponseFormatJSONSchema{Name: "n", Schema: toulmin.strict}}}},
		{name: "json_object", req: oai.ChatCompletionRequest{Model: "m", Messages: user,
			ResponseFormat: &oai.ChatCompletionResponseFormat{Type: oai.ChatCompletionResponseFormatTypeJSONObject}}},
		{name: "text", req: oai.ChatCompletionRequest{Model: "m", Messages: user,
			ResponseFormat: &oai.ChatCompletionResponseFormat{Type: oai.ChatCompletionResponseFormatTypeText}}},
		{name: "empty response format", req: oai.ChatCompletionRequest{Model: "m", Messages: user, ResponseFormat: &oai.ChatCompletionResponseFormat{}}},
		{name: "max tokens", req: oai.ChatCompletionRequest{Model: "m", Messages: user, MaxTokens: 800}},
		{name: "max completion tokens", req: oai.ChatCompletionRequest{Model: "gpt-5-mini", Messages: user, MaxCompletionTokens: 800}},
		{name: "negative and huge token counts", req: oai.ChatCompletionRequest{Model: "m", Messages: user, MaxTokens: -1, MaxCompletionTokens: math.MaxInt}},
	}
	for _, temp := range []float32{0.7, 1e-7, 1e21, 0.1, 1, 2, -0.5, 1e-6, 9.999999e-7, 9.999999e20, 123456789, 1.5e-10,
		math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Copysign(0, -1))} {
		tests = append(tests, struct {
			name string
			req  oai.ChatCompletionRequest
		}{name: "temperature " + strconv.FormatFloat(float64(temp), 'g', -1, 32), req: oai.ChatCompletionRequest{Model: "m", Messages: user, Temperature: temp}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(&tt.req)
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			got, ok := appendRequest(nil, &tt.req)
			if !ok {
				t.Fatalf("appendRequest fell back; json.Marshal wrote\n%s", want)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("appendRequest =\n%s\njson.Marshal =\n%s", got, want)
			}
		})
	}
}

// TestAppendRequestFields sets each field of the request and of the types in it, one at a time,
// to a value that is not zero: appendRequest must encode the fields it knows exactly as
// json.Marshal does, and leave every other field, including any a newer go-openai adds, to
// json.Marshal.
func TestAppendRequestFields(t *testing.T) {
	// encoded names the fields appendRequest encodes. FunctionDefinition's Parameters is
	// missing: it is encoded only for the types (*Client).request puts there, not for the
	// string this test does.
	encoded := map[string]bool{
		"ChatCompletionRequest.Model": true, "ChatCompletionRequest.Messages": true,
		"ChatCompletionRequest.MaxTokens": true, "ChatCompletionRequest.MaxCompletionTokens": true,
		"ChatCompletionRequest.Temperature": true, "ChatCompletionRequest.Stream": true,
		"ChatCompletionRequest.ResponseFormat": true, "ChatCompletionRequest.Tools": true,
		"ChatCompletionMessage.Role": true, "ChatCompletionMessage.Content": true,
		"ChatCompletionMessage.ToolCalls": true, "ChatCompletionMessage.ToolCallID": true,
		"ToolCall.ID": true, "ToolCall.Type": true, "ToolCall.Function": true,
		"FunctionCall.Name": true, "FunctionCall.Arguments": true,
		"ChatCompletionResponseFormat.Type": true, "ChatCompletionResponseFormat.JSONSchema": true,
		"ChatCompletionResponseFormatJSONSchema.Name": true, "ChatCompletionResponseFormatJSONSchema.Description": true,
		"ChatCompletionResponseFormatJSONSchema.Schema": true, "ChatCompletionResponseFormatJSONSchema.Strict": true,
		"Tool.Type": true, "Tool.Function": true,
		"FunctionDefinition.Name": true, "FunctionDefinition.Description": true, "FunctionDefinition.Strict": true,
		"ToolChoice.Type": true, "ToolChoice.Function": true,
		"ChatCompletionRequest.ToolChoice": true, "ChatCompletionRequest.StreamOptions": true,
		"StreamOptions.IncludeUsage": true,
	}
	// base sets every part of a request that a field below belongs to, and no field it tests.
	base := func() *oai.ChatCompletionRequest {
		return &oai.ChatCompletionRequest{
			Messages: []oai.ChatCompletionMessage{{}, {ToolCalls: []oai.ToolCall{{}}}},
			ResponseFormat: &oai.ChatCompletionResponseFormat{
				JSONSchema: &oai.ChatCompletionResponseFormatJSONSchema{},
			},
			Tools:         []oai.Tool{{Function: &oai.FunctionDefinition{}}},
			ToolChoice:    oai.ToolChoice{},
			StreamOptions: &oai.StreamOptions{},
		}
	}
	parts := []struct {
		typ reflect.Type
		// edit calls change with the part of r of type typ, settable.
		edit func(r *oai.ChatCompletionRequest, change func(reflect.Value))
	}{
		{reflect.TypeFor[oai.ChatCompletionRequest](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			change(reflect.ValueOf(r).Elem())
		}},
		{reflect.TypeFor[oai.ChatCompletionMessage](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			change(reflect.ValueOf(&r.Messages[0]).Elem())
		}},
		{reflect.TypeFor[oai.ToolCall](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			change(reflect.ValueOf(&r.Messages[1].ToolCalls[0]).Elem())
		}},
		{reflect.TypeFor[oai.FunctionCall](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			change(reflect.ValueOf(&r.Messages[1].ToolCalls[0].Function).Elem())
		}},
		{reflect.TypeFor[oai.ChatCompletionResponseFormat](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			change(reflect.ValueOf(r.ResponseFormat).Elem())
		}},
		{reflect.TypeFor[oai.ChatCompletionResponseFormatJSONSchema](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			change(reflect.ValueOf(r.ResponseFormat.JSONSchema).Elem())
		}},
		{reflect.TypeFor[oai.Tool](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			change(reflect.ValueOf(&r.Tools[0]).Elem())
		}},
		{reflect.TypeFor[oai.FunctionDefinition](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			change(reflect.ValueOf(r.Tools[0].Function).Elem())
		}},
		{reflect.TypeFor[oai.ToolChoice](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			tc := r.ToolChoice.(oai.ToolChoice)
			change(reflect.ValueOf(&tc).Elem())
			r.ToolChoice = tc
		}},
		{reflect.TypeFor[oai.StreamOptions](), func(r *oai.ChatCompletionRequest, change func(reflect.Value)) {
			change(reflect.ValueOf(r.StreamOptions).Elem())
		}},
	}
	for _, p := range parts {
		for i := range p.typ.NumField() {
			f := p.typ.Field(i)
			name := p.typ.Name() + "." + f.Name
			t.Run(name, func(t *testing.T) {
				r := base()
				p.edit(r, func(v reflect.Value) { v.Field(i).Set(nonZero(t, f.Type)) })
				got, ok := appendRequest(nil, r)
				want, err := json.Marshal(r)
				switch {
				case ok != encoded[name]:
					t.Fatalf("appendRequest reports %v, want %v", ok, encoded[name])
				case ok && err != nil:
					t.Fatalf("appendRequest encodes it; json.Marshal fails: %v", err)
				case ok && !bytes.Equal(got, want):
					t.Errorf("appendRequest =\n%s\njson.Marshal =\n%s", got, want)
				}
			})
		}
	}
}

// nonZero returns a value of type t that is not its zero value.
func nonZero(t *testing.T, typ reflect.Type) reflect.Value {
	t.Helper()
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.String:
		v.SetString("x<\u2028")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Pointer:
		v.Set(reflect.New(typ.Elem()))
	case reflect.Slice:
		v.Set(reflect.MakeSlice(typ, 1, 1))
	case reflect.Map:
		v.Set(reflect.MakeMap(typ))
		v.SetMapIndex(nonZero(t, typ.Key()), nonZero(t, typ.Elem()))
	case reflect.Struct:
		v.Field(0).Set(nonZero(t, typ.Field(0).Type))
	case reflect.Interface:
		if typ == reflect.TypeFor[json.Marshaler]() {
			v.Set(reflect.ValueOf(json.RawMessage(`{"a": "<"}`)))
		} else {
			v.Set(reflect.ValueOf("x"))
		}
	default:
		t.Fatalf("no value that is not zero for %v", typ)
	}
	return v
}

// TestEncodeRequestFallsBack checks that a request appendRequest does not encode gets
// json.Marshal's bytes, or its error.
func TestEncodeRequestFallsBack(t *testing.T) {
	user := []oai.ChatCompletionMessage{{Role: "user", Content: "hi"}}
	tests := []struct {
		name string
		req  oai.ChatCompletionRequest
	}{
		{name: "top_p", req: oai.ChatCompletionRequest{Model: "m", Messages: user, TopP: 0.9}},
		{name: "parallel tool calls not a bool", req: oai.ChatCompletionRequest{Model: "m", Messages: user, ParallelToolCalls: "auto"}},
		{name: "multi-part content", req: oai.ChatCompletionRequest{Model: "m", Messages: []oai.ChatCompletionMessage{
			{Role: "user", MultiContent: []oai.ChatMessagePart{{Type: oai.ChatMessagePartTypeText, Text: "hi"}}},
		}}},
		{name: "parameters as a map", req: oai.ChatCompletionRequest{Model: "m", Messages: user, Tools: []oai.Tool{
			{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{Name: "f", Parameters: map[string]any{"type": "object"}}},
		}}},
		{name: "NaN temperature", req: oai.ChatCompletionRequest{Model: "m", Messages: user, Temperature: float32(math.NaN())}},
		{name: "invalid raw schema", req: oai.ChatCompletionRequest{Model: "m", Messages: user, ResponseFormat: &oai.ChatCompletionResponseFormat{
			JSONSchema: &oai.ChatCompletionResponseFormatJSONSchema{Schema: json.RawMessage(`{"type":`)},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, ok := appendRequest(nil, &tt.req); ok {
				t.Errorf("appendRequest encodes it, want it left to json.Marshal")
			}
			got, err := encodeRequest(&tt.req)
			want, wantErr := json.Marshal(&tt.req)
			if !bytes.Equal(got, want) || (err == nil) != (wantErr == nil) {
				t.Errorf("encodeRequest = %s, %v; json.Marshal = %s, %v", got, err, want, wantErr)
			}
		})
	}
}

// bodyTransport answers like memTransport and keeps the body of each request, as read from
// Body and again from GetBody, the way the transport resends on a dead keep-alive connection.
type bodyTransport struct {
	memTransport
	body, again []byte
	length      int64
}

func (b *bodyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	b.length = req.ContentLength
	b.body, _ = io.ReadAll(req.Body)
	if rc, err := req.GetBody(); err == nil {
		b.again, _ = io.ReadAll(rc)
	}
	return b.memTransport.RoundTrip(req)
}

// TestStreamSendsEncodedRequest checks that the endpoint receives exactly what json.Marshal
// makes of the request, which is what go-openai used to send.
func TestStreamSendsEncodedRequest(t *testing.T) {
	tool := &coach.Tool{Name: "display_card", Description: "Show a <card>.", Parameters: json.RawMessage(`{"type": "object"}`)}
	tests := []struct {
		name   string
		format Format
		model  string
		req    coach.ModelRequest
	}{
		{name: "json_schema", req: toulminRequest()},
		{name: "json_object", format: FormatJSONObject, req: toulminRequest()},
		{name: "prompt", format: FormatPrompt, req: toulminRequest()},
		{name: "tool", req: coach.ModelRequest{Messages: hello.Messages, Tool: tool, Temperature: 0.3}},
		{name: "reasoning model", model: "o3-mini", req: coach.ModelRequest{Messages: hello.Messages, MaxTokens: 100, Temperature: 0.3}},
		{name: "a temperature JSON cannot hold", req: coach.ModelRequest{Messages: hello.Messages, Temperature: float32(math.Inf(1))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := &bodyTransport{memTransport: memTransport{body: sseBodyOf(1)}}
			c := New(Config{BaseURL: "http://mem/v1", Model: tt.model, Format: tt.format, HTTPClient: &http.Client{Transport: rt}})
			creq, err := c.request(tt.req, *c.shape.Load())
			if err != nil {
				t.Fatal(err)
			}
			want, wantErr := json.Marshal(creq)
			s, err := c.Stream(context.Background(), tt.req, coach.StreamHooks{})
			if wantErr != nil {
				if me := modelError(t, err); me.Class != ClassClient {
					t.Errorf("Stream error class %q, want %q", me.Class, ClassClient)
				}
				return
			}
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			defer s.Close()
			if !bytes.Equal(rt.body, want) {
				t.Errorf("body =\n%s\nwant\n%s", rt.body, want)
			}
			if !bytes.Equal(rt.again, want) {
				t.Errorf("GetBody =\n%s\nwant\n%s", rt.again, want)
			}
			if rt.length != int64(len(want)) {
				t.Errorf("ContentLength = %d, want %d", rt.length, len(want))
			}
		})
	}
}

// TestStreamValidatesWholeRequest checks that go-openai's validator sees the whole request the
// adapter sends, tools included, before anything is sent.
func TestStreamValidatesWholeRequest(t *testing.T) {
	c := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: oai.GPT6Sol})
	_, err := c.Stream(context.Background(), coach.ModelRequest{Messages: hello.Messages, Tool: &coach.Tool{Name: "display_card"}}, coach.StreamHooks{})
	if me := modelError(t, err); me.Class != ClassClient || !errors.Is(me.Err, oai.ErrReasoningToolsRequireResponses) {
		t.Errorf("got class %q error %v, want %q %v", me.Class, me.Err, ClassClient, oai.ErrReasoningToolsRequireResponses)
	}
}

func FuzzRequestEncode(f *testing.F) {
	fuzzcorpus.Add(f, "../../testdata/fuzz/FuzzRequestEncode")
	f.Fuzz(func(t *testing.T, model, system, user, name, args, schema string, temperature, tokens, shape int) {
		r := fuzzedRequest(model, system, user, name, args, schema, temperature, tokens, shape)
		got, ok := appendRequest(nil, &r)
		want, err := json.Marshal(&r)
		switch {
		case ok != (err == nil):
			t.Fatalf("appendRequest reports %v; json.Marshal fails with %v", ok, err)
		case ok && !bytes.Equal(got, want):
			t.Fatalf("appendRequest =\n%q\njson.Marshal =\n%q", got, want)
		}
	})
}

// fuzzedRequest builds a request of the fields appendRequest encodes from a fuzzer's values;
// the bits of shape choose which fields are set, and temperature holds a float32's bits.
func fuzzedRequest(model, system, user, name, args, schema string, temperature, tokens, shape int) oai.ChatCompletionRequest {
	bit := func(n uint) bool { return shape&(1<<n) != 0 }
	r := oai.ChatCompletionRequest{Model: model, Temperature: math.Float32frombits(uint32(temperature)), Stream: bit(0)}
	if bit(1) {
		r.MaxCompletionTokens = tokens
	} else {
		r.MaxTokens = tokens
	}
	if !bit(2) {
		r.Messages = []oai.ChatCompletionMessage{
			{Role: coach.RoleSystem, Content: system},
			{Role: coach.RoleUser, Content: user},
			{Role: coach.RoleAssistant, ToolCalls: []oai.ToolCall{{ID: name, Type: oai.ToolTypeFunction, Function: oai.FunctionCall{Name: name, Arguments: args}}}},
			{Role: coach.RoleTool, Content: args, ToolCallID: name},
		}
	}
	// The schema is embedded as the schema cache does when it can be, else sent raw.
	var raw json.Marshaler = json.RawMessage(schema)
	if e, err := embed([]byte(schema)); err == nil && bit(3) {
		raw = e
	}
	switch {
	case bit(4):
		r.Tools = []oai.Tool{{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{Name: name, Description: user, Strict: bit(5), Parameters: raw}}}
		r.ToolChoice = oai.ToolChoice{Type: oai.ToolTypeFunction, Function: oai.ToolFunction{Name: name}}
		if bit(8) {
			r.ToolChoice = "required"
		}
	case bit(5):
		r.ResponseFormat = &oai.ChatCompletionResponseFormat{Type: oai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &oai.ChatCompletionResponseFormatJSONSchema{Name: name, Description: args, Schema: raw, Strict: bit(6)}}
	case bit(6):
		r.ResponseFormat = &oai.ChatCompletionResponseFormat{Type: oai.ChatCompletionResponseFormatTypeJSONObject}
	}
	if bit(7) {
		r.StreamOptions = &oai.StreamOptions{IncludeUsage: bit(9)}
	}
	return r
}
