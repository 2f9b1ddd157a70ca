package uistream

import (
	"encoding/json"
	"strconv"

	"github.com/coachgw/coachgw/internal/coach"
)

// UIMessage is one message of a conversation as the AI SDK keeps it (its UIMessage), which
// useChat({messages}) and new Chat({messages}) take to restore a conversation.
type UIMessage struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	// Metadata is the message's metadata, set only on a pending message (see PendingMessage).
	Metadata json.RawMessage `json:"metadata,omitempty"`
	Parts    []UIPart        `json:"parts"`
}

// UIPart is one part of a UIMessage: a text part (Type "text", Text, State) or a data part
// (Type "data-coach-…", Data).
type UIPart struct {
	Type             string          `json:"type"`
	Text             *string         `json:"text,omitempty"`
	State            string          `json:"state,omitempty"`
	ProviderMetadata json.RawMessage `json:"providerMetadata,omitempty"`
	Data             json.RawMessage `json:"data,omitempty"`
}

// PartDecision carries a learner's decision on a proposal ({"action":…}, made through POST
// …/proposal rather than the chat route) when a transcript is read back as UI messages.
const PartDecision = "data-coach-decision"

// PartSafety is the data part of a safety line (a crisis turn's crisis resources), streamed and
// restored alike: its data is the line without its "type".
const PartSafety = "data-coach-" + coach.EventSafety

// Messages shapes transcript entries (oldest first) as the UI messages the chat route streamed
// for them, so that a client restores a conversation as it saw it:
//
//   - a learner entry is a user message: a text part for {"message":…}, else the data part the
//     chat route takes for that input (data-coach-select, data-coach-form, data-coach-continue),
//     or data-coach-decision for a proposal decision;
//   - a coach result is an assistant message: the result's visible text as text parts (toulmin's
//     assistantText, a card's content, one part per module text block with the block's number
//     and type in its coachgw provider metadata, as streamed), then data-coach-result
//     {result, fallback}; the session object the result line carried is not part of the
//     transcript;
//   - a card sent before a result (an injected level_up) is a data-coach-card {card} part of
//     the result's message, before its text, as it was streamed;
//   - the safety notice a coach entry carries (a crisis turn's) is the data-coach-safety part
//     {kind, locale, message, resources} of its message, first, as it was streamed.
//
// An assistant message's id is the id of the turn that answered (its entries' Turn), which is
// also the messageId of that turn's stream on the chat routes: when GET …/chat/stream replays
// a turn whose answer the client restored, the SDK replaces the restored message with the
// replay instead of adding it again. Its data-coach-result carries the turn too, as the
// streamed one does. Other ids (learner messages, and answers stored before entries had turns)
// are "msg-" and the seq of the message's first entry. All are stable across reads.
func Messages(entries []coach.TranscriptEntry) []UIMessage {
	out := make([]UIMessage, 0, len(entries))
	var pending *UIMessage // an assistant message whose cards came before its result
	for _, e := range entries {
		if e.Role == coach.TranscriptLearner {
			if pending != nil {
				out = append(out, *pending)
				pending = nil
			}
			out = append(out, UIMessage{ID: messageID(e.Seq), Role: coach.RoleUser, Parts: learnerParts(e.Input)})
			continue
		}
		if pending == nil {
			id := e.Turn
			if id == "" {
				id = messageID(e.Seq)
			}
			pending = &UIMessage{ID: id, Role: "assistant", Parts: []UIPart{}}
		}
		if e.Safety != nil {
			// The safety line came before the turn's text, and so does its part.
			pending.Parts = append(pending.Parts, UIPart{Type: PartSafety, Data: mustJSON(e.Safety)})
		}
		if len(e.Result) == 0 && len(e.Card) == 0 {
			continue
		}
		if len(e.Card) > 0 {
			pending.Parts = append(pending.Parts, dataPart("card", map[string]json.RawMessage{"card": e.Card}))
			continue
		}
		pending.Parts = append(pending.Parts, textParts(e.Result)...)
		data := map[string]any{"result": e.Result}
		if e.Fallback != nil {
			data["fallback"] = *e.Fallback
		}
		if e.Turn != "" {
			data["turn"] = e.Turn
			// The message is the answer of its result's turn, whatever entry opened it.
			pending.ID = e.Turn
		}
		pending.Parts = append(pending.Parts, dataPart("result", data))
		out = append(out, *pending)
		pending = nil
	}
	if pending != nil {
		out = append(out, *pending)
	}
	return out
}

// PendingMessage is the learner message of a turn that runs and is not stored yet, from its
// input (the JSON a learner entry's input has): the user message the stored entry will be, with
// the same parts, whose id is "pending-" and the turn's id and whose metadata is
// {"coachgw":{"pending":true,"turn":…}}. It comes after the stored messages, and before the
// turn's answer, which a resume of the turn adds; once the turn is stored its learner entry
// replaces it under its own id ("msg-" and its seq), and a turn that stores nothing takes it
// away.
func PendingMessage(turn string, input json.RawMessage) UIMessage {
	return UIMessage{
		ID: "pending-" + turn, Role: coach.RoleUser, Parts: learnerParts(input),
		Metadata: mustJSON(map[string]any{"coachgw": map[string]any{"pending": true, "turn": turn}}),
	}
}

func messageID(seq int64) string { return "msg-" + strconv.FormatInt(seq, 10) }

// dataPart returns the data part data-coach-<name> with data.
func dataPart(name string, data any) UIPart {
	b, err := json.Marshal(data)
	if err != nil {
		b = []byte("{}")
	}
	return UIPart{Type: "data-coach-" + name, Data: b}
}

// learnerParts returns the parts of a learner entry's input.
func learnerParts(input json.RawMessage) []UIPart {
	var in struct {
		coach.TurnInput
		Action json.RawMessage `json:"action"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return []UIPart{}
	}
	switch {
	case in.Message != nil:
		return []UIPart{textPart(*in.Message, nil)}
	case in.Selected != nil:
		return []UIPart{dataPart("select", map[string]string{"selected": *in.Selected})}
	case in.Form != nil:
		return []UIPart{{Type: PartForm, Data: mustJSON(in.Form)}}
	case in.Continue:
		data := map[string]string{}
		if in.Step != "" {
			data["step"] = in.Step
		}
		return []UIPart{{Type: PartContinue, Data: mustJSON(data)}}
	case len(in.Action) > 0:
		return []UIPart{{Type: PartDecision, Data: input}}
	}
	return []UIPart{}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// textPart returns a finished text part; metadata, when set, is its coachgw provider metadata.
func textPart(text string, metadata map[string]any) UIPart {
	p := UIPart{Type: "text", Text: &text, State: "done"}
	if metadata != nil {
		p.ProviderMetadata = mustJSON(map[string]any{"coachgw": metadata})
	}
	return p
}

// textParts returns the visible text of a stored result as the text parts its stream had,
// recognised by the result's shape: a module answer's content.text_blocks (one part per block),
// toulmin's assistantText, or a card's content.
func textParts(result json.RawMessage) []UIPart {
	var r struct {
		AssistantText *string         `json:"assistantText"`
		Content       json.RawMessage `json:"content"`
	}
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	if r.AssistantText != nil {
		if *r.AssistantText == "" {
			return nil
		}
		return []UIPart{textPart(*r.AssistantText, nil)}
	}
	var content string
	if json.Unmarshal(r.Content, &content) == nil {
		if content == "" {
			return nil
		}
		return []UIPart{textPart(content, nil)}
	}
	var module struct {
		TextBlocks []struct {
			Type    string `json:"type"`
			Content string `json:"content"`
		} `json:"text_blocks"`
	}
	if json.Unmarshal(r.Content, &module) != nil {
		return nil
	}
	var parts []UIPart
	for i, b := range module.TextBlocks {
		if b.Content == "" {
			continue
		}
		parts = append(parts, textPart(b.Content, map[string]any{"block": i, "blockType": b.Type}))
	}
	return parts
}
