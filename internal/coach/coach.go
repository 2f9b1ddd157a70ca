// Package coach is the gateway's engine: sessions, the streaming turn pipeline shared by every
// contract (with its fallback from one model endpoint to the next), and the small interfaces
// (Store, Model, Contract, Breaker) it consumes. It knows nothing of HTTP, Redis or any model
// vendor; adapters implement its interfaces. It traces turns with the vendor-neutral
// OpenTelemetry API, which does nothing unless a tracer is given (see trace.go for why).
package coach

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/coachgw/coachgw/internal/safety"
)

// Session is one coaching conversation: which contract drives it, its contract-specific state and
// the history the model sees. Version grows by one with every stored change, so a writer holding
// an old copy can never overwrite a newer one.
type Session struct {
	ID        string          `json:"id"`
	Contract  string          `json:"contract"`
	Locale    string          `json:"locale"`
	Version   int64           `json:"version"`
	State     json.RawMessage `json:"state"`
	CreatedAt time.Time       `json:"createdAt"`
	UpdatedAt time.Time       `json:"updatedAt"`
	// Safety, when set, is the session's safety hold: a crisis was detected in it, and until an
	// operator clears the hold every turn gets the supportive answer instead of the lesson.
	Safety *SafetyHold `json:"safety,omitempty"`
	// Learner is the opaque learner reference the client gave when creating the session, by
	// which an operator exports or erases everything of one learner.
	Learner string `json:"learner,omitempty"`
	// LearnerAssertedBy is the id of the learner key that gave Learner, empty when an operator
	// key (or an open gateway) did: a learner key's reference is only what its client says, and
	// audit records and escalations name it as asserted by that key.
	LearnerAssertedBy string `json:"learnerAssertedBy,omitempty"`
	// Limits, when set, are the longest texts the session accepts. They follow from the
	// gateway's configuration and the contract, so the HTTP adapter fills them in on the way
	// out and no store keeps them.
	Limits *Limits `json:"limits,omitempty"`

	// Tenant owns the session; a caller of another tenant never sees it.
	Tenant string `json:"-"`
	// History is the conversation as the model is shown it, oldest first.
	History []Message `json:"-"`
}

// SafetyHold is the state of a session in which a crisis was detected (see the wire contract's
// v1.3 additions).
type SafetyHold struct {
	Hold  bool      `json:"hold"`
	Since time.Time `json:"since"`
	// Episode identifies the crisis episode the hold belongs to: the escalation webhook is sent
	// once per episode, and an operator's clear ends it.
	Episode string `json:"episode,omitempty"`
}

// Held reports whether the session is on a safety hold.
func (s *Session) Held() bool { return s.Safety != nil && s.Safety.Hold }

// Language returns the language of the session's locale ("en" or "es"): a locale may name a
// region too ("es-MX"), which chooses the crisis resources while the prompts follow the language.
func (s *Session) Language() string { return Language(s.Locale) }

// Language returns the language part of locale, lowercased ("es" for "es-MX").
func Language(locale string) string {
	lang, _, _ := strings.Cut(locale, "-")
	return strings.ToLower(lang)
}

// Limits are the longest texts a session accepts, in characters (Unicode code points, as
// utf8.RuneCountInString counts them); a longer one is refused with KindInvalid before anything
// is written.
type Limits struct {
	// MessageChars bounds a turn's message (and every form answer).
	MessageChars int `json:"messageChars"`
	// DraftChars, when not 0, bounds a draft value (toulmin).
	DraftChars int `json:"draftChars,omitempty"`
}

// Role values of Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one entry of a conversation in the shape every OpenAI-compatible endpoint accepts:
// an assistant message with ToolCalls is followed by one RoleTool message per call.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
}

// ToolCall is a function call made by the model.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Event types, the "type" of an NDJSON line.
const (
	EventDelta  = "delta"
	EventCard   = "card"
	EventReset  = "reset"
	EventResult = "result"
	EventError  = "error"
	// EventSafety is the safety line of a turn whose learner input showed a crisis.
	EventSafety = "safety"
)

// SafetyNotice is the content of a safety line: the crisis resources for the session's locale.
type SafetyNotice struct {
	// Kind is "crisis".
	Kind string `json:"kind"`
	// Locale is the locale whose resources these are (the session's, or the fallback's).
	Locale    string            `json:"locale"`
	Message   string            `json:"message"`
	Resources []safety.Resource `json:"resources"`
}

// Event is one line of a turn's stream.
type Event struct {
	Type string
	// Text is the piece of visible text of a delta.
	Text string
	// Block and BlockType place a module delta in its text block; Block is -1 elsewhere.
	Block     int
	BlockType string
	// Card is the frontend card of a card event.
	Card json.RawMessage
	// Result, Session and Fallback make up a result event.
	Result   json.RawMessage
	Session  *Session
	Fallback bool
	// Upstream names the endpoint whose answer the result is; Usage is the tokens it reported
	// for that answer, when it did.
	Upstream string
	Usage    *Usage
	// Safety is the notice of a safety line.
	Safety *SafetyNotice
	// Reason explains a reset.
	Reason string
	// Code and Message describe an error.
	Code    string
	Message string
	// Turn is the id of the turn a result or an error line ends (TurnRun.ID), which the engine
	// stamps on the line so that every reader of the turn's stream can name it.
	Turn string
}

// Delta returns a delta event outside any text block.
func Delta(text string) Event { return Event{Type: EventDelta, Text: text, Block: -1} }
