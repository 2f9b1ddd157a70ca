package coach

import (
	"context"
	"time"
)

// CodeBudgetExceeded is the error of a turn refused because its tenant used its token budget of
// the day.
const CodeBudgetExceeded = "budget_exceeded"

// UsageStore is implemented by a Store that keeps each tenant's token counters of the day (which
// Commit adds CommitExtra.Usage to) and can read them in the same round trip as a claim. The
// engine uses it only for tenants that have a budget.
type UsageStore interface {
	// ClaimWithUsage is Claim that also returns the tokens tenant used on the UTC date of day.
	ClaimWithUsage(ctx context.Context, tenant, id string, ttl time.Duration, day time.Time) (*Session, string, int64, error)
}

// claim claims session id of tenant, and refuses it when the tenant has a token budget that its
// use of the day has reached: the budget is read with the claim, so it costs no round trip,
// and the lock is released again when the turn is refused.
func (s *Service) claim(ctx context.Context, tenant, id string, now time.Time) (*Session, string, error) {
	us, ok := s.store.(UsageStore)
	budget := int64(0)
	if s.budget != nil {
		budget = s.budget(tenant)
	}
	if budget <= 0 || !ok {
		return s.store.Claim(ctx, tenant, id, s.opts.LockTTL)
	}
	sess, token, used, err := us.ClaimWithUsage(ctx, tenant, id, s.opts.LockTTL, now)
	if err != nil {
		return nil, "", err
	}
	if used >= budget {
		s.release(sess.ID, token)
		e := Errorf(KindLimited, CodeBudgetExceeded, "the daily token budget of this tenant is used up; it renews at midnight UTC")
		e.RetryAfter = untilTomorrow(now)
		return nil, "", e
	}
	return sess, token, nil
}

// untilTomorrow returns the time from now to the next midnight UTC.
func untilTomorrow(now time.Time) time.Duration {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC).Sub(now)
}
