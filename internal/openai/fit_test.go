package openai

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/coach"
)

// TestLimitsFit checks what each engine's limits leave out of a schema, and that a property
// named like a keyword is never taken for one.
func TestLimitsFit(t *testing.T) {
	llama := Limits{MaxRepeat: llamaMaxRepeat}
	xgrammar := Limits{PatternOrLength: true, NoMultipleOf: true}
	tests := []struct {
		name         string
		limits       Limits
		schema, want string
	}{
		{"llama.cpp refuses a string bound of 2000", llama,
			`{"type":"string","maxLength":2000}`, `{"type":"string"}`},
		{"llama.cpp compiles 1999", llama,
			`{"type":"string","minLength":1,"maxLength":1999}`, `{"type":"string","minLength":1,"maxLength":1999}`},
		{"llama.cpp ignores a bound past 2000", llama,
			`{"type":"string","maxLength":8000}`, `{"type":"string"}`},
		{"llama.cpp refuses a minimum of 2000", llama,
			`{"type":"string","minLength":2000.0}`, `{"type":"string"}`},
		{"items: the repeated group may hold two rules", llama,
			`{"type":"array","items":{"type":"string","maxLength":2000},"minItems":1,"maxItems":1000}`,
			`{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":1000}`},
		{"items past the limit", llama,
			`{"type":"array","items":{"type":"integer"},"maxItems":1001}`, `{"type":"array","items":{"type":"integer"}}`},
		{"a pattern's quantifier is a repetition too", llama,
			`{"type":"string","pattern":"^a{1,2000}$"}`, `{"type":"string"}`},
		{"a small quantifier and an escaped brace", llama,
			`{"type":"string","pattern":"^\\{a{3}$"}`, `{"type":"string","pattern":"^\\{a{3}$"}`},
		{"a property named maxLength is a name", llama,
			`{"type":"object","properties":{"maxLength":{"type":"integer"},"s":{"type":"string","maxLength":2000}},"$defs":{"d":{"anyOf":[{"type":"string","maxLength":4000},{"type":"null"}]}}}`,
			`{"type":"object","properties":{"maxLength":{"type":"integer"},"s":{"type":"string"}},"$defs":{"d":{"anyOf":[{"type":"string"},{"type":"null"}]}}}`},
		{"xgrammar: pattern or length", xgrammar,
			`{"type":"string","pattern":"\\S","minLength":1,"maxLength":200}`, `{"type":"string","pattern":"\\S"}`},
		{"xgrammar: length alone stays", xgrammar,
			`{"type":"string","maxLength":2000}`, `{"type":"string","maxLength":2000}`},
		{"xgrammar: multipleOf", xgrammar,
			`{"type":"number","minimum":0,"multipleOf":0.5}`, `{"type":"number","minimum":0}`},
		{"no limits", Limits{},
			`{"type":"string", "maxLength":2000}`, `{"type":"string", "maxLength":2000}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.limits.fit([]byte(tt.schema))); got != tt.want {
				t.Errorf("fit(%s)\n got %s\nwant %s", tt.schema, got, tt.want)
			}
		})
	}
}

// llamaGrammar is a fake llama-server: it refuses a request whose response_format schema or
// tool parameters hold a length or item bound that llama.cpp's grammar parser refuses (see
// testdata/errors/README.md), with the body the real server sends, and answers others with an
// empty JSON object. It counts the requests it refused.
type llamaGrammar struct {
	mu       sync.Mutex
	refused  int
	requests int
	schemas  []string
}

func (l *llamaGrammar) serveHTTP(t *testing.T) http.Handler {
	refusal, err := os.ReadFile("../../testdata/errors/llamacpp-grammar-repetition.json")
	if err != nil {
		t.Fatal(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			ResponseFormat *struct {
				JSONSchema struct {
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
			Tools []struct {
				Function struct {
					Parameters json.RawMessage `json:"parameters"`
				} `json:"function"`
			} `json:"tools"`
		}
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body: %v", err)
		}
		var schemas []json.RawMessage
		if body.ResponseFormat != nil {
			schemas = append(schemas, body.ResponseFormat.JSONSchema.Schema)
		}
		for _, tool := range body.Tools {
			schemas = append(schemas, tool.Function.Parameters)
		}
		l.mu.Lock()
		l.requests++
		refuse := false
		for _, s := range schemas {
			l.schemas = append(l.schemas, string(s))
			var v any
			_ = json.Unmarshal(s, &v)
			refuse = refuse || llamaRefuses(v)
		}
		if refuse {
			l.refused++
		}
		l.mu.Unlock()
		if refuse {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(refusal)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		events(w, `{"choices":[{"index":0,"delta":{"content":"{}"}}]}`, chunkStop, done)
	})
}

// llamaRefuses reports whether llama.cpp's grammar parser refuses the schema v, as its source
// reads: json-schema-to-grammar writes maxLength N as char{minLength,N} and maxItems N as a
// group repeated {minItems-1,N-1}; the parser refuses a minimum above 2000, lifts a maximum
// above 2000, and refuses when the count (the maximum, else the minimum) reaches 2000.
func llamaRefuses(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		num := func(k string) (float64, bool) { f, ok := v[k].(float64); return f, ok }
		repeat := func(lo, hi float64, hasHi bool) bool {
			if lo > 2000 {
				return true
			}
			if hasHi && hi > 2000 {
				hasHi = false
			}
			count := lo
			if hasHi && hi > 0 {
				count = hi
			}
			return count >= 2000
		}
		lo, _ := num("minLength")
		hi, hasHi := num("maxLength")
		if repeat(lo, hi, hasHi) {
			return true
		}
		lo, _ = num("minItems")
		hi, hasHi = num("maxItems")
		if repeat(max(lo-1, 0), hi-1, hasHi) {
			return true
		}
		for _, x := range v {
			if llamaRefuses(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if llamaRefuses(x) {
				return true
			}
		}
	}
	return false
}

// TestGrammarBound sends every contract's schema, and the cards tool's parameters, through
// each profile of a llama.cpp engine to a fake llama-server that refuses what llama.cpp's
// grammar refuses, with its exact error: every request is answered on its first try, with no
// downgrade, and still carries the bounds the grammar compiles.
func TestGrammarBound(t *testing.T) {
	module := coach.OutputSchema{Name: "structured_response", Schema: api.Schema("structured-response.json")}
	card := &coach.Tool{Name: "display_card", Parameters: api.Schema("display-card.json")}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"llamacpp", Config{Profile: "llamacpp"}},
		{"llamacpp forcing the tool", Config{Profile: "llamacpp", ToolChoice: "required"}},
		{"ollama", Config{Profile: "ollama"}},
		{"lmstudio", Config{Profile: "lmstudio"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := &llamaGrammar{}
			srv := httptest.NewServer(fake.serveHTTP(t))
			t.Cleanup(srv.Close)
			cfg := tc.cfg
			cfg.BaseURL = srv.URL + "/v1"
			var downgrades []Downgrade
			cfg.OnDowngrade = func(d Downgrade) { downgrades = append(downgrades, d) }
			c := New(cfg)
			for _, req := range []coach.ModelRequest{
				{Messages: hello.Messages, Schema: &module},
				{Messages: hello.Messages, Schema: &coachSchema},
				{Messages: hello.Messages, Tool: card},
			} {
				s, err := c.Stream(context.Background(), req, coach.StreamHooks{})
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				s.Close()
			}
			if fake.refused != 0 || fake.requests != 3 || len(downgrades) != 0 {
				t.Errorf("%d of %d requests refused, downgrades %+v; want 3 requests, none refused, no downgrade", fake.refused, fake.requests, downgrades)
			}
			// The bounds the grammar compiles stay: the module's headings, the card's ids.
			all := strings.Join(fake.schemas, "\n")
			for _, want := range []string{`"maxLength":500`, `"maxLength":100`} {
				if !strings.Contains(all, want) {
					t.Errorf("no schema sent keeps %s:\n%s", want, all)
				}
			}
		})
	}
}
