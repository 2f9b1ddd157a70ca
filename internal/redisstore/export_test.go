package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// This file lends the external tests (package redisstore_test, which runs the storetest
// contract) the servers of this package's suite, a way into the claim script, and the document
// encoding the scripts rely on.

// The document encoding and the headers the scripts compare.
var (
	Encode        = encode
	Decode        = decode
	TenantHeader  = tenantHeader
	VersionHeader = versionHeader
	CommitHeader  = commitHeader
)

// Backend is a server the suite runs against (see backends), for the external tests.
type Backend struct {
	Name string
	b    backend
}

// Backends returns the servers of backends(t).
func Backends(t *testing.T) []Backend {
	t.Helper()
	var bs []Backend
	for _, b := range backends(t) {
		bs = append(bs, Backend{Name: b.name, b: b})
	}
	return bs
}

// Dial returns a new client of the server, closed when t ends.
func (b Backend) Dial(t *testing.T) redis.UniversalClient { return b.b.dial(t) }

// NewStore returns a prepared store under a key prefix of its own, removed when t ends, with its
// client, its prefix and, on a miniredis, a way to move the server's clock (nil otherwise).
func (b Backend) NewStore(t *testing.T) (store *Store, client redis.UniversalClient, prefix string, fastForward func(time.Duration)) {
	t.Helper()
	f := newFixture(t, b.b)
	if b.b.mini != nil {
		fastForward = b.b.mini.FastForward
	}
	return f.store, f.client, f.prefix, fastForward
}

// RunClaimScript runs the claim script of session id with token as Claim would, the way go-redis
// resends it after a lost reply, and returns its raw result.
func (s *Store) RunClaimScript(ctx context.Context, tenant, id, token string, ttl time.Duration) (any, error) {
	return claimScript.Run(ctx, s.client, s.keys(id), s.claimArgs(tenant, token, ttl)...).Result()
}
