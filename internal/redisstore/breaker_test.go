package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

func TestOpenCircuits(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			got, err := f.store.OpenCircuits(ctx, []string{"primary", "local"})
			if err != nil || len(got) != 0 {
				t.Fatalf("OpenCircuits() before any was opened = %v, %v; want none", got, err)
			}
			if err := f.store.OpenCircuit(ctx, "primary", 30*time.Second); err != nil {
				t.Fatalf("OpenCircuit: %v", err)
			}
			got, err = f.store.OpenCircuits(ctx, []string{"primary", "local"})
			if err != nil || len(got) != 1 || got["primary"] <= 25*time.Second || got["primary"] > 30*time.Second {
				t.Errorf("OpenCircuits() = %v, %v; want primary open for just under 30s", got, err)
			}
			key := f.prefix + ":{cb:primary}"
			if n, err := f.client.Exists(ctx, key).Result(); err != nil || n != 1 {
				t.Errorf("key %s exists = %d, %v; want the circuit under the store's prefix", key, n, err)
			}
		})
	}
}

func TestOpenCircuitsExpire(t *testing.T) {
	ctx := context.Background()
	b := embeddedBackend(t, "miniredis")
	f := newFixture(t, b)
	if err := f.store.OpenCircuit(ctx, "primary", time.Second); err != nil {
		t.Fatal(err)
	}
	b.mini.FastForward(time.Second)
	if got, err := f.store.OpenCircuits(ctx, []string{"primary"}); err != nil || len(got) != 0 {
		t.Errorf("OpenCircuits() after the cooldown = %v, %v; want none", got, err)
	}
}

func TestTenantUsage(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			s := &coach.Session{ID: coach.NewID(), Tenant: "acme", Contract: "toulmin", Version: 1, State: []byte(`{}`)}
			if err := f.store.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
			for i, u := range []coach.Usage{{PromptTokens: 100, CompletionTokens: 20}, {PromptTokens: 50, CompletionTokens: 5}} {
				claimed, token, used, err := f.store.ClaimWithUsage(ctx, "acme", s.ID, time.Minute, day)
				if want := int64(i * 120); err != nil || used != want {
					t.Fatalf("ClaimWithUsage %d = %d, %v; want %d", i+1, used, err, want)
				}
				next := *claimed
				next.Version++
				extra := coach.CommitExtra{Usage: &coach.TenantUsage{Tenant: "acme", Day: day, Usage: u}}
				if err := f.store.Commit(ctx, &next, token, extra); err != nil {
					t.Fatalf("Commit %d: %v", i+1, err)
				}
			}
			if got, err := f.store.TenantUsage(ctx, "acme", day); err != nil || got != (coach.Usage{PromptTokens: 150, CompletionTokens: 25}) {
				t.Errorf("TenantUsage = %+v, %v; want 150 and 25", got, err)
			}
			if got, _ := f.store.TenantUsage(ctx, "acme", day.Add(time.Minute)); got != (coach.Usage{}) {
				t.Errorf("TenantUsage of the next UTC day = %+v, want none", got)
			}
			if got, _ := f.store.TenantUsage(ctx, "beta", day); got != (coach.Usage{}) {
				t.Errorf("another tenant's usage = %+v, want none", got)
			}
			key := f.prefix + ":{tok:acme}:20260301"
			if ttl, err := f.client.TTL(ctx, key).Result(); err != nil || ttl <= 0 {
				t.Errorf("TTL %s = %v, %v; want the counters to expire", key, ttl, err)
			}
		})
	}
}
