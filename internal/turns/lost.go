package turns

import (
	"context"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/ndjson"
)

// Instances tells whether a gateway instance is alive. Every instance keeps itself alive for
// the ttl of Heartbeat, refreshing it every period (internal/app does, with internal/redisstore's
// Instances), and lets go when it shuts down, after its turns are drained. An instance's id is
// drawn at its start, so one found dead stays dead.
type Instances interface {
	// Alive reports whether instance keeps itself alive.
	Alive(ctx context.Context, instance string) (bool, error)
}

// Heartbeat returns how long an instance is kept alive by one refresh, and how often it
// refreshes, for its turns to be found lost within lostAfter of its death: it was last refreshed
// before it died, so it is dead at most ttl later, and a reader that waits for lines at most
// ReadBlock at a time sees that within ttl plus ReadBlock (11/12 of lostAfter), leaving the rest
// for the round trips. An instance whose refreshes all fail for ttl minus a period (half of
// lostAfter) may be taken for dead.
func Heartbeat(lostAfter time.Duration) (ttl, period time.Duration) {
	return lostAfter * 2 / 3, lostAfter / 6
}

// ReadBlock returns how long a reader of a turn's log waits for new lines before it checks that
// the turn is not lost (Lost) and asks again.
func (t *Turns) ReadBlock() time.Duration {
	const most = 5 * time.Second
	if t.cfg.Instances == nil || t.cfg.LostAfter <= 0 {
		return most
	}
	return max(time.Millisecond, min(most, t.cfg.LostAfter/4))
}

// Lost reports whether turn of session was lost: it is the session's running turn, on an
// instance that is no longer alive. The first to find it lost ends its log with a turn_lost
// error line (Log.EndLost), which every reader, on every instance, then reads as the turn's
// last line. A turn that runs here, or whose instance is alive or unknown, is not lost.
func (t *Turns) Lost(ctx context.Context, session, turn string) (bool, error) {
	log := t.Log()
	if log == nil || t.cfg.Instances == nil || t.running.running(session) == turn {
		return false, nil
	}
	cur, running, instance, err := log.Current(ctx, session)
	if err != nil || cur != turn || !running {
		return false, err
	}
	return t.lost(ctx, session, turn, instance)
}

// lost is Lost of turn of session, found running on instance.
func (t *Turns) lost(ctx context.Context, session, turn, instance string) (bool, error) {
	if t.cfg.Instances == nil || instance == "" {
		return false, nil
	}
	alive, err := t.cfg.Instances.Alive(ctx, instance)
	if err != nil || alive {
		return false, err
	}
	// Like every error line that ends a turn, it names the turn.
	line, err := ndjson.Append(nil, coach.ErrorEvent(coach.ErrTurnLost, turn))
	if err != nil {
		return false, err
	}
	if _, err := t.cfg.Log.EndLost(ctx, session, turn, instance, line, t.cfg.ResumeTTL); err != nil {
		return false, err
	}
	return true, nil
}
