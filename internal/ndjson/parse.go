package ndjson

import (
	"encoding/json"
	"errors"

	"github.com/coachgw/coachgw/internal/coach"
)

// Parse decodes one line that Append wrote (without its newline) back into its event, whatever
// its type: Append(Parse(line)) is line again. It reads the gateway's own lines, kept for
// resume, to encode them in another format, so a line type it did not decode would be missing
// from every replay in that format.
func Parse(line []byte) (coach.Event, error) {
	var w struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		Block     *int            `json:"block"`
		BlockType string          `json:"blockType"`
		Card      json.RawMessage `json:"card"`
		Reason    string          `json:"reason"`
		Result    json.RawMessage `json:"result"`
		Session   *coach.Session  `json:"session"`
		Fallback  bool            `json:"fallback"`
		Upstream  string          `json:"upstream"`
		Usage     *coach.Usage    `json:"usage"`
		Error     string          `json:"error"`
		Message   string          `json:"message"`
		Turn      string          `json:"turn"`
	}
	if err := json.Unmarshal(line, &w); err != nil {
		return coach.Event{}, err
	}
	if w.Type == "" {
		return coach.Event{}, errors.New("ndjson: a line without a type")
	}
	e := coach.Event{
		Type: w.Type, Text: w.Text, Block: -1, BlockType: w.BlockType, Card: w.Card, Reason: w.Reason,
		Result: w.Result, Session: w.Session, Fallback: w.Fallback, Upstream: w.Upstream, Usage: w.Usage,
		Code: w.Error, Message: w.Message, Turn: w.Turn,
	}
	if w.Block != nil {
		e.Block = *w.Block
	}
	if e.Type == coach.EventSafety {
		// A safety line is its notice's members beside its type.
		var n coach.SafetyNotice
		if err := json.Unmarshal(line, &n); err != nil {
			return coach.Event{}, err
		}
		e.Safety, e.Message = &n, ""
	}
	return e, nil
}
