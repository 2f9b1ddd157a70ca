package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// TestHoldFollowsLearner attacks a hold from the learner's side: after a crisis the learner's
// key deletes the held session and starts a new one with the same learner reference. The
// delete is 409 safety_hold, the operator's export still shows the crisis, and the new session
// starts held (the supportive answer, no model call) until the operator clears the hold; after
// the clear a new session of the learner gets the lesson. Another learner is never held.
func TestHoldFollowsLearner(t *testing.T) {
	g := apptest.Start(t, safetyConfig(true))
	const ref, other = "pupil-held-1", "pupil-other-2"
	create := func(learner string) string {
		t.Helper()
		resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions", map[string]string{"contract": "toulmin", "locale": "en-US", "learner": learner})
		var s apptest.Session
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &s) != nil {
			t.Fatalf("create: status %d %s", resp.StatusCode, raw)
		}
		return s.ID
	}
	first := create(ref)
	tr := keyedTurn(t, g, learnerKey, first, apptest.Msg("I don't want to be alive anymore."))
	checkSupportive(t, tr, "en-US", "988")

	resp, raw := send(t, g, learnerKey, "DELETE", "/v1/sessions/"+first, nil)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(raw), `"error":"safety_hold"`) {
		t.Errorf("the learner's delete of the held session: %d %s, want 409 safety_hold", resp.StatusCode, raw)
	}
	if resp, raw := send(t, g, operatorKey, "GET", "/v1/learners/"+ref+"/export", nil); resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), first) {
		t.Errorf("export after the learner's delete: %d %.300s, want the held session %s", resp.StatusCode, raw, first)
	}

	second := create(ref)
	if _, raw := send(t, g, learnerKey, "GET", "/v1/sessions/"+second, nil); !holdOf(t, raw) {
		t.Errorf("the held learner's new session %s, want safety.hold true", raw)
	}
	calls := len(g.LLM.Requests())
	checkSupportive(t, keyedTurn(t, g, learnerKey, second, map[string]any{"continue": true}), "en-US", "988")
	if n := len(g.LLM.Requests()); n != calls {
		t.Errorf("the held learner's new session called the model %d times, want never", n-calls)
	}
	if _, raw := send(t, g, learnerKey, "GET", "/v1/sessions/"+create(other), nil); holdOf(t, raw) {
		t.Errorf("another learner's session %s is held", raw)
	}

	resp, raw = send(t, g, operatorKey, "POST", "/v1/sessions/"+second+"/safety", map[string]string{"action": "clear"})
	if resp.StatusCode != http.StatusOK || holdOf(t, raw) {
		t.Fatalf("clear: status %d %s, want 200 and no hold", resp.StatusCode, raw)
	}
	if _, raw := send(t, g, learnerKey, "GET", "/v1/sessions/"+create(ref), nil); holdOf(t, raw) {
		t.Errorf("a session of the learner after the operator's clear: %s, want no hold", raw)
	}
	if resp, raw := send(t, g, operatorKey, "DELETE", "/v1/sessions/"+first, nil); resp.StatusCode != http.StatusNoContent {
		t.Errorf("the operator's delete of a held session: %d %s, want 204", resp.StatusCode, raw)
	}
}

// TestHeldTurnFloodLimited attacks the turn limits from a held learner's side: the gateway
// answers a held session's turns without the model, in microseconds. The learner's turns past
// COACH_TURN_RATE_LIMIT are 429 rate_limited, in the held session and in a new one of the same
// learner (which starts held), while another learner's turns go on.
func TestHeldTurnFloodLimited(t *testing.T) {
	const limit = 5
	g := apptest.Start(t, func(c *config.Config) {
		safetyConfig(true)(c)
		c.TurnRateLimit = limit
	})
	create := func(learner string) string {
		t.Helper()
		resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions", map[string]string{"contract": "toulmin", "locale": "en-US", "learner": learner})
		var s apptest.Session
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(raw, &s) != nil {
			t.Fatalf("create: status %d %s", resp.StatusCode, raw)
		}
		return s.ID
	}
	held := create("pupil-flood")
	checkSupportive(t, keyedTurn(t, g, learnerKey, held, apptest.Msg("I don't want to be alive anymore.")), "en-US", "988")
	statuses := map[int]int{}
	for range 50 {
		resp, _ := send(t, g, learnerKey, "POST", "/v1/sessions/"+held+"/turns", map[string]any{"continue": true})
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("a 429 without Retry-After")
		}
	}
	// The crisis turn asked the model (its session was not held yet), so it is not counted.
	if statuses[http.StatusOK] != limit || statuses[http.StatusTooManyRequests] != 50-limit {
		t.Errorf("50 held turns after the crisis turn: statuses %v, want %d answered and the rest 429", statuses, limit)
	}
	resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions/"+create("pupil-flood")+"/turns", map[string]any{"continue": true})
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(raw), `"error":"rate_limited"`) {
		t.Errorf("a new session of the flooding learner: %d %s, want 429 rate_limited", resp.StatusCode, raw)
	}
	other := create("pupil-calm")
	g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Tell me more.", "step", "claim")})
	if tr := keyedTurn(t, g, learnerKey, other, apptest.Msg("Cities should ban cars.")); tr.Last().Type != "result" {
		t.Errorf("another learner's turn: %s", tr.Body)
	}
}
