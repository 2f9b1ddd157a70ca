package redisstore

import (
	"context"

	"github.com/coachgw/coachgw/internal/turns"
)

// The learner input of a running turn is kept in the session's current-turn pointer (the field
// in, written with the first batch of its log: Append, turns.Write.Input), so that erasing a
// learner's sessions sweeps it with their other keys and keeping it costs no command of its own.
// A conversation restored while the turn runs shows the learner's message from it; once the turn
// ends its transcript (or nothing, for a turn that stored nothing) takes over, and the field
// is left to the pointer's expiry or to the session's next turn.
var _ turns.Inputs = (*TurnLog)(nil)

// Input returns the learner input of turn of session that the first batch of its log kept, or
// nil when there is none (it expired, was never kept, or the session's pointer names another
// turn).
func (l *TurnLog) Input(ctx context.Context, session, turn string) ([]byte, error) {
	v, err := l.client.HMGet(ctx, l.pointerKey(session), "id", "in").Result()
	if err != nil {
		return nil, failure("turn log", err)
	}
	if id, _ := v[0].(string); id != turn {
		return nil, nil
	}
	in, _ := v[1].(string)
	if in == "" {
		return nil, nil
	}
	return []byte(in), nil
}
