package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// OpenCircuit records that the circuit of the model endpoint name is open for cooldown, for
// every gateway on this Redis: one SET with that expiry (rounded up to whole milliseconds) of
// the key {prefix}:{cb:<name>}, hash-tagged like the session keys, with a "cb:" that no session
// id can start with. It is one round trip, made only when a circuit opens, never on a turn's
// path (see package breaker).
func (s *Store) OpenCircuit(ctx context.Context, name string, cooldown time.Duration) error {
	if err := s.client.Set(ctx, s.circuitKey(name), "open", time.Duration(millis(cooldown))*time.Millisecond).Err(); err != nil {
		return failure("open circuit", err)
	}
	return nil
}

// OpenCircuits returns, for each of names whose circuit some gateway opened, how long it stays
// open. It is one pipelined PTTL per endpoint: each key is its own slot, so on a cluster the
// pipeline goes to the masters that own them.
func (s *Store) OpenCircuits(ctx context.Context, names []string) (map[string]time.Duration, error) {
	cmds := make([]*redis.DurationCmd, len(names))
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.PTTL(ctx, s.circuitKey(n))
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, failure("read circuits", err)
	}
	open := map[string]time.Duration{}
	for i, c := range cmds {
		// PTTL answers -2 for a missing key and -1 for one without expiry, which this package
		// never writes.
		if d := c.Val(); d > 0 {
			open[names[i]] = d
		}
	}
	return open, nil
}

func (s *Store) circuitKey(name string) string { return s.prefix + ":{cb:" + name + "}" }
