package coachclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Event is one line of a turn's stream: a Delta, Card, Reset, Result or Error, or an Unknown
// line of a type this package does not know yet. Switch on the concrete type:
//
//	switch e := ev.(type) {
//	case coachclient.Delta:
//		fmt.Print(e.Text)
//	case coachclient.Result:
//		...
//	}
//
// json.Marshal of an Event gives its wire line (without the newline), so a proxy can pass events
// on as it reads them.
type Event interface {
	// Kind returns the line's "type": "delta", "card", "reset", "result", "error", or an
	// unknown line's own type.
	Kind() string
	json.Marshaler
	isEvent()
}

// Delta is a piece of the user-visible text of the turn, as the model produces it. Block and
// BlockType place a module session's delta in its text block; Block is nil for other contracts.
type Delta struct {
	Text      string
	Block     *int
	BlockType string
}

// Card is a complete frontend card that is not the turn's result (cards sessions), e.g. an
// injected level_up card.
type Card struct {
	Card json.RawMessage
}

// Reset says the gateway is retrying the turn after a fault it recovered from: discard the text
// of this turn received so far; new deltas follow. Reason is "stream_interrupted", "stalled" or
// "invalid_output".
type Reset struct {
	Reason string
}

// Result is the last line of a turn that succeeded: the guarded result, the session after the
// turn, and whether the gateway substituted the result for unusable model output.
type Result struct {
	Result   json.RawMessage
	Session  Session
	Fallback bool
	// Turn is the turn's id (gateways since v1.2; empty before).
	Turn string
}

// Error is the last line of a turn that failed after its stream started. Code is one of the
// gateway's stream codes (coach_stream_failed, coach_validation_failed, coach_empty_response,
// coach_step_mismatch, store_unavailable, version_conflict, shutting_down).
//
// Error is an event, not a failure to read the stream: Stream.Next returns it with a nil error.
// It implements error so that Collect can hand it back as one.
type Error struct {
	Code    string
	Message string
	// Turn is the turn's id (gateways since v1.2; empty before).
	Turn string
}

// Error returns the code and the message.
func (e Error) Error() string { return "coachgw stream: " + e.Code + ": " + e.Message }

// Unknown is a line of a type this package does not know. Raw is the whole line.
type Unknown struct {
	Type string
	Raw  json.RawMessage
}

// Line types.
const (
	typeDelta  = "delta"
	typeCard   = "card"
	typeReset  = "reset"
	typeResult = "result"
	typeError  = "error"
)

// Kind returns "delta".
func (Delta) Kind() string { return typeDelta }

// Kind returns "card".
func (Card) Kind() string { return typeCard }

// Kind returns "reset".
func (Reset) Kind() string { return typeReset }

// Kind returns "result".
func (Result) Kind() string { return typeResult }

// Kind returns "error".
func (Error) Kind() string { return typeError }

// Kind returns the line's type.
func (u Unknown) Kind() string { return u.Type }

func (Delta) isEvent()   {}
func (Card) isEvent()    {}
func (Reset) isEvent()   {}
func (Result) isEvent()  {}
func (Error) isEvent()   {}
func (Unknown) isEvent() {}

// MarshalJSON returns the delta's wire line.
func (d Delta) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type      string `json:"type"`
		Text      string `json:"text"`
		Block     *int   `json:"block,omitempty"`
		BlockType string `json:"blockType,omitempty"`
	}{typeDelta, d.Text, d.Block, d.BlockType})
}

// MarshalJSON returns the card's wire line.
func (c Card) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type string          `json:"type"`
		Card json.RawMessage `json:"card"`
	}{typeCard, c.Card})
}

// MarshalJSON returns the reset's wire line.
func (r Reset) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	}{typeReset, r.Reason})
}

// MarshalJSON returns the result's wire line.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type     string          `json:"type"`
		Result   json.RawMessage `json:"result"`
		Session  Session         `json:"session"`
		Fallback bool            `json:"fallback,omitempty"`
	}{typeResult, r.Result, r.Session, r.Fallback})
}

// MarshalJSON returns the error's wire line.
func (e Error) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Type    string `json:"type"`
		Code    string `json:"error"`
		Message string `json:"message"`
	}{typeError, e.Code, e.Message})
}

// MarshalJSON returns the line as it was read; an Unknown made without Raw becomes {"type":…}.
func (u Unknown) MarshalJSON() ([]byte, error) {
	if len(u.Raw) == 0 {
		return json.Marshal(struct {
			Type string `json:"type"`
		}{u.Type})
	}
	return u.Raw, nil
}

// wireLine holds every member a known line may have, undecoded, so that one pass over the line
// finds them and a member's type is checked only when the line's type uses it.
type wireLine struct {
	Type      json.RawMessage `json:"type"`
	Text      json.RawMessage `json:"text"`
	Block     json.RawMessage `json:"block"`
	BlockType json.RawMessage `json:"blockType"`
	Card      json.RawMessage `json:"card"`
	Reason    json.RawMessage `json:"reason"`
	Result    json.RawMessage `json:"result"`
	Session   json.RawMessage `json:"session"`
	Fallback  json.RawMessage `json:"fallback"`
	Error     json.RawMessage `json:"error"`
	Message   json.RawMessage `json:"message"`
	Turn      json.RawMessage `json:"turn"`
}

// parseLine parses one line, without its newline and surrounding space. An error says what is
// wrong with the line; the caller wraps it in ErrMalformed.
func parseLine(line []byte) (Event, error) {
	var w wireLine
	if len(line) == 0 || line[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &w); err != nil {
		return nil, err
	}
	typ, err := requiredString(w.Type, "type")
	if err != nil {
		return nil, err
	}
	switch typ {
	case "":
		return nil, errors.New("empty type")
	case typeDelta:
		return parseDelta(w)
	case typeCard:
		if !isObject(w.Card) {
			return nil, errors.New("card line without a card object")
		}
		return Card{Card: w.Card}, nil
	case typeReset:
		reason, err := requiredString(w.Reason, "reason")
		if err != nil {
			return nil, err
		}
		return Reset{Reason: reason}, nil
	case typeResult:
		return parseResult(w)
	case typeError:
		code, err := requiredString(w.Error, "error")
		if err != nil {
			return nil, err
		}
		if code == "" {
			return nil, errors.New("error line with an empty code")
		}
		msg, err := requiredString(w.Message, "message")
		if err != nil {
			return nil, err
		}
		turn, err := optionalString(w.Turn, "turn")
		if err != nil {
			return nil, err
		}
		return Error{Code: code, Message: msg, Turn: turn}, nil
	default:
		return Unknown{Type: typ, Raw: bytes.Clone(line)}, nil
	}
}

func parseDelta(w wireLine) (Event, error) {
	text, err := requiredString(w.Text, "text")
	if err != nil {
		return nil, err
	}
	d := Delta{Text: text}
	if present(w.Block) {
		var b int
		if err := json.Unmarshal(w.Block, &b); err != nil || b < 0 {
			return nil, fmt.Errorf("block is not a block index: %s", w.Block)
		}
		d.Block = &b
	}
	if present(w.BlockType) {
		if d.BlockType, err = requiredString(w.BlockType, "blockType"); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func parseResult(w wireLine) (Event, error) {
	if !isObject(w.Result) {
		return nil, errors.New("result line without a result object")
	}
	if !isObject(w.Session) {
		return nil, errors.New("result line without a session object")
	}
	turn, err := optionalString(w.Turn, "turn")
	if err != nil {
		return nil, err
	}
	r := Result{Result: w.Result, Turn: turn}
	if err := json.Unmarshal(w.Session, &r.Session); err != nil {
		return nil, fmt.Errorf("session: %v", err)
	}
	if r.Session.ID == "" {
		return nil, errors.New("session without an id")
	}
	if present(w.Fallback) {
		if err := json.Unmarshal(w.Fallback, &r.Fallback); err != nil {
			return nil, errors.New("fallback is not a boolean")
		}
	}
	return r, nil
}

// optionalString reads a string member that older gateways leave out.
func optionalString(raw json.RawMessage, name string) (string, error) {
	if !present(raw) {
		return "", nil
	}
	return requiredString(raw, name)
}

// present reports whether a member is there and not null.
func present(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }

// isObject reports whether raw, a value as the decoder found it, is a JSON object.
func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

func requiredString(raw json.RawMessage, name string) (string, error) {
	if !present(raw) || raw[0] != '"' {
		return "", fmt.Errorf("%s is not a string", name)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("%s: %v", name, err)
	}
	return s, nil
}
