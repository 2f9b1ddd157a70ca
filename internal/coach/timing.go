package coach

import (
	"sync/atomic"
	"time"
)

// Timing says where a turn's time went, on the service's clock, so that operators can tell the
// gateway's own time from the model's (the overhead metric and the Server-Timing header). The
// model's time is the time the turn waited on a model endpoint: for its request to be taken and
// for each fragment of its stream, in every attempt; everything else from the turn's start is
// the gateway's (the claim, the prompt, backoffs between attempts, decoding, guarding and
// writing the output, the commit).
type Timing struct {
	// Claim is the session claim: the store's round trip and decoding the session.
	Claim time.Duration
	// Prompt is the work between the claim and the first line: the contract's Begin and the
	// encoding of the turn's input. The model request itself is built for each attempt, which
	// the overheads count.
	Prompt time.Duration
	// ModelFirstByte is the time from the turn's first model request to the first fragment of
	// any attempt's stream: the model's time to first byte. Zero when no fragment came.
	ModelFirstByte time.Duration
	// ModelToFirstLine is the model's share of Report.FirstDelta: the time the turn had waited
	// on the model when its first delta line left.
	ModelToFirstLine time.Duration
	// Model is the time the whole turn waited on the model.
	Model time.Duration
}

// FirstLineOverhead returns what the gateway added to the time to the first delta line: the
// time to it minus the model's share of it. ok is false for a turn that sent no delta.
func (r Report) FirstLineOverhead() (d time.Duration, ok bool) {
	if r.Deltas == 0 {
		return 0, false
	}
	return max(r.FirstDelta-r.Timing.ModelToFirstLine, 0), true
}

// TurnOverhead returns what the gateway added to the turn: its duration minus the time it
// waited on the model.
func (r Report) TurnOverhead() time.Duration {
	return max(r.Duration-r.Timing.Model, 0)
}

// Timing returns where the turn's time has gone so far. Before Run, only Claim and Prompt are
// known; the HTTP layer reports them with the response's headers, which leave before the
// first line.
func (r *TurnRun) Timing() Timing {
	t := r.timing
	t.Model = time.Duration(r.modelWait.Load())
	return t
}

// askModel marks the start of a model request and returns its time; the turn's first request
// starts the clock of Timing.ModelFirstByte.
func (r *TurnRun) askModel() time.Time {
	t := r.svc.now()
	if r.asked.IsZero() {
		r.asked = t
	}
	return t
}

// waitedModel adds the wait on the model that began at since to the turn's model time;
// fragment says that the wait ended with a fragment of the stream, the first of which gives
// Timing.ModelFirstByte. It is called by the attempt's goroutine only, while lines may leave
// from the input gate's, hence the atomic total.
func (r *TurnRun) waitedModel(since time.Time, fragment bool) {
	now := r.svc.now()
	r.modelWait.Add(int64(now.Sub(since)))
	if fragment && r.timing.ModelFirstByte == 0 {
		r.timing.ModelFirstByte = max(now.Sub(r.asked), time.Nanosecond)
	}
}

// modelWaited returns the time the turn has waited on the model so far.
func (r *TurnRun) modelWaited() time.Duration { return time.Duration(r.modelWait.Load()) }

// modelClock is the part of a TurnRun that keeps its Timing.
type modelClock struct {
	timing Timing
	// asked is when the turn first asked a model; modelWait the nanoseconds it has waited on
	// one, read by whichever goroutine sends the first line.
	asked     time.Time
	modelWait atomic.Int64
}
