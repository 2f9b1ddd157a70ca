package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// allowScript is a GCRA (generic cell rate algorithm) limiter: a token bucket of limit tokens
// that refills one token every window/limit, kept as a single number, the theoretical arrival
// time (TAT) of the next request, in microseconds. The clock is Redis's own (TIME), so every
// gateway instance sees the same time and no clock skew between them bends the limit. The key
// expires once the bucket would be full again, so an idle tenant costs no memory.
//
// Compared with a fixed window (INCR + EXPIRE) it does not let a client spend two windows'
// worth in the instant around a window boundary: after a burst, requests come back one per
// interval.
//
// KEYS: the limiter's key. ARGV: interval (µs) = window/limit, window (µs).
// Returns {1, 0} when the request is allowed, {0, µs until it would be} otherwise.
var allowScript = redis.NewScript(`
if redis.replicate_commands then redis.replicate_commands() end
local interval = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then
  tat = now
end
local wait = tat + interval - window - now
if wait > 0 then
  return {0, wait}
end
tat = tat + interval
redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', string.format('%d', math.ceil((tat - now) / 1000)))
return {1, 0}
`)

// Allow counts one request against the limiter key (a tenant) that may make limit requests per
// window, shared by every gateway on the same Redis. A client may burst up to limit requests at
// once; after that one request comes back every window/limit. When the request is refused,
// retryAfter is how long until it would be allowed. A limit or window of 0 or less allows
// everything without asking Redis.
//
// It is one round trip. The key is {prefix}:{rl:<key>}: hash-tagged like the session keys, with
// an "rl:" that no session id (32 hex digits) can start with.
func (s *Store) Allow(ctx context.Context, key string, limit int, window time.Duration) (ok bool, retryAfter time.Duration, err error) {
	if limit <= 0 || window <= 0 {
		return true, 0, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	w := window.Microseconds()
	interval := max(w/int64(limit), 1)
	res, err := allowScript.Run(ctx, s.client, []string{s.limitKey(key)}, interval, w).Int64Slice()
	if err != nil {
		return false, 0, failure("rate limit", err)
	}
	if len(res) != 2 {
		return false, 0, failure("rate limit", fmt.Errorf("unexpected reply %v", res))
	}
	return res[0] == 1, time.Duration(res[1]) * time.Microsecond, nil
}

func (s *Store) limitKey(key string) string { return s.prefix + ":{rl:" + key + "}" }
