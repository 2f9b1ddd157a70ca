package toulmin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
)

// runTurn runs one turn through svc and returns its events.
func runTurn(t *testing.T, svc *coach.Service, id string, in coach.TurnInput) []coach.Event {
	t.Helper()
	run, err := svc.StartTurn(context.Background(), "t", id, in)
	if err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	var events []coach.Event
	run.Run(context.Background(), coach.EmitFunc(func(e coach.Event) error {
		events = append(events, e)
		return nil
	}))
	return events
}

func TestThroughEngine(t *testing.T) {
	model := coachtest.NewModel(
		// Turn 1: a first-turn proposal at 0.5 that the guards strip.
		coachtest.Content(`{"assistantText":"Good topic. Which cities?","step":"claim","confidence":0.5,"proposedUpdate":{"field":"claim","value":"Cars are bad.","rationale":"r"},"nextQuestion":"Which city do you mean?"}`, 5),
		// Turn 2: an invalid answer, then a proposal after the corrective retry.
		coachtest.Content(`{"assistantText":"Here you go.","step":"claim","isComplete":"no"}`, 5),
		coachtest.Content(`{"assistantText":"Try this wording.","step":"claim","confidence":0.85,"shouldAdvance":true,"proposedUpdate":{"field":"claim","value":"`+goodClaim+`","rationale":"more specific"}}`, 5),
	)
	store := coachtest.NewMemStore()
	svc := coach.NewService(store, model, []coach.Contract{New()}, coach.DefaultOptions(), nil)
	sess, err := svc.CreateSession(context.Background(), "t", Name, coach.NewSession{})
	if err != nil {
		t.Fatal(err)
	}

	msg := "Cars in cities"
	events := runTurn(t, svc, sess.ID, coach.TurnInput{Message: &msg, Step: StepClaim})
	last := events[len(events)-1]
	if last.Type != coach.EventResult {
		t.Fatalf("turn 1 ended with %+v", last)
	}
	// v1.2: the appended question is streamed too, as the last delta.
	if got, want := coachtest.DeltaText(events), "Good topic. Which cities?\n\nWhich city do you mean?"; got != want {
		t.Errorf("turn 1 deltas = %q, want %q", got, want)
	}
	if want := `{"assistantText":"Good topic. Which cities?\n\nWhich city do you mean?","step":"claim","confidence":0.5,"nextQuestion":"Which city do you mean?"}`; string(last.Result) != want {
		t.Errorf("turn 1 result\n got  %s\n want %s", last.Result, want)
	}

	msg = "Please rewrite it"
	events = runTurn(t, svc, sess.ID, coach.TurnInput{Message: &msg})
	last = events[len(events)-1]
	if last.Type != coach.EventResult {
		t.Fatalf("turn 2 ended with %+v", last)
	}
	resets := 0
	for _, e := range events {
		if e.Type == coach.EventReset {
			resets++
		}
	}
	if resets != 1 || coachtest.DeltaText(events) != "Try this wording." {
		t.Errorf("turn 2: %d resets, deltas after it %q", resets, coachtest.DeltaText(events))
	}
	reqs := model.Requests()
	if retry := reqs[2].Messages; !strings.Contains(retry[len(retry)-1].Content, "isComplete") {
		t.Errorf("the retry's correction does not say what was wrong: %q", retry[len(retry)-1].Content)
	}
	if first := reqs[1].Messages; len(first) != 4 {
		t.Errorf("turn 2 request has %d messages, want system + 2 history + user", len(first))
	}
	st := readState(t, last.Session.State)
	if st.Step != StepClaim || st.PendingProposal == nil || st.PendingProposal.Value != goodClaim || st.Turns[StepClaim] != 2 {
		t.Errorf("state after turn 2 = %s", last.Session.State)
	}

	stored, err := svc.Update(context.Background(), "t", sess.ID, Name, nil, func(s *coach.Session) (json.RawMessage, error) {
		return Decide(s.State, ActionAccept)
	})
	if err != nil {
		t.Fatal(err)
	}
	st = readState(t, stored.State)
	if st.Step != StepGrounds || st.Draft[StepClaim] != goodClaim || st.PendingProposal != nil {
		t.Errorf("state after accept = %s", stored.State)
	}
	if len(stored.History) != 4 || stored.History[3].Content != "Try this wording." {
		t.Errorf("history = %+v", stored.History)
	}

	msg = "next"
	if _, err := svc.StartTurn(context.Background(), "t", sess.ID, coach.TurnInput{Message: &msg, Step: StepClaim}); err == nil {
		t.Fatalf("a stale step started a turn")
	} else {
		wantCode(t, err, coach.CodeStepMismatch)
	}
}

// TestOutOfRangeConfidenceThroughEngine checks that a confidence of 7, which a llama.cpp
// grammar lets through, costs the learner nothing: one model call, no reset line, the text as
// streamed, and a result without the confidence that does not advance.
func TestOutOfRangeConfidenceThroughEngine(t *testing.T) {
	model := coachtest.NewModel(
		coachtest.Content(`{"assistantText":"A clear claim.","step":"claim","confidence":7,"shouldAdvance":true}`, 5),
	)
	svc := coach.NewService(coachtest.NewMemStore(), model, []coach.Contract{New()}, coach.DefaultOptions(), nil)
	sess, err := svc.CreateSession(context.Background(), "t", Name, coach.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	msg := "Cities should ban cars from their centres on weekdays"
	events := runTurn(t, svc, sess.ID, coach.TurnInput{Message: &msg, Step: StepClaim})
	last := events[len(events)-1]
	if last.Type != coach.EventResult {
		t.Fatalf("the turn ended with %+v", last)
	}
	for _, e := range events {
		if e.Type == coach.EventReset {
			t.Errorf("a reset line: %+v", e)
		}
	}
	if n := len(model.Requests()); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	if got, want := string(last.Result), `{"assistantText":"A clear claim.","step":"claim"}`; got != want {
		t.Errorf("result\n got %s\nwant %s", got, want)
	}
	if st := readState(t, last.Session.State); st.Step != StepClaim {
		t.Errorf("the session moved to %q on a confidence of 7", st.Step)
	}
}
