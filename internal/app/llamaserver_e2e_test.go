package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// grammarRefused matches a string bound that llama.cpp's grammar parser refuses: a repetition
// of exactly 2,000 (testdata/errors/README.md).
var grammarRefused = regexp.MustCompile(`"(max|min)Length":2000[,}]`)

// TestLlamaServerFirstTurns drives module and cards sessions through the llamacpp profile
// against a fake llama-server that behaves as a real one did: a schema with a string bound of
// 2,000 is "400 Failed to initialize samplers: failed to parse grammar", and a tool forced with
// "required" is answered in prose. Both contracts get a real answer on the first call of their
// first turn, with no downgrade to learn first.
func TestLlamaServerFirstTurns(t *testing.T) {
	refusal, err := os.ReadFile("../../testdata/errors/llamacpp-grammar-repetition.json")
	if err != nil {
		t.Fatal(err)
	}
	moduleAnswer := apptest.Obj("content", map[string]any{"text_blocks": []any{map[string]any{"type": "paragraph", "content": "Let's begin with what anxiety is."}}},
		"meta", map[string]any{"response_type": "educational"})
	cardAnswer := apptest.Obj("card_type", "scenario", "content", "A colleague snaps at you in a meeting.")
	var calls, refused atomic.Int64
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Tools          []json.RawMessage `json:"tools"`
			ResponseFormat json.RawMessage   `json:"response_format"`
		}
		_ = json.Unmarshal(raw, &body)
		if grammarRefused.Match(body.ResponseFormat) || len(body.Tools) > 0 && grammarRefused.Match(body.Tools[0]) {
			refused.Add(1)
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write(refusal)
			return
		}
		answer := moduleAnswer
		switch {
		case len(body.Tools) > 0:
			answer = "Sure! Here is a scenario for you to practise."
		case strings.Contains(string(body.ResponseFormat), `"display_card"`):
			answer = cardAnswer
		}
		content, _ := json.Marshal(answer)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":`+string(content)+`}}]}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n"+"data: [DONE]\n\n")
	}))
	defer endpoint.Close()
	g := apptest.Start(t, func(c *config.Config) {
		c.Upstreams = []config.Upstream{{Name: "local", BaseURL: endpoint.URL + "/v1", Model: "m", Profile: "llamacpp"}}
	})
	for _, tc := range []struct {
		contract string
		extra    map[string]string
		message  string
	}{
		{"module", map[string]string{"module": "anxiety-basics"}, "Hi, where do we start?"},
		{"cards", nil, "Begin training."},
	} {
		before := calls.Load()
		s := g.Create(tc.contract, tc.extra)
		tr := g.Turn(s.ID, apptest.Msg(tc.message))
		last := tr.Last()
		if last.Type != "result" || last.Fallback {
			t.Errorf("%s: the first turn ended with %s, want a result that is no fallback", tc.contract, last.Raw)
		}
		if n := calls.Load() - before; n != 1 {
			t.Errorf("%s: %d model calls, want 1", tc.contract, n)
		}
	}
	if n := refused.Load(); n != 0 {
		t.Errorf("%d requests refused for their grammar, want none", n)
	}
	if log := g.Log.String(); strings.Contains(log, "weaker form") {
		t.Errorf("a downgrade was logged, want none:\n%s", log)
	}
}
