package turns

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// admitN admits n turns of tenant and fails the test unless all are admitted.
func admitN(t *testing.T, ts *Turns, tenant string, n int) []*Admission {
	t.Helper()
	var as []*Admission
	for i := range n {
		a, err := ts.Admit(tenant)
		if err != nil {
			t.Fatalf("Admit(%q) #%d: got %v, want a place", tenant, i+1, err)
		}
		as = append(as, a)
	}
	return as
}

// TestAdmitRefusesOverTheCap admits a tenant's turns up to the cap and checks the refusal of
// one more: 429 too_many_turns with a short Retry-After, and the count left as it was.
func TestAdmitRefusesOverTheCap(t *testing.T) {
	var refused []string
	ts := New(Config{MaxPerTenant: 3, Refused: func(tenant string) { refused = append(refused, tenant) }})
	admitN(t, ts, "acme", 3)
	a, err := ts.Admit("acme")
	if a != nil {
		t.Errorf("Admit over the cap: got an admission, want none")
	}
	var ce *coach.Error
	if !errors.As(err, &ce) {
		t.Fatalf("Admit over the cap: got error %v, want a *coach.Error", err)
	}
	if ce.Kind != coach.KindLimited || ce.Code != coach.CodeTooManyTurns {
		t.Errorf("Admit over the cap: got kind %d code %q, want kind %d code %q", ce.Kind, ce.Code, coach.KindLimited, coach.CodeTooManyTurns)
	}
	if ce.RetryAfter <= 0 || ce.RetryAfter > 5*time.Second {
		t.Errorf("Admit over the cap: got RetryAfter %v, want a short positive one", ce.RetryAfter)
	}
	if got := ts.Running("acme"); got != 3 {
		t.Errorf("Running(acme) after a refusal: got %d, want 3", got)
	}
	if len(refused) != 1 || refused[0] != "acme" {
		t.Errorf("Refused heard: got %q, want [acme]", refused)
	}
}

// TestAdmitTenantsApart attacks the cap from one tenant's side: a tenant that fills its places
// (turns started and left running by clients that hung up) takes none of another tenant's,
// and the tenant of an open gateway (no API keys: the empty name) is a tenant like any other.
func TestAdmitTenantsApart(t *testing.T) {
	tests := []struct {
		name          string
		filler, other string
	}{
		{"named tenants", "acme", "beta"},
		{"a named tenant and the open gateway's", "acme", ""},
		{"the open gateway's and a named tenant", "", "beta"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := New(Config{MaxPerTenant: 2})
			for i := range 2 {
				tr := admitN(t, ts, tt.filler, 1)[0].Start(context.Background(), context.Background(), "f"+strconv.Itoa(i), "t")
				defer tr.End()
			}
			if _, err := ts.Admit(tt.filler); err == nil {
				t.Fatalf("Admit(%q) with its places full: got a place, want a refusal", tt.filler)
			}
			for i := range 2 {
				tr := admitN(t, ts, tt.other, 1)[0].Start(context.Background(), context.Background(), "o"+strconv.Itoa(i), "t")
				defer tr.End()
			}
			if got, want := ts.Running(tt.other), 2; got != want {
				t.Errorf("Running(%q): got %d, want %d", tt.other, got, want)
			}
		})
	}
}

// TestAdmissionReleasedOnce checks that a place comes back exactly once, whichever way the
// turn goes: End of a turn whose client left long before, Release after End (as runTurn defers
// it), Release twice, and Release of a turn that never started.
func TestAdmissionReleasedOnce(t *testing.T) {
	tests := []struct {
		name string
		end  func(a *Admission)
	}{
		{"the turn ends after its client left", func(a *Admission) {
			req, leave := context.WithCancel(context.Background())
			tr := a.Start(req, context.Background(), "s", "t")
			leave()
			tr.End()
		}},
		{"release after end", func(a *Admission) {
			tr := a.Start(context.Background(), context.Background(), "s", "t")
			tr.End()
			a.Release()
		}},
		{"release twice, never started", func(a *Admission) {
			a.Release()
			a.Release()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := New(Config{MaxPerTenant: 2})
			held := admitN(t, ts, "acme", 1)[0]
			a := admitN(t, ts, "acme", 1)[0]
			tt.end(a)
			if got, want := ts.Running("acme"), 1; got != want {
				t.Errorf("Running(acme) after the turn: got %d, want %d (the other turn's place only)", got, want)
			}
			held.Release()
			if got := ts.Running("acme"); got != 0 {
				t.Errorf("Running(acme) after every place came back: got %d, want 0", got)
			}
		})
	}
}

// TestDetachedTurnHoldsItsPlace proves that a client's leaving gives nothing back: the turn's
// place is held until End, with the turn running on, and only then may another turn start.
func TestDetachedTurnHoldsItsPlace(t *testing.T) {
	ts := New(Config{MaxPerTenant: 1})
	req, leave := context.WithCancel(context.Background())
	tr := admitN(t, ts, "acme", 1)[0].Start(req, context.Background(), "s", "t")
	leave()
	if err := tr.Context().Err(); err != nil {
		t.Fatalf("turn context after its client left: got %v, want it running", err)
	}
	if _, err := ts.Admit("acme"); err == nil {
		t.Fatalf("Admit while a detached turn runs: got a place, want a refusal")
	}
	tr.End()
	admitN(t, ts, "acme", 1)
}

// TestConcurrentAdmitsNeverExceedTheCap races many admissions of one tenant, released as they
// come (half by Release, half by the End of a started turn), and checks that no more than the
// cap ever hold a place at once and that every place comes back. Run it with -race.
func TestConcurrentAdmitsNeverExceedTheCap(t *testing.T) {
	const limit, workers, rounds = 4, 32, 200
	ts := New(Config{MaxPerTenant: limit})
	var holding, peak, admitted atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				a, err := ts.Admit("acme")
				if err != nil {
					continue
				}
				admitted.Add(1)
				n := holding.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				if n > limit {
					t.Errorf("worker %d round %d: %d turns hold a place, want at most %d", w, i, n, limit)
				}
				holding.Add(-1)
				if i%2 == 0 {
					a.Release()
				} else {
					a.Start(context.Background(), context.Background(), "s"+strconv.Itoa(w), strconv.Itoa(i)).End()
				}
			}
		}()
	}
	wg.Wait()
	if got := ts.Running("acme"); got != 0 {
		t.Errorf("Running(acme) after every turn ended: got %d, want 0", got)
	}
	if admitted.Load() == 0 || peak.Load() > limit {
		t.Errorf("admitted %d, peak %d: want some admitted and a peak of at most %d", admitted.Load(), peak.Load(), limit)
	}
}

// TestAdmitWithoutCap checks MaxPerTenant 0: every turn is admitted, and still counted.
func TestAdmitWithoutCap(t *testing.T) {
	ts := New(Config{})
	as := admitN(t, ts, "acme", 1000)
	if got := ts.Running("acme"); got != 1000 {
		t.Errorf("Running(acme): got %d, want 1000", got)
	}
	for _, a := range as {
		a.Release()
	}
	if got := ts.Running("acme"); got != 0 {
		t.Errorf("Running(acme) after the releases: got %d, want 0", got)
	}
}

// BenchmarkAdmit measures what the cap adds to every turn: an admission and its release, from
// many goroutines at once, across a few tenants.
func BenchmarkAdmit(b *testing.B) {
	ts := New(Config{MaxPerTenant: 256})
	tenants := []string{"acme", "beta", "gamma", "delta"}
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		tenant := tenants[next.Add(1)%int64(len(tenants))]
		for pb.Next() {
			a, err := ts.Admit(tenant)
			if err != nil {
				b.Error(err)
				return
			}
			a.Release()
		}
	})
}

// TestLearnerShare attacks the tenant's places from one learner's side: a learner who fills
// their share is refused (429 too_many_turns), its refused turn gives the tenant's place back,
// another learner of the tenant and sessions without a learner reference go on, and a turn's
// end gives both places back.
func TestLearnerShare(t *testing.T) {
	ts := New(Config{MaxPerTenant: 10, MaxPerLearner: 2})
	var mallory []*Admission
	for i := range 2 {
		a := admitN(t, ts, "acme", 1)[0]
		if err := a.Learner("mallory"); err != nil {
			t.Fatalf("Learner(mallory) #%d: got %v, want a place", i+1, err)
		}
		mallory = append(mallory, a)
	}
	a := admitN(t, ts, "acme", 1)[0]
	err := a.Learner("mallory")
	var ce *coach.Error
	if !errors.As(err, &ce) || ce.Kind != coach.KindLimited || ce.Code != coach.CodeTooManyTurns || ce.RetryAfter <= 0 {
		t.Fatalf("Learner(mallory) over the share: got %v, want 429 %s with a Retry-After", err, coach.CodeTooManyTurns)
	}
	a.Release()
	if got := ts.Running("acme"); got != 2 {
		t.Errorf("Running(acme) after mallory's refused turn: got %d, want 2", got)
	}
	for _, who := range []string{"alice", ""} {
		b := admitN(t, ts, "acme", 1)[0]
		if err := b.Learner(who); err != nil {
			t.Errorf("Learner(%q) beside mallory's full share: got %v, want a place", who, err)
		}
		defer b.Release()
	}
	if err := admitN(t, ts, "beta", 1)[0].Learner("mallory"); err != nil {
		t.Errorf("Learner(mallory) of another tenant: got %v, want a place", err)
	}
	turn := mallory[0].Start(context.Background(), context.Background(), "s1", "t1")
	<-turn.End()
	c := admitN(t, ts, "acme", 1)[0]
	if err := c.Learner("mallory"); err != nil {
		t.Errorf("Learner(mallory) after one of her turns ended: got %v, want a place", err)
	}
	c.Release()
	mallory[1].Release()
	if got := ts.perLearner.count("acme\x00mallory"); got != 0 {
		t.Errorf("mallory's places after every turn ended: got %d, want 0", got)
	}
}
