package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestAllowBurstThenRefuse(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			const limit, window = 3, time.Minute
			for i := range limit {
				ok, retry, err := f.store.Allow(ctx, "acme", limit, window)
				if err != nil || !ok || retry != 0 {
					t.Fatalf("request %d: Allow() = %v, %v, %v; want allowed", i+1, ok, retry, err)
				}
			}
			ok, retry, err := f.store.Allow(ctx, "acme", limit, window)
			if err != nil || ok {
				t.Fatalf("request %d: Allow() = %v, %v; want refused", limit+1, ok, err)
			}
			interval := window / limit
			if retry <= interval-5*time.Second || retry > interval {
				t.Errorf("retryAfter = %v, want just under %v (one interval)", retry, interval)
			}
			if ok, _, err := f.store.Allow(ctx, "beta", limit, window); err != nil || !ok {
				t.Errorf("another key: Allow() = %v, %v; want allowed: keys must not share a bucket", ok, err)
			}
			key := f.prefix + ":{rl:acme}"
			ttl, err := f.client.PTTL(ctx, key).Result()
			if err != nil || ttl <= 0 || ttl > window {
				t.Errorf("PTTL %s = %v, %v; want the key to expire within %v", key, ttl, err, window)
			}
		})
	}
}

// TestAllowRefill moves the server's clock (miniredis only) to show that tokens come back one
// interval at a time.
func TestAllowRefill(t *testing.T) {
	ctx := context.Background()
	b := embeddedBackend(t, "miniredis")
	f := newFixture(t, b)
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) { b.mini.SetTime(t0.Add(d)) }
	steps := []struct {
		at        time.Duration
		wantOK    bool
		wantRetry time.Duration
	}{
		{0, true, 0},
		{0, true, 0},
		{0, false, 30 * time.Second},
		{29 * time.Second, false, time.Second},
		{30 * time.Second, true, 0},
		{30 * time.Second, false, 30 * time.Second},
		{5 * time.Minute, true, 0}, // idle long enough for a full bucket again
		{5 * time.Minute, true, 0},
		{5 * time.Minute, false, 30 * time.Second},
	}
	for i, s := range steps {
		at(s.at)
		ok, retry, err := f.store.Allow(ctx, "acme", 2, time.Minute)
		if err != nil || ok != s.wantOK || retry != s.wantRetry {
			t.Errorf("step %d at +%v: Allow() = %v, %v, %v; want %v, %v", i, s.at, ok, retry, err, s.wantOK, s.wantRetry)
		}
	}
}

func TestAllowRoundTrips(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			h := &CountingHook{}
			f.client.AddHook(h)
			tests := []struct {
				name  string
				limit int
				want  int64
			}{
				{"limit off", 0, 0},
				{"limited", 10, 1},
			}
			for _, tt := range tests {
				before := h.Count()
				if ok, _, err := f.store.Allow(ctx, "acme", tt.limit, time.Minute); err != nil || !ok {
					t.Fatalf("%s: Allow() = %v, %v", tt.name, ok, err)
				}
				if got := h.Count() - before; got != tt.want {
					t.Errorf("%s: %d round trips, want %d", tt.name, got, tt.want)
				}
			}
		})
	}
}

// TestAllowUnavailable points the limiter at a closed port: the error must say "unavailable",
// which is what lets the HTTP layer fail open.
func TestAllowUnavailable(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	defer client.Close()
	_, _, err := New(client, Options{}).Allow(context.Background(), "acme", 1, time.Minute)
	wantUnavailable(t, err)
}
