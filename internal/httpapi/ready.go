package httpapi

import (
	"context"
	"sync"
	"time"
)

// ReadyEvery is how often /readyz asks its Ready check at most, however often it is asked
// (v1.2): a load balancer, or anyone, polling it in a loop costs the state store one ping a
// second.
const ReadyEvery = time.Second

// readyTimeout bounds one Ready check: a store that does not answer within it is not ready.
const readyTimeout = 2 * time.Second

// readiness caches the outcome of a Ready check for ReadyEvery. One caller at a time runs the
// check; callers that arrive meanwhile wait for its outcome (at most readyTimeout) rather than
// run one of their own, so no burst of requests makes more than one check.
type readiness struct {
	check func(ctx context.Context) error
	now   func() time.Time

	mu sync.Mutex
	// at is when the last check ended (zero before the first), err its outcome.
	at  time.Time
	err error
}

// get returns the outcome of the latest check, running a new one when it is older than
// ReadyEvery. The check runs on a context of its own: the request that happens to run it may
// leave, and the outcome is every caller's.
func (r *readiness) get() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && r.now().Sub(r.at) < ReadyEvery {
		return r.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	r.err = r.check(ctx)
	r.at = r.now()
	return r.err
}
