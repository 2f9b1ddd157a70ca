package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/turns"
)

// Instances keeps every gateway instance's liveness in Redis, so that any instance can tell a
// turn whose instance died (turns.Instances):
//
//	{prefix}:inst:<id>            a string, set by the instance every period and expiring
//	                              unless it is set again (see turns.Heartbeat)
//
// It costs one SET per instance per period, whatever the number of turns, and one EXISTS when a
// reader finds a running turn silent. The key has no hash tag: it belongs to no session.
type Instances struct {
	client redis.UniversalClient
	prefix string
}

var _ turns.Instances = (*Instances)(nil)

// NewInstances returns the Instances of client under prefix (Options.Prefix; "" for the
// default).
func NewInstances(client redis.UniversalClient, prefix string) *Instances {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Instances{client: client, prefix: prefix}
}

func (i *Instances) key(instance string) string { return i.prefix + ":inst:" + instance }

// Beat keeps instance alive for ttl.
func (i *Instances) Beat(ctx context.Context, instance string, ttl time.Duration) error {
	if err := i.client.Set(ctx, i.key(instance), 1, ttl).Err(); err != nil {
		return failure("instances", err)
	}
	return nil
}

// Leave ends instance's life at once: its turns, which a graceful shutdown has drained, are
// over, and one still running would be found lost by its readers without waiting.
func (i *Instances) Leave(ctx context.Context, instance string) error {
	if err := i.client.Del(ctx, i.key(instance)).Err(); err != nil {
		return failure("instances", err)
	}
	return nil
}

// Alive reports whether instance is kept alive.
func (i *Instances) Alive(ctx context.Context, instance string) (bool, error) {
	n, err := i.client.Exists(ctx, i.key(instance)).Result()
	if err != nil {
		return false, failure("instances", err)
	}
	return n == 1, nil
}
