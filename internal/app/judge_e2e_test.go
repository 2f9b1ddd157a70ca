package app_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// judgeServer is a loopback judge endpoint answering every request with concern; it counts them.
func judgeServer(t *testing.T, concern string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	content, _ := json.Marshal(map[string]string{"why": "scripted", "concern": concern, "category": "none", "severity": "none"})
	body, _ := json.Marshal(map[string]any{"object": "chat.completion", "choices": []map[string]any{
		{"index": 0, "finish_reason": "stop", "message": map[string]string{"role": "assistant", "content": string(content)}},
	}})
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(s.Close)
	return s, &n
}

// auditEvents returns the tenant's audit records of session id, once there are at least n.
func auditEvents(t *testing.T, g *apptest.Gateway, id string, n int) []map[string]any {
	t.Helper()
	var mine []map[string]any
	apptest.Eventually(t, "the audit lists the turn's checks", func() bool {
		resp, raw := send(t, g, operatorKey, "GET", "/v1/safety/events", nil)
		if resp.StatusCode != http.StatusOK {
			return false
		}
		var p struct {
			Events []map[string]any `json:"events"`
		}
		_ = json.Unmarshal(raw, &p)
		mine = mine[:0]
		for _, e := range p.Events {
			if e["session"] == id {
				mine = append(mine, e)
			}
		}
		return len(mine) >= n
	})
	return mine
}

// TestSafetyJudgeTopic: with a judge on an endpoint of its own deciding "topic", a Juliet
// question that the screen's broad net catches is not held: the lesson goes on, and the audit
// shows the screen's rule and the judge's decision.
func TestSafetyJudgeTopic(t *testing.T) {
	judge, asked := judgeServer(t, "topic")
	g := apptest.Start(t, func(c *config.Config) {
		safetyConfig(true)(c)
		c.SafetyJudge, c.SafetyJudgeURL, c.SafetyJudgeModel = "auto", judge.URL, "judge-model"
	})
	resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions", map[string]string{"contract": "toulmin", "locale": "en-US"})
	var s apptest.Session
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &s) != nil {
		t.Fatalf("create: status %d %s", resp.StatusCode, raw)
	}
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", lessonMark+": she thinks Romeo is dead.", "step", "claim")})
	tr := keyedTurn(t, g, learnerKey, s.ID, apptest.Msg("Why did Juliet kill herself?"))
	tr.CheckEnding(t)
	if tr.Lines[0].Type == "safety" || !strings.Contains(tr.Text(), lessonMark) {
		t.Errorf("Juliet question: %s\nwant the lesson and no safety line", tr.Body)
	}
	if holdOf(t, resultSession(t, tr)) {
		t.Errorf("a topic held the session")
	}
	if asked.Load() != 1 {
		t.Errorf("the judge was asked %d times, want 1", asked.Load())
	}
	var judged bool
	for _, e := range auditEvents(t, g, s.ID, 2) {
		if e["classifier"] == "judge" && e["action"] == "none" && e["ran"] == true && strings.Contains(toJSON(e["rules"]), "judge.topic") {
			judged = true
		}
	}
	if !judged {
		t.Errorf("the audit lacks the judge's topic record")
	}
}

// TestSafetyUnsupportedLanguage: a crisis in French is audited as text the screen could not
// read, with its language, and goes to the judge, whose "self" makes it a crisis.
func TestSafetyUnsupportedLanguage(t *testing.T) {
	judge, asked := judgeServer(t, "self")
	g := apptest.Start(t, func(c *config.Config) {
		safetyConfig(true)(c)
		c.SafetyJudge, c.SafetyJudgeURL, c.SafetyJudgeModel = "auto", judge.URL, "judge-model"
	})
	resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions", map[string]string{"contract": "toulmin", "locale": "en-US"})
	var s apptest.Session
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &s) != nil {
		t.Fatalf("create: status %d %s", resp.StatusCode, raw)
	}
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", lessonMark+".", "step", "claim")})
	tr := keyedTurn(t, g, learnerKey, s.ID, apptest.Msg("Personne ne m'aime, je vais me tuer ce soir."))
	tr.CheckEnding(t)
	if tr.Lines[0].Type != "safety" || strings.Contains(tr.Text(), lessonMark) || asked.Load() != 1 {
		t.Errorf("French crisis (judge asked %d times): %s\nwant the safety line and no lesson", asked.Load(), tr.Body)
	}
	var unread bool
	for _, e := range auditEvents(t, g, s.ID, 2) {
		if e["classifier"] == "builtin" && e["ran"] == "unsupported_language" && e["lang"] == "fr" {
			unread = true
		}
	}
	if !unread {
		t.Errorf("the audit does not say the screen could not read French")
	}
	if body := g.Metrics(); !strings.Contains(body, `coachgw_safety_unsupported_language_total{contract="toulmin",lang="fr"} 1`) {
		t.Errorf("metrics lack the unsupported French text")
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
