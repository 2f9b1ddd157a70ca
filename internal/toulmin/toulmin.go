package toulmin

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/coach"
)

// Name is the contract's wire name.
const Name = "toulmin"

// The Toulmin steps, in the order a session works through them.
const (
	StepClaim          = "claim"
	StepGrounds        = "grounds"
	StepWarrant        = "warrant"
	StepGroundsBacking = "groundsBacking"
	StepWarrantBacking = "warrantBacking"
	StepQualifier      = "qualifier"
	StepRebuttal       = "rebuttal"
)

var steps = []string{
	StepClaim, StepGrounds, StepWarrant, StepGroundsBacking, StepWarrantBacking, StepQualifier, StepRebuttal,
}

// Limits on learner input, counted in characters.
const (
	MaxMessage = 4000
	MaxDraft   = 4000
)

// Steps returns the Toulmin steps in session order.
func Steps() []string { return slices.Clone(steps) }

// Next returns the step after step, or "" for rebuttal (the last one) and for unknown steps.
func Next(step string) string {
	i := slices.Index(steps, step)
	if i < 0 || i+1 == len(steps) {
		return ""
	}
	return steps[i+1]
}

// IsStep reports whether s names a Toulmin step.
func IsStep(s string) bool { return slices.Contains(steps, s) }

// State is a toulmin session's state as stored and shown to clients.
type State struct {
	// Step is the step being worked on.
	Step string `json:"step"`
	// Draft holds the accepted or typed text per step.
	Draft map[string]string `json:"draft"`
	// Turns counts the learner's messages per step before the current turn; zero means the
	// next message is the step's first turn.
	Turns map[string]int `json:"turns"`
	// PendingProposal is the last turn's surviving proposedUpdate, waiting to be accepted or
	// rejected.
	PendingProposal *Proposal `json:"pendingProposal"`
	// IsComplete is set once the rebuttal is done; the session then takes no more turns.
	IsComplete bool `json:"isComplete"`
}

// DecodeState parses a stored state. A state that does not parse or names an unknown step is a
// defect of the store rather than of the client, hence an internal error.
func DecodeState(raw json.RawMessage) (*State, error) {
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "unreadable toulmin state")
	}
	if !IsStep(s.Step) {
		return nil, coach.Errorf(coach.KindInternal, coach.CodeInternal, "toulmin state has unknown step %q", s.Step)
	}
	if s.Draft == nil {
		s.Draft = map[string]string{}
	}
	if s.Turns == nil {
		s.Turns = map[string]int{}
	}
	return &s, nil
}

// encode returns s as JSON; a State always marshals.
func (s *State) encode() json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic("toulmin: marshalling state: " + err.Error())
	}
	return b
}

// advance moves the session past step: to the next step, or to completion after the rebuttal.
func (s *State) advance(step string) {
	if next := Next(step); next != "" {
		s.Step = next
		return
	}
	s.IsComplete = true
}

// Contract is the toulmin coaching contract: it walks a learner through the seven elements of a
// Toulmin argument, streaming the coach's assistantText and guarding its CoachAIResult.
type Contract struct{}

// New returns the toulmin contract.
func New() *Contract { return &Contract{} }

// Name returns "toulmin".
func (*Contract) Name() string { return Name }

// Limits returns MaxMessage and MaxDraft.
func (*Contract) Limits() coach.Limits {
	return coach.Limits{MessageChars: MaxMessage, DraftChars: MaxDraft}
}

// SetDraft is coach.Drafting's SetDraft: the package's SetDraft.
func (*Contract) SetDraft(state json.RawMessage, field, value string) (json.RawMessage, error) {
	return SetDraft(state, field, value)
}

// Decide is coach.Drafting's Decide: the package's Decide.
func (*Contract) Decide(state json.RawMessage, action string) (json.RawMessage, error) {
	return Decide(state, action)
}

// NewState returns the state of a new session: at the claim, with nothing drafted.
func (*Contract) NewState(coach.NewSession) (json.RawMessage, error) {
	s := State{Step: StepClaim, Draft: map[string]string{}, Turns: map[string]int{}}
	return s.encode(), nil
}

// Begin checks a turn's input and prepares the turn. A toulmin turn takes a message, or
// continue (an opening turn: the coach opens the current step without a learner message); a
// step the client names must be the session's (otherwise the client is out of date and the
// turn fails with coach_step_mismatch as its stream's only line).
//
// A session on safety hold takes the same turns: a message or continue, each answered by the
// engine with SafeReply. Since SafeReply leaves the state as it was, the step a client names
// stays the session's. A complete session takes no turn, held or not (session_complete): its
// clients offer no input then.
func (*Contract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	st, err := DecodeState(s.State)
	if err != nil {
		return nil, err
	}
	if in.Selected != nil {
		return nil, coach.FieldError("selected", "toulmin turns take a message, not a selection")
	}
	if in.Form != nil {
		return nil, coach.FieldError("form", "toulmin turns take a message, not a form")
	}
	var msg string
	switch {
	case in.Continue && in.Message != nil:
		return nil, coach.FieldError("continue", "send either a message or continue, not both")
	case in.Continue:
	case in.Message == nil || strings.TrimSpace(*in.Message) == "":
		return nil, coach.FieldError("message", "message is required")
	default:
		msg = strings.TrimSpace(*in.Message)
		if utf8.RuneCountInString(msg) > MaxMessage {
			return nil, coach.FieldError("message", "message is longer than %d characters", MaxMessage)
		}
	}
	if st.IsComplete {
		return nil, coach.Errorf(coach.KindConflict, coach.CodeSessionComplete, "the argument is complete; start a new session")
	}
	if in.Step != "" && in.Step != st.Step {
		return nil, coach.Errorf(coach.KindStream, coach.CodeStepMismatch, "the session is at step %s, not %s", st.Step, coach.Clip(in.Step))
	}
	return newTurn(s, st, msg, in.Continue), nil
}

// SetDraft returns state with draft[field] set to value, as typed by the learner; a blank value
// clears the field. It does not move the session or touch a pending proposal.
func SetDraft(state json.RawMessage, field, value string) (json.RawMessage, error) {
	st, err := DecodeState(state)
	if err != nil {
		return nil, err
	}
	if !IsStep(field) {
		return nil, coach.FieldError("field", "field must be one of %s", strings.Join(steps, ", "))
	}
	if utf8.RuneCountInString(value) > MaxDraft {
		return nil, coach.FieldError("value", "value is longer than %d characters", MaxDraft)
	}
	if strings.TrimSpace(value) == "" {
		delete(st.Draft, field)
	} else {
		st.Draft[field] = value
	}
	return st.encode(), nil
}

// Proposal actions of Decide.
const (
	ActionAccept = "accept"
	ActionReject = "reject"
)

// Decide applies the learner's decision on the pending proposal: accept writes its value into
// the draft and advances the session (completing it after the rebuttal); reject drops it. A
// proposal is always for the step it was made at, and the session cannot move while one is
// pending; should a stored state say otherwise, accept only writes the draft.
func Decide(state json.RawMessage, action string) (json.RawMessage, error) {
	st, err := DecodeState(state)
	if err != nil {
		return nil, err
	}
	if action != ActionAccept && action != ActionReject {
		return nil, coach.FieldError("action", "action must be %q or %q", ActionAccept, ActionReject)
	}
	p := st.PendingProposal
	if p == nil {
		return nil, coach.Errorf(coach.KindConflict, coach.CodeNoPendingProposal, "there is no pending proposal")
	}
	st.PendingProposal = nil
	if action == ActionAccept {
		st.Draft[p.Field] = p.Value
		if p.Field == st.Step {
			st.advance(p.Field)
		}
	}
	return st.encode(), nil
}
