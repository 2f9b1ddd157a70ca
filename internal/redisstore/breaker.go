package redisstore

import (
	"context"
	"time"
)

// OpenCircuit records that the circuit of the model endpoint whose identity is id (see
// breaker.Identity: a hash of its name, base URL and model) is open for cooldown, for every
// gateway on this Redis: one SET with that expiry (rounded up to whole milliseconds) of the key
// {prefix}:{cb:<id>}, hash-tagged like the session keys, with a "cb:" that no session id can
// start with. It is one round trip, made only when a circuit opens, never on a turn's
// path (see package breaker).
func (s *Store) OpenCircuit(ctx context.Context, id string, cooldown time.Duration) error {
	if err := s.client.Set(ctx, s.circuitKey(id), "open", time.Duration(millis(cooldown))*time.Millisecond).Err(); err != nil {
		return failure("open circuit", err)
	}
	return nil
}

// OpenCircuits returns, for each of ids whose circuit some gateway opened, how long it stays
// open: one PTTL per endpoint (each key is a slot of its own). They are sent one by one rather
// than pipelined so that they keep a label of their own in the gateway's Redis metrics
// ("pttl"): they are the breaker's background reads, not any turn's round trips, and the bench
// tells them apart by it.
func (s *Store) OpenCircuits(ctx context.Context, ids []string) (map[string]time.Duration, error) {
	open := map[string]time.Duration{}
	for _, n := range ids {
		// PTTL answers -2 for a missing key and -1 for one without expiry, which this package
		// never writes.
		d, err := s.client.PTTL(ctx, s.circuitKey(n)).Result()
		if err != nil {
			return nil, failure("read circuits", err)
		}
		if d > 0 {
			open[n] = d
		}
	}
	return open, nil
}

func (s *Store) circuitKey(id string) string { return s.prefix + ":{cb:" + id + "}" }
