package turns

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// Turns per tenant
//
// A turn outlives its client by design, so the connections a client holds say nothing of the
// model calls it has started: a tenant that opens turns and hangs up on each at once would
// hold as many upstream connections as it cared to open, and every other tenant would wait
// behind them. Admit bounds the turns each tenant runs at once, detached ones included: a place
// is taken before the session is claimed, so a refused turn costs no Redis round trip and never
// touches the session, and it is given back when the turn really ends (Turn.End), not when its
// client leaves.
//
// The count is per instance, as COACH_MAX_CONNS is: it bounds what this instance spends on a
// tenant's upstream calls, at the cost of a mutex and a map entry and no Redis round trip. A
// tenant may run MaxPerTenant turns on each instance, so N instances behind one balancer let it
// run up to N times that.
//
// Within a tenant, one learner must not take every place: a learner who opens sessions, starts a
// turn on each and hangs up would otherwise shut every other learner of the tenant out for as
// long as a turn may last. A learner's share, MaxPerLearner, is counted on the session's learner
// reference, which only the claimed session names, so it is taken right after the claim
// (Admission.Learner); sessions without a reference share only the tenant's places.

// tooManyTurnsRetry is the Retry-After of a refusal. Any of the tenant's running turns frees a
// place when it ends, and a refusal costs the gateway no Redis round trip, so a client may try
// again soon; a turn itself lasts at most the turn timeout.
const tooManyTurnsRetry = time.Second

// Admission is one tenant's place among the turns running on this instance, taken by
// Turns.Admit. It is given back once: by the End of the turn it started (Admission.Start), or
// by Release on the way out of a turn that did not start.
type Admission struct {
	turns  *Turns
	tenant string
	// learner is the tenant's learner whose place the admission holds too (Learner), "" for
	// none.
	learner  string
	released atomic.Bool
}

// Admit takes a place for a turn of tenant, or refuses it with a 429 too_many_turns error
// (coach.KindLimited with a RetryAfter) when the tenant already runs MaxPerTenant turns on this
// instance. The caller must either Start the admitted turn or Release the admission.
func (t *Turns) Admit(tenant string) (*Admission, error) {
	if !t.perTenant.take(tenant, t.cfg.MaxPerTenant) {
		if t.cfg.Refused != nil {
			t.cfg.Refused(tenant)
		}
		return nil, &coach.Error{
			Kind: coach.KindLimited,
			Code: coach.CodeTooManyTurns,
			Message: "this tenant already runs " + strconv.Itoa(t.cfg.MaxPerTenant) +
				" turns at once on this gateway, turns whose clients left included; retry when one ends",
			RetryAfter: tooManyTurnsRetry,
		}
	}
	return &Admission{turns: t, tenant: tenant}, nil
}

// Learner takes, for the admitted turn, a place of learner, the claimed session's learner
// reference (none when ""), or refuses it with a 429 too_many_turns error when that learner of
// the tenant already runs MaxPerLearner turns on this instance. Release gives it back with the
// tenant's place; Learner is called at most once per admission.
func (a *Admission) Learner(learner string) error {
	max := a.turns.cfg.MaxPerLearner
	if learner == "" || max <= 0 {
		return nil
	}
	key := a.tenant + "\x00" + learner
	if !a.turns.perLearner.take(key, max) {
		if a.turns.cfg.Refused != nil {
			a.turns.cfg.Refused(a.tenant)
		}
		return &coach.Error{
			Kind: coach.KindLimited,
			Code: coach.CodeTooManyTurns,
			Message: "this learner already runs " + strconv.Itoa(max) +
				" turns at once on this gateway, turns whose clients left included; retry when one ends",
			RetryAfter: tooManyTurnsRetry,
		}
	}
	a.learner = key
	return nil
}

// Running returns how many turns of tenant hold a place on this instance.
func (t *Turns) Running(tenant string) int { return t.perTenant.count(tenant) }

// Start starts the admitted turn as Turns.Start does; the turn's End gives the place back.
func (a *Admission) Start(req, drain context.Context, session, turn string) *Turn {
	r := a.turns.Start(req, drain, session, turn)
	r.admission = a
	return r
}

// Release gives the place back. Only the first call of an Admission does anything, so that a
// caller may defer it on every way out and let the turn's End release first.
func (a *Admission) Release() {
	if a.released.CompareAndSwap(false, true) {
		a.turns.perTenant.give(a.tenant)
		if a.learner != "" {
			a.turns.perLearner.give(a.learner)
		}
	}
}

// tenantCounts are the places taken per tenant (or per learner of a tenant). A key with none
// has no entry, so the map holds only the keys with turns running.
type tenantCounts struct {
	mu sync.Mutex
	m  map[string]int
}

// take takes a place of tenant unless it holds limit already (limit 0: no limit), and reports
// whether it did.
func (c *tenantCounts) take(tenant string, limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if limit > 0 && c.m[tenant] >= limit {
		return false
	}
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[tenant]++
	return true
}

func (c *tenantCounts) give(tenant string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[tenant] <= 1 {
		delete(c.m, tenant)
		return
	}
	c.m[tenant]--
}

func (c *tenantCounts) count(tenant string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[tenant]
}
