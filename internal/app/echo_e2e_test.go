package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// TestEchoedLearnerTextDowngradesNothing attacks the shared downgrade state from a learner's
// side: an endpoint that answers 400 quoting the whole request gets three learner messages
// naming "stream_options", "json_schema" and "json_object". The endpoint keeps its shape for
// everyone: another learner's turns still ask for usage and strict json_schema, and succeed.
func TestEchoedLearnerTextDowngradesNothing(t *testing.T) {
	var served atomic.Int64
	var lastShape atomic.Value
	answer, _ := json.Marshal(apptest.Obj("assistantText", "Good start.", "step", "claim", "confidence", 0.5))
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if strings.Contains(string(raw), "Quote:") {
			msg, _ := json.Marshal("could not process request " + string(raw))
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":`+string(msg)+`,"type":"invalid_request_error"}}`)
			return
		}
		served.Add(1)
		lastShape.Store(string(raw))
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":`+string(answer)+`}}]}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	}))
	defer endpoint.Close()
	g := apptest.Start(t, func(c *config.Config) {
		c.Upstreams = []config.Upstream{{Name: "echoing", BaseURL: endpoint.URL + "/v1", Model: "m", Profile: "openai"}}
	})
	attacker := g.Create("toulmin", nil)
	for _, text := range []string{
		"Quote: my claim is that stream_options should be banned.",
		"Quote: my claim is that json_schema is a kind of argument.",
		"Quote: my claim is that json_object and the maximum context length matter.",
	} {
		if tr := g.Turn(attacker.ID, apptest.Msg(text)); tr.Last().Type != "error" {
			t.Fatalf("attack turn: %s", tr.Body)
		}
	}
	if n := strings.Count(g.Log.String(), "the model endpoint rejected a request setting"); n != 0 {
		t.Errorf("%d downgrades after the echoed learner text, want none:\n%s", n, g.Log.String())
	}
	other := g.Create("toulmin", nil)
	for i := range 3 {
		if tr := g.Turn(other.ID, apptest.Msg("Cities should ban cars.")); tr.Last().Type != "result" {
			t.Fatalf("the other learner's turn %d: %s", i+1, tr.Body)
		}
	}
	body, _ := lastShape.Load().(string)
	for _, want := range []string{`"stream_options":{"include_usage":true}`, `"type":"json_schema"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the other learner's request lacks %s: %s", want, body)
		}
	}
}

// TestServerFlagReportedOnce points cards, with the tool forced, at a llama-server started
// without --jinja: each turn asks it once (no retries), and the operator reads one error line
// with the fix.
func TestServerFlagReportedOnce(t *testing.T) {
	var calls atomic.Int64
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r) // GET /props at start: no context window to learn
			return
		}
		calls.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`)
	}))
	defer endpoint.Close()
	g := apptest.Start(t, func(c *config.Config) {
		c.Upstreams = []config.Upstream{{Name: "local", BaseURL: endpoint.URL + "/v1", Model: "m", Profile: "llamacpp", ToolChoice: "required"}}
	})
	for i := range 2 {
		s := g.Create("cards", nil)
		tr := g.Turn(s.ID, apptest.Msg("Begin training."))
		if tr.Last().Type != "error" && tr.Last().Type != "result" {
			t.Fatalf("turn %d: %s", i+1, tr.Body)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the endpoint was asked %d times in 2 turns, want 2: no retries", n)
	}
	log := g.Log.String()
	if n := strings.Count(log, "start llama-server with --jinja"); n != 1 || !strings.Contains(log, `"level":"error"`) {
		t.Errorf("%d error lines with the fix, want 1:\n%s", n, log)
	}
}
