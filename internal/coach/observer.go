package coach

import (
	"time"

	"github.com/coachgw/coachgw/internal/safety"
)

// Observer is told what turns do, for metrics. Methods are called from turn goroutines and must
// be cheap and safe for concurrent use.
type Observer interface {
	// TurnStarted and TurnEnded bracket every streamed turn.
	TurnStarted(contract string)
	TurnEnded(r Report)
	// Attempted counts a model call to the named upstream.
	Attempted(contract, upstream string)
	// ModelFailed counts a failed model call to the named upstream by ModelError class.
	ModelFailed(contract, upstream, class string)
	// UnusableOutput counts a model call to the named upstream whose output was unusable
	// (unparseable, schema-invalid, empty or over-long): the endpoint answered, so it never
	// counts against its circuit, but an operator sees which endpoint answers badly.
	UnusableOutput(contract, upstream string)
	// FellBack counts a turn that moved from one upstream to the next, before or after text of
	// the turn was sent.
	FellBack(contract, from, to string, afterText bool)
	// Retried counts a model call repeated before any text was sent (class is the failure's
	// ModelError class, or "invalid_output" for a corrective retry); Reset counts a reset line
	// sent to the client, and nothing else, so that it equals the reset lines clients saw.
	Retried(contract, class string)
	Reset(contract, reason string)
	// Rejected counts a model answer the turn could not use (unparseable, schema-invalid,
	// empty, cut off at the token cap, too long), whether it was retried or ended the turn.
	Rejected(contract string)
	// SafetyChecked counts one safety check of a turn, as its audit record says; SafetyAuditFailed
	// counts a batch of audit records the store did not take.
	SafetyChecked(contract string, rec safety.Record)
	SafetyAuditFailed()
}

// Report describes one finished turn.
type Report struct {
	Contract string
	// Outcome is "ok", "fallback", the error code that ended the turn, or "cancelled".
	Outcome string
	// FirstDelta is the time from the turn's start to its first delta (zero when none was sent).
	FirstDelta time.Duration
	Duration   time.Duration
	// Timing splits the turn's time between the gateway and the model (see FirstLineOverhead
	// and TurnOverhead).
	Timing   Timing
	Deltas   int
	Attempts int
	// AttemptLog says how each model call ended, in order, for at most MaxAttemptLog calls.
	AttemptLog []AttemptEntry
	// Upstream names the endpoint of the last attempt; Model is the model it was asked for
	// (set once an attempt succeeded) and Usage the tokens it reported, when it did.
	Upstream string
	Model    string
	Usage    *Usage
	// Spent lists the tokens of every attempt whose stream started, in order, as reported or
	// estimated: the answering attempt's and those of attempts that failed, were retried
	// (unusable output, a fallback to another endpoint) or were cut by the client leaving,
	// which cost as much. The token metrics and the tenant's daily counters count them all.
	Spent []Spent
	// Tenant owns the session.
	Tenant string
	Resets int
	// Rules lists the guard rules that changed the result.
	Rules []string
	// Diagnostic and Notice carry the Outcome's.
	Diagnostic string
	Notice     string
	Err        error
}

// Spent is what one attempt cost: the usage its endpoint reported, or an estimate.
type Spent struct {
	Upstream, Model string
	Usage           Usage
	// Estimated says that Usage is estimated from bytes (see EstimateTokens): the endpoint
	// reported none, or Ignored says it reported one that could not be believed (not whole
	// numbers, negative, or absurd for the bytes of the attempt).
	Estimated bool
	Ignored   bool
}

// SpentTotal returns the sum of spent, or nil when it is empty.
func SpentTotal(spent []Spent) *Usage {
	var total *Usage
	for _, s := range spent {
		total = total.Add(s.Usage)
	}
	return total
}

// NopObserver observes nothing.
type NopObserver struct{}

// TurnStarted does nothing.
func (NopObserver) TurnStarted(string) {}

// TurnEnded does nothing.
func (NopObserver) TurnEnded(Report) {}

// Attempted does nothing.
func (NopObserver) Attempted(string, string) {}

// ModelFailed does nothing.
func (NopObserver) ModelFailed(string, string, string) {}

// UnusableOutput does nothing.
func (NopObserver) UnusableOutput(string, string) {}

// FellBack does nothing.
func (NopObserver) FellBack(string, string, string, bool) {}

// Retried does nothing.
func (NopObserver) Retried(string, string) {}

// Reset does nothing.
func (NopObserver) Reset(string, string) {}

// Rejected does nothing.
func (NopObserver) Rejected(string) {}

// SafetyChecked does nothing.
func (NopObserver) SafetyChecked(string, safety.Record) {}

// SafetyAuditFailed does nothing.
func (NopObserver) SafetyAuditFailed() {}
