package coach_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// hold puts session id on a safety hold through the store, as a crisis turn's commit does.
func hold(t *testing.T, st *storeFake, tenant, id string) {
	t.Helper()
	ctx := context.Background()
	s, token, err := st.Claim(ctx, tenant, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	s.Safety = &coach.SafetyHold{Hold: true, Since: time.Unix(1700000000, 0).UTC(), Episode: "ep"}
	s.Version++
	if err := st.Commit(ctx, s, token, coach.CommitExtra{}); err != nil {
		t.Fatal(err)
	}
}

func TestClearSafetyHold(t *testing.T) {
	tests := []struct {
		name        string
		held        bool
		tenant, id  string // "" id: the session's own
		wantErr     error
		wantVersion int64
	}{
		{name: "held", held: true, wantVersion: 3},
		{name: "not held is unchanged", held: false, wantVersion: 1},
		{name: "another tenant's session", held: true, tenant: "other", wantErr: coach.ErrNotFound, wantVersion: 2},
		{name: "malformed id", held: true, id: "nope", wantErr: coach.ErrNotFound, wantVersion: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc, st, sess := newTestService(t, &fakeModel{}, testOptions(), nil)
			if tt.held {
				hold(t, st, "", sess.ID)
			}
			id := tt.id
			if id == "" {
				id = sess.ID
			}
			got, err := svc.ClearSafetyHold(context.Background(), tt.tenant, id)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ClearSafetyHold: error %v, want %v", err, tt.wantErr)
			}
			stored := st.stored(t, sess.ID)
			if stored.Version != tt.wantVersion {
				t.Errorf("stored version %d, want %d", stored.Version, tt.wantVersion)
			}
			if st.locked(sess.ID) {
				t.Error("the session is left locked")
			}
			if tt.wantErr != nil {
				if !stored.Held() {
					t.Error("a refused clear ended the hold")
				}
				return
			}
			if got.Safety != nil || stored.Safety != nil {
				t.Errorf("after the clear: answered safety %+v, stored %+v; want none", got.Safety, stored.Safety)
			}
			if got.Version != tt.wantVersion {
				t.Errorf("answered version %d, want %d", got.Version, tt.wantVersion)
			}
		})
	}
}

// TestClearSafetyHoldRacesATurn holds a clear against a turn that claimed the session first:
// while the turn holds the lock the clear is ErrBusy, and when the turn's lock expired and the
// clear went through, the turn's commit (of the session as it claimed it, hold and all) is a
// conflict and the hold stays cleared.
func TestClearSafetyHoldRacesATurn(t *testing.T) {
	ctx := context.Background()
	svc, st, sess := newTestService(t, &fakeModel{}, testOptions(), nil)
	hold(t, st, "", sess.ID)

	turn, token, err := st.Claim(ctx, "", sess.ID, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ClearSafetyHold(ctx, "", sess.ID); !errors.Is(err, coach.ErrBusy) {
		t.Fatalf("clear while the turn holds the session: error %v, want ErrBusy", err)
	}
	if stored := st.stored(t, sess.ID); !stored.Held() {
		t.Fatal("a busy clear ended the hold")
	}

	// The turn's lock expires (its instance stalled past the lock TTL).
	st.expire(t, sess.ID)
	cleared, err := svc.ClearSafetyHold(ctx, "", sess.ID)
	if err != nil {
		t.Fatalf("clear after the lock expired: %v", err)
	}
	turn.Version++
	if err := st.Commit(ctx, turn, token, coach.CommitExtra{}); !errors.Is(err, coach.ErrConflict) {
		t.Fatalf("the stale turn's commit: error %v, want ErrConflict", err)
	}
	stored := st.stored(t, sess.ID)
	if stored.Safety != nil || stored.Version != cleared.Version {
		t.Errorf("stored after the race: safety %+v version %d, want none at the clear's version %d", stored.Safety, stored.Version, cleared.Version)
	}
}
