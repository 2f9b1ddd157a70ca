package openai

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/coach"
)

const systemPrompt = "You are a coach.\n\n## Session facts\ncontract: toulmin\nstep: claim"

// freeForm has an object without properties, which strict mode cannot express.
const freeForm = `{"type":"object","properties":{"answer":{"type":"string"},"meta":{"type":"object"}},"required":["answer"]}`

func TestRequestShape(t *testing.T) {
	toulmin := api.Schema("coach-ai-result.json")
	// No profile keeps the bounds OpenAI's strict mode enforces.
	strictToulmin, err := StrictFor(toulmin, BoundNumbers|BoundArrays|BoundPatterns)
	if err != nil {
		t.Fatal(err)
	}
	instruction := "Reply with one JSON object that validates against this JSON schema:\n" + compact(t, string(toulmin))
	withSchema := coach.ModelRequest{
		Messages: []coach.Message{{Role: coach.RoleSystem, Content: systemPrompt}, {Role: coach.RoleUser, Content: "Cats are great."}},
		Schema:   &coach.OutputSchema{Name: "coach-ai-result", Schema: toulmin},
	}
	tool := &coach.Tool{Name: "display_card", Description: "Show a card.", Parameters: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string"}}}`)}

	cardHistory := []coach.Message{
		{Role: coach.RoleSystem, Content: systemPrompt},
		{Role: coach.RoleUser, Content: "Begin training."},
		{Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: "call_1", Name: "display_card", Arguments: `{"content":"x"}`}}},
		{Role: coach.RoleTool, ToolCallID: "call_1", Content: "displayed"},
		{Role: coach.RoleUser, Content: "[Continue]"},
	}
	yes, no := true, false
	strictTool, err := Strict(tool.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		format Format
		cfg    Config
		model  string
		req    coach.ModelRequest
		// want maps top-level body members to their expected JSON; "-" means absent.
		want map[string]string
	}{
		{
			name: "json_schema strict", format: FormatJSONSchema, req: withSchema,
			want: map[string]string{
				"response_format": `{"type":"json_schema","json_schema":{"name":"coach-ai-result","strict":true,"schema":` + string(strictToulmin) + `}}`,
				"messages":        `[{"role":"system","content":` + quote(systemPrompt) + `},{"role":"user","content":"Cats are great."}]`,
				"tools":           "-", "tool_choice": "-", "temperature": "-", "max_tokens": "-",
			},
		},
		{
			name: "json_schema falls back to strict false for a free-form object", format: FormatJSONSchema,
			req: coach.ModelRequest{
				Messages: []coach.Message{{Role: coach.RoleUser, Content: "hi"}},
				Schema:   &coach.OutputSchema{Name: "loose.json", Schema: json.RawMessage(freeForm)},
			},
			want: map[string]string{
				"response_format": `{"type":"json_schema","json_schema":{"name":"loose_json","strict":false,"schema":` + freeForm + `}}`,
			},
		},
		{
			name: "json_object puts the schema before the session facts", format: FormatJSONObject, req: withSchema,
			want: map[string]string{
				"response_format": `{"type":"json_object"}`,
				"messages": `[{"role":"system","content":` +
					quote("You are a coach.\n\n"+instruction+"\n\n## Session facts\ncontract: toulmin\nstep: claim") +
					`},{"role":"user","content":"Cats are great."}]`,
			},
		},
		{
			name: "prompt only", format: FormatPrompt,
			req: coach.ModelRequest{
				Messages: []coach.Message{{Role: coach.RoleSystem, Content: "Be brief."}, {Role: coach.RoleUser, Content: "hi"}, {Role: coach.RoleSystem, Content: "second"}},
				Schema:   withSchema.Schema,
			},
			want: map[string]string{
				"response_format": "-",
				"messages": `[{"role":"system","content":` + quote("Be brief.\n\n"+instruction) +
					`},{"role":"user","content":"hi"},{"role":"system","content":"second"}]`,
			},
		},
		{
			name: "prompt without a system message gets one", format: FormatPrompt,
			req: coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleUser, Content: "hi"}}, Schema: withSchema.Schema},
			want: map[string]string{
				"messages": `[{"role":"system","content":` + quote(instruction) + `},{"role":"user","content":"hi"}]`,
			},
		},
		{
			name: "tool forces the function and sends no response_format", format: FormatJSONObject,
			req: coach.ModelRequest{
				Messages: []coach.Message{{Role: coach.RoleSystem, Content: "Cards."}, {Role: coach.RoleUser, Content: "Begin training."}},
				Schema:   withSchema.Schema,
				Tool:     tool,
			},
			want: map[string]string{
				"tools":           `[{"type":"function","function":{"name":"display_card","description":"Show a card.","parameters":{"type":"object","properties":{"content":{"type":"string"}}}}}]`,
				"tool_choice":     `{"type":"function","function":{"name":"display_card"}}`,
				"response_format": "-",
				"messages":        `[{"role":"system","content":"Cards."},{"role":"user","content":"Begin training."}]`,
			},
		},
		{
			name: "history with tool calls, temperature and max tokens", format: FormatJSONSchema,
			req: coach.ModelRequest{
				Messages: []coach.Message{
					{Role: coach.RoleSystem, Content: "Cards."},
					{Role: coach.RoleUser, Content: "Begin training."},
					{Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: "call_1", Name: "display_card", Arguments: `{"content":"x"}`}}},
					{Role: coach.RoleTool, ToolCallID: "call_1", Content: "shown"},
					{Role: coach.RoleUser, Content: "[Continue]"},
				},
				Temperature: 0.5,
				MaxTokens:   800,
			},
			want: map[string]string{
				"messages": `[{"role":"system","content":"Cards."},{"role":"user","content":"Begin training."},
					{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"display_card","arguments":"{\"content\":\"x\"}"}}]},
					{"role":"tool","content":"shown","tool_call_id":"call_1"},{"role":"user","content":"[Continue]"}]`,
				"temperature": `0.5`, "max_tokens": `800`, "max_completion_tokens": "-",
				"model": `"test-model"`, "stream": `true`, "response_format": "-",
			},
		},
		{
			name: "reasoning model gets max_completion_tokens and no temperature", format: FormatJSONSchema, model: "gpt-5-mini",
			req: coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleUser, Content: "hi"}}, Temperature: 0.5, MaxTokens: 800},
			want: map[string]string{
				"max_completion_tokens": `800`, "max_tokens": "-", "temperature": "-", "model": `"gpt-5-mini"`,
			},
		},
		{
			name: "no profile: no usage asked for, whatever the format", cfg: Config{Format: FormatJSONObject}, req: withSchema,
			want: map[string]string{"stream_options": "-", "response_format": `{"type":"json_object"}`},
		},
		{
			name: "openai profile asks for usage", cfg: Config{Profile: "openai"}, req: withSchema,
			want: map[string]string{"stream_options": `{"include_usage":true}`},
		},
		{
			name: "an override turns usage off", cfg: Config{Profile: "openai", IncludeUsage: &no}, req: withSchema,
			want: map[string]string{"stream_options": "-"},
		},
		{
			name: "lmstudio forces the single tool with required",
			cfg:  Config{Profile: "lmstudio"}, req: coach.ModelRequest{Messages: cardHistory, Tool: tool},
			want: map[string]string{"tool_choice": `"required"`, "tools": `[{"type":"function","function":{"name":"display_card","description":"Show a card.","parameters":{"type":"object","properties":{"content":{"type":"string"}}}}}]`,
				"stream_options": "-"},
		},
		{
			name: "anthropic-openai puts the schema into the prompt",
			cfg:  Config{Profile: "anthropic-openai"}, req: withSchema,
			want: map[string]string{"response_format": "-", "stream_options": `{"include_usage":true}`,
				"messages": `[{"role":"system","content":` + quote("You are a coach.\n\n"+instruction+"\n\n## Session facts\ncontract: toulmin\nstep: claim") +
					`},{"role":"user","content":"Cats are great."}]`},
		},
		{
			name: "ollama asks for the card as structured output and rewrites the tool history",
			cfg:  Config{Profile: "ollama", IncludeUsage: &yes}, req: coach.ModelRequest{Messages: cardHistory, Tool: tool},
			want: map[string]string{
				"tools": "-", "tool_choice": "-", "stream_options": `{"include_usage":true}`,
				"response_format": `{"type":"json_schema","json_schema":{"name":"display_card","strict":true,"schema":` + string(strictTool) + `}}`,
				"messages": `[{"role":"system","content":` + quote("You are a coach.\n\n"+toolAsContent(tool)+"\n\n## Session facts\ncontract: toulmin\nstep: claim") + `},
					{"role":"user","content":"Begin training."},{"role":"assistant","content":"{\"content\":\"x\"}"},{"role":"user","content":"[Continue]"}]`,
			},
		},
		{
			name: "generic sends neither tools nor response_format, and asks for usage",
			cfg:  Config{Profile: "generic"}, req: coach.ModelRequest{Messages: cardHistory[:2], Tool: tool},
			want: map[string]string{"tools": "-", "tool_choice": "-", "response_format": "-", "stream_options": `{"include_usage":true}`},
		},
		{
			name: "overrides of tool choice and format",
			cfg:  Config{Profile: "generic", ToolChoice: "named", ResponseFormat: "json_object"}, req: coach.ModelRequest{Messages: cardHistory[:2], Tool: tool},
			want: map[string]string{"tool_choice": `{"type":"function","function":{"name":"display_card"}}`, "response_format": "-"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := newUpstream(t, serve(chunkStop, done))
			model := tt.model
			if model == "" {
				model = "test-model"
			}
			cfg := tt.cfg
			cfg.Model = model
			if cfg.Profile == "" && cfg.Format == 0 {
				cfg.Format = tt.format
			}
			c := u.client(cfg)
			s, err := c.Stream(context.Background(), tt.req, coach.StreamHooks{})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			defer s.Close()
			got := u.request(t)
			if a := got.header.Get("Authorization"); a != "Bearer "+testKey {
				t.Errorf("Authorization = %q, want the bearer key", a)
			}
			if v, ok := got.header["X-Idempotency-Key"]; ok {
				t.Errorf("X-Idempotency-Key = %q sent, want it only to mark the request replayable", v)
			}
			for key, want := range tt.want {
				v, ok := got.body[key]
				switch {
				case want == "-" && ok:
					t.Errorf("%s = %v, want it absent", key, v)
				case want != "-" && !ok:
					t.Errorf("%s is absent, want %s", key, want)
				case want != "-":
					assertJSON(t, key, v, want)
				}
			}
		})
	}
}

func TestSchemaName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"coach-ai-result", "coach-ai-result"},
		{"coach-ai-result.json", "coach-ai-result_json"},
		{"", "result"},
		{"module response/v1", "module_response_v1"},
		{strings.Repeat("a", 70), strings.Repeat("a", 64)},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := schemaName(tt.in); got != tt.want {
				t.Errorf("schemaName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestInvalidSchemaIsClientError(t *testing.T) {
	c := New(Config{BaseURL: "http://127.0.0.1:1/v1"})
	_, err := c.Stream(context.Background(), coach.ModelRequest{
		Messages: []coach.Message{{Role: coach.RoleUser, Content: "hi"}},
		Schema:   &coach.OutputSchema{Name: "broken", Schema: json.RawMessage(`{"type":`)},
	}, coach.StreamHooks{})
	if me := modelError(t, err); me.Class != ClassClient || me.Retryable {
		t.Errorf("got class %q retryable %v, want %q not retryable", me.Class, me.Retryable, ClassClient)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
