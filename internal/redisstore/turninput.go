package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/turns"
)

// The learner input of a running turn is kept beside its log, under the session's hash tag
// (so that erasing a learner's sessions sweeps it with their other keys):
//
//	{prefix}:{<id>}:ti:<turn>     a string: the turn's input as JSON, for as long as the turn
//	                              may run
//
// A conversation restored while the turn runs shows the learner's message from it; once the turn
// ends its transcript (or nothing, for a turn that stored nothing) takes over, and the key is
// left to expire rather than deleted, which would cost every turn one more command.
var _ turns.Inputs = (*TurnLog)(nil)

func (l *TurnLog) inputKey(session, turn string) string {
	return l.prefix + ":{" + session + "}:ti:" + turn
}

// KeepInput keeps input, the learner input of turn of session, for ttl: one SET.
func (l *TurnLog) KeepInput(ctx context.Context, session, turn string, input []byte, ttl time.Duration) error {
	return wrapErr(l.client.Set(ctx, l.inputKey(session, turn), input, ttl).Err())
}

// Input returns the learner input of turn of session that KeepInput kept, or nil when there is
// none (it expired, or was never kept).
func (l *TurnLog) Input(ctx context.Context, session, turn string) ([]byte, error) {
	b, err := l.client.Get(ctx, l.inputKey(session, turn)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, failure("turn log", err)
	}
	return b, nil
}
