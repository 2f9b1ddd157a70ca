package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
)

// A learner's safety hold (coach.LearnerHolds) is a hash of the hold's episode and start:
//
//	{prefix}:{lhold:<tenant>:<sha256 of the learner reference, hex>}   episode, since (RFC 3339)
//
// Like the learner's index it carries the reference's hash, never the reference. It lives as
// long as a session of the learner created with it may (the retention), unless the operator's
// clear or the learner's erasure ends it first.

var _ coach.LearnerHolds = (*Store)(nil)

// learnerHoldKey returns the key of the hold of learner of tenant.
func (s *Store) learnerHoldKey(tenant, learner string) string {
	h := sha256.Sum256([]byte(learner))
	return s.prefix + ":{lhold:" + tenant + ":" + hex.EncodeToString(h[:]) + "}"
}

// HoldLearner records h as the hold of learner of tenant.
func (s *Store) HoldLearner(ctx context.Context, tenant, learner string, h coach.SafetyHold) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	key := s.learnerHoldKey(tenant, learner)
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		p.HSet(ctx, key, "episode", h.Episode, "since", h.Since.UTC().Format(time.RFC3339Nano))
		p.PExpire(ctx, key, s.retentionLeft(time.Time{}, time.Now()))
		return nil
	})
	if err != nil {
		return failure("hold learner", err)
	}
	return nil
}

// LearnerHold returns the hold of learner of tenant, or nil.
func (s *Store) LearnerHold(ctx context.Context, tenant, learner string) (*coach.SafetyHold, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	v, err := s.client.HMGet(ctx, s.learnerHoldKey(tenant, learner), "episode", "since").Result()
	if err != nil {
		return nil, failure("learner hold", err)
	}
	episode, _ := v[0].(string)
	if episode == "" {
		return nil, nil
	}
	// A start that cannot be read leaves it zero: the hold holds all the same.
	since, _ := v[1].(string)
	t, _ := time.Parse(time.RFC3339Nano, since)
	return &coach.SafetyHold{Hold: true, Since: t, Episode: episode}, nil
}

// clearHoldScript deletes a learner's hold when it is of the episode ARGV[1].
var clearHoldScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'episode') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// ClearLearnerHold ends the hold of learner of tenant when it belongs to episode.
func (s *Store) ClearLearnerHold(ctx context.Context, tenant, learner, episode string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	err := clearHoldScript.Run(ctx, s.client, []string{s.learnerHoldKey(tenant, learner)}, episode).Err()
	if err != nil && !errors.Is(err, redis.Nil) {
		return failure("clear learner hold", err)
	}
	return nil
}

// eraseLearnerHold deletes the hold of learner of tenant, for the learner's erasure.
func (s *Store) eraseLearnerHold(ctx context.Context, tenant, learner string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.client.Del(ctx, s.learnerHoldKey(tenant, learner)).Err(); err != nil {
		return failure("erase learner hold", err)
	}
	return nil
}
