package redisstore

import (
	"context"
	"testing"
	"time"
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
