package redisstore

import (
	"context"
	"crypto/rand"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
)

// usageTTL is how long a tenant's counters of a day are kept: a week, for whoever wants to look
// back, and the budget only ever reads today's.
const usageTTL = 8 * 24 * time.Hour

// markTTL is how long a turn's mark (its reservation, then the note that it was charged) is
// kept: far longer than any turn lasts, and than go-redis takes to resend a command.
const markTTL = time.Hour

// Fields of a tenant's counters of a day.
const (
	fieldPrompt     = "prompt"
	fieldCompletion = "completion"
	// fieldReserved is the tokens reserved by turns not yet settled.
	fieldReserved = "reserved"
)

// largestTTL is how long a session's largest attempt is kept after its last turn: a session
// idle that long reserves by its turns' own estimates again.
const largestTTL = 24 * time.Hour

// usageKey is the key of tenant's token counters of the UTC date of day: a hash with the fields
// above, {prefix}:{tok:<tenant>}:<yyyymmdd>. Its hash tag is the tenant, so a tenant's days and
// its turns' marks share a slot (a script may touch them together, also in a cluster), and a
// "tok:" that no session id can start with.
func (s *Store) usageKey(tenant string, day time.Time) string {
	return s.prefix + ":{tok:" + tenant + "}:" + day.UTC().Format("20060102")
}

// largestKey is the key of the most tokens one attempt of session was charged,
// {prefix}:{tok:<tenant>}:largest:<session>: a reservation of the session's turns is never less.
// It is the session's, not the tenant's, so that one learner's big attempts raise only what that
// learner's own turns reserve.
func (s *Store) largestKey(tenant, session string) string {
	return s.prefix + ":{tok:" + tenant + "}:largest:" + session
}

// markKey is the key of a turn's mark, {prefix}:{tok:<tenant>}:turn:<id>: the tokens it
// reserved while it runs, "charged" once it is settled.
func (s *Store) markKey(tenant, turn string) string {
	return s.prefix + ":{tok:" + tenant + "}:turn:" + turn
}

// reserveScript reserves a turn's tokens if its tenant's tokens charged and reserved are below
// the budget, all at once: concurrent turns see each other's reservations, so a budget is passed
// by at most one turn. The reservation is the larger of the turn's estimate and its session's
// largest attempt. A turn that is marked already (a resent reservation, or one that arrives
// after its turn gave up and settled) reserves nothing more. A count gone negative (a counter
// edited by hand) counts as zero.
//
// KEYS: the counters of the day, the turn's mark, the session's largest attempt. ARGV: budget,
// the turn's estimate, mark ttl (ms), counters ttl (s). Returns {granted (1 or 0), tokens
// charged}: a refusal with tokens charged below the budget was the reservations'.
var reserveScript = redis.NewScript(`
local h = redis.call('HMGET', KEYS[1], 'prompt', 'completion', 'reserved')
local used = math.max(tonumber(h[1] or '0') + tonumber(h[2] or '0'), 0)
if redis.call('EXISTS', KEYS[2]) == 1 then
  return {1, used}
end
local reserved = math.max(tonumber(h[3] or '0'), 0)
if used + reserved >= tonumber(ARGV[1]) then
  return {0, used}
end
local est = math.max(tonumber(ARGV[2]), tonumber(redis.call('GET', KEYS[3]) or '0'))
redis.call('HINCRBY', KEYS[1], 'reserved', est)
redis.call('EXPIRE', KEYS[1], ARGV[4])
redis.call('SET', KEYS[2], est, 'PX', ARGV[3])
return {1, used}
`)

// settleScript charges a turn once: unless its mark says it was charged already (a resent
// commit or release), it drops the turn's reservation, adds its tokens and marks it charged.
//
// KEYS: the counters of the day, the turn's mark, the session's largest attempt. ARGV: prompt
// tokens, completion tokens, the turn's largest attempt, mark ttl (ms), counters ttl (s),
// largest ttl (s). Returns 1 when it charged, 0 when the turn was charged before.
var settleScript = redis.NewScript(`
local m = redis.call('GET', KEYS[2])
if m == 'charged' then
  return 0
end
if m then
  redis.call('HINCRBY', KEYS[1], 'reserved', -tonumber(m))
end
redis.call('HINCRBY', KEYS[1], 'prompt', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'completion', ARGV[2])
local largest = tonumber(redis.call('GET', KEYS[3]) or '0')
if tonumber(ARGV[3]) > largest then
  redis.call('SET', KEYS[3], ARGV[3], 'EX', ARGV[6])
elseif largest > 0 then
  redis.call('EXPIRE', KEYS[3], ARGV[6])
end
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('SET', KEYS[2], 'charged', 'PX', ARGV[4])
return 1
`)

// settleKeys and settleArgs are the KEYS and ARGV of settleScript for u.
func (s *Store) settleKeys(u *coach.TenantUsage) []string {
	return []string{s.usageKey(u.Tenant, u.Day), s.markKey(u.Tenant, u.Turn), s.largestKey(u.Tenant, u.Session)}
}

func (s *Store) settleArgs(u *coach.TenantUsage) []any {
	return []any{max(u.PromptTokens, 0), max(u.CompletionTokens, 0), max(u.Largest, 0), millis(markTTL), int64(usageTTL / time.Second), int64(largestTTL / time.Second)}
}

// queueSettle queues settleScript for u in p.
func (s *Store) queueSettle(ctx context.Context, p redis.Pipeliner, u *coach.TenantUsage) *redis.Cmd {
	return settleScript.EvalSha(ctx, p, s.settleKeys(u), s.settleArgs(u)...)
}

// runWith runs script with more scripts in one pipeline, so that they cost no round trip of
// their own, and returns the script's reply and the others' commands. The scripts go as
// EVALSHA; should the server have lost one (a restart without Prepare), the pipeline runs once
// more as EVAL, which the scripts' idempotence allows. On a cluster the pipeline goes to each
// command's master, and each script stays atomic on its own slot; they are not atomic together.
func (s *Store) runWith(ctx context.Context, script *redis.Script, keys []string, args []any, more func(p redis.Pipeliner, sha bool) []*redis.Cmd) (any, []*redis.Cmd, error) {
	var cmd *redis.Cmd
	var others []*redis.Cmd
	run := func(sha bool) {
		_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			if sha {
				cmd = script.EvalSha(ctx, p, keys, args...)
			} else {
				cmd = script.Eval(ctx, p, keys, args...)
			}
			others = more(p, sha)
			return nil
		})
	}
	run(true)
	noScript := func(c *redis.Cmd) bool { return c.Err() != nil && redis.HasErrorPrefix(c.Err(), "NOSCRIPT") }
	lost := noScript(cmd)
	for _, c := range others {
		lost = lost || noScript(c)
	}
	if lost {
		run(false)
	}
	res, err := cmd.Result()
	return res, others, err
}

// ClaimReserving is Claim that also reserves res.Tokens of the tenant's budget (see
// coach.UsageStore), in the same round trip: one pipeline of the claim script and the
// reservation script. The reservation is the larger of res.Tokens and the session's largest
// attempt. A claim that fails gives back what the reservation took; a claim whose reservation
// was refused is returned with its refusal for the caller to release.
func (s *Store) ClaimReserving(ctx context.Context, tenant, id string, ttl time.Duration, res coach.Reservation) (*coach.Session, string, coach.Refusal, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	token := rand.Text()
	keys := []string{s.usageKey(tenant, res.Day), s.markKey(tenant, res.Turn), s.largestKey(tenant, res.Session)}
	args := []any{res.Budget, max(res.Tokens, 1), millis(markTTL), int64(usageTTL / time.Second)}
	reply, others, err := s.runWith(ctx, claimScript, s.keys(id), s.claimArgs(tenant, token, ttl), func(p redis.Pipeliner, sha bool) []*redis.Cmd {
		if sha {
			return []*redis.Cmd{reserveScript.EvalSha(ctx, p, keys, args...)}
		}
		return []*redis.Cmd{reserveScript.Eval(ctx, p, keys, args...)}
	})
	// Whatever became of the claim, a reservation that may have been made is given back when
	// the claim is not handed out: settling the turn with nothing marks it charged, so that
	// even a reservation that reaches Redis only later (sent before a timeout) takes nothing.
	giveBack := func() {
		go s.settleLater(&coach.TenantUsage{Turn: res.Turn, Tenant: tenant, Day: res.Day, Session: res.Session})
	}
	sess, err := s.claimed(id, token, reply, err)
	if err != nil {
		giveBack()
		return nil, "", coach.Granted, err
	}
	granted, err := others[0].Int64Slice()
	if err != nil || len(granted) != 2 {
		giveBack()
		s.release(id, token)
		if err == nil {
			err = errors.New("unexpected reply of the reservation")
		}
		return nil, "", coach.Granted, failure("reserve tokens", err)
	}
	switch {
	case granted[0] == 1:
		return sess, token, coach.Granted, nil
	case granted[1] < res.Budget:
		return sess, token, coach.BudgetBusy, nil
	default:
		return sess, token, coach.BudgetSpent, nil
	}
}

// settleLater settles u on a context of its own (see later).
func (s *Store) settleLater(u *coach.TenantUsage) {
	s.later("settle tokens", func(ctx context.Context) error {
		return settleScript.Run(ctx, s.client, s.settleKeys(u), s.settleArgs(u)...).Err()
	})
}

// later runs op on a context of its own, and when Redis does not answer keeps trying in the
// background for a while, with growing pauses: it undoes what a command sent before a timeout
// may still do when Redis answers again (a paused server runs the commands it received once it
// resumes), and it runs where the caller's context may be the reason it cannot.
func (s *Store) later(what string, op func(ctx context.Context) error) {
	try := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		defer cancel()
		if err := op(ctx); err != nil {
			return failure(what, err)
		}
		return nil
	}
	if err := try(); err == nil || !errors.Is(err, coach.ErrUnavailable) {
		return
	}
	go func() {
		for wait := 500 * time.Millisecond; wait < time.Minute; wait *= 2 {
			time.Sleep(wait)
			if err := try(); err == nil || !errors.Is(err, coach.ErrUnavailable) {
				return
			}
		}
	}()
}

// ReleaseCharging is Release that also settles charge (see coach.UsageStore), in the same round
// trip: one pipeline of the release script and the settlement script.
func (s *Store) ReleaseCharging(ctx context.Context, id, token string, charge *coach.TenantUsage) error {
	if charge == nil {
		return s.Release(ctx, id, token)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	_, others, err := s.runWith(ctx, releaseScript, []string{s.lockKey(id)}, []any{token}, func(p redis.Pipeliner, sha bool) []*redis.Cmd {
		if sha {
			return []*redis.Cmd{s.queueSettle(ctx, p, charge)}
		}
		return []*redis.Cmd{settleScript.Eval(ctx, p, s.settleKeys(charge), s.settleArgs(charge)...)}
	})
	if err == nil {
		err = others[0].Err()
	}
	if err != nil {
		return failure("release", err)
	}
	return nil
}

// TenantUsage returns the tokens tenant has been charged on the UTC date of day.
func (s *Store) TenantUsage(ctx context.Context, tenant string, day time.Time) (coach.Usage, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	vals, err := s.client.HMGet(ctx, s.usageKey(tenant, day), fieldPrompt, fieldCompletion).Result()
	if err != nil {
		return coach.Usage{}, failure("usage", err)
	}
	var u coach.Usage
	for i, v := range vals {
		if str, ok := v.(string); ok {
			n, _ := strconv.Atoi(str)
			if i == 0 {
				u.PromptTokens = n
			} else {
				u.CompletionTokens = n
			}
		}
	}
	return u, nil
}

// TenantReserved returns the tokens reserved by tenant's turns of the UTC date of day that are
// not settled yet.
func (s *Store) TenantReserved(ctx context.Context, tenant string, day time.Time) (int64, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	n, err := s.client.HGet(ctx, s.usageKey(tenant, day), fieldReserved).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, failure("usage", err)
	}
	return n, nil
}
