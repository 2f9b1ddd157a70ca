package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// llamaServer is a scripted endpoint that answers as llama-server does: each call takes the
// next of answers, and the request bodies are kept.
type llamaServer struct {
	mu      sync.Mutex
	answers []func(w http.ResponseWriter)
	bodies  []string
	// nCtx, when set, is the context window GET /props reports; otherwise /props is 404.
	nCtx int
}

func (l *llamaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/props" {
		if l.nCtx == 0 {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"default_generation_settings":{"id":0,"n_ctx":`+itoa(l.nCtx)+`},"total_slots":1}`)
		return
	}
	body, _ := io.ReadAll(r.Body)
	l.mu.Lock()
	l.bodies = append(l.bodies, string(body))
	var answer func(http.ResponseWriter)
	if len(l.answers) > 0 {
		answer, l.answers = l.answers[0], l.answers[1:]
	}
	l.mu.Unlock()
	if answer == nil {
		http.Error(w, "no answer scripted", http.StatusInternalServerError)
		return
	}
	answer(w)
}

func (l *llamaServer) enqueue(a ...func(http.ResponseWriter)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.answers = append(l.answers, a...)
}

// sent returns the messages of each request since call from.
func (l *llamaServer) sent(t *testing.T, from int) [][]struct{ Role, Content string } {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out [][]struct{ Role, Content string }
	for _, b := range l.bodies[from:] {
		var req struct {
			Messages []struct{ Role, Content string }
		}
		if err := json.Unmarshal([]byte(b), &req); err != nil {
			t.Fatalf("request body %s: %v", b, err)
		}
		out = append(out, req.Messages)
	}
	return out
}

func (l *llamaServer) calls() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.bodies)
}

// sse answers text as one content chunk, then finish with usage of completion tokens.
func sse(text, finish string, completion int) func(http.ResponseWriter) {
	content, _ := json.Marshal(text)
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":`+string(content)+`}}]}`+"\n\n"+
			`data: {"choices":[{"index":0,"delta":{},"finish_reason":"`+finish+`"}],"usage":{"prompt_tokens":7000,"completion_tokens":`+
			itoa(completion)+`,"total_tokens":9000}}`+"\n\ndata: [DONE]\n\n")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// contextFull is llama-server's answer to a prompt longer than its context window, byte for
// byte as b10573 sends it (server-context.cpp, ERROR_TYPE_EXCEED_CONTEXT_SIZE).
func contextFull(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = io.WriteString(w, `{"error":{"code":400,"message":"request (8314 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":8314,"n_ctx":8192}}`)
}

func startLlama(t *testing.T) (*llamaServer, *apptest.Gateway) {
	return startLlamaCtx(t, 0)
}

// startLlamaCtx starts a gateway in front of a llamaServer whose /props reports nCtx (0: none).
func startLlamaCtx(t *testing.T, nCtx int) (*llamaServer, *apptest.Gateway) {
	l := &llamaServer{nCtx: nCtx}
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	g := apptest.Start(t, func(c *config.Config) {
		c.Upstreams = []config.Upstream{{Name: "local", BaseURL: srv.URL + "/v1", Model: "m", Profile: "llamacpp", ToolChoice: "none"}}
	})
	return l, g
}

// TestContextWindowRefusalRetried answers a turn of a session with some history with
// llama-server's 400 for a prompt longer than its context window: the turn is retried with less
// of the conversation and ends in the model's result, and the session keeps its whole history.
func TestContextWindowRefusalRetried(t *testing.T) {
	l, g := startLlama(t)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	for i := range 3 {
		l.enqueue(sse(simpleResponse, "stop", 10))
		if tr := g.Turn(s.ID, apptest.Msg("Tell me more, part "+itoa(i))); tr.Last().Type != "result" {
			t.Fatalf("turn %d: %s", i+1, tr.Body)
		}
	}
	first := l.calls()
	l.enqueue(contextFull, sse(simpleResponse, "stop", 10))
	tr := g.Turn(s.ID, apptest.Msg("And what about buses?"))
	tr.CheckEnding(t)
	if tr.Last().Type != "result" {
		t.Fatalf("last line %s, want the result of the retry", tr.Last().Raw)
	}
	reqs := l.sent(t, first)
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	if len(reqs[1]) >= len(reqs[0]) || reqs[1][len(reqs[1])-1].Content != reqs[0][len(reqs[0])-1].Content {
		t.Errorf("retry sent %d messages ending %q, want fewer than %d ending with the learner's message",
			len(reqs[1]), reqs[1][len(reqs[1])-1].Content, len(reqs[0]))
	}
	if got := g.Get(s.ID); got.Version != 5 {
		t.Errorf("stored version %d, want 5", got.Version)
	}
}

// TestModuleEmptyThenCutFallsBack answers a module turn with an answer that shows no text, then
// with one cut at the token cap: the turn ends with the markdown fallback, and nothing of the
// correction written for the model ("be shorter") reaches the learner.
func TestModuleEmptyThenCutFallsBack(t *testing.T) {
	l, g := startLlama(t)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	empty := structured([]json.RawMessage{}, reporting())
	cut := `{"content":{"text_blocks":[{"type":"paragraph","content":"Anxiety is a normal`
	l.enqueue(sse(empty, "stop", 40), sse(cut, "length", 100000))
	tr := g.Turn(s.ID, apptest.Msg("Hi"))
	tr.CheckEnding(t)
	res := tr.Last()
	if res.Type != "result" || !res.Fallback {
		t.Fatalf("last line %s, want the markdown fallback", res.Raw)
	}
	validResult(t, res.Result)
	if strings.Contains(tr.Body, "be shorter") || strings.Contains(tr.Body, "cut off") {
		t.Errorf("body %s carries the correction meant for the model", tr.Body)
	}
	if n := l.calls(); n != 2 {
		t.Errorf("model calls = %d, want 2 (one corrective retry)", n)
	}
	if got := g.Get(s.ID); got.Version != 2 {
		t.Errorf("stored version %d, want 2 (the fallback is stored)", got.Version)
	}
}

// TestContextWindowFromProps starts the gateway in front of a llama-server whose GET /props
// reports a context window too small for the conversation: the gateway logs the window it
// learned, and a turn of a session with history is sent without its history before the server
// can refuse it.
func TestContextWindowFromProps(t *testing.T) {
	l, g := startLlamaCtx(t, 64)
	if !strings.Contains(g.Log.String(), `"contextWindow":64,"from":"props"`) {
		t.Errorf("start log:\n%s\nwant the context window learned from /props", g.Log.String())
	}
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	for i := range 3 {
		l.enqueue(sse(simpleResponse, "stop", 10))
		if tr := g.Turn(s.ID, apptest.Msg("Tell me more, part "+itoa(i))); tr.Last().Type != "result" {
			t.Fatalf("turn %d: %s", i+1, tr.Body)
		}
	}
	for i, msgs := range l.sent(t, 0) {
		for _, m := range msgs {
			if m.Role == "assistant" {
				t.Errorf("request %d carries history (%+v), want none: it does not fit the window", i+1, msgs)
				break
			}
		}
	}
}
