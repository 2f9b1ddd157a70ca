package uistream

import (
	"encoding/json"
	"strings"

	"github.com/coachgw/coachgw/internal/coach"
)

// Names of the data parts a learner's message may carry instead of text.
const (
	// PartSelect answers a multiple_choice card: data {"selected":"b"}.
	PartSelect = "data-coach-select"
	// PartForm answers a module form: data {"id":"…","values":{…}}.
	PartForm = "data-coach-form"
	// PartContinue asks the coach to open the current step without a learner message (toulmin,
	// what the NDJSON route takes as {"continue":true}): data {}.
	PartContinue = "data-coach-continue"
)

// Request is the body the AI SDK's chat transport sends: the chat's id, its messages (the
// gateway reads only the last), what triggered the request and, for a regeneration, the id of the
// message to replace. Members the gateway does not read are ignored.
type Request struct {
	ID        string    `json:"id"`
	Messages  []Message `json:"messages"`
	Trigger   string    `json:"trigger"`
	MessageID string    `json:"messageId"`
}

// Message is one UI message of Request.
type Message struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Part is one part of a Message: a text part's Text, or a data part's Data.
type Part struct {
	Type string          `json:"type"`
	Text string          `json:"text"`
	Data json.RawMessage `json:"data"`
}

// TriggerRegenerate is the trigger of the SDK's regenerate(): its last message is the learner's
// input to run again. The transport decides whether that is allowed (see Request.Regenerate).
const TriggerRegenerate = "regenerate-message"

// Regenerate says whether the request is the SDK's regenerate(). Its input is read as a submitted
// message's; whether it may run again (only when the turn that answered it stored nothing) is
// the caller's to check against the session's transcript.
func (r *Request) Regenerate() bool { return r.Trigger == TriggerRegenerate }

// TurnInput returns the turn the request asks for, from its last message, which must be the
// learner's: its text parts (joined) are the turn's message; or one data part stands for the
// input that is not text (PartSelect, PartForm, PartContinue). Text and such a part together, or two of
// them, are refused, as are unknown data-coach-* parts; other parts (files, the SDK's own
// bookkeeping) are ignored. Errors are *coach.Error: invalid_request for data that does not
// decode, invalid_input naming the field for the rest.
func (r *Request) TurnInput() (coach.TurnInput, error) {
	var in coach.TurnInput
	switch r.Trigger {
	case "", "submit-message", TriggerRegenerate:
	default:
		return in, coach.FieldError("trigger", "trigger must be \"submit-message\" or \"regenerate-message\"")
	}
	if len(r.Messages) == 0 {
		return in, coach.FieldError("messages", "messages holds no message")
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role != coach.RoleUser {
		return in, coach.FieldError("messages", "the last message must be the learner's (role \"user\"), not %q", coach.Clip(last.Role))
	}
	var text strings.Builder
	texts, inputs := 0, 0
	for _, p := range last.Parts {
		switch {
		case p.Type == "text":
			texts++
			text.WriteString(p.Text)
		case p.Type == PartSelect:
			inputs++
			var d struct {
				Selected *string `json:"selected"`
			}
			if err := decodeData(p, &d); err != nil {
				return in, err
			}
			if d.Selected == nil {
				return in, coach.FieldError("selected", "%s needs data {\"selected\":\"<option id>\"}", PartSelect)
			}
			in.Selected = d.Selected
		case p.Type == PartForm:
			inputs++
			var f coach.FormAnswer
			if err := decodeData(p, &f); err != nil {
				return in, err
			}
			in.Form = &f
		case p.Type == PartContinue:
			inputs++
			var d struct{}
			if err := decodeData(p, &d); err != nil {
				return in, err
			}
			in.Continue = true
		case strings.HasPrefix(p.Type, "data-coach-"):
			return in, coach.FieldError("messages", "unknown part %q", coach.Clip(p.Type))
		}
	}
	switch {
	case inputs+min(texts, 1) > 1:
		return coach.TurnInput{}, coach.FieldError("messages", "the last message must carry text or one coach data part, not several")
	case texts > 0:
		msg := text.String()
		in.Message = &msg
	case inputs == 0:
		return in, coach.FieldError("messages", "the last message has no text and no coach data part")
	}
	return in, nil
}

// decodeData decodes the data of part p into dst: one JSON object.
func decodeData(p Part, dst any) error {
	if len(p.Data) == 0 || p.Data[0] != '{' {
		return coach.Errorf(coach.KindInvalid, coach.CodeInvalidRequest, "%s needs an object as its data", p.Type)
	}
	if err := json.Unmarshal(p.Data, dst); err != nil {
		return coach.Errorf(coach.KindInvalid, coach.CodeInvalidRequest, "the data of %s: %v", p.Type, err)
	}
	return nil
}
