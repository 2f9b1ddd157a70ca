package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
)

// learnerHasRoom refuses a new session of learner of tenant when the learner already has
// Options.MaxLearnerSessions sessions, with coach.CodeTooManySessions: a learner's sessions
// (and what an export of it streams) are bounded, whoever holds the key.
//
// The count is the learner's index (see learner.go), one SCARD. The index lists a session
// until the learner's erasure, also after the session expired or was deleted, so a learner
// whose index reaches the bound has the sessions that are gone taken out of it first (one
// EXISTS per listed session, in one pipeline, then one SREM), and only the live ones count.
// A session removed that way whose document appears meanwhile (a Create on a cluster writes
// the index before the document) is listed again at once.
//
// The check and the Create that follows are two steps: sessions of one learner created at the
// same instant may pass the bound by as many as run at once, which COACH_SESSION_RATE_LIMIT
// bounds per learner.
func (s *Store) learnerHasRoom(ctx context.Context, tenant, learner string) error {
	if s.maxLearner <= 0 {
		return nil
	}
	idx := s.learnerKey(tenant, learner)
	n, err := s.client.SCard(ctx, idx).Result()
	if err != nil {
		return failure("create", err)
	}
	if n < int64(s.maxLearner) {
		return nil
	}
	live, err := s.pruneLearner(ctx, idx)
	if err != nil {
		return err
	}
	if live >= s.maxLearner {
		return coach.Errorf(coach.KindConflict, coach.CodeTooManySessions,
			"the learner has %d sessions, the most it may have (COACH_MAX_SESSIONS_PER_LEARNER); delete one, or let one expire", live)
	}
	return nil
}

// pruneLearner takes the sessions whose document is gone out of the learner index idx and
// returns how many are left.
func (s *Store) pruneLearner(ctx context.Context, idx string) (int, error) {
	ids, err := s.client.SMembers(ctx, idx).Result()
	if err != nil {
		return 0, failure("create", err)
	}
	gone, err := s.missing(ctx, ids)
	if err != nil {
		return 0, err
	}
	if len(gone) == 0 {
		return len(ids), nil
	}
	if err := s.client.SRem(ctx, idx, gone...).Err(); err != nil {
		return 0, failure("create", err)
	}
	ids = make([]string, len(gone))
	for i, id := range gone {
		ids[i] = id.(string)
	}
	back, err := s.missing(ctx, ids)
	if err != nil {
		return 0, err
	}
	if appeared := len(ids) - len(back); appeared > 0 {
		stillGone := map[any]bool{}
		for _, id := range back {
			stillGone[id] = true
		}
		var again []any
		for _, id := range ids {
			if !stillGone[id] {
				again = append(again, id)
			}
		}
		if err := s.client.SAdd(ctx, idx, again...).Err(); err != nil {
			return 0, failure("create", err)
		}
	}
	live, err := s.client.SCard(ctx, idx).Result()
	if err != nil {
		return 0, failure("create", err)
	}
	return int(live), nil
}

// missing returns the ids of ids whose session document does not exist: one EXISTS each, in
// one pipeline (the documents are in different slots, which one EXISTS may not span on a
// cluster).
func (s *Store) missing(ctx context.Context, ids []string) ([]any, error) {
	cmds := make([]*redis.IntCmd, len(ids))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.Exists(ctx, s.docKey(id))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, failure("create", err)
	}
	var gone []any
	for i, c := range cmds {
		if c.Val() == 0 {
			gone = append(gone, ids[i])
		}
	}
	return gone, nil
}
