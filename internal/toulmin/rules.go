package toulmin

import (
	"strings"
	"sync"

	"github.com/coachgw/coachgw/internal/schema"
)

// Names of the guard rules, as reported in coach.Outcome.Rules.
const (
	RuleUnknownFieldsDropped = "unknown_fields_dropped"
	RuleConfidenceOutOfRange = "confidence_out_of_range"
	RuleStepCoercion         = "step_coercion"
	RuleOpeningTurn          = "opening_turn"
	RuleEmptyValueRemoval    = "empty_value_removal"
	RuleFirstTurnBias        = "first_turn_bias"
	RuleShouldAdvanceGuard   = "should_advance_guard"
	RuleIsCompleteGuard      = "is_complete_guard"
	RuleNextStepCorrection   = "next_step_correction"
	RuleSchemaValidation     = "schema_validation"
	RuleQuestionAppending    = "question_appending"
)

// Confidence thresholds of the seed's guards.
const (
	// ProposalConfidence is the least confidence at which a first turn for a step may carry a
	// proposal.
	ProposalConfidence = 0.8
	// AdvanceConfidence is the least confidence at which a step may be left or the argument
	// completed.
	AdvanceConfidence = 0.6
)

// Context is what the guards know about the session the result belongs to.
type Context struct {
	// Step is the session's current step.
	Step string
	// Draft is the session's draft per step.
	Draft map[string]string
	// FirstTurn says this is the learner's first message for Step.
	FirstTurn bool
	// Rewrite says the learner explicitly asked for better wording.
	Rewrite bool
	// Opening says the turn has no learner message: the coach opens the step.
	Opening bool
}

// Rule is one server-side guard of the seed. Apply repairs r in place and reports whether it
// changed anything; an error means r cannot be repaired.
type Rule struct {
	Name  string
	Apply func(r *Result, c *Context) (changed bool, err error)
}

// rules are the seed's server-side guards in the seed's order; isComplete, which the seed only
// mentions as the rebuttal's form of shouldAdvance, gets its own guard right after it. The
// confidence's range is checked first, since the seed's guards read it.
var rules = []Rule{
	{RuleConfidenceOutOfRange, confidenceRange},
	{RuleStepCoercion, stepCoercion},
	{RuleOpeningTurn, openingTurn},
	{RuleEmptyValueRemoval, emptyValueRemoval},
	{RuleFirstTurnBias, firstTurnBias},
	{RuleShouldAdvanceGuard, shouldAdvanceGuard},
	{RuleIsCompleteGuard, isCompleteGuard},
	{RuleNextStepCorrection, nextStepCorrection},
	{RuleSchemaValidation, schemaValidation},
	{RuleQuestionAppending, questionAppending},
}

// guard applies every rule to r in order and returns the names of those that changed it.
func guard(r *Result, c *Context) ([]string, error) {
	var fired []string
	for _, rule := range rules {
		changed, err := rule.Apply(r, c)
		if err != nil {
			return fired, err
		}
		if changed {
			fired = append(fired, rule.Name)
		}
	}
	return fired, nil
}

// stepCoercion forces step and proposedUpdate.field to the session's step: the model may only
// work on the step the session is at, whatever it was told by the learner.
func stepCoercion(r *Result, c *Context) (bool, error) {
	changed := false
	if r.Step != c.Step {
		r.Step, changed = c.Step, true
	}
	if p := r.ProposedUpdate; p != nil && p.Field != c.Step {
		p.Field, changed = c.Step, true
	}
	return changed, nil
}

// emptyValueRemoval removes a proposal that proposes nothing.
func emptyValueRemoval(r *Result, _ *Context) (bool, error) {
	if p := r.ProposedUpdate; p != nil && strings.TrimSpace(p.Value) == "" {
		r.ProposedUpdate = nil
		return true, nil
	}
	return false, nil
}

// openingTurn removes from an opening turn's result everything that would change the session:
// the proposal, shouldAdvance, nextStep and isComplete. The learner has said nothing yet, so
// there is nothing to propose or judge complete.
func openingTurn(r *Result, c *Context) (bool, error) {
	if !c.Opening || (r.ProposedUpdate == nil && r.ShouldAdvance == nil && r.NextStep == nil && r.IsComplete == nil) {
		return false, nil
	}
	r.ProposedUpdate, r.ShouldAdvance, r.NextStep, r.IsComplete = nil, nil, nil, nil
	return true, nil
}

// firstTurnBias removes a proposal made on the learner's first message for a step unless the
// model is confident (at least ProposalConfidence) or the learner asked for a rewrite: the
// learner should be coached before being handed text.
func firstTurnBias(r *Result, c *Context) (bool, error) {
	if r.ProposedUpdate == nil || !c.FirstTurn || c.Rewrite || atLeast(r.Confidence, ProposalConfidence) {
		return false, nil
	}
	r.ProposedUpdate = nil
	return true, nil
}

// shouldAdvanceGuard removes shouldAdvance unless the step has text (the proposal's, else the
// draft's) that passes the step's heuristic and the model is confident (at least
// AdvanceConfidence). On the rebuttal, the last step, an accepted shouldAdvance becomes
// isComplete.
func shouldAdvanceGuard(r *Result, c *Context) (bool, error) {
	if r.ShouldAdvance == nil || !*r.ShouldAdvance {
		return false, nil
	}
	r.ShouldAdvance = nil
	if !ready(r, c) {
		return true, nil
	}
	if c.Step == StepRebuttal {
		r.IsComplete = ptr(true)
		return true, nil
	}
	r.ShouldAdvance = ptr(true)
	return false, nil
}

// isCompleteGuard removes isComplete everywhere but on the rebuttal, and there unless it passes
// the guards of shouldAdvance.
func isCompleteGuard(r *Result, c *Context) (bool, error) {
	if r.IsComplete == nil || !*r.IsComplete {
		return false, nil
	}
	if c.Step == StepRebuttal && ready(r, c) {
		return false, nil
	}
	r.IsComplete = nil
	return true, nil
}

// ready reports whether the step's text and the model's confidence allow leaving the step.
func ready(r *Result, c *Context) bool {
	text := c.Draft[c.Step]
	if r.ProposedUpdate != nil {
		text = r.ProposedUpdate.Value
	}
	return strings.TrimSpace(text) != "" && plausible(c.Step, text) && atLeast(r.Confidence, AdvanceConfidence)
}

// confidenceRange removes a confidence outside the schema's 0..1, so that the result reads as
// one without a confidence. Engines whose grammar bounds only integers (llama.cpp's, see the
// llamacpp profile) write such numbers (7, -5); the seed defines no other scale, so a
// confidence of 7 says nothing the guards could use, and clamping it to 1 would let it open
// the gates it means nothing for. Without it, the guards act as for a model that gave none: no
// proposal on a step's first turn, no advance. The result the learner already read stays as it
// is, with no reset and no second model call, and the rule's firing is counted and logged.
func confidenceRange(r *Result, _ *Context) (bool, error) {
	if r.Confidence == nil || *r.Confidence >= 0 && *r.Confidence <= 1 {
		return false, nil
	}
	r.Confidence = nil
	return true, nil
}

// nextStepCorrection sets nextStep to the step after the session's when shouldAdvance is true
// and removes it otherwise.
func nextStepCorrection(r *Result, c *Context) (bool, error) {
	if r.ShouldAdvance != nil && *r.ShouldAdvance {
		next := Next(c.Step)
		if r.NextStep != nil && *r.NextStep == next {
			return false, nil
		}
		r.NextStep = &next
		return true, nil
	}
	if r.NextStep == nil {
		return false, nil
	}
	r.NextStep = nil
	return true, nil
}

var resultSchema = sync.OnceValue(func() *schema.Validator { return schema.Load("coach-ai-result.json") })

// schemaValidation checks the guarded result against api/schemas/coach-ai-result.json. It
// never changes the result; it fails the turn on what the guards cannot repair, such as an
// assistantText or a nextQuestion longer than the schema allows.
func schemaValidation(r *Result, _ *Context) (bool, error) {
	if err := resultSchema().ValidateJSON(r.encode()); err != nil {
		return false, invalid("the reply does not match the schema: %v", err)
	}
	return false, nil
}

// questionAppending appends a non-blank nextQuestion to assistantText after a blank line, so
// the learner sees the question without client-side logic; a blank one is removed.
func questionAppending(r *Result, _ *Context) (bool, error) {
	if r.NextQuestion == nil {
		return false, nil
	}
	if strings.TrimSpace(*r.NextQuestion) == "" {
		r.NextQuestion = nil
		return true, nil
	}
	r.AssistantText += "\n\n" + *r.NextQuestion
	return true, nil
}

// atLeast reports whether confidence is present and at least threshold.
func atLeast(confidence *float64, threshold float64) bool {
	return confidence != nil && *confidence >= threshold
}

func ptr[T any](v T) *T { return &v }
