package redisstore

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/escalation"
)

// EscalationOverflow keeps the crisis episodes that the escalation webhook's queue has no room
// for, or whose attempts ran out while the receiver was down (escalation.Overflow), in Redis, so
// that they outlive the process and are retried by whichever instance has room:
//
//	{prefix}:{esc:<tenant>}:ep    hash   entry key → episode id, "\n", the episode's JSON
//	{prefix}:{esc:<tenant>}:due   zset   entry key → when it is next due (Unix ms)
//	{prefix}:{esc:<tenant>}:lex   zset   entry key, score 0 (the entries of one source by range)
//	{prefix}:{esc:<tenant>}:src   hash   source → how many entries it holds
//	{prefix}:{esc}:tenants        set    tenants that kept an entry
//
// An entry key starts with its source and a space (see escalation.Overflow), which is what lets
// the :lex set list one source's entries. Each tenant's keys share a hash tag, so that every
// script runs on one slot; they expire EscalationOverflowTTL after the tenant's last kept entry.
//
// What one source may hold is bounded (EscalationOverflowSourceSize), and so is a tenant's whole
// overflow (EscalationOverflowTenantSize); a tenant's full overflow makes room for a source's
// entry by evicting one of the source holding the most, whenever that one holds more than the
// newcomer's source would: one learner key's flood evicts its own entries, never another
// learner's.
type EscalationOverflow struct {
	client redis.UniversalClient
	prefix string
	// sourceSize and tenantSize are EscalationOverflowSourceSize and
	// EscalationOverflowTenantSize; tests make them smaller.
	sourceSize, tenantSize int
}

// Bounds of EscalationOverflow.
const (
	// EscalationOverflowSourceSize is how many entries one source (a learner key, or one
	// reference an operator key gave) may hold in its tenant's overflow: a learner key makes at
	// most COACH_SESSION_RATE_LIMIT sessions a minute, each held once per episode.
	EscalationOverflowSourceSize = 1000
	// EscalationOverflowTenantSize is how many entries a tenant's overflow holds.
	EscalationOverflowTenantSize = 10000
	// EscalationOverflowTTL is how long a tenant's overflow is kept after its last new entry:
	// a receiver down for longer than a week is a matter for the operator, who sees every
	// deferral in the error log and in coachgw_escalations_total.
	EscalationOverflowTTL = 7 * 24 * time.Hour
)

var _ escalation.Overflow = (*EscalationOverflow)(nil)

// NewEscalationOverflow returns the overflow of the keys under prefix (DefaultPrefix when empty).
func NewEscalationOverflow(client redis.UniversalClient, prefix string) *EscalationOverflow {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &EscalationOverflow{client: client, prefix: prefix,
		sourceSize: EscalationOverflowSourceSize, tenantSize: EscalationOverflowTenantSize}
}

// keys returns the ep, due, lex and src keys of tenant's overflow, in the order the scripts
// take them.
func (o *EscalationOverflow) keys(tenant string) []string {
	k := o.prefix + ":{esc:" + tenant + "}:"
	return []string{k + "ep", k + "due", k + "lex", k + "src"}
}

func (o *EscalationOverflow) tenantsKey() string { return o.prefix + ":{esc}:tenants" }

// keepScript stores one entry (see Keep).
//
// KEYS: ep, due, lex, src. ARGV: entry key, source, value (id "\n" body), due (ms), source
// bound, tenant bound, ttl (ms). Returns {1 or 0 (kept), the evicted entry's episode id or ""}.
var keepScript = redis.NewScript(`
local key, src = ARGV[1], ARGV[2]
local evicted = ''
if redis.call('HEXISTS', KEYS[1], key) == 0 then
  local mine = tonumber(redis.call('HGET', KEYS[4], src) or '0')
  if mine >= tonumber(ARGV[5]) then
    return {0, ''}
  end
  if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[6]) then
    local all = redis.call('HGETALL', KEYS[4])
    local big, most = nil, 0
    for i = 1, #all, 2 do
      local n = tonumber(all[i + 1])
      if n > most then
        big, most = all[i], n
      end
    end
    if big == nil or most <= mine + 1 then
      return {0, ''}
    end
    local victim = redis.call('ZRANGEBYLEX', KEYS[3], '[' .. big .. ' ', '(' .. big .. '!', 'LIMIT', 0, 1)[1]
    if victim == nil then
      return {0, ''}
    end
    local v = redis.call('HGET', KEYS[1], victim) or ''
    evicted = string.match(v, '^[^\n]*')
    redis.call('HDEL', KEYS[1], victim)
    redis.call('ZREM', KEYS[2], victim)
    redis.call('ZREM', KEYS[3], victim)
    if redis.call('HINCRBY', KEYS[4], big, -1) <= 0 then
      redis.call('HDEL', KEYS[4], big)
    end
  end
  redis.call('HINCRBY', KEYS[4], src, 1)
  redis.call('ZADD', KEYS[3], 0, key)
end
redis.call('HSET', KEYS[1], key, ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], key)
for i = 1, 4 do
  redis.call('PEXPIRE', KEYS[i], ARGV[7])
end
return {1, evicted}
`)

// Keep stores the episode's body under key in tenant's overflow, due at due (see
// escalation.Overflow). Two round trips: the tenant joins the list of tenants, then one script.
func (o *EscalationOverflow) Keep(ctx context.Context, tenant, source, key, episode string, body []byte, due time.Time) (bool, string, error) {
	if _, err := o.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, o.tenantsKey(), tenant)
		p.PExpire(ctx, o.tenantsKey(), EscalationOverflowTTL)
		return nil
	}); err != nil {
		return false, "", failure("escalation overflow", err)
	}
	res, err := keepScript.Run(ctx, o.client, o.keys(tenant), key, source, episode+"\n"+string(body),
		due.UnixMilli(), o.sourceSize, o.tenantSize, EscalationOverflowTTL.Milliseconds()).Slice()
	if err != nil {
		return false, "", failure("escalation overflow", err)
	}
	if len(res) != 2 {
		return false, "", failure("escalation overflow", redis.Nil)
	}
	kept, _ := res[0].(int64)
	evicted, _ := res[1].(string)
	return kept == 1, evicted, nil
}

// dueScript takes up to n due entries (see Due).
//
// KEYS: ep, due. ARGV: now (ms), n, lease end (ms). Returns key, value, key, value, ….
var dueScript = redis.NewScript(`
local keys = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
local out = {}
for _, k in ipairs(keys) do
  local v = redis.call('HGET', KEYS[1], k)
  if v then
    redis.call('ZADD', KEYS[2], ARGV[3], k)
    out[#out + 1] = k
    out[#out + 1] = v
  else
    redis.call('ZREM', KEYS[2], k)
  end
end
return out
`)

// Due returns up to n of tenant's entries due by now, oldest due first, each due again only
// at lease (see escalation.Overflow). One script.
func (o *EscalationOverflow) Due(ctx context.Context, tenant string, now time.Time, n int, lease time.Time) ([]escalation.Entry, error) {
	ks := o.keys(tenant)
	res, err := dueScript.Run(ctx, o.client, ks[:2], now.UnixMilli(), n, lease.UnixMilli()).StringSlice()
	if err != nil {
		return nil, failure("escalation overflow", err)
	}
	out := make([]escalation.Entry, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		id, body, ok := strings.Cut(res[i+1], "\n")
		if !ok {
			continue
		}
		out = append(out, escalation.Entry{Key: res[i], Episode: id, Body: []byte(body)})
	}
	return out, nil
}

// doneScript removes an entry that still holds the episode (see Done).
//
// KEYS: ep, due, lex, src. ARGV: entry key, episode id, source.
var doneScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v or string.sub(v, 1, #ARGV[2] + 1) ~= ARGV[2] .. '\n' then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('HINCRBY', KEYS[4], ARGV[3], -1) <= 0 then
  redis.call('HDEL', KEYS[4], ARGV[3])
end
return 1
`)

// Done removes key from tenant's overflow when it still holds episode: an entry that a later
// episode of the same key replaced stays (see escalation.Overflow). One script.
func (o *EscalationOverflow) Done(ctx context.Context, tenant, source, key, episode string) error {
	if err := doneScript.Run(ctx, o.client, o.keys(tenant), key, episode, source).Err(); err != nil {
		return failure("escalation overflow", err)
	}
	return nil
}

// Tenants returns the tenants that kept an entry within EscalationOverflowTTL, whether or not
// their overflow still holds one.
func (o *EscalationOverflow) Tenants(ctx context.Context) ([]string, error) {
	ts, err := o.client.SMembers(ctx, o.tenantsKey()).Result()
	if err != nil {
		return nil, failure("escalation overflow", err)
	}
	return ts, nil
}
