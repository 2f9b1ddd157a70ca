package coach

import (
	"time"
)

// The failover policy of a turn's attempts: where a turn starts, where it moves, what a failed
// attempt tells of its endpoint and how long a retry waits. Each is a function of what it is
// given (the endpoints, their breaker, the failure, the options), so that the policy is read
// and tested apart from the loop that follows it (TurnRun.attempts).

// errNoUpstream ends a turn that finds every endpoint's circuit open.
var errNoUpstream = Errorf(KindStream, CodeStreamFailed, "no model endpoint is available: every circuit is open")

// firstUpstream returns the index of the first of ups whose circuit b allows an attempt. When
// none does, it returns the one b names for panic mode, with panicked set, so that a turn is
// never refused for circuits alone: -1 only when there is none.
func firstUpstream(ups []Upstream, b Breaker) (i int, panicked bool) {
	if i := nextUpstream(ups, b, -1); i >= 0 {
		return i, false
	}
	name := b.Panic()
	for i, u := range ups {
		if u.Name == name {
			return i, true
		}
	}
	return -1, false
}

// nextUpstream returns the index of the first of ups after i whose circuit b allows an attempt,
// or -1.
func nextUpstream(ups []Upstream, b Breaker, i int) int {
	for i++; i < len(ups); i++ {
		if b.Allow(ups[i].Name) {
			return i
		}
	}
	return -1
}

// leaves reports whether a failed attempt (me, when the model call failed; exhausted, when the
// output was unusable even after the corrective retry) is worth moving to another endpoint:
// connect errors, 5xx, timeouts, cut or stalled streams, unusable output, the endpoint
// refusing us (401, 404, …), which another endpoint may not do, and a request shape it rejects
// (ClassInvalid). A 429 whose Retry-After is within o.RetryAfterCap is worth waiting for, while
// retries (of o.MaxAttempts) are left. A request the endpoint refused for its content (context
// length, content policy) and a cancelled call are not.
func leaves(o Options, me *ModelError, exhausted bool, retries int) bool {
	if me == nil {
		return exhausted
	}
	switch me.Class {
	case ClassCanceled, ClassRefused:
		return false
	case ClassRateLimited:
		wait := me.RetryAfter > 0 && me.RetryAfter <= o.RetryAfterCap
		return !wait || retries+1 >= o.MaxAttempts
	}
	return true
}

// verdict says what a failed attempt tells of its endpoint. Only the endpoint's own faults
// count against it: connect errors, 5xx, 429 beyond o.RetryAfterCap, timeouts, cut or stalled
// streams. Unusable output (prose, empty, over-long, schema-invalid) is an answer: it moves the
// turn on, but what a learner gets the model to say must never open a circuit that every
// tenant shares. A request the endpoint rejects for its shape, a cancelled call and a 429 worth
// waiting for say nothing either way.
func verdict(o Options, me *ModelError, invalid bool) Verdict {
	switch {
	case invalid:
		return Healthy
	case me == nil || me.Class == ClassCanceled || me.Class == ClassInvalid:
		return Inconclusive
	case me.Class == ClassRefused:
		return Healthy
	case me.Class == ClassRateLimited && me.RetryAfter > 0 && me.RetryAfter <= o.RetryAfterCap:
		return Inconclusive
	default:
		return Failed
	}
}

// backoff returns the wait before retry n (1-based): exponential from o.BackoffBase up to
// o.BackoffMax with full jitter, but never shorter than the endpoint's Retry-After advice
// (itself capped at o.RetryAfterCap). jitter(n) returns a duration in [0, n); the turn passes
// rand.N.
func backoff(o Options, n int, retryAfter time.Duration, jitter func(time.Duration) time.Duration) time.Duration {
	d := o.BackoffBase << (n - 1)
	if d > o.BackoffMax || d <= 0 {
		d = o.BackoffMax
	}
	d = d/2 + jitter(d/2+1)
	if retryAfter > 0 {
		retryAfter = min(retryAfter, o.RetryAfterCap)
		d = max(d, retryAfter)
	}
	return d
}
