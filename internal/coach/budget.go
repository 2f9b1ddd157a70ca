package coach

import (
	"context"
	"time"
)

// CodeBudgetExceeded is the error of a turn refused because its tenant used its token budget of
// the day.
const CodeBudgetExceeded = "budget_exceeded"

// CodeBudgetBusy is the error of a turn refused only because the tokens reserved by the
// tenant's running turns fill what is left of its budget: those turns end, and settle what
// they really used, within the turn timeout, so the refusal is brief.
const CodeBudgetBusy = "budget_busy"

// budgetBusyRetry is the Retry-After of budget_busy (never more than the turn timeout): most
// turns settle within seconds, and a client retrying then usually finds room.
const budgetBusyRetry = 5 * time.Second

// Budgets
//
// A tenant's daily budget is a limit at any concurrency because a turn reserves tokens before
// it calls a model: the store checks the tenant's counters of the day (tokens charged plus
// tokens reserved by turns in flight) against the budget and adds the turn's reservation in one
// atomic step, in the same round trip as the session's claim. At the end the turn settles: its
// reservation is dropped and what its attempts used is charged instead, in the same round trip
// as its commit, or as the release of its session when it failed or its client left. So n
// concurrent turns see each other's reservations, and the budget is passed by at most the last
// admitted turn's use. Settling is idempotent per turn (the store marks the turn charged), so a
// command resent after a lost reply never charges twice.

// UsageStore is implemented by a Store that keeps each tenant's token counters of the day. The
// engine uses it for every turn when the store has it: to reserve tokens with the claim when
// the tenant has a budget, and to settle every turn's use.
type UsageStore interface {
	// ClaimReserving is Claim that also reserves res.Tokens of res.Tenant's counters of
	// res.Day for turn res.Turn, atomically with the check that the tenant's tokens charged
	// and reserved are below res.Budget, in the same round trip. It returns a refusal other
	// than Granted (and no error) when the budget is used up (BudgetSpent) or only the
	// reservations of running turns fill it (BudgetBusy): the session is claimed anyway, and the caller releases
	// it. A claim that fails leaves no reservation behind.
	ClaimReserving(ctx context.Context, tenant, id string, ttl time.Duration, res Reservation) (sess *Session, token string, refusal Refusal, err error)
	// ReleaseCharging is Release that also settles charge (see CommitExtra.Usage), in the same
	// round trip; a nil charge only releases.
	ReleaseCharging(ctx context.Context, id, token string, charge *TenantUsage) error
}

// Refusal says why a reservation was refused, or that it was not.
type Refusal int

const (
	// Granted: the turn reserved its tokens.
	Granted Refusal = iota
	// BudgetBusy: the tokens charged are below the budget, and the running turns'
	// reservations fill the rest.
	BudgetBusy
	// BudgetSpent: the tokens charged reached the budget.
	BudgetSpent
)

// Reservation is what a turn reserves of its tenant's budget of a day before calling a model.
type Reservation struct {
	// Turn identifies the turn: its settlement finds the reservation by it.
	Turn   string
	Tenant string
	// Day is when the turn started; its UTC date picks the counters.
	Day time.Time
	// Budget is the tenant's tokens of the day.
	Budget int64
	// Session is the turn's session. Tokens is the turn's own estimate. The store reserves
	// the larger of it and the most one attempt of this session was charged, so that a session
	// that has grown reserves what its turns really take, and one session's big attempts
	// never raise what other sessions' turns reserve.
	Session string
	Tokens  int64
}

// claim claims session id of tenant for turn, and refuses it when the tenant has a token
// budget that its use of the day (charged, and reserved by turns in flight) has reached: the
// reservation is made with the claim, so it costs no round trip, and the lock is released
// again when the turn is refused. reserve is the turn's own estimate (see reservation).
func (s *Service) claim(ctx context.Context, tenant, id, turn string, reserve int64, now time.Time) (*Session, string, error) {
	us, ok := s.store.(UsageStore)
	budget := int64(0)
	if s.budget != nil {
		budget = s.budget(tenant)
	}
	if budget <= 0 || !ok {
		return s.store.Claim(ctx, tenant, id, s.opts.LockTTL)
	}
	res := Reservation{Turn: turn, Tenant: tenant, Day: now, Budget: budget, Session: id, Tokens: reserve}
	sess, token, refusal, err := us.ClaimReserving(ctx, tenant, id, s.opts.LockTTL, res)
	if err != nil {
		return nil, "", err
	}
	switch refusal {
	case Granted:
		return sess, token, nil
	case BudgetBusy:
		s.release(sess.ID, token)
		e := Errorf(KindLimited, CodeBudgetBusy, "the running turns of this tenant have reserved what is left of its daily token budget; retry shortly")
		e.RetryAfter = min(budgetBusyRetry, s.opts.TurnTimeout)
		return nil, "", e
	default:
		s.release(sess.ID, token)
		e := Errorf(KindLimited, CodeBudgetExceeded, "the daily token budget of this tenant is used up; it renews at midnight UTC")
		e.RetryAfter = untilTomorrow(now)
		return nil, "", e
	}
}

// reservation returns a turn's own estimate of its tokens before its session is read: its
// input's bytes (see EstimateTokens) plus Options.TokenReserve, the allowance for the prompt
// around it and the answer. The store raises it to the session's largest attempt.
func (s *Service) reservation(in TurnInput) int64 {
	n := 0
	if in.Message != nil {
		n += len(*in.Message)
	}
	if in.Form != nil {
		for k, v := range in.Form.Values {
			n += len(k) + len(v)
		}
	}
	return int64(EstimateTokens(n) + s.opts.TokenReserve)
}

// EstimateTokens is the rule for tokens an endpoint did not report: one token per four bytes
// of text, rounded up. Text in most languages takes fewer bytes per token than that and code or
// CJK text more; it is the usual rule of thumb, applied alike to the prompt sent and to the
// answer received.
func EstimateTokens(bytes int) int { return (max(bytes, 0) + 3) / 4 }

// usageSlack is how many tokens a usage report may claim beyond the bytes of its attempt (and
// the completion cap, when there is one) before it is taken as absurd: chat templates add a few
// tokens per message, and reasoning models spend tokens that are never streamed.
const usageSlack = 16384

// plausible reports whether u is a usage report to believe for an attempt that sent sent bytes
// of prompt, received got bytes of answer and asked for at most limit completion tokens (0: no
// cap): no count negative, and no more tokens than one per byte plus the cap and usageSlack.
func plausible(u Usage, sent, got, limit int) bool {
	if u.PromptTokens < 0 || u.CompletionTokens < 0 {
		return false
	}
	return int64(u.PromptTokens)+int64(u.CompletionTokens) <= int64(sent)+int64(got)+int64(max(limit, 0))+usageSlack
}

// untilTomorrow returns the time from now to the next midnight UTC.
func untilTomorrow(now time.Time) time.Duration {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC).Sub(now)
}

// usageStore returns the store as a UsageStore, or nil.
func (s *Service) usageStore() UsageStore {
	us, _ := s.store.(UsageStore)
	return us
}

// spent returns what the attempt just made to up with req costs, and false for an attempt
// that costs nothing: one whose stream never started (refused, unreachable), since the endpoint
// took no request then. The endpoint's report counts when it sent a plausible one; otherwise
// (none, no whole numbers, negative, or absurd for the bytes: see plausible) the tokens are
// estimated from the bytes sent and received (EstimateTokens), and a report set aside is marked
// Ignored.
func (r *TurnRun) spent(up Upstream, req ModelRequest) (Spent, bool) {
	if !r.opened {
		return Spent{}, false
	}
	sp := Spent{Upstream: up.Name, Model: up.ModelName}
	sent := requestBytes(req)
	if r.usage != nil && !r.badUsage && plausible(*r.usage, sent, r.size, req.MaxTokens) {
		sp.Usage = *r.usage
		return sp, true
	}
	sp.Ignored = r.usage != nil || r.badUsage
	sp.Estimated = true
	sp.Usage = Usage{PromptTokens: EstimateTokens(sent), CompletionTokens: EstimateTokens(r.size)}
	return sp, true
}

// requestBytes returns the bytes of text req sends a model: the messages' contents and tool
// calls, and the schema or tool it asks for, which endpoints count as prompt tokens too.
func requestBytes(req ModelRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += messageBytes(m)
	}
	if req.Schema != nil {
		n += len(req.Schema.Schema)
	}
	if req.Tool != nil {
		n += len(req.Tool.Description) + len(req.Tool.Parameters)
	}
	return n
}

// releaseCharging drops a lock and settles charge (nil: nothing to settle) on a context of its
// own, as release does: it runs when the turn's context may be gone, and keeps trying in the
// background while the store is unavailable.
func (s *Service) releaseCharging(id, token string, charge *TenantUsage) {
	us := s.usageStore()
	if charge == nil || us == nil {
		s.release(id, token)
		return
	}
	try := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return us.ReleaseCharging(ctx, id, token, charge)
	}
	s.retryWhileUnavailable(try)
}
