package openai

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestDowngrade checks that a 400 naming a setting the request sent gets that setting's next
// weaker form once, that the Client keeps the weaker form for later requests, and that other
// 400s are the request's own fault.
func TestDowngrade(t *testing.T) {
	card := &coach.Tool{Name: "display_card", Parameters: []byte(`{"type":"object"}`)}
	cardReq := coach.ModelRequest{Messages: hello.Messages, Tool: card}
	schemaReq := coach.ModelRequest{Messages: hello.Messages, Schema: &coachSchema}
	yes := true
	llamaGrammar, err := os.ReadFile("../../testdata/errors/llamacpp-grammar-repetition.json")
	if err != nil {
		t.Fatal(err)
	}
	xgrammar, err := os.ReadFile("../../testdata/errors/vllm-xgrammar-unsupported.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  Config
		req  coach.ModelRequest
		// rejections are the 400 bodies of the first requests, in order.
		rejections []string
		// want is the body member that each request sent, with "-" for absent: one per
		// request of the first Stream, then the second Stream's.
		member string
		want   []string
		// downgrades are the reported downgrades as "setting from>to".
		downgrades []string
		// wantErr is the class of the first Stream's error, "" for none.
		wantErr string
	}{
		{
			name: "LM Studio's answer to json_object", cfg: Config{ResponseFormat: "json_object"}, req: schemaReq,
			rejections: []string{`{"error":"'response_format.type' must be 'json_schema' or 'text'"}`},
			member:     "response_format", want: []string{`{"type":"json_object"}`, "-", "-"},
			downgrades: []string{"response_format json_object>prompt"},
		},
		{
			name: "LM Studio's answer to a named tool choice", cfg: Config{Profile: "vllm", IncludeUsage: new(bool)}, req: cardReq,
			rejections: []string{`{"error":"Invalid tool_choice type: 'object'. Supported string values: none, auto, required"}`},
			member:     "tool_choice", want: []string{`{"type":"function","function":{"name":"display_card"}}`, `"required"`, `"required"`},
			downgrades: []string{"tool_choice named>required"},
		},
		{
			name: "a long error body is cut in the report", cfg: Config{ResponseFormat: "json_object"}, req: schemaReq,
			rejections: []string{`{"error":{"message":"response_format json_object is not supported ` + strings.Repeat("é", 2000) + `"}}`},
			member:     "response_format", want: []string{`{"type":"json_object"}`, "-", "-"},
			downgrades: []string{"response_format json_object>prompt"},
		},
		{
			name: "Azure's answer to stream_options", cfg: Config{Profile: "openai"}, req: hello,
			rejections: []string{`{"error":{"message":"Unknown parameter: 'stream_options'.","type":"invalid_request_error","param":"stream_options","code":"unknown_parameter"}}`},
			member:     "stream_options", want: []string{`{"include_usage":true}`, "-", "-"},
			downgrades: []string{"include_usage true>false"},
		},
		{
			name: "two settings rejected one after the other", cfg: Config{Profile: "openai", IncludeUsage: &yes}, req: schemaReq,
			rejections: []string{
				`{"error":{"message":"stream_options is not supported","type":"invalid_request_error"}}`,
				`{"error":{"message":"Invalid schema for response_format 'coach-ai-result'","type":"invalid_request_error","param":"response_format"}}`,
				`{"error":{"message":"Invalid schema for response_format 'coach-ai-result'","type":"invalid_request_error","param":"response_format"}}`,
			},
			// A rejected response_format first loses the strict schema's bounds, then the format.
			member: "response_format", want: []string{"json_schema", "json_schema", "json_schema", "json_object", "json_object"},
			downgrades: []string{"include_usage true>false", "schema_bounds kept>dropped", "response_format json_schema>json_object"},
		},
		{
			// A refusal of the schema names the grammar, not the setting: the schema's
			// bounds go first.
			name: "llama-server's grammar refusal", cfg: Config{Profile: "llamacpp"}, req: schemaReq,
			rejections: []string{string(llamaGrammar)},
			member:     "response_format", want: []string{"json_schema", "json_schema", "json_schema"},
			downgrades: []string{"schema_bounds kept>dropped"},
		},
		{
			name: "llama-server's grammar refusal of the schema's format too", cfg: Config{Profile: "llamacpp"}, req: schemaReq,
			rejections: []string{string(llamaGrammar), string(llamaGrammar)},
			member:     "response_format", want: []string{"json_schema", "json_schema", "json_object", "json_object"},
			downgrades: []string{"schema_bounds kept>dropped", "response_format json_schema>json_object"},
		},
		{
			name: "llama-server's grammar refusal of a forced tool's parameters", cfg: Config{Profile: "llamacpp", ToolChoice: "required", IncludeUsage: new(bool)},
			req: cardReq, rejections: []string{string(llamaGrammar)},
			member: "tool_choice", want: []string{`"required"`, "-", "-"},
			downgrades: []string{"tool_choice required>none"},
		},
		{
			name: "vLLM's xgrammar refusal", cfg: Config{Profile: "vllm"}, req: schemaReq,
			rejections: []string{string(xgrammar)},
			member:     "response_format", want: []string{"json_schema", "json_schema", "json_schema"},
			downgrades: []string{"schema_bounds kept>dropped"},
		},
		{
			name: "context length is not a shape fault", cfg: Config{Profile: "openai"}, req: schemaReq,
			rejections: []string{`{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens (response_format included).","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`},
			member:     "response_format", want: []string{"json_schema", "json_schema"},
			wantErr: ClassRefused,
		},
		{
			name: "content policy is not a shape fault", cfg: Config{Profile: "openai"}, req: cardReq,
			rejections: []string{`{"error":{"message":"Your request was rejected by the content_filter (tool_choice left alone).","type":"invalid_request_error","code":"content_filter"}}`},
			member:     "tool_choice", want: []string{`{"type":"function","function":{"name":"display_card"}}`, `{"type":"function","function":{"name":"display_card"}}`},
			wantErr: ClassRefused,
		},
		{
			name: "a setting the request did not send is not downgraded", cfg: Config{}, req: hello,
			rejections: []string{`{"error":{"message":"response_format is not supported","type":"invalid_request_error"}}`},
			member:     "response_format", want: []string{"-", "-"},
			wantErr: ClassInvalid,
		},
		{
			name: "the weakest form is not downgraded further", cfg: Config{Profile: "generic"}, req: cardReq,
			rejections: []string{`{"error":{"message":"tools and response_format are not supported","type":"invalid_request_error"}}`},
			member:     "tools", want: []string{"-", "-"},
			wantErr: ClassInvalid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			u := newUpstream(t, func(w http.ResponseWriter, _ *http.Request) {
				if n := int(calls.Add(1)); n <= len(tt.rejections) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = io.WriteString(w, tt.rejections[n-1])
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				events(w, chunkHel, chunkStop, done)
			})
			var mu sync.Mutex
			var got []string
			cfg := tt.cfg
			cfg.Name = "primary"
			cfg.OnDowngrade = func(d Downgrade) {
				mu.Lock()
				defer mu.Unlock()
				if d.Endpoint != "primary" || d.Reason == "" || len(d.Reason) > maxReason+len("…") || !utf8.ValidString(d.Reason) {
					t.Errorf("downgrade %+v, want the endpoint's name and the reason", d)
				}
				got = append(got, d.Setting+" "+d.From+">"+d.To)
			}
			c := u.client(cfg)
			for i := range 2 {
				s, err := c.Stream(context.Background(), tt.req, coach.StreamHooks{})
				if tt.wantErr != "" && i == 0 {
					if me := modelError(t, err); me.Class != tt.wantErr {
						t.Errorf("class %q, want %q", me.Class, tt.wantErr)
					}
					continue
				}
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				s.Close()
			}
			for i, want := range tt.want {
				v, ok := u.request(t).body[tt.member]
				switch {
				case want == "-" && ok:
					t.Errorf("request %d: %s = %v, want it absent", i+1, tt.member, v)
				case want == "-":
				case !ok:
					t.Errorf("request %d: %s is absent, want %s", i+1, tt.member, want)
				case strings.HasPrefix(want, "{") || strings.HasPrefix(want, `"`):
					assertJSON(t, tt.member, v, want)
				default:
					if typ := v.(map[string]any)["type"]; typ != want {
						t.Errorf("request %d: %s type %v, want %s", i+1, tt.member, typ, want)
					}
				}
			}
			if n := int(calls.Load()); n != len(tt.want) {
				t.Errorf("%d requests, want %d", n, len(tt.want))
			}
			if strings.Join(got, ", ") != strings.Join(tt.downgrades, ", ") {
				t.Errorf("downgrades %q, want %q", got, tt.downgrades)
			}
		})
	}
}
