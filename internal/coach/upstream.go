package coach

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coachgw/coachgw/internal/safety"
)

// Upstream is one model endpoint a turn may use. A Service holds its upstreams in order of
// preference: every turn starts at the first whose circuit is not open and moves down the list
// on failures another endpoint may not have (see TurnRun.Run).
type Upstream struct {
	// Name identifies the endpoint in the result line, logs, metrics and its breaker.
	Name  string
	Model Model
	// ModelName and System describe the endpoint to a Tracer: the model name it is asked for
	// and the provider family (gen_ai.system), e.g. "openai". Both are informational.
	ModelName string
	System    string
	// ContextWindow, when known, is the endpoint's context window in tokens: an attempt whose
	// prompt and completion cap would not fit is sent with less of the conversation (see fit).
	ContextWindow int
}

// Verdict is what a turn's visit to an endpoint says of the endpoint's health.
type Verdict uint8

// Verdicts.
const (
	// Healthy: the endpoint answered (even if the request itself was refused, e.g. a context
	// length error, or the output was unusable: neither is a fault of the endpoint).
	Healthy Verdict = iota
	// Failed: the endpoint failed in a way another endpoint may not (connect error, 5xx, 429
	// beyond the Retry-After cap, a first-byte or idle timeout, a cut or stalled stream).
	Failed
	// Inconclusive: the visit ended for reasons of the turn's own (the client left, the turn
	// ran out of time, a request shape the endpoint rejects) and says nothing of the endpoint.
	Inconclusive
)

// Breaker keeps a circuit per endpoint. The engine asks it once for each endpoint a turn goes
// to, and reports once how the turn's visit there ended, however many attempts (retries, the
// corrective retry) it made: one turn is one sample. Implementations must be safe for
// concurrent use and must never block a turn on anything remote.
type Breaker interface {
	// Allow reports whether a turn may go to the endpoint now. A half-open circuit allows
	// one turn at a time (the probe); every allowed visit is followed by one Report.
	Allow(upstream string) bool
	// Panic names the endpoint a turn tries when Allow refused every one (panic mode: a
	// breaker must not leave a turn worse off than no breaker would), or "" for none. That
	// visit too is followed by one Report, with panicked set.
	Panic() string
	// Report says how a visit ended.
	Report(upstream string, v Verdict, panicked bool)
}

// NoBreaker is the Breaker of a Service given none: every circuit stays closed.
type NoBreaker struct{}

// Allow always allows.
func (NoBreaker) Allow(string) bool { return true }

// Panic is never needed: Allow allows.
func (NoBreaker) Panic() string { return "" }

// Report does nothing.
func (NoBreaker) Report(string, Verdict, bool) {}

// Deps is what New needs. Store, Upstreams and Contracts are required; the rest may be zero.
type Deps struct {
	Store Store
	// Upstreams are the model endpoints in order of preference, with unique names.
	Upstreams []Upstream
	// Breaker decides which upstreams may be asked; nil never opens a circuit.
	Breaker   Breaker
	Contracts []Contract
	Options   Options
	// Observer is told what turns do; nil observes nothing.
	Observer Observer
	// Budget, when set, returns a tenant's token budget per UTC day (0: none). It is enforced
	// when the Store is a UsageStore.
	Budget func(tenant string) int64
	// Tracer, when set, traces every turn (see trace.go); nil traces nothing.
	Tracer trace.Tracer
	// Safety, when set and not off, checks learner input and model output (see safety.go).
	Safety *safety.Guard
	// Audit keeps the safety checks' records; nil keeps none.
	Audit SafetyAudit
	// Escalator is told of each crisis episode; nil tells no one.
	Escalator Escalator
	// EscalateText adds the learner's text to an escalation (COACH_ESCALATION_INCLUDE_TEXT).
	EscalateText bool
	// MaskPII masks personal data in learner text before any model endpoint sees it
	// (COACH_PII_REDACT=mask).
	MaskPII bool
	// LearnerAudit, when set, is the safety audit whose records of a learner ExportLearner
	// answers and EraseLearner deletes; nil keeps no records to export or erase. It is the
	// store behind Audit (which may batch its writes), so that an erasure reaches every record
	// written.
	LearnerAudit LearnerAudit
}

// Deadlines is implemented by a Model whose endpoint needs longer first-byte or idle deadlines
// than the Service's (a CPU model reading a long prompt sends only keep-alive comments for a
// long time). An attempt on it waits for the longer of each; zero keeps the Service's.
type Deadlines interface {
	Deadlines() (firstByte, idle time.Duration)
}

// deadlines returns the first-byte and idle deadlines of an attempt on m.
func (s *Service) deadlines(m Model) (firstByte, idle time.Duration) {
	firstByte, idle = s.opts.FirstByteTimeout, s.opts.IdleTimeout
	if d, ok := m.(Deadlines); ok {
		fb, id := d.Deadlines()
		firstByte, idle = max(firstByte, fb), max(idle, id)
	}
	return firstByte, idle
}

// completionCap returns the completion cap of a request of contract whose own cap is
// derived: the Options' setting for the contract, else for every contract, else derived.
func (s *Service) completionCap(contract string, derived int) int {
	if n := s.opts.ContractCompletionTokens[contract]; n > 0 {
		return n
	}
	if s.opts.MaxCompletionTokens > 0 {
		return s.opts.MaxCompletionTokens
	}
	return derived
}
