package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// TestLearnerSessionsBounded attacks the sessions kept of one learner reference from the
// learner's side: its key creates sessions with the same reference until it is refused 409
// too_many_sessions at COACH_MAX_SESSIONS_PER_LEARNER, while another learner of the tenant
// still creates one; deleting one of its own sessions makes room for one more. On the code
// before, nothing bounded them (an export of 120 sessions made a 63 MB body).
func TestLearnerSessionsBounded(t *testing.T) {
	const limit = 4
	g := apptest.Start(t, func(c *config.Config) {
		safetyConfig(true)(c)
		c.MaxSessionsPerLearner = limit
	})
	create := func(learner string) (int, string, []byte) {
		t.Helper()
		resp, raw := send(t, g, learnerKey, "POST", "/v1/sessions", map[string]string{"contract": "toulmin", "locale": "en-US", "learner": learner})
		var s apptest.Session
		_ = json.Unmarshal(raw, &s)
		return resp.StatusCode, s.ID, raw
	}
	var ids []string
	for i := range limit {
		code, id, raw := create("pupil-many")
		if code != http.StatusCreated {
			t.Fatalf("session %d of %d: %d %s", i+1, limit, code, raw)
		}
		ids = append(ids, id)
	}
	refused := 0
	for range 10 {
		if code, _, raw := create("pupil-many"); code == http.StatusConflict && strings.Contains(string(raw), `"error":"too_many_sessions"`) {
			refused++
		} else {
			t.Errorf("a session past the bound: %d %s, want 409 too_many_sessions", code, raw)
		}
	}
	if code, _, raw := create("pupil-other"); code != http.StatusCreated {
		t.Errorf("another learner's session: %d %s, want 201", code, raw)
	}
	if resp, raw := send(t, g, learnerKey, "DELETE", "/v1/sessions/"+ids[0], nil); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, raw)
	}
	if code, _, raw := create("pupil-many"); code != http.StatusCreated {
		t.Errorf("after the learner deleted one: %d %s, want 201", code, raw)
	}
	t.Logf("limit %d: %d created, then %d of 10 refused 409 too_many_sessions", limit, limit, refused)
}
