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
	"github.com/coachgw/coachgw/internal/fakellm"
)

// TestSafetyWhomItConcerns runs the "whom it concerns" rules through the whole gateway: a
// classroom question about a character is a topic (the lesson streams, no hold, the audit says
// action none and category topic), and worry about a friend gets the safety line and an
// escalation of severity concern without holding the learner's session.
func TestSafetyWhomItConcerns(t *testing.T) {
	var mu sync.Mutex
	var episodes []map[string]any
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var ep map[string]any
		_ = json.Unmarshal(body, &ep)
		mu.Lock()
		defer mu.Unlock()
		episodes = append(episodes, ep)
	}))
	defer receiver.Close()
	g := apptest.Start(t, func(c *config.Config) {
		safetyConfig(true)(c)
		c.EscalationURL, c.EscalationSecret = receiver.URL+"/hook", "concern-e2e-secret-0123456789"
	})
	newSession := func() apptest.Session {
		resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions", map[string]string{"contract": "toulmin"})
		var s apptest.Session
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &s) != nil {
			t.Fatalf("create: status %d %s", resp.StatusCode, raw)
		}
		return s
	}

	topic := newSession()
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", lessonMark+".", "step", "claim")})
	tr := keyedTurn(t, g, learnerKey, topic.ID, apptest.Msg("Why did Juliet kill herself at the end of the play?"))
	tr.CheckEnding(t)
	if strings.Contains(tr.Kinds(), "safety") || !strings.Contains(tr.Text(), lessonMark) || holdOf(t, resultSession(t, tr)) {
		t.Errorf("topic: %s\nwant the lesson, no safety line, no hold", tr.Body)
	}
	apptest.Eventually(t, "the audit shows the topic with action none", func() bool {
		resp, raw := send(t, g, operatorKey, "GET", "/v1/safety/events", nil)
		if resp.StatusCode != http.StatusOK {
			return false
		}
		var p struct {
			Events []struct {
				Session, Stage, Action string
				Categories             []string
			} `json:"events"`
		}
		_ = json.Unmarshal(raw, &p)
		for _, e := range p.Events {
			if e.Session == topic.ID && e.Stage == "input" && e.Action == "none" && len(e.Categories) == 1 && e.Categories[0] == "topic" {
				return true
			}
		}
		return false
	})

	other := newSession()
	tr = keyedTurn(t, g, learnerKey, other.ID, apptest.Msg("My best friend told me she wants to kill herself"))
	tr.CheckEnding(t)
	if !strings.HasPrefix(tr.Kinds(), "safety") || strings.Contains(tr.Text(), lessonMark) {
		t.Errorf("friend: %s\nwant the safety line first and no lesson", tr.Body)
	}
	if holdOf(t, resultSession(t, tr)) {
		t.Errorf("friend: the learner's session is held: %s", resultSession(t, tr))
	}
	apptest.Eventually(t, "the receiver got one concern escalation", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(episodes) == 1 && episodes[0]["severity"] == "concern" && episodes[0]["session"] == other.ID
	})
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", lessonMark+".", "step", "claim")})
	if tr := keyedTurn(t, g, learnerKey, other.ID, apptest.Msg("Thanks. Can we go on with my claim?")); !strings.Contains(tr.Text(), lessonMark) {
		t.Errorf("the turn after a friend's crisis: %s\nwant the lesson", tr.Body)
	}
}
