package coach

import (
	"context"
	"encoding/json"
	"time"

	"github.com/coachgw/coachgw/internal/safety"
)

// Store keeps sessions. A turn claims its session (one round trip: take the lock, read the
// session), and later commits it (one round trip: check lock and version, write, release) or
// releases it. Implementations must make Commit atomic.
type Store interface {
	// Create stores a new session.
	Create(ctx context.Context, s *Session) error
	// Get returns the session id of tenant, or ErrNotFound.
	Get(ctx context.Context, tenant, id string) (*Session, error)
	// Delete removes the session id of tenant; removing a missing session is not an error.
	Delete(ctx context.Context, tenant, id string) error
	// Claim locks the session for one writer for at most ttl and returns it with the lock's token.
	// It returns ErrBusy when another writer holds the lock and ErrNotFound when there is no such session.
	Claim(ctx context.Context, tenant, id string, ttl time.Duration) (*Session, string, error)
	// Commit stores s, whose Version must be one more than the stored one, writes extra (the
	// transcript entries, numbered by the store) and releases the lock held with token, all or
	// nothing. It returns ErrConflict when the lock or the version no longer match; then nothing
	// is written.
	Commit(ctx context.Context, s *Session, token string, extra CommitExtra) error
	// Transcript returns up to limit entries of the transcript of session id of tenant whose
	// Seq is below before (0: from the newest), oldest first, or ErrNotFound as Get does.
	Transcript(ctx context.Context, tenant, id string, before int64, limit int) (TranscriptPage, error)
	// Renew extends the lock held with token to ttl from now. It returns ErrConflict when the
	// lock is no longer token's (it expired or was taken over); then the holder must not commit.
	Renew(ctx context.Context, id, token string, ttl time.Duration) error
	// Release drops the lock held with token without writing anything.
	Release(ctx context.Context, id, token string) error
	// Ping reports whether the store answers.
	Ping(ctx context.Context) error
}

// Model streams one chat completion.
type Model interface {
	// Stream starts a completion. Errors before the stream starts should be *ModelError so the
	// pipeline can tell what is worth retrying. The stream calls hooks' functions, when not
	// nil, as StreamHooks describes.
	Stream(ctx context.Context, req ModelRequest, hooks StreamHooks) (Stream, error)
}

// StreamHooks are the engine's hooks into one model stream. Both fields may be nil.
type StreamHooks struct {
	// Activity is called whenever bytes of the answer's body arrive. The engine's first-byte
	// and idle deadlines then measure whether the endpoint still sends at all, not how fast it
	// completes fragments: a slow but live stream (one byte at a time, or SSE keep-alive
	// comments) runs on until the turn's own deadline, while an endpoint that sends nothing is
	// given up on after the idle deadline.
	Activity func()
	// Wait is called before a read of bytes the stream does not hold yet (a read that may wait
	// for the endpoint). The engine flushes the lines it holds there: it holds a line only
	// while the next fragment is already in memory, so a backlog of chunks leaves the gateway
	// as one write instead of one per line, and no line ever waits for the model.
	Wait func()
}

// WaitNotifier is implemented by a Stream that calls its hooks' Wait function before every
// read that may wait. The engine holds lines back only for such a stream; for any other it
// flushes after every fragment.
type WaitNotifier interface {
	NotifiesWait() bool
}

// Sink receives a turn's lines. Emit may hold a line back; Flush sends every line held. The
// engine flushes before anything that waits (the model, a retry's backoff) and at the end.
type Sink interface {
	Emit(Event) error
	Flush() error
}

// EmitFunc is a Sink that delivers each line as it is emitted.
type EmitFunc func(Event) error

// Emit calls f.
func (f EmitFunc) Emit(e Event) error { return f(e) }

// Flush does nothing: Emit holds nothing back.
func (EmitFunc) Flush() error { return nil }

// Stream is a completion in progress.
type Stream interface {
	// Next returns the next fragment, or io.EOF after the last one.
	Next() (Fragment, error)
	// Close releases the connection; it is safe to call more than once.
	Close() error
}

// Fragment is one streamed piece of a completion.
type Fragment struct {
	// Content is assistant text.
	Content string
	// ToolArgs is a piece of a tool call's arguments; ToolCallID and ToolName are set on the
	// fragment that opens the call.
	ToolArgs   string
	ToolCallID string
	ToolName   string
	// ToolIndex tells the calls of one answer apart: the pieces of a call share it, and calls
	// are numbered 0, 1, ... in the order they open (the model adapter maps the endpoint's
	// own numbering onto this).
	ToolIndex int
	// FinishReason is set on the last fragment when the endpoint says why it stopped.
	FinishReason string
	// Usage is set on the fragment made from the endpoint's usage report, when it sent one
	// (OpenAI's: a last chunk with empty choices, asked for with stream_options.include_usage).
	Usage *Usage
	// BadUsage is set on a fragment whose chunk carried a usage report that the adapter could
	// not read as whole numbers; the engine then estimates the attempt's tokens.
	BadUsage bool
}

// Usage is the token count an endpoint reported for one completion.
type Usage struct {
	PromptTokens, CompletionTokens int
}

// Add returns u plus v, for a u that may be nil (no report yet).
func (u *Usage) Add(v Usage) *Usage {
	if u != nil {
		v.PromptTokens += u.PromptTokens
		v.CompletionTokens += u.CompletionTokens
	}
	return &v
}

// ModelRequest is what a turn asks of the model.
type ModelRequest struct {
	Messages []Message
	// Schema, when set, is the JSON schema the answer must follow; the model adapter decides how
	// to ask for it (json_schema, json_object, or the prompt alone).
	Schema *OutputSchema
	// Tool, when set, is a function the model is forced to call; its arguments are the answer.
	Tool *Tool
	// Temperature and MaxTokens are sent when non-zero.
	Temperature float32
	MaxTokens   int
	// Caller is an opaque key of whom the request is for (the tenant and the session). An
	// adapter that changes how it asks every caller on evidence from one request (e.g. an
	// endpoint that ignored a forced tool call) waits for evidence from several callers, so
	// that no one learner's conversation steers what all of them get.
	Caller string
}

// OutputSchema names a JSON schema for structured output.
type OutputSchema struct {
	Name   string
	Schema json.RawMessage
}

// Tool is a function definition offered to the model.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Classes of ModelError the engine acts on; adapters may use others (e.g. "server",
// "connect", "timeout", "client", "stream"), which the engine tells apart only by Retryable.
const (
	// ClassRateLimited is a 429: retried after its Retry-After when that is within the cap,
	// otherwise a reason to move to another endpoint.
	ClassRateLimited = "rate_limited"
	// ClassRefused is a request the endpoint refused for its content (context length exceeded,
	// content policy): no other endpoint is asked, and the endpoint's circuit counts it healthy.
	ClassRefused = "refused"
	// ClassCanceled is a call whose context was cancelled.
	ClassCanceled = "canceled"
	// ClassInvalid is a request the endpoint rejected for its shape or content otherwise (an
	// HTTP 400, 413 or 422 that is no refusal): another endpoint may accept it, so the turn
	// moves on, but it says nothing about the endpoint's health, so its circuit does not count
	// it. Otherwise one learner's message that every endpoint rejects would open every
	// circuit, for every tenant.
	ClassInvalid = "invalid_request"
)

// ModelError is a failure of the model endpoint.
type ModelError struct {
	// Class is a short label for metrics: "rate_limited", "server", "connect", "timeout", "client",
	// "invalid_request", "refused", "stream" or "canceled".
	Class string
	// Retryable says whether the same request may succeed later.
	Retryable bool
	// RetryAfter is the endpoint's own advice, zero when it gave none.
	RetryAfter time.Duration
	// ContextFull says that the endpoint refused the request because the prompt does not fit
	// its context window (a ClassRefused): the same turn with less conversation may fit.
	ContextFull bool
	Err         error
}

func (e *ModelError) Error() string { return "model " + e.Class + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *ModelError) Unwrap() error { return e.Err }

// NewSession holds what a client may choose when creating a session.
type NewSession struct {
	Locale string
	// Learner is an opaque learner reference (see Session.Learner); empty for none.
	Learner string
	// AssertedBy is the id of the learner key that gave Learner (see Session.LearnerAssertedBy).
	AssertedBy string
	// Module selects the learning module of a module session.
	Module string
}

// TurnInput is a learner's turn as a client sends it. Which fields a contract accepts is its own
// business; Begin rejects the rest.
type TurnInput struct {
	Message *string `json:"message,omitempty"`
	// Continue asks the coach to open the current step without a learner message (toulmin).
	Continue bool        `json:"continue,omitempty"`
	Step     string      `json:"step,omitempty"`
	Selected *string     `json:"selected,omitempty"`
	Form     *FormAnswer `json:"form,omitempty"`
}

// FormAnswer is a submitted form.
type FormAnswer struct {
	ID     string                     `json:"id"`
	Values map[string]json.RawMessage `json:"values"`
}

// Contract is one kind of coaching conversation: its state, prompt, streaming and guards.
type Contract interface {
	// Name is the contract's wire name.
	Name() string
	// NewState returns the state of a new session.
	NewState(opts NewSession) (json.RawMessage, error)
	// Begin checks a turn's input against the session and prepares the turn. Input the session
	// cannot take is a KindUnprocessable or KindConflict error; nothing has been sent then.
	Begin(s *Session, in TurnInput) (Turn, error)
}

// Drafting is implemented by contracts whose learner writes a draft beside the conversation and
// decides on the coach's proposals for it (toulmin). The draft and proposal routes reach the
// contract only through it (Service.SetDraft, Service.Decide), so that no adapter knows a
// contract's state.
type Drafting interface {
	// SetDraft returns state with field of the draft set to value. A field or value the
	// contract does not take is a KindInvalid error on that field.
	SetDraft(state json.RawMessage, field, value string) (json.RawMessage, error)
	// Decide returns state with the learner's action on the pending proposal applied. An
	// action the contract does not know, or no pending proposal, is an error and changes
	// nothing.
	Decide(state json.RawMessage, action string) (json.RawMessage, error)
}

// Limited is implemented by contracts that accept shorter texts than the gateway's own limit
// (toulmin's 4000 characters). A 0 field has no limit of the contract's own.
type Limited interface {
	Limits() Limits
}

// Turn is one turn of a contract in progress.
type Turn interface {
	// Prelude returns events to send before the model is called.
	Prelude() []Event
	// Request returns the model request.
	Request() ModelRequest
	// Feed takes the next fragment of model output and emits the text that became visible.
	Feed(f Fragment, emit func(Event)) error
	// Reset discards all output fed so far, before the turn is attempted again.
	Reset()
	// Finish parses and guards the complete output. A KindStream error here (invalid or empty
	// output) may be retried with its message fed back to the model.
	Finish() (*Outcome, error)
}

// Fallback is implemented by turns that have an answer of their own for output the model could
// not get right even after the corrective retry (the cards contract's fallback card). Turns
// without it end such a turn with the error line.
type Fallback interface {
	// Fallback returns the outcome to store and answer in place of the unusable output; cause
	// is the last attempt's error.
	Fallback(cause error) (*Outcome, error)
}

// Outcome is what a finished turn stores and answers.
type Outcome struct {
	// Result is the final result object sent to the client.
	Result json.RawMessage
	// Tail is visible text the guards added after the streamed text (toulmin's appended
	// question); it is sent as one last delta before the result, so that the deltas of the
	// last attempt always add up to the result's visible text.
	Tail string
	// TailBlock and TailBlockType place Tail in a text block of a module result, as every
	// module delta is placed (Event.Block, Event.BlockType): a module client shows text only
	// in its blocks. An empty TailBlockType sends Tail outside any block (Block -1), as the
	// visible text of every other contract is sent.
	TailBlock     int
	TailBlockType string
	// State is the session's new state.
	State json.RawMessage
	// History is appended to the session's history.
	History []Message
	// Fallback marks a result the gateway substituted for unusable model output.
	Fallback bool
	// Rules lists the names of the guard rules that changed the result, for metrics and logs.
	Rules []string
	// Diagnostic, when set, is worth an error-level log: e.g. the full model response that a
	// fallback replaced.
	Diagnostic string
	// Notice, when set, is worth a warning: something the model said was ignored.
	Notice string
}

// TailDelta returns the delta line that sends o.Tail, in its text block when it has one.
func (o *Outcome) TailDelta() Event {
	if o.TailBlockType == "" {
		return Delta(o.Tail)
	}
	return Event{Type: EventDelta, Text: o.Tail, Block: o.TailBlock, BlockType: o.TailBlockType}
}

// SafeReplier is implemented by every contract's turn: it answers with text the gateway wrote
// instead of the model's, in the contract's own result shape. The engine uses it for the
// supportive answer of a crisis (and of every turn of a held session) and for the safe answer
// that ends a turn whose model output failed the safety check twice.
type SafeReplier interface {
	// SafeReply returns the outcome to store and answer: a Result whose visible text is text
	// and that continues no exercise, scores nothing and proposes nothing (no progress, no
	// proposal, no step or level change, no form); State is the session's state unchanged;
	// Tail is text (sent as the turn's one delta before the result, in the text block that
	// TailBlock and TailBlockType name for a module); History is empty, so the model never
	// sees the exchange.
	SafeReply(text string) (*Outcome, error)
}

// SafetyAudit keeps the audit records of safety checks, readable later by the tenant's
// operator keys. Audit is called once per turn with all of its records, off the client's path.
type SafetyAudit interface {
	Audit(ctx context.Context, records []safety.Record) error
}

// Escalator delivers the escalation of a crisis episode (the signed webhook). Escalate must
// return at once: delivery, its retries and its idempotence are the adapter's business.
type Escalator interface {
	Escalate(ep safety.Episode)
}
