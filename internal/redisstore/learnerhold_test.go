package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestLearnerHold sets, reads and clears a learner's hold: a clear of an earlier episode leaves
// a later one, the same reference of another tenant is never held, the key names no learner,
// and the learner's erasure ends the hold.
func TestLearnerHold(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ctx := context.Background()
			const ref = "pupil@example.org"
			since := time.Date(2026, 11, 29, 3, 0, 0, 123, time.UTC)
			if h, err := f.store.LearnerHold(ctx, "acme", ref); err != nil || h != nil {
				t.Fatalf("hold before any: %+v, %v; want none", h, err)
			}
			for _, ep := range []string{"episode-1", "episode-2"} {
				if err := f.store.HoldLearner(ctx, "acme", ref, coach.SafetyHold{Hold: true, Since: since, Episode: ep}); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.store.ClearLearnerHold(ctx, "acme", ref, "episode-1"); err != nil {
				t.Fatal(err)
			}
			h, err := f.store.LearnerHold(ctx, "acme", ref)
			if want := (coach.SafetyHold{Hold: true, Since: since, Episode: "episode-2"}); err != nil || h == nil || *h != want {
				t.Errorf("hold after clearing the earlier episode: %+v, %v; want %+v", h, err, want)
			}
			if h, err := f.store.LearnerHold(ctx, "beta", ref); err != nil || h != nil {
				t.Errorf("another tenant's learner of the same reference: %+v, %v; want no hold", h, err)
			}
			keys, err := f.client.Keys(ctx, f.prefix+":*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if strings.Contains(k, ref) {
					t.Errorf("key %s names the learner", k)
				}
			}
			if err := f.store.EraseLearner(ctx, "acme", ref); err != nil {
				t.Fatal(err)
			}
			if h, err := f.store.LearnerHold(ctx, "acme", ref); err != nil || h != nil {
				t.Errorf("hold after the learner's erasure: %+v, %v; want none", h, err)
			}
			if err := f.store.HoldLearner(ctx, "acme", ref, coach.SafetyHold{Hold: true, Since: since, Episode: "episode-3"}); err != nil {
				t.Fatal(err)
			}
			if err := f.store.ClearLearnerHold(ctx, "acme", ref, "episode-3"); err != nil {
				t.Fatal(err)
			}
			if h, err := f.store.LearnerHold(ctx, "acme", ref); err != nil || h != nil {
				t.Errorf("hold after its episode's clear: %+v, %v; want none", h, err)
			}
		})
	}
}
