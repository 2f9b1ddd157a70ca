package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/redis/go-redis/v9"
)

// backend is a Redis server the suite runs against.
type backend struct {
	name string
	// dial returns a new client of the server, closed when t ends.
	dial func(t *testing.T) redis.UniversalClient
	// mini is the server when it is a miniredis, whose clock the suite can move; nil for a real one.
	mini *embeddedServer
}

// backends returns the real Redis (REDIS_URL, else 127.0.0.1:6379) and the embedded miniredis.
// Without a reachable Redis the first falls back to a miniredis too, except under CI, where that
// is a failure: CI must prove the real thing.
func backends(t *testing.T) []backend {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	real := backend{name: "redis"}
	if c, err := Connect(ctx, url); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Redis at %s under CI: %v", url, err)
		}
		t.Logf("no Redis at %s (%v); the redis cases run on miniredis", url, err)
		real = embeddedBackend(t, "redis")
	} else {
		_ = c.Close()
		real.dial = func(t *testing.T) redis.UniversalClient {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			c, err := Connect(ctx, url)
			if err != nil {
				t.Fatalf("Connect: %v", err)
			}
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
	}
	return []backend{real, embeddedBackend(t, "miniredis")}
}

func embeddedBackend(t *testing.T, name string) backend {
	t.Helper()
	m, c, err := startEmbedded()
	if err != nil {
		t.Fatalf("startEmbedded: %v", err)
	}
	_ = c.Close()
	t.Cleanup(m.Close)
	return backend{name: name, mini: m, dial: func(t *testing.T) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}}
}

// fixture is one test's store, under a key prefix of its own that is removed afterwards.
type fixture struct {
	b      backend
	client redis.UniversalClient
	store  *Store
	prefix string
}

func newFixture(t *testing.T, b backend) *fixture {
	t.Helper()
	client := b.dial(t)
	prefix := "coachgw-test-" + strings.ToLower(rand.Text())
	t.Cleanup(func() { removePrefix(t, client, prefix) })
	store := New(client, Options{Prefix: prefix, TTL: time.Hour})
	if err := store.Prepare(context.Background()); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return &fixture{b: b, client: client, store: store, prefix: prefix}
}

func removePrefix(t *testing.T, client redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var cursor uint64
	for {
		keys, next, err := client.Scan(ctx, cursor, prefix+":*", 100).Result()
		if err != nil {
			t.Errorf("cleanup scan: %v", err)
			return
		}
		if len(keys) > 0 {
			if err := client.Del(ctx, keys...).Err(); err != nil {
				t.Errorf("cleanup del: %v", err)
				return
			}
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

func newSession(tenant string) *coach.Session {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return &coach.Session{
		ID: coach.NewID(), Contract: "toulmin", Locale: "en", Version: 1,
		State:     json.RawMessage(`{"step":"claim","draft":{}}`),
		CreatedAt: now, UpdatedAt: now, Tenant: tenant,
		History: []coach.Message{{Role: coach.RoleUser, Content: "Hello"}},
	}
}

func TestNewDefaultsAndPrefix(t *testing.T) {
	s := New(nil, Options{})
	if s.prefix != DefaultPrefix || s.ttl != DefaultTTL {
		t.Errorf("defaults = %q, %v, want %q, %v", s.prefix, s.ttl, DefaultPrefix, DefaultTTL)
	}
	if got, want := s.docKey("3fa9"), "coachgw:{3fa9}:s"; got != want {
		t.Errorf("docKey = %q, want %q", got, want)
	}
	if got, want := s.lockKey("3fa9"), "coachgw:{3fa9}:lock"; got != want {
		t.Errorf("lockKey = %q, want %q", got, want)
	}
	for _, prefix := range []string{"a{b", "a}b"} {
		t.Run(prefix, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("New with prefix %q did not panic", prefix)
				}
			}()
			New(nil, Options{Prefix: prefix})
		})
	}
}

func TestMillis(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want int64
	}{
		{0, 1}, {-time.Second, 1}, {time.Microsecond, 1}, {time.Millisecond, 1},
		{1500 * time.Microsecond, 2}, {50 * time.Millisecond, 50}, {24 * time.Hour, 86_400_000},
	}
	for _, tt := range tests {
		if got := millis(tt.in); got != tt.want {
			t.Errorf("millis(%v) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
