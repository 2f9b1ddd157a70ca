package redisstore

import (
	"context"
	"crypto/rand"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
)

// usageTTL is how long a tenant's counters of a day are kept: a week, for whoever wants to look
// back, and the budget only ever reads today's.
const usageTTL = 8 * 24 * time.Hour

// usageKey is the key of tenant's token counters of the UTC date of day: a hash with the
// fields prompt and completion, {prefix}:{tok:<tenant>}:<yyyymmdd>. Its hash tag is the tenant,
// so a tenant's days share a slot, and a "tok:" that no session id can start with.
func (s *Store) usageKey(tenant string, day time.Time) string {
	return s.prefix + ":{tok:" + tenant + "}:" + day.UTC().Format("20060102")
}

// addUsage queues the commands that add u to its tenant's counters of the day.
func (s *Store) addUsage(ctx context.Context, p redis.Pipeliner, u *coach.TenantUsage) {
	key := s.usageKey(u.Tenant, u.Day)
	p.HIncrBy(ctx, key, "prompt", int64(u.PromptTokens))
	p.HIncrBy(ctx, key, "completion", int64(u.CompletionTokens))
	p.Expire(ctx, key, usageTTL)
}

// runWith runs script with more commands in one pipeline, so that they cost no round trip of
// their own, and returns the script's reply. The other commands' own failures are ignored:
// they are counters, and a Redis that fails them fails the script too. The script goes as
// EVALSHA; should the server have lost it (a restart without Prepare), it runs once more alone.
// On a cluster the pipeline goes to each command's master, and the script stays atomic on its
// own slot; the other commands are not part of its atomicity.
func (s *Store) runWith(ctx context.Context, script *redis.Script, keys []string, args []any, more func(redis.Pipeliner)) (any, error) {
	var cmd *redis.Cmd
	_, _ = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = script.EvalSha(ctx, p, keys, args...)
		more(p)
		return nil
	})
	res, err := cmd.Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		return script.Run(ctx, s.client, keys, args...).Result()
	}
	return res, err
}

// ClaimWithUsage is Claim that also returns the tokens tenant has used on the UTC date of day
// (prompt and completion), read in the same round trip: one pipeline of the claim script and
// an HMGET of the tenant's counters. It is what the engine calls when a token budget is set.
func (s *Store) ClaimWithUsage(ctx context.Context, tenant, id string, ttl time.Duration, day time.Time) (*coach.Session, string, int64, error) {
	token := rand.Text()
	var used *redis.SliceCmd
	res, err := s.runWith(ctx, claimScript, s.keys(id), s.claimArgs(tenant, token, ttl), func(p redis.Pipeliner) {
		used = p.HMGet(ctx, s.usageKey(tenant, day), "prompt", "completion")
	})
	sess, err := s.claimed(id, token, res, err)
	if err != nil {
		return nil, "", 0, err
	}
	var total int64
	for _, v := range used.Val() {
		if str, ok := v.(string); ok {
			n, _ := strconv.ParseInt(str, 10, 64)
			total += n
		}
	}
	return sess, token, total, nil
}

// TenantUsage returns the tokens tenant has used on the UTC date of day.
func (s *Store) TenantUsage(ctx context.Context, tenant string, day time.Time) (coach.Usage, error) {
	vals, err := s.client.HMGet(ctx, s.usageKey(tenant, day), "prompt", "completion").Result()
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
