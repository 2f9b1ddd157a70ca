package toulmin

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/schema"
)

// Result is the CoachAIResult of one turn (api/schemas/coach-ai-result.json). Optional members
// are pointers so that an absent member stays absent; fields are in the order the result is
// sent, assistantText first.
type Result struct {
	AssistantText  string    `json:"assistantText"`
	Step           string    `json:"step"`
	Confidence     *float64  `json:"confidence,omitempty"`
	ProposedUpdate *Proposal `json:"proposedUpdate,omitempty"`
	NextQuestion   *string   `json:"nextQuestion,omitempty"`
	ShouldAdvance  *bool     `json:"shouldAdvance,omitempty"`
	NextStep       *string   `json:"nextStep,omitempty"`
	IsComplete     *bool     `json:"isComplete,omitempty"`
}

// Proposal is a proposed text for one step, shown to the learner to accept or reject.
type Proposal struct {
	Field     string `json:"field"`
	Value     string `json:"value"`
	Rationale string `json:"rationale"`
}

// Members the schema defines; anything else the model writes is dropped.
var (
	resultMembers   = []string{"assistantText", "step", "confidence", "proposedUpdate", "nextQuestion", "shouldAdvance", "nextStep", "isComplete"}
	proposalMembers = []string{"field", "value", "rationale"}
)

// invalid returns the error for output that is no usable CoachAIResult. Its message is fed
// back to the model on the corrective retry, so it says what to fix.
func invalid(format string, args ...any) error {
	return coach.Errorf(coach.KindStream, coach.CodeValidationFailed, format, args...)
}

// parseResult reads the model's complete output into a Result. It strips a markdown fence and
// strict-mode nulls, and drops members the schema does not define (reporting their names):
// the schema forbids them in what we send, but an extra "reasoning" or "notes" member says
// nothing against the members we use, so failing the turn over it would only cost the learner
// a retry. Wrong types are errors; values the guards can repair (a wrong step, an empty
// proposal) are left for the guards, and the schema itself is checked after them. A proposal
// member the model left out reads as empty: an absent field is coerced, an absent value
// removes the proposal, an absent rationale stays empty.
func parseResult(raw []byte) (*Result, []string, error) {
	if len(schema.StripFence(raw)) == 0 {
		return nil, nil, coach.Errorf(coach.KindStream, coach.CodeEmptyResponse, "the reply is empty")
	}
	doc, err := schema.Decode(raw)
	if err != nil {
		return nil, nil, invalid("the reply is not a single JSON object: %v", err)
	}
	m, ok := schema.StripNulls(doc).(map[string]any)
	if !ok {
		return nil, nil, invalid("the reply must be a JSON object")
	}
	dropped := dropUnknown(m, resultMembers, "")
	var r Result
	if v, ok := m["assistantText"]; ok {
		s, ok := v.(string)
		if !ok {
			return nil, nil, invalid("assistantText must be a string")
		}
		r.AssistantText = s
	}
	if strings.TrimSpace(r.AssistantText) == "" {
		return nil, nil, coach.Errorf(coach.KindStream, coach.CodeEmptyResponse, "assistantText is empty")
	}
	var errs []string
	str := func(key string) *string {
		v, ok := m[key]
		if !ok {
			return nil
		}
		s, ok := v.(string)
		if !ok {
			errs = append(errs, key+" must be a string")
			return nil
		}
		return &s
	}
	boolean := func(key string) *bool {
		v, ok := m[key]
		if !ok {
			return nil
		}
		b, ok := v.(bool)
		if !ok {
			errs = append(errs, key+" must be a boolean")
			return nil
		}
		return &b
	}
	if s := str("step"); s != nil {
		r.Step = *s
	}
	r.NextQuestion = str("nextQuestion")
	r.NextStep = str("nextStep")
	r.ShouldAdvance = boolean("shouldAdvance")
	r.IsComplete = boolean("isComplete")
	if v, ok := m["confidence"]; ok {
		n, ok := v.(json.Number)
		f, err := n.Float64()
		if !ok || err != nil {
			errs = append(errs, "confidence must be a number")
		} else {
			r.Confidence = &f
		}
	}
	if v, ok := m["proposedUpdate"]; ok {
		pm, ok := v.(map[string]any)
		if !ok {
			errs = append(errs, "proposedUpdate must be an object")
		} else {
			dropped = append(dropped, dropUnknown(pm, proposalMembers, "proposedUpdate.")...)
			r.ProposedUpdate = &Proposal{}
			for key, dst := range map[string]*string{"field": &r.ProposedUpdate.Field, "value": &r.ProposedUpdate.Value, "rationale": &r.ProposedUpdate.Rationale} {
				if v, ok := pm[key]; ok {
					s, ok := v.(string)
					if !ok {
						errs = append(errs, "proposedUpdate."+key+" must be a string")
						continue
					}
					*dst = s
				}
			}
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		return nil, nil, invalid("the reply does not match the schema: %s", strings.Join(errs, "; "))
	}
	return &r, dropped, nil
}

// dropUnknown deletes the members of m not in known and returns their names, sorted.
func dropUnknown(m map[string]any, known []string, prefix string) []string {
	var dropped []string
	for k := range m {
		if !slices.Contains(known, k) {
			delete(m, k)
			dropped = append(dropped, prefix+k)
		}
	}
	slices.Sort(dropped)
	return dropped
}

// encode returns r as JSON; a Result always marshals.
func (r *Result) encode() json.RawMessage {
	b, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("toulmin: marshalling result: %v", err))
	}
	return b
}
