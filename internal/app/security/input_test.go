package security_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// replyText is a toulmin answer saying text.
func replyText(text string) fakellm.Reply {
	return fakellm.Reply{Content: apptest.Obj("assistantText", text, "step", "claim")}
}

// moduleReply is a plain module answer.
var moduleReply = fakellm.Reply{Content: apptest.Obj(
	"content", map[string]any{"text_blocks": []map[string]string{{"type": "paragraph", "content": "Let's begin."}}},
	"meta", map[string]string{"response_type": "conversational"})}

func TestHostileInputEndToEnd(t *testing.T) {
	g := apptest.Start(t, nil)
	toulminID := g.Create("toulmin", nil).ID
	moduleID := g.Create("module", map[string]string{"module": "anxiety-basics"}).ID
	turn := "/v1/sessions/" + toulminID + "/turns"
	tests := []struct {
		name        string
		path        string
		body        string
		contentType string
		want        int
		wantCode    string
	}{
		{"body over COACH_MAX_BODY_BYTES", turn, `{"message":"` + strings.Repeat("a", 64<<10) + `"}`, "", http.StatusRequestEntityTooLarge, "body_too_large"},
		{"100k open brackets", turn, strings.Repeat("[", 100_000), "", http.StatusRequestEntityTooLarge, "body_too_large"},
		{"deep nesting under the limit", turn, `{"form":{"id":"f","values":{"a":` + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000) + `}}}`, "", http.StatusBadRequest, "invalid_request"},
		{"invalid UTF-8", turn, "{\"message\":\"\xff\xfe\"}", "", http.StatusBadRequest, "invalid_request"},
		{"control character", turn, `{"message":"hi\u0000there"}`, "", http.StatusUnprocessableEntity, "invalid_input"},
		{"wrong content type", turn, `{"message":"hi"}`, "text/plain", http.StatusUnsupportedMediaType, "unsupported_media_type"},
		{"10k-character message", turn, `{"message":"` + strings.Repeat("a", 10_000) + `"}`, "", http.StatusUnprocessableEntity, "invalid_input"},
		{"unknown session", "/v1/sessions/" + strings.Repeat("0", 32) + "/turns", `{"message":"hi"}`, "", http.StatusNotFound, "session_not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", g.URL+tt.path, strings.NewReader(tt.body))
			ct := tt.contentType
			if ct == "" {
				ct = "application/json"
			}
			req.Header.Set("Content-Type", ct)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			a := answer{Status: resp.StatusCode, Body: string(raw)}
			if a.Status != tt.want || a.code() != tt.wantCode {
				t.Errorf("status %d body %.200s, want %d %s", a.Status, a.Body, tt.want, tt.wantCode)
			}
		})
	}
	if n := len(g.LLM.Requests()); n != 0 {
		t.Errorf("model calls = %d, want 0 for refused input", n)
	}
	g.LLM.Enqueue(moduleReply)
	if tr := g.Turn(moduleID, apptest.Msg(strings.Repeat("a", 7999))); tr.Status != http.StatusOK || tr.Last().Type != "result" {
		t.Errorf("a 7999-character message: status %d, lines %q; want a result", tr.Status, tr.Kinds())
	}
	if got := g.Get(toulminID); got.Version != 1 {
		t.Errorf("toulmin session version %d after refused input, want 1", got.Version)
	}
}

// TestHostileSessionIDsTouchNoKeys sends ids shaped like Redis key and protocol injection to
// every route that takes one: each is "no such session", no key appears under the gateway's
// prefix, and a sentinel key survives (no FLUSHALL ran).
func TestHostileSessionIDsTouchNoKeys(t *testing.T) {
	var cfg config.Config
	g := apptest.Start(t, func(c *config.Config) { cfg = *c })
	rdb := redisOf(t, cfg)
	sentinel := cfg.RedisPrefix + ":sentinel"
	if err := rdb.Set(context.Background(), sentinel, "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ids := []string{"abc}:lock", "*", "x\r\nFLUSHALL", "x\r\n*1\r\n$8\r\nFLUSHALL\r\n", strings.Repeat("a", 33),
		strings.Repeat("A", 32), strings.Repeat("a", 31) + "}", "{" + strings.Repeat("a", 30) + "}", "rl:acme"}
	for _, id := range ids {
		p := "/v1/sessions/" + url.PathEscape(id)
		for _, c := range []struct {
			method, path string
			body         any
			want         int
		}{
			{"GET", p, nil, http.StatusNotFound},
			{"POST", p + "/turns", apptest.Msg("hi"), http.StatusNotFound},
			{"PUT", p + "/draft", map[string]string{"field": "claim", "value": "x"}, http.StatusNotFound},
			{"POST", p + "/proposal", map[string]string{"action": "accept"}, http.StatusNotFound},
			{"DELETE", p, nil, http.StatusNoContent},
			{"POST", "/api/coach", map[string]string{"sessionId": id, "message": "hi"}, http.StatusNotFound},
		} {
			if a := send(t, g, "", c.method, c.path, c.body); a.Status != c.want {
				t.Errorf("%s %q: status %d %s, want %d", c.method, c.path, a.Status, a.Body, c.want)
			}
		}
	}
	if keys := keysUnder(t, rdb, cfg.RedisPrefix); len(keys) != 1 || keys[0] != sentinel {
		t.Errorf("keys under the prefix = %q, want only the sentinel %s", keys, sentinel)
	}
}
