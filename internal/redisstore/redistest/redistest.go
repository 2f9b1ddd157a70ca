// Package redistest gives tests a real Redis whenever one is reachable: the one at REDIS_URL,
// else the local one on 127.0.0.1:6379. Under CI an unreachable Redis fails the test instead of
// falling back, because CI must prove the real thing.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const local = "redis://127.0.0.1:6379/0"

// URL returns the URL of a reachable Redis, or "" outside CI when there is none (the caller
// then uses the embedded one).
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("REDIS_URL")
	if url == "" {
		url = local
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("REDIS_URL: %v", err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("no Redis at %s under CI: %v", url, err)
		}
		t.Logf("no Redis at %s (%v): using the embedded one", url, err)
		return ""
	}
	return url
}

// Prefix returns a key prefix of its own for t and deletes every key under it when t ends.
func Prefix(t testing.TB, url string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "coachgw-test-" + hex.EncodeToString(b[:])
	if url == "" {
		return prefix
	}
	t.Cleanup(func() {
		opts, err := redis.ParseURL(url)
		if err != nil {
			return
		}
		c := redis.NewClient(opts)
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := c.Scan(ctx, 0, prefix+":*", 500).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return prefix
}
