package redisstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// newSessions creates n sessions of tenant in f's store.
func newSessions(t *testing.T, f *fixture, tenant string, n int) []*coach.Session {
	t.Helper()
	out := make([]*coach.Session, n)
	for i := range out {
		out[i] = &coach.Session{ID: coach.NewID(), Tenant: tenant, Contract: "toulmin", Version: 1, State: []byte(`{}`)}
		if err := f.store.Create(context.Background(), out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// next returns s as its next version.
func next(s *coach.Session) *coach.Session {
	n := *s
	n.Version++
	return &n
}

func TestTenantUsage(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			s := newSessions(t, f, "acme", 1)[0]
			for i, u := range []coach.Usage{{PromptTokens: 100, CompletionTokens: 20}, {PromptTokens: 50, CompletionTokens: 5}} {
				turn := fmt.Sprint("turn-", i)
				res := coach.Reservation{Turn: turn, Tenant: "acme", Day: day, Budget: 1000, Tokens: 300}
				claimed, token, granted, err := f.store.ClaimReserving(ctx, "acme", s.ID, time.Minute, res)
				if err != nil || granted != coach.Granted {
					t.Fatalf("ClaimReserving %d = %v, %v; want granted", i+1, granted, err)
				}
				if got, _ := f.store.TenantReserved(ctx, "acme", day); got != 300 {
					t.Errorf("reserved during turn %d = %d, want 300", i+1, got)
				}
				extra := coach.CommitExtra{Usage: &coach.TenantUsage{Turn: turn, Tenant: "acme", Day: day, Usage: u}}
				if err := f.store.Commit(ctx, next(claimed), token, extra); err != nil {
					t.Fatalf("Commit %d: %v", i+1, err)
				}
				s = next(claimed)
			}
			if got, err := f.store.TenantUsage(ctx, "acme", day); err != nil || got != (coach.Usage{PromptTokens: 150, CompletionTokens: 25}) {
				t.Errorf("TenantUsage = %+v, %v; want 150 and 25", got, err)
			}
			if got, _ := f.store.TenantReserved(ctx, "acme", day); got != 0 {
				t.Errorf("reserved after the turns = %d, want 0: settling drops the reservation", got)
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

// TestChargedOnce sends every settling operation twice with the same turn, as go-redis or a
// retry does after a reply lost with a dropped connection: the tenant is charged once.
func TestChargedOnce(t *testing.T) {
	ctx := context.Background()
	day := time.Now()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ss := newSessions(t, f, "acme", 2)
			u := coach.Usage{PromptTokens: 40, CompletionTokens: 2}

			// A committed turn whose commit (with its settlement) is sent again.
			res := coach.Reservation{Turn: "committed", Tenant: "acme", Day: day, Budget: 10000, Tokens: 500}
			claimed, token, _, err := f.store.ClaimReserving(ctx, "acme", ss[0].ID, time.Minute, res)
			if err != nil {
				t.Fatal(err)
			}
			extra := coach.CommitExtra{Usage: &coach.TenantUsage{Turn: "committed", Tenant: "acme", Day: day, Usage: u}}
			for i := range 2 {
				if err := f.store.Commit(ctx, next(claimed), token, extra); err != nil {
					t.Fatalf("Commit %d: %v", i+1, err)
				}
			}
			// A failed turn whose release (with its settlement) is sent again.
			res.Turn = "failed"
			_, token, _, err = f.store.ClaimReserving(ctx, "acme", ss[1].ID, time.Minute, res)
			if err != nil {
				t.Fatal(err)
			}
			charge := &coach.TenantUsage{Turn: "failed", Tenant: "acme", Day: day, Usage: u}
			for i := range 2 {
				if err := f.store.ReleaseCharging(ctx, ss[1].ID, token, charge); err != nil {
					t.Fatalf("ReleaseCharging %d: %v", i+1, err)
				}
			}
			// And the reservation of the first turn, resent after it was settled, reserves nothing.
			res.Turn = "committed"
			if _, token, _, err = f.store.ClaimReserving(ctx, "acme", ss[1].ID, time.Minute, res); err != nil {
				t.Fatal(err)
			}
			_ = f.store.Release(ctx, ss[1].ID, token)

			if got, _ := f.store.TenantUsage(ctx, "acme", day); got != (coach.Usage{PromptTokens: 80, CompletionTokens: 4}) {
				t.Errorf("TenantUsage = %+v, want each turn charged once (80 and 4)", got)
			}
			if got, _ := f.store.TenantReserved(ctx, "acme", day); got != 0 {
				t.Errorf("reserved = %d, want 0", got)
			}
		})
	}
}

// TestReservationsHoldAtConcurrency starts 50 turns at once at a budget with 100 tokens left:
// only one is granted (each reserves 300), so the budget is passed by at most one turn.
func TestReservationsHoldAtConcurrency(t *testing.T) {
	ctx := context.Background()
	day := time.Now()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ss := newSessions(t, f, "acme", 51)
			if err := f.store.ReleaseCharging(ctx, ss[50].ID, "none", &coach.TenantUsage{Turn: "earlier", Tenant: "acme", Day: day, Usage: coach.Usage{PromptTokens: 900}}); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			granted := 0
			var wg sync.WaitGroup
			for i := range 50 {
				wg.Go(func() {
					turn := fmt.Sprint("turn-", i)
					res := coach.Reservation{Turn: turn, Tenant: "acme", Day: day, Budget: 1000, Tokens: 300}
					_, token, ok, err := f.store.ClaimReserving(ctx, "acme", ss[i].ID, time.Minute, res)
					if err != nil {
						t.Error(err)
						return
					}
					var charge *coach.TenantUsage
					if ok == coach.Granted {
						mu.Lock()
						granted++
						mu.Unlock()
						charge = &coach.TenantUsage{Turn: turn, Tenant: "acme", Day: day, Usage: coach.Usage{PromptTokens: 250, CompletionTokens: 50}}
					}
					if err := f.store.ReleaseCharging(ctx, ss[i].ID, token, charge); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if granted != 1 {
				t.Errorf("granted reservations = %d, want 1", granted)
			}
			got, _ := f.store.TenantUsage(ctx, "acme", day)
			if used := got.PromptTokens + got.CompletionTokens; used > 1000+300 {
				t.Errorf("used = %d, want at most the budget (1000) plus one reservation (300)", used)
			}
		})
	}
}

// TestFailedClaimGivesReservationBack claims a busy session with a reservation: the claim fails
// with ErrBusy, and the tokens it reserved are given back.
func TestFailedClaimGivesReservationBack(t *testing.T) {
	ctx := context.Background()
	day := time.Now()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			s := newSessions(t, f, "acme", 1)[0]
			if _, _, err := f.store.Claim(ctx, "acme", s.ID, time.Minute); err != nil {
				t.Fatal(err)
			}
			res := coach.Reservation{Turn: "late", Tenant: "acme", Day: day, Budget: 1000, Tokens: 300}
			if _, _, _, err := f.store.ClaimReserving(ctx, "acme", s.ID, time.Minute, res); err != coach.ErrBusy {
				t.Fatalf("ClaimReserving of a busy session = %v, want ErrBusy", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				n, err := f.store.TenantReserved(ctx, "acme", day)
				if err == nil && n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("reserved = %d, %v 5s after the failed claim; want 0", n, err)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestReservationPerSession charges one session a big attempt, as a learner sending near-limit
// messages does: that session's next turn reserves its largest attempt, another session's turn
// only its own estimate. A turn refused while tokens charged are below the budget is refused by
// the running turns' reservations (BudgetBusy); once charged tokens reach it, BudgetSpent.
func TestReservationPerSession(t *testing.T) {
	ctx := context.Background()
	day := time.Now()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			f := newFixture(t, b)
			ss := newSessions(t, f, "acme", 3)
			const budget = 10000
			reserve := func(turn string, s *coach.Session) (string, coach.Refusal) {
				t.Helper()
				res := coach.Reservation{Turn: turn, Tenant: "acme", Day: day, Budget: budget, Session: s.ID, Tokens: 100}
				_, token, refusal, err := f.store.ClaimReserving(ctx, "acme", s.ID, time.Minute, res)
				if err != nil {
					t.Fatal(err)
				}
				return token, refusal
			}
			token, _ := reserve("big", ss[0])
			big := &coach.TenantUsage{Turn: "big", Tenant: "acme", Day: day, Session: ss[0].ID,
				Usage: coach.Usage{PromptTokens: 3000, CompletionTokens: 100}, Largest: 3100}
			if err := f.store.ReleaseCharging(ctx, ss[0].ID, token, big); err != nil {
				t.Fatal(err)
			}

			token, refusal := reserve("other", ss[1])
			if got, _ := f.store.TenantReserved(ctx, "acme", day); refusal != coach.Granted || got != 100 {
				t.Errorf("another session's turn: refusal %v, reserved %d; want granted, 100 (its own estimate)", refusal, got)
			}
			_ = f.store.ReleaseCharging(ctx, ss[1].ID, token, &coach.TenantUsage{Turn: "other", Tenant: "acme", Day: day, Session: ss[1].ID})
			token, refusal = reserve("again", ss[0])
			if got, _ := f.store.TenantReserved(ctx, "acme", day); refusal != coach.Granted || got != 3100 {
				t.Errorf("the big session's next turn: refusal %v, reserved %d; want granted, 3100 (its largest attempt)", refusal, got)
			}

			// 3,100 charged and the rest of the budget reserved: the next turn is refused by
			// the reservations alone.
			f.client.HSet(ctx, f.prefix+":{tok:acme}:"+day.UTC().Format("20060102"), "reserved", budget-3100)
			if _, refusal := reserve("busy", ss[1]); refusal != coach.BudgetBusy {
				t.Errorf("refusal with 3100 charged and the rest reserved = %v, want BudgetBusy", refusal)
			}
			spent := &coach.TenantUsage{Turn: "again", Tenant: "acme", Day: day, Session: ss[0].ID, Usage: coach.Usage{PromptTokens: budget}}
			if err := f.store.ReleaseCharging(ctx, ss[0].ID, token, spent); err != nil {
				t.Fatal(err)
			}
			f.client.HSet(ctx, f.prefix+":{tok:acme}:"+day.UTC().Format("20060102"), "reserved", 0)
			if _, refusal := reserve("spent", ss[2]); refusal != coach.BudgetSpent {
				t.Errorf("refusal with the budget charged = %v, want BudgetSpent", refusal)
			}
		})
	}
}
