package toulmin

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// mustState returns st as stored JSON.
func mustState(t *testing.T, st State) json.RawMessage {
	t.Helper()
	if st.Draft == nil {
		st.Draft = map[string]string{}
	}
	if st.Turns == nil {
		st.Turns = map[string]int{}
	}
	return st.encode()
}

// readState decodes stored JSON, failing t on error.
func readState(t *testing.T, raw json.RawMessage) *State {
	t.Helper()
	st, err := DecodeState(raw)
	if err != nil {
		t.Fatalf("DecodeState(%s): %v", raw, err)
	}
	return st
}

func TestStepsAndNext(t *testing.T) {
	want := []string{"claim", "grounds", "warrant", "groundsBacking", "warrantBacking", "qualifier", "rebuttal"}
	if got := Steps(); !reflect.DeepEqual(got, want) {
		t.Errorf("Steps() = %v, want %v", got, want)
	}
	Steps()[0] = "mutated"
	if Steps()[0] != StepClaim {
		t.Errorf("Steps() shares its backing array with the caller")
	}
	for i, s := range want {
		next := ""
		if i+1 < len(want) {
			next = want[i+1]
		}
		if got := Next(s); got != next {
			t.Errorf("Next(%q) = %q, want %q", s, got, next)
		}
		if !IsStep(s) {
			t.Errorf("IsStep(%q) = false", s)
		}
	}
	if got := Next("conclusion"); got != "" {
		t.Errorf("Next(unknown) = %q, want empty", got)
	}
	if IsStep("Claim") {
		t.Errorf("IsStep(%q) = true; steps are case-sensitive", "Claim")
	}
}

func TestNewState(t *testing.T) {
	raw, err := New().NewState(coach.NewSession{Locale: "es"})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"step":"claim","draft":{},"turns":{},"pendingProposal":null,"isComplete":false}`
	if string(raw) != want {
		t.Errorf("NewState = %s, want %s", raw, want)
	}
	if New().Name() != "toulmin" {
		t.Errorf("Name() = %q", New().Name())
	}
}

func TestDecodeStateErrors(t *testing.T) {
	for _, raw := range []string{`{`, `{"step":"conclusion"}`, `{"step":""}`, `[]`} {
		t.Run(raw, func(t *testing.T) {
			_, err := DecodeState(json.RawMessage(raw))
			if e := wantCode(t, err, coach.CodeInternal); e.Kind != coach.KindInternal {
				t.Errorf("kind = %v, want KindInternal", e.Kind)
			}
		})
	}
	st, err := DecodeState(json.RawMessage(`{"step":"grounds"}`))
	if err != nil {
		t.Fatal(err)
	}
	if st.Draft == nil || st.Turns == nil {
		t.Errorf("absent maps decode as nil: %+v", st)
	}
}

func TestBeginErrors(t *testing.T) {
	msg := func(s string) *string { return &s }
	open := mustState(t, State{Step: StepWarrant})
	done := mustState(t, State{Step: StepRebuttal, IsComplete: true})
	tests := []struct {
		name  string
		state json.RawMessage
		in    coach.TurnInput
		kind  coach.Kind
		code  string
		field string
	}{
		{"no message", open, coach.TurnInput{}, coach.KindUnprocessable, coach.CodeInvalidInput, "message"},
		{"empty message", open, coach.TurnInput{Message: msg("")}, coach.KindUnprocessable, coach.CodeInvalidInput, "message"},
		{"blank message", open, coach.TurnInput{Message: msg(" \n\t ")}, coach.KindUnprocessable, coach.CodeInvalidInput, "message"},
		{"long message", open, coach.TurnInput{Message: msg(strings.Repeat("é", MaxMessage+1))}, coach.KindUnprocessable, coach.CodeInvalidInput, "message"},
		{"selection", open, coach.TurnInput{Message: msg("hi"), Selected: msg("b")}, coach.KindUnprocessable, coach.CodeInvalidInput, "selected"},
		{"form", open, coach.TurnInput{Message: msg("hi"), Form: &coach.FormAnswer{ID: "f"}}, coach.KindUnprocessable, coach.CodeInvalidInput, "form"},
		{"complete", done, coach.TurnInput{Message: msg("one more thing")}, coach.KindConflict, coach.CodeSessionComplete, ""},
		{"continue with a message", open, coach.TurnInput{Continue: true, Message: msg("hi")}, coach.KindUnprocessable, coach.CodeInvalidInput, "continue"},
		{"continue with an empty message", open, coach.TurnInput{Continue: true, Message: msg("")}, coach.KindUnprocessable, coach.CodeInvalidInput, "continue"},
		{"continue with a selection", open, coach.TurnInput{Continue: true, Selected: msg("b")}, coach.KindUnprocessable, coach.CodeInvalidInput, "selected"},
		{"continue when complete", done, coach.TurnInput{Continue: true}, coach.KindConflict, coach.CodeSessionComplete, ""},
		{"continue at another step", open, coach.TurnInput{Continue: true, Step: StepClaim}, coach.KindStream, coach.CodeStepMismatch, ""},
		{"step mismatch", open, coach.TurnInput{Message: msg("hi"), Step: StepClaim}, coach.KindStream, coach.CodeStepMismatch, ""},
		{"unknown step", open, coach.TurnInput{Message: msg("hi"), Step: "conclusion"}, coach.KindStream, coach.CodeStepMismatch, ""},
		{"broken state", json.RawMessage(`{"step":7}`), coach.TurnInput{Message: msg("hi")}, coach.KindInternal, coach.CodeInternal, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn, err := New().Begin(&coach.Session{Locale: "en", State: tt.state}, tt.in)
			if turn != nil {
				t.Errorf("Begin returned a turn with an error")
			}
			e := wantCode(t, err, tt.code)
			if e.Kind != tt.kind {
				t.Errorf("kind = %v, want %v", e.Kind, tt.kind)
			}
			if e.Field != tt.field {
				t.Errorf("field = %q, want %q", e.Field, tt.field)
			}
		})
	}
}

func TestBeginAccepts(t *testing.T) {
	msg := "  My claim is ready  "
	for _, step := range []string{"", StepWarrant} {
		t.Run("step="+step, func(t *testing.T) {
			tr, err := New().Begin(&coach.Session{Locale: "en", State: mustState(t, State{Step: StepWarrant})}, coach.TurnInput{Message: &msg, Step: step})
			if err != nil {
				t.Fatalf("Begin: %v", err)
			}
			msgs := tr.Request().Messages
			if last := msgs[len(msgs)-1]; last.Role != coach.RoleUser || last.Content != "My claim is ready" {
				t.Errorf("last message = %+v, want the trimmed user message", last)
			}
		})
	}
}

func TestSetDraft(t *testing.T) {
	base := mustState(t, State{Step: StepGrounds, Draft: map[string]string{StepClaim: goodClaim},
		PendingProposal: prop(StepGrounds, "Data shows it.")})
	tests := []struct {
		name, field, value string
		want               map[string]string
	}{
		{"set current", StepGrounds, "Air quality improved 30%.", map[string]string{StepClaim: goodClaim, StepGrounds: "Air quality improved 30%."}},
		{"replace earlier", StepClaim, "Cars should go.", map[string]string{StepClaim: "Cars should go."}},
		{"set later", StepRebuttal, "Unless buses fail.", map[string]string{StepClaim: goodClaim, StepRebuttal: "Unless buses fail."}},
		{"clear", StepClaim, "  ", map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := SetDraft(base, tt.field, tt.value)
			if err != nil {
				t.Fatalf("SetDraft: %v", err)
			}
			st := readState(t, raw)
			if !reflect.DeepEqual(st.Draft, tt.want) {
				t.Errorf("draft = %v, want %v", st.Draft, tt.want)
			}
			if st.Step != StepGrounds || st.PendingProposal == nil {
				t.Errorf("SetDraft moved the session or dropped the proposal: %s", raw)
			}
		})
	}
	errs := []struct{ name, field, value, wantField string }{
		{"unknown field", "conclusion", "x", "field"},
		{"empty field", "", "x", "field"},
		{"too long", StepClaim, strings.Repeat("a", MaxDraft+1), "value"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			_, err := SetDraft(base, tt.field, tt.value)
			if e := wantCode(t, err, coach.CodeInvalidInput); e.Field != tt.wantField {
				t.Errorf("field = %q, want %q", e.Field, tt.wantField)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	pending := func(step, value string) json.RawMessage {
		return mustState(t, State{Step: step, Draft: map[string]string{StepClaim: goodClaim}, Turns: map[string]int{step: 2},
			PendingProposal: prop(step, value)})
	}
	tests := []struct {
		name     string
		state    json.RawMessage
		action   string
		step     string
		draft    map[string]string
		complete bool
	}{
		{"accept claim", pending(StepClaim, "Cars must go."), ActionAccept, StepGrounds, map[string]string{StepClaim: "Cars must go."}, false},
		{"accept qualifier", pending(StepQualifier, "Usually."), ActionAccept, StepRebuttal, map[string]string{StepClaim: goodClaim, StepQualifier: "Usually."}, false},
		{"accept rebuttal", pending(StepRebuttal, goodRebut), ActionAccept, StepRebuttal, map[string]string{StepClaim: goodClaim, StepRebuttal: goodRebut}, true},
		{"reject", pending(StepGrounds, "Data."), ActionReject, StepGrounds, map[string]string{StepClaim: goodClaim}, false},
		{"stale proposal field", mustState(t, State{Step: StepWarrant, PendingProposal: prop(StepClaim, "Old.")}), ActionAccept, StepWarrant, map[string]string{StepClaim: "Old."}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := Decide(tt.state, tt.action)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			st := readState(t, raw)
			if st.Step != tt.step || st.IsComplete != tt.complete || st.PendingProposal != nil {
				t.Errorf("state = %s, want step %s, complete %v, no proposal", raw, tt.step, tt.complete)
			}
			if !reflect.DeepEqual(st.Draft, tt.draft) {
				t.Errorf("draft = %v, want %v", st.Draft, tt.draft)
			}
		})
	}

	none := mustState(t, State{Step: StepClaim})
	_, err := Decide(none, ActionAccept)
	if e := wantCode(t, err, coach.CodeNoPendingProposal); e.Kind != coach.KindConflict {
		t.Errorf("kind = %v, want KindConflict", e.Kind)
	}
	for _, action := range []string{"", "ACCEPT", "maybe"} {
		_, err := Decide(pending(StepClaim, "x"), action)
		if e := wantCode(t, err, coach.CodeInvalidInput); e.Field != "action" {
			t.Errorf("Decide(%q): field = %q, want action", action, e.Field)
		}
	}
	_, err = Decide(none, "maybe")
	wantCode(t, err, coach.CodeInvalidInput)
}
