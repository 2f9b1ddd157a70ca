package breaker_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/breaker"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// transitions records state changes as "name:state".
type transitions struct {
	mu  sync.Mutex
	got []string
}

func (r *transitions) record(name string, to breaker.State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, name+":"+string(to))
}

func (r *transitions) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func newBreaker(t *testing.T, shared breaker.Shared) (*breaker.Breaker, *clock, *transitions) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tr := &transitions{}
	b := breaker.New([]string{"a", "b"}, breaker.Options{
		Failures: 3, Cooldown: 30 * time.Second, Shared: shared, Now: c.now, OnTransition: tr.record,
	})
	return b, c, tr
}

func state(b *breaker.Breaker, name string) breaker.State {
	for _, c := range b.States() {
		if c.Name == name {
			return c.State
		}
	}
	return ""
}

func TestOpening(t *testing.T) {
	b, _, tr := newBreaker(t, nil)
	for i := range 2 {
		if !b.Allow("a") {
			t.Fatalf("attempt %d refused while closed", i+1)
		}
		b.Report("a", coach.Failed)
	}
	b.Report("a", coach.Healthy) // a success in between starts the count again
	for range 2 {
		b.Allow("a")
		b.Report("a", coach.Failed)
	}
	if state(b, "a") != breaker.Closed {
		t.Fatalf("state after 2+2 failures split by a success = %s, want closed", state(b, "a"))
	}
	b.Allow("a")
	b.Report("a", coach.Failed)
	if state(b, "a") != breaker.Open || b.Allow("a") {
		t.Errorf("after 3 consecutive failures: state %s, allowed %v; want open and refused", state(b, "a"), b.Allow("a"))
	}
	if !b.Allow("b") || state(b, "b") != breaker.Closed {
		t.Errorf("another endpoint's circuit changed with a's")
	}
	b.Report("a", coach.Healthy) // an attempt that was out when it opened
	if state(b, "a") != breaker.Open {
		t.Errorf("a late report closed an open circuit")
	}
	if got := tr.list(); !slices.Equal(got, []string{"a:open"}) {
		t.Errorf("transitions = %q, want [a:open]", got)
	}
	b.Allow("b")
	b.Report("b", coach.Inconclusive)
	b.Report("b", coach.Inconclusive)
	b.Report("b", coach.Inconclusive)
	if state(b, "b") != breaker.Closed {
		t.Errorf("inconclusive attempts opened a circuit")
	}
}

func TestHalfOpenProbe(t *testing.T) {
	tests := []struct {
		name  string
		probe coach.Verdict
		want  breaker.State
		trans []string
	}{
		{"probe succeeds", coach.Healthy, breaker.Closed, []string{"a:open", "a:half-open", "a:closed"}},
		{"probe fails", coach.Failed, breaker.Open, []string{"a:open", "a:half-open", "a:open"}},
		{"probe inconclusive", coach.Inconclusive, breaker.HalfOpen, []string{"a:open", "a:half-open"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, clk, tr := newBreaker(t, nil)
			for range 3 {
				b.Allow("a")
				b.Report("a", coach.Failed)
			}
			clk.add(29 * time.Second)
			if b.Allow("a") {
				t.Fatal("allowed before the cooldown passed")
			}
			clk.add(time.Second)
			if state(b, "a") != breaker.HalfOpen {
				t.Errorf("state after the cooldown = %s, want half-open", state(b, "a"))
			}
			if !b.Allow("a") {
				t.Fatal("the probe was refused")
			}
			if b.Allow("a") {
				t.Fatal("a second attempt went out while the probe is out")
			}
			b.Report("a", tt.probe)
			if got := state(b, "a"); got != tt.want {
				t.Errorf("state after the probe = %s, want %s", got, tt.want)
			}
			if got := tr.list(); !slices.Equal(got, tt.trans) {
				t.Errorf("transitions = %q, want %q", got, tt.trans)
			}
			if tt.probe == coach.Failed {
				clk.add(29 * time.Second)
				if b.Allow("a") {
					t.Error("a failed probe did not start a new cooldown")
				}
			}
			if tt.probe == coach.Inconclusive && !b.Allow("a") {
				t.Error("an inconclusive probe did not free the probe for another attempt")
			}
		})
	}
}

// storeOn returns a Store on the real Redis (or skips), under a prefix shared by the callers
// that pass the same prefix.
func storeOn(t *testing.T, url, prefix string) *redisstore.Store {
	t.Helper()
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return redisstore.New(c, redisstore.Options{Prefix: prefix})
}

// TestSharedAcrossInstances opens a circuit on one instance and finds it open on another that
// shares its Redis, while a third on another prefix is unaffected.
func TestSharedAcrossInstances(t *testing.T) {
	url := redistest.URL(t)
	if url == "" {
		t.Skip("no real Redis reachable")
	}
	prefix := redistest.Prefix(t, url)
	one, _, _ := newBreaker(t, storeOn(t, url, prefix))
	two, _, trTwo := newBreaker(t, storeOn(t, url, prefix))
	other, _, _ := newBreaker(t, storeOn(t, url, redistest.Prefix(t, url)))
	ctx := context.Background()
	for range 3 {
		one.Allow("a")
		one.Report("a", coach.Failed)
	}
	one.Wait()
	if err := two.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if err := other.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if state(two, "a") != breaker.Open || two.Allow("a") {
		t.Errorf("the second instance's circuit is %s, want open", state(two, "a"))
	}
	if state(two, "b") != breaker.Closed || state(other, "a") != breaker.Closed {
		t.Errorf("circuits b = %s, a on another prefix = %s; want both closed", state(two, "b"), state(other, "a"))
	}
	if got := trTwo.list(); !slices.Equal(got, []string{"a:open"}) {
		t.Errorf("second instance's transitions = %q, want [a:open]", got)
	}
}

// TestRedisDown fails open: with Redis unreachable, Allow and Report work from memory at once,
// Sync reports the error without changing anything, and the warning comes once per run.
func TestRedisDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = c.Close() })
	var mu sync.Mutex
	var warnings []string
	b := breaker.New([]string{"a"}, breaker.Options{
		Failures: 2, Cooldown: time.Minute, Shared: redisstore.New(c, redisstore.Options{}),
		Warn: func(err error, msg string) {
			mu.Lock()
			defer mu.Unlock()
			if err == nil || !errors.Is(err, coach.ErrUnavailable) {
				t.Errorf("warned with %v, want a store-unavailable error", err)
			}
			warnings = append(warnings, msg)
		},
	})
	start := time.Now()
	if !b.Allow("a") {
		t.Fatal("refused with Redis down")
	}
	b.Report("a", coach.Failed)
	b.Allow("a")
	b.Report("a", coach.Failed)
	if took := time.Since(start); took > 50*time.Millisecond {
		t.Errorf("Allow and Report took %v with Redis down; they must not wait for it", took)
	}
	if state(b, "a") != breaker.Open {
		t.Errorf("state = %s, want open from this instance's own count", state(b, "a"))
	}
	b.Wait()
	for range 2 {
		if err := b.Sync(context.Background()); err == nil {
			t.Error("Sync with Redis down returned nil")
		}
	}
	if state(b, "a") != breaker.Open {
		t.Errorf("a failed Sync changed the state to %s", state(b, "a"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warnings) != 1 {
		t.Errorf("warnings = %q, want one for the run of failures", warnings)
	}
}

// BenchmarkAllowReport is what the breaker adds to a turn whose first endpoint answers: one
// Allow and one healthy Report on a closed circuit, from many goroutines at once.
func BenchmarkAllowReport(b *testing.B) {
	br := breaker.New([]string{"primary", "second", "third"}, breaker.Options{Failures: 5, Cooldown: 30 * time.Second})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if br.Allow("primary") {
				br.Report("primary", coach.Healthy)
			}
		}
	})
}
