package app_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// TestContinueKeepsTheFirstTurnRule walks a toulmin session on the embedded replay model, which
// decides from the session facts the gateway writes: a proposal accepted at the claim, then the
// client's {"continue":true} opening turn at the grounds, then the learner's weak first attempt
// there. The attempt must be coached, not proposed: the opening turn is not the learner's
// message, so the attempt is still the step's first turn. Were the opening counted (as the
// ChatPanel's old "Let's continue." message was), the replay model would propose the attempt at
// once.
func TestContinueKeepsTheFirstTurnRule(t *testing.T) {
	g := apptest.Start(t, func(c *config.Config) {
		c.OpenAIBaseURL = "" // the embedded replay model
		c.ReplayDelayMin, c.ReplayDelayMax = 0, time.Millisecond
	})
	s := g.Create("toulmin", nil)
	type state struct {
		Step            string
		Turns           map[string]int
		PendingProposal *struct{ Field, Value string }
	}
	turn := func(what string, body any) (map[string]any, state) {
		t.Helper()
		tr := g.Turn(s.ID, body)
		tr.CheckEnding(t)
		last := tr.Last()
		if last.Type != "result" {
			t.Fatalf("%s: lines %s, want a result", what, tr.Kinds())
		}
		var r map[string]any
		var st state
		if err := json.Unmarshal(last.Result, &r); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(last.Session.State, &st); err != nil {
			t.Fatal(err)
		}
		return r, st
	}

	turn("first claim message", apptest.Msg("I think cars are a problem in cities."))
	_, st := turn("second claim message", apptest.Msg("Cities should ban private cars from their centres to cut air pollution."))
	if st.PendingProposal == nil {
		t.Fatalf("the claim's second message was not proposed: state %+v", st)
	}
	if code := g.Call("POST", "/v1/sessions/"+s.ID+"/proposal", map[string]string{"action": "accept"}, nil); code != http.StatusOK {
		t.Fatalf("accept: status %d", code)
	}

	r, st := turn("continue", map[string]any{"continue": true, "step": "grounds"})
	if r["proposedUpdate"] != nil || st.Step != "grounds" || st.Turns["grounds"] != 0 {
		t.Fatalf("after the opening turn: result %v, state %+v; want no proposal, step grounds, no grounds turn counted", r, st)
	}

	r, st = turn("weak first attempt", apptest.Msg("Cars make the air in cities dirty and people get sick from it."))
	if r["proposedUpdate"] != nil || st.PendingProposal != nil {
		t.Errorf("the first attempt after an opening turn was proposed: %v", r["proposedUpdate"])
	}
	if st.Turns["grounds"] != 1 {
		t.Errorf("turns[grounds] = %d after the first learner message, want 1", st.Turns["grounds"])
	}
	if q, _ := r["nextQuestion"].(string); q == "" {
		t.Errorf("result %v, want coaching with a guiding question", r)
	}

	// The learner's second message at the grounds may now be proposed: the first-turn rule
	// applied to exactly one message.
	r, _ = turn("second attempt", apptest.Msg("Air pollution fell by 30% in Madrid after private cars were banned from its centre."))
	if r["proposedUpdate"] == nil {
		t.Errorf("the second grounds message was not proposed: %v", r)
	}
}
