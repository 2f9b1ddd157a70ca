package toulmin

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// ctxAt returns a guard context at step with the given drafts.
func ctxAt(step string, firstTurn, rewrite bool, draft map[string]string) *Context {
	if draft == nil {
		draft = map[string]string{}
	}
	return &Context{Step: step, Draft: draft, FirstTurn: firstTurn, Rewrite: rewrite}
}

func prop(field, value string) *Proposal {
	return &Proposal{Field: field, Value: value, Rationale: "clearer"}
}

type ruleCase struct {
	name    string
	in      Result
	ctx     *Context
	want    Result
	changed bool
}

func runRule(t *testing.T, apply func(*Result, *Context) (bool, error), tests []ruleCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in
			if r.ProposedUpdate != nil {
				p := *r.ProposedUpdate
				r.ProposedUpdate = &p
			}
			changed, err := apply(&r, tt.ctx)
			if err != nil {
				t.Fatalf("err = %v, want nil", err)
			}
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			if got, want := string(r.encode()), string(tt.want.encode()); got != want {
				t.Errorf("result\n got  %s\n want %s", got, want)
			}
		})
	}
}

const (
	goodClaim   = "Cities should ban cars downtown."
	goodWarrant = "Cleaner air matters because it saves lives."
	goodRebut   = "Unless public transport is poor."
)

func TestStepCoercion(t *testing.T) {
	runRule(t, stepCoercion, []ruleCase{
		{"matching step", Result{AssistantText: "a", Step: StepClaim}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim}, false},
		{"wrong step", Result{AssistantText: "a", Step: StepRebuttal}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim}, true},
		{"missing step", Result{AssistantText: "a"}, ctxAt(StepGrounds, false, false, nil),
			Result{AssistantText: "a", Step: StepGrounds}, true},
		{"unknown step", Result{AssistantText: "a", Step: "conclusion"}, ctxAt(StepGrounds, false, false, nil),
			Result{AssistantText: "a", Step: StepGrounds}, true},
		{"wrong proposal field", Result{AssistantText: "a", Step: StepClaim, ProposedUpdate: prop(StepWarrant, "x")}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim, ProposedUpdate: prop(StepClaim, "x")}, true},
		{"matching proposal field", Result{AssistantText: "a", Step: StepClaim, ProposedUpdate: prop(StepClaim, "x")}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim, ProposedUpdate: prop(StepClaim, "x")}, false},
	})
}

func TestEmptyValueRemoval(t *testing.T) {
	runRule(t, emptyValueRemoval, []ruleCase{
		{"no proposal", Result{AssistantText: "a", Step: StepClaim}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim}, false},
		{"value", Result{AssistantText: "a", Step: StepClaim, ProposedUpdate: prop(StepClaim, "x")}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim, ProposedUpdate: prop(StepClaim, "x")}, false},
		{"empty value", Result{AssistantText: "a", Step: StepClaim, ProposedUpdate: prop(StepClaim, "")}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim}, true},
		{"blank value", Result{AssistantText: "a", Step: StepClaim, ProposedUpdate: prop(StepClaim, " \n\t")}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim}, true},
	})
}

func TestFirstTurnBias(t *testing.T) {
	withProp := func(c *float64) Result {
		return Result{AssistantText: "a", Step: StepClaim, Confidence: c, ProposedUpdate: prop(StepClaim, goodClaim)}
	}
	without := func(c *float64) Result { return Result{AssistantText: "a", Step: StepClaim, Confidence: c} }
	runRule(t, firstTurnBias, []ruleCase{
		{"first turn, low confidence", withProp(ptr(0.5)), ctxAt(StepClaim, true, false, nil), without(ptr(0.5)), true},
		{"first turn, no confidence", withProp(nil), ctxAt(StepClaim, true, false, nil), without(nil), true},
		{"first turn, just below", withProp(ptr(0.79)), ctxAt(StepClaim, true, false, nil), without(ptr(0.79)), true},
		{"first turn, confident", withProp(ptr(0.8)), ctxAt(StepClaim, true, false, nil), withProp(ptr(0.8)), false},
		{"first turn, rewrite request", withProp(ptr(0.3)), ctxAt(StepClaim, true, true, nil), withProp(ptr(0.3)), false},
		{"later turn, low confidence", withProp(ptr(0.3)), ctxAt(StepClaim, false, false, nil), withProp(ptr(0.3)), false},
		{"first turn, no proposal", without(ptr(0.1)), ctxAt(StepClaim, true, false, nil), without(ptr(0.1)), false},
	})
}

func TestShouldAdvanceGuard(t *testing.T) {
	res := func(step string, c *float64, p *Proposal, adv *bool) Result {
		return Result{AssistantText: "a", Step: step, Confidence: c, ProposedUpdate: p, ShouldAdvance: adv}
	}
	claimDraft := map[string]string{StepClaim: goodClaim}
	runRule(t, shouldAdvanceGuard, []ruleCase{
		{"absent", res(StepClaim, ptr(0.9), nil, nil), ctxAt(StepClaim, false, false, claimDraft),
			res(StepClaim, ptr(0.9), nil, nil), false},
		{"false", res(StepClaim, ptr(0.9), nil, ptr(false)), ctxAt(StepClaim, false, false, claimDraft),
			res(StepClaim, ptr(0.9), nil, ptr(false)), false},
		{"draft passes", res(StepClaim, ptr(0.9), nil, ptr(true)), ctxAt(StepClaim, false, false, claimDraft),
			res(StepClaim, ptr(0.9), nil, ptr(true)), false},
		{"proposal passes, empty draft", res(StepClaim, ptr(0.6), prop(StepClaim, goodClaim), ptr(true)), ctxAt(StepClaim, false, false, nil),
			res(StepClaim, ptr(0.6), prop(StepClaim, goodClaim), ptr(true)), false},
		{"no proposal, empty draft", res(StepClaim, ptr(0.9), nil, ptr(true)), ctxAt(StepClaim, false, false, nil),
			res(StepClaim, ptr(0.9), nil, nil), true},
		{"no proposal, blank draft", res(StepClaim, ptr(0.9), nil, ptr(true)), ctxAt(StepClaim, false, false, map[string]string{StepClaim: "  "}),
			res(StepClaim, ptr(0.9), nil, nil), true},
		{"draft fails heuristic", res(StepWarrant, ptr(0.9), nil, ptr(true)), ctxAt(StepWarrant, false, false, map[string]string{StepWarrant: "Clean air is good for all."}),
			res(StepWarrant, ptr(0.9), nil, nil), true},
		{"proposal fails heuristic over good draft", res(StepClaim, ptr(0.9), prop(StepClaim, "Ban cars?"), ptr(true)), ctxAt(StepClaim, false, false, claimDraft),
			res(StepClaim, ptr(0.9), prop(StepClaim, "Ban cars?"), nil), true},
		{"low confidence", res(StepClaim, ptr(0.59), nil, ptr(true)), ctxAt(StepClaim, false, false, claimDraft),
			res(StepClaim, ptr(0.59), nil, nil), true},
		{"no confidence", res(StepClaim, nil, nil, ptr(true)), ctxAt(StepClaim, false, false, claimDraft),
			res(StepClaim, nil, nil, nil), true},
		{"rebuttal becomes isComplete", res(StepRebuttal, ptr(0.9), nil, ptr(true)), ctxAt(StepRebuttal, false, false, map[string]string{StepRebuttal: goodRebut}),
			Result{AssistantText: "a", Step: StepRebuttal, Confidence: ptr(0.9), IsComplete: ptr(true)}, true},
		{"rebuttal failing guards is stripped", res(StepRebuttal, ptr(0.9), nil, ptr(true)), ctxAt(StepRebuttal, false, false, map[string]string{StepRebuttal: "Shops lose customers."}),
			res(StepRebuttal, ptr(0.9), nil, nil), true},
	})
}

func TestIsCompleteGuard(t *testing.T) {
	res := func(step string, c *float64, p *Proposal, done *bool) Result {
		return Result{AssistantText: "a", Step: step, Confidence: c, ProposedUpdate: p, IsComplete: done}
	}
	rebut := map[string]string{StepRebuttal: goodRebut}
	runRule(t, isCompleteGuard, []ruleCase{
		{"absent", res(StepRebuttal, ptr(0.9), nil, nil), ctxAt(StepRebuttal, false, false, rebut), res(StepRebuttal, ptr(0.9), nil, nil), false},
		{"false elsewhere kept", res(StepClaim, ptr(0.9), nil, ptr(false)), ctxAt(StepClaim, false, false, nil), res(StepClaim, ptr(0.9), nil, ptr(false)), false},
		{"rebuttal ready", res(StepRebuttal, ptr(0.9), nil, ptr(true)), ctxAt(StepRebuttal, false, false, rebut), res(StepRebuttal, ptr(0.9), nil, ptr(true)), false},
		{"rebuttal by proposal", res(StepRebuttal, ptr(0.7), prop(StepRebuttal, goodRebut), ptr(true)), ctxAt(StepRebuttal, false, false, nil),
			res(StepRebuttal, ptr(0.7), prop(StepRebuttal, goodRebut), ptr(true)), false},
		{"on claim", res(StepClaim, ptr(1.0), nil, ptr(true)), ctxAt(StepClaim, false, false, map[string]string{StepClaim: goodClaim}), res(StepClaim, ptr(1.0), nil, nil), true},
		{"on qualifier", res(StepQualifier, ptr(1.0), nil, ptr(true)), ctxAt(StepQualifier, false, false, map[string]string{StepQualifier: "probably"}), res(StepQualifier, ptr(1.0), nil, nil), true},
		{"rebuttal empty draft", res(StepRebuttal, ptr(0.9), nil, ptr(true)), ctxAt(StepRebuttal, false, false, nil), res(StepRebuttal, ptr(0.9), nil, nil), true},
		{"rebuttal low confidence", res(StepRebuttal, ptr(0.5), nil, ptr(true)), ctxAt(StepRebuttal, false, false, rebut), res(StepRebuttal, ptr(0.5), nil, nil), true},
		{"rebuttal no marker", res(StepRebuttal, ptr(0.9), nil, ptr(true)), ctxAt(StepRebuttal, false, false, map[string]string{StepRebuttal: "Shops lose customers."}), res(StepRebuttal, ptr(0.9), nil, nil), true},
	})
}

func TestNextStepCorrection(t *testing.T) {
	runRule(t, nextStepCorrection, []ruleCase{
		{"advance, right next step", Result{AssistantText: "a", Step: StepClaim, ShouldAdvance: ptr(true), NextStep: ptr(StepGrounds)}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim, ShouldAdvance: ptr(true), NextStep: ptr(StepGrounds)}, false},
		{"advance, missing next step", Result{AssistantText: "a", Step: StepClaim, ShouldAdvance: ptr(true)}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim, ShouldAdvance: ptr(true), NextStep: ptr(StepGrounds)}, true},
		{"advance, skipping ahead", Result{AssistantText: "a", Step: StepClaim, ShouldAdvance: ptr(true), NextStep: ptr(StepRebuttal)}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim, ShouldAdvance: ptr(true), NextStep: ptr(StepGrounds)}, true},
		{"advance, invalid next step", Result{AssistantText: "a", Step: StepQualifier, ShouldAdvance: ptr(true), NextStep: ptr("done")}, ctxAt(StepQualifier, false, false, nil),
			Result{AssistantText: "a", Step: StepQualifier, ShouldAdvance: ptr(true), NextStep: ptr(StepRebuttal)}, true},
		{"no advance, next step", Result{AssistantText: "a", Step: StepClaim, NextStep: ptr(StepGrounds)}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim}, true},
		{"false advance, next step", Result{AssistantText: "a", Step: StepClaim, ShouldAdvance: ptr(false), NextStep: ptr(StepGrounds)}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim, ShouldAdvance: ptr(false)}, true},
		{"no advance, no next step", Result{AssistantText: "a", Step: StepClaim}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "a", Step: StepClaim}, false},
	})
}

func TestQuestionAppending(t *testing.T) {
	runRule(t, questionAppending, []ruleCase{
		{"no question", Result{AssistantText: "Good start.", Step: StepClaim}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "Good start.", Step: StepClaim}, false},
		{"question", Result{AssistantText: "Good start.", Step: StepClaim, NextQuestion: ptr("Who is affected?")}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "Good start.\n\nWho is affected?", Step: StepClaim, NextQuestion: ptr("Who is affected?")}, true},
		{"blank question removed", Result{AssistantText: "Good start.", Step: StepClaim, NextQuestion: ptr("  ")}, ctxAt(StepClaim, false, false, nil),
			Result{AssistantText: "Good start.", Step: StepClaim}, true},
	})
}

func TestSchemaValidation(t *testing.T) {
	tests := []struct {
		name    string
		in      Result
		wantErr string
	}{
		{"minimal", Result{AssistantText: "a", Step: StepClaim}, ""},
		{"full", Result{AssistantText: "a", Step: StepClaim, Confidence: ptr(1.0), ProposedUpdate: prop(StepClaim, "x"),
			NextQuestion: ptr("q"), ShouldAdvance: ptr(true), NextStep: ptr(StepGrounds), IsComplete: ptr(false)}, ""},
		{"confidence above 1", Result{AssistantText: "a", Step: StepClaim, Confidence: ptr(1.5)}, "confidence"},
		{"confidence below 0", Result{AssistantText: "a", Step: StepClaim, Confidence: ptr(-0.1)}, "confidence"},
		{"unknown step", Result{AssistantText: "a", Step: "conclusion"}, "step"},
		{"empty text", Result{AssistantText: "", Step: StepClaim}, "assistantText"},
		{"empty proposal value", Result{AssistantText: "a", Step: StepClaim, ProposedUpdate: prop(StepClaim, "")}, "value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in
			changed, err := schemaValidation(&r, ctxAt(StepClaim, false, false, nil))
			if changed {
				t.Errorf("changed = true, want false: validation never changes a result")
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("err = %v, want nil", err)
				}
				return
			}
			e := wantCode(t, err, coach.CodeValidationFailed)
			if !strings.Contains(e.Message, tt.wantErr) {
				t.Errorf("message %q does not mention %q", e.Message, tt.wantErr)
			}
		})
	}
}

// wantCode fails t unless err is a coach.Error with code (and KindStream for the stream codes).
func wantCode(t *testing.T, err error, code string) *coach.Error {
	t.Helper()
	var e *coach.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v, want a coach.Error with code %s", err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %s (%v), want %s", e.Code, err, code)
	}
	if strings.HasPrefix(code, "coach_") && e.Kind != coach.KindStream {
		t.Errorf("kind = %v, want KindStream", e.Kind)
	}
	return e
}

func TestRulesOrder(t *testing.T) {
	var got []string
	for _, r := range rules {
		got = append(got, r.Name)
	}
	want := []string{RuleConfidenceOutOfRange, RuleStepCoercion, RuleOpeningTurn, RuleEmptyValueRemoval, RuleFirstTurnBias, RuleShouldAdvanceGuard,
		RuleIsCompleteGuard, RuleNextStepCorrection, RuleSchemaValidation, RuleQuestionAppending}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rules = %v, want %v", got, want)
	}
}

// TestGuard runs the whole chain, where rules depend on what earlier ones did.
func TestGuard(t *testing.T) {
	tests := []struct {
		name  string
		in    Result
		ctx   *Context
		want  Result
		fired []string
	}{
		{
			name:  "clean result",
			in:    Result{AssistantText: "Nice.", Step: StepClaim, Confidence: ptr(0.4)},
			ctx:   ctxAt(StepClaim, true, false, nil),
			want:  Result{AssistantText: "Nice.", Step: StepClaim, Confidence: ptr(0.4)},
			fired: nil,
		},
		{
			// The first-turn proposal goes, so the advance has only the empty draft to stand on.
			name: "first-turn proposal and advance",
			in: Result{AssistantText: "Nice.", Step: StepClaim, Confidence: ptr(0.7), ProposedUpdate: prop(StepClaim, goodClaim),
				ShouldAdvance: ptr(true), NextStep: ptr(StepGrounds), NextQuestion: ptr("Why?")},
			ctx:   ctxAt(StepClaim, true, false, nil),
			want:  Result{AssistantText: "Nice.\n\nWhy?", Step: StepClaim, Confidence: ptr(0.7), NextQuestion: ptr("Why?")},
			fired: []string{RuleFirstTurnBias, RuleShouldAdvanceGuard, RuleNextStepCorrection, RuleQuestionAppending},
		},
		{
			name: "wrong step everywhere",
			in: Result{AssistantText: "Done!", Step: StepRebuttal, Confidence: ptr(0.95), ProposedUpdate: prop(StepRebuttal, goodWarrant),
				ShouldAdvance: ptr(true), NextStep: ptr(StepRebuttal), IsComplete: ptr(true)},
			ctx: ctxAt(StepWarrant, false, false, nil),
			want: Result{AssistantText: "Done!", Step: StepWarrant, Confidence: ptr(0.95), ProposedUpdate: prop(StepWarrant, goodWarrant),
				ShouldAdvance: ptr(true), NextStep: ptr(StepGroundsBacking)},
			fired: []string{RuleStepCoercion, RuleIsCompleteGuard, RuleNextStepCorrection},
		},
		{
			name:  "empty proposal cannot carry an advance",
			in:    Result{AssistantText: "Ok.", Step: StepGrounds, Confidence: ptr(0.9), ProposedUpdate: prop(StepGrounds, ""), ShouldAdvance: ptr(true)},
			ctx:   ctxAt(StepGrounds, false, false, nil),
			want:  Result{AssistantText: "Ok.", Step: StepGrounds, Confidence: ptr(0.9)},
			fired: []string{RuleEmptyValueRemoval, RuleShouldAdvanceGuard},
		},
		{
			name:  "rebuttal completes",
			in:    Result{AssistantText: "Done.", Step: StepRebuttal, Confidence: ptr(0.9), ShouldAdvance: ptr(true), NextStep: ptr(StepClaim)},
			ctx:   ctxAt(StepRebuttal, false, false, map[string]string{StepRebuttal: goodRebut}),
			want:  Result{AssistantText: "Done.", Step: StepRebuttal, Confidence: ptr(0.9), IsComplete: ptr(true)},
			fired: []string{RuleShouldAdvanceGuard, RuleNextStepCorrection},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in
			fired, err := guard(&r, tt.ctx)
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if !reflect.DeepEqual(fired, tt.fired) {
				t.Errorf("fired = %v, want %v", fired, tt.fired)
			}
			if got, want := string(r.encode()), string(tt.want.encode()); got != want {
				t.Errorf("result\n got  %s\n want %s", got, want)
			}
		})
	}
}

func TestGuardSchemaFailure(t *testing.T) {
	r := Result{AssistantText: "a", Step: StepClaim, NextQuestion: ptr(strings.Repeat("q", 4001))}
	fired, err := guard(&r, ctxAt(StepClaim, false, false, nil))
	wantCode(t, err, coach.CodeValidationFailed)
	if len(fired) != 0 {
		t.Errorf("fired = %v, want none", fired)
	}
	if r.AssistantText != "a" {
		t.Errorf("assistantText = %q: rules after a failure must not run", r.AssistantText)
	}
}
