package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestLearnerSessionsBounded creates sessions of one learner up to Options.MaxLearnerSessions:
// the next is too_many_sessions (a conflict), while another learner and the same reference of
// another tenant still get theirs; once one of the learner's sessions is deleted, the learner
// gets a new one (the index keeps listing the deleted session; it no longer counts).
func TestLearnerSessionsBounded(t *testing.T) {
	const limit = 3
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			store := New(f.client, Options{Prefix: f.prefix, MaxLearnerSessions: limit})
			ctx := context.Background()
			create := func(tenant, learner string) (*coach.Session, error) {
				s := newSession(tenant)
				s.Learner = learner
				return s, store.Create(ctx, s)
			}
			var mine []*coach.Session
			for i := range limit {
				s, err := create("acme", "pupil-1")
				if err != nil {
					t.Fatalf("session %d of %d: %v", i+1, limit, err)
				}
				mine = append(mine, s)
			}
			_, err := create("acme", "pupil-1")
			var ce *coach.Error
			if !errors.As(err, &ce) || ce.Code != coach.CodeTooManySessions || ce.Kind != coach.KindConflict {
				t.Fatalf("session %d: %v, want a conflict too_many_sessions", limit+1, err)
			}
			for _, other := range []struct{ tenant, learner string }{{"acme", "pupil-2"}, {"beta", "pupil-1"}} {
				if _, err := create(other.tenant, other.learner); err != nil {
					t.Errorf("%s of %s: %v, want created", other.learner, other.tenant, err)
				}
			}
			if err := store.Delete(ctx, "acme", mine[0].ID); err != nil {
				t.Fatal(err)
			}
			if _, err := create("acme", "pupil-1"); err != nil {
				t.Errorf("after deleting one of the learner's sessions: %v, want created", err)
			}
			if _, err := create("acme", "pupil-1"); !errors.As(err, &ce) || ce.Code != coach.CodeTooManySessions {
				t.Errorf("at the bound again: %v, want too_many_sessions", err)
			}
			ids, err := store.LearnerSessions(ctx, "acme", "pupil-1")
			if err != nil || len(ids) != limit {
				t.Errorf("the learner's index lists %d sessions (%v), want %d (the deleted one taken out)", len(ids), err, limit)
			}
		})
	}
}
