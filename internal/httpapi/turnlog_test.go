package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
)

// TestTurnLogListsAttempts checks that the turn's log line says why a turn was retried: one
// entry per model call with its endpoint, how it ended, the bytes it streamed and its tokens.
func TestTurnLogListsAttempts(t *testing.T) {
	model := coachtest.NewModel(
		coachtest.Fragments(coach.Fragment{Content: `{"step":"claim","assistantText":"Well, to be`, FinishReason: "length"},
			coach.Fragment{Usage: &coach.Usage{PromptTokens: 50, CompletionTokens: 7}}),
		coachtest.Fragments(coach.Fragment{Content: `{"assistantText":"Tell me more.","step":"claim"}`}, coach.Fragment{FinishReason: "stop"}),
	)
	ts := startServer(t, func(d *Deps) {
		d.Service = coach.NewService(coachtest.NewMemStore(), model, contracts(t), coach.Options{}, nil)
	})
	id := ts.create("toulmin")
	if r := ts.do("POST", "/v1/sessions/"+id+"/turns", `{"message":"hello"}`); r.Status != http.StatusOK || !strings.Contains(r.Body, `"type":"result"`) {
		t.Fatalf("turn: %d %s", r.Status, r.Body)
	}
	var line struct {
		Message    string `json:"message"`
		Attempts   int    `json:"attempts"`
		Resets     int    `json:"resets"`
		AttemptLog []struct {
			Upstream         string `json:"upstream"`
			End              string `json:"end"`
			Detail           string `json:"detail"`
			Finish           string `json:"finish"`
			Bytes            int    `json:"bytes"`
			PromptTokens     *int   `json:"prompt_tokens"`
			CompletionTokens *int   `json:"completion_tokens"`
		} `json:"attempt_log"`
	}
	for _, l := range strings.Split(ts.log.String(), "\n") {
		if strings.Contains(l, `"message":"turn"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("turn line %q: %v", l, err)
			}
		}
	}
	if line.Attempts != 2 || len(line.AttemptLog) != 2 {
		t.Fatalf("turn line: attempts %d, attempt_log %+v; want 2 of each\n%s", line.Attempts, line.AttemptLog, ts.log.String())
	}
	first, second := line.AttemptLog[0], line.AttemptLog[1]
	if first.Upstream != "default" || first.End != "cut_off" || first.Finish != "length" || first.Bytes != 44 ||
		!strings.Contains(first.Detail, "cut off") || first.PromptTokens == nil || *first.PromptTokens != 50 ||
		first.CompletionTokens == nil || *first.CompletionTokens != 7 {
		t.Errorf("first attempt = %+v, want default, cut_off, finish length, 44 bytes, 50+7 tokens", first)
	}
	if second.End != "ok" || second.Detail != "" || second.PromptTokens != nil {
		t.Errorf("second attempt = %+v, want ok without detail or tokens", second)
	}
}
