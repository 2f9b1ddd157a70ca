package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/turns"
)

// The learner input of a running turn is kept beside its log, under the session's hash tag
// (so that erasing a learner's sessions sweeps it with their other keys):
//
//	{prefix}:{<id>}:ti:<turn>     a string: the turn's input as JSON, written with the first
//	                              batch of its log (Append, turns.Write.Input) and expiring
//	                              with it
//
// A conversation restored while the turn runs shows the learner's message from it; once the turn
// ends its transcript (or nothing, for a turn that stored nothing) takes over, and the key is
// left to expire rather than deleted or shortened, which would cost every turn one more command.
var _ turns.Inputs = (*TurnLog)(nil)

func (l *TurnLog) inputKey(session, turn string) string {
	return l.prefix + ":{" + session + "}:ti:" + turn
}

// Input returns the learner input of turn of session that the first batch of its log kept, or
// nil when there is none (it expired, or was never kept).
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
