package breaker_test

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
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

// endpoints returns the Endpoints of names, each keyed by its identity at a base URL of its own.
func endpoints(names ...string) []breaker.Endpoint {
	out := make([]breaker.Endpoint, len(names))
	for i, n := range names {
		out[i] = breaker.Endpoint{Name: n, ID: breaker.Identity(n, "http://127.0.0.1:900"+strconv.Itoa(i)+"/v1", "m")}
	}
	return out
}

// opts are the options of the tests' breakers: at least 3 failed turns, half of the window's
// turns, a window of a minute, a cooldown of 30s.
func opts(c *clock, tr *transitions, shared breaker.Shared) breaker.Options {
	return breaker.Options{
		Failures: 3, FailureRate: 0.5, Window: time.Minute, Cooldown: 30 * time.Second,
		Shared: shared, Now: c.now, OnTransition: tr.record,
	}
}

func newBreaker(t *testing.T, shared breaker.Shared) (*breaker.Breaker, *clock, *transitions) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	tr := &transitions{}
	return breaker.New(endpoints("a", "b"), opts(c, tr, shared)), c, tr
}

func state(b *breaker.Breaker, name string) breaker.State {
	for _, c := range b.States() {
		if c.Name == name {
			return c.State
		}
	}
	return ""
}

// visit asks for a turn on name and reports v, as the engine does.
func visit(b *breaker.Breaker, name string, v coach.Verdict) bool {
	if !b.Allow(name) {
		return false
	}
	b.Report(name, v, false)
	return true
}

// TestWindow drives a's circuit through sequences of turns ("h" healthy, "f" failed, "i"
// inconclusive, "+Ns" the clock moving on) and checks whether it opened: only on enough
// failures (Failures), at the failure rate (FailureRate), within the window.
func TestWindow(t *testing.T) {
	tests := []struct {
		name  string
		turns string
		want  breaker.State
	}{
		{"fewer failures than the minimum never open", "f f", breaker.Closed},
		{"the minimum of failures at a full rate opens", "f f f", breaker.Open},
		{"a success no longer starts the count over", "f f h f", breaker.Open},
		{"failures below the rate do not open", "h h h h f f f", breaker.Closed},
		{"failures at the rate open", "h h h f f f", breaker.Open},
		{"inconclusive turns count for nothing", "i i i i i i f f i i f", breaker.Open},
		{"many healthy turns keep a few failures from opening", "h h h h h h h h h h f f f f f", breaker.Closed},
		{"failures older than the window are forgotten", "f f +61s f f", breaker.Closed},
		{"failures within the window add up", "f f +50s f", breaker.Open},
		{"healthy turns older than the window no longer dilute", "h h h h h h +61s f f f", breaker.Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, clk, _ := newBreaker(t, nil)
			for _, step := range strings.Fields(tt.turns) {
				if d, ok := strings.CutPrefix(step, "+"); ok {
					dd, err := time.ParseDuration(d)
					if err != nil {
						t.Fatal(err)
					}
					clk.add(dd)
					continue
				}
				v := map[string]coach.Verdict{"h": coach.Healthy, "f": coach.Failed, "i": coach.Inconclusive}[step]
				if !visit(b, "a", v) {
					t.Fatalf("a turn was refused before the sequence %q ended", tt.turns)
				}
			}
			if got := state(b, "a"); got != tt.want {
				t.Errorf("state after %q = %s, want %s", tt.turns, got, tt.want)
			}
			if state(b, "b") != breaker.Closed {
				t.Errorf("another endpoint's circuit changed with a's")
			}
		})
	}
}

func TestOpening(t *testing.T) {
	b, _, tr := newBreaker(t, nil)
	for range 3 {
		visit(b, "a", coach.Failed)
	}
	if state(b, "a") != breaker.Open || b.Allow("a") {
		t.Errorf("after 3 failed turns: state %s; want open and refused", state(b, "a"))
	}
	b.Report("a", coach.Healthy, false) // a turn that was out when it opened
	if state(b, "a") != breaker.Open {
		t.Errorf("a late report closed an open circuit")
	}
	if got := tr.list(); !slices.Equal(got, []string{"a:open"}) {
		t.Errorf("transitions = %q, want [a:open]", got)
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
				visit(b, "a", coach.Failed)
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
				t.Fatal("a second turn went out while the probe is out")
			}
			b.Report("a", tt.probe, false)
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
				t.Error("an inconclusive probe did not free the probe for another turn")
			}
			if tt.probe == coach.Healthy {
				// A closed circuit starts from an empty window: the failures before it opened
				// are not counted again.
				visit(b, "a", coach.Failed)
				if state(b, "a") != breaker.Closed {
					t.Error("one failure after a good probe opened the circuit again")
				}
			}
		})
	}
}

// TestPanic checks panic mode: with every circuit refusing, Panic names the one that opened
// first (a probe that is out does not hide it), a healthy panic visit closes that circuit and
// a failed one leaves it as it was.
func TestPanic(t *testing.T) {
	tests := []struct {
		name string
		// open lists the circuits opened, in order, with the clock moving a second between.
		open []string
		// probe lets the cooldown pass and sends a's probe out first.
		probe bool
		want  string
		// report is the panic visit's verdict, and after the circuit's state then.
		report coach.Verdict
		after  breaker.State
	}{
		{name: "none open: nothing to panic to", want: ""},
		{name: "the only endpoint", open: []string{"a"}, want: "a", report: coach.Healthy, after: breaker.Closed},
		{name: "the earliest opened of two", open: []string{"b", "a"}, want: "b", report: coach.Healthy, after: breaker.Closed},
		{name: "a failed panic visit leaves the circuit open", open: []string{"a", "b"}, want: "a", report: coach.Failed, after: breaker.Open},
		{name: "a half-open circuit whose probe is out", open: []string{"a", "b"}, probe: true, want: "a", report: coach.Healthy, after: breaker.Closed},
		{name: "an inconclusive panic visit changes nothing", open: []string{"a"}, want: "a", report: coach.Inconclusive, after: breaker.Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			o := opts(c, &transitions{}, nil)
			var panics []string
			o.OnPanic = func(name string) { panics = append(panics, name) }
			b := breaker.New(endpoints("a", "b"), o)
			for _, n := range tt.open {
				for range 3 {
					visit(b, n, coach.Failed)
				}
				c.add(time.Second)
			}
			if tt.probe {
				c.add(30 * time.Second)
				if !b.Allow("a") || !b.Allow("b") || b.Allow("a") || b.Allow("b") {
					t.Fatal("want both probes out, and nothing more allowed")
				}
			}
			got := b.Panic()
			if got != tt.want {
				t.Fatalf("Panic() = %q, want %q", got, tt.want)
			}
			if got == "" {
				if len(panics) != 0 {
					t.Errorf("OnPanic told %q with nothing to panic to", panics)
				}
				return
			}
			if !slices.Equal(panics, []string{got}) {
				t.Errorf("OnPanic told %q, want [%s]", panics, got)
			}
			b.Report(got, tt.report, true)
			if s := state(b, got); s != tt.after {
				t.Errorf("state after a %v panic visit = %s, want %s", tt.report, s, tt.after)
			}
			if tt.probe {
				// The probe's own report comes later and must not reopen what the panic visit
				// found healthy, nor leave a probe out for ever.
				b.Report("a", coach.Healthy, false)
				if state(b, "a") != breaker.Closed {
					t.Errorf("the probe's report after the panic visit left a %s", state(b, "a"))
				}
			}
		})
	}
}

// TestIdentity checks that circuits are keyed by the endpoint's name, base URL and model.
func TestIdentity(t *testing.T) {
	base := breaker.Identity("primary", "http://10.0.0.1/v1", "gpt-4o-mini")
	if len(base) != 16 {
		t.Errorf("Identity() = %q, want 16 hex digits", base)
	}
	if again := breaker.Identity("primary", "http://10.0.0.1/v1", "gpt-4o-mini"); again != base {
		t.Errorf("Identity() is not stable: %q then %q", base, again)
	}
	for _, other := range [][3]string{
		{"secondary", "http://10.0.0.1/v1", "gpt-4o-mini"},
		{"primary", "http://10.0.0.2/v1", "gpt-4o-mini"},
		{"primary", "http://10.0.0.1/v1", "gpt-4o"},
		{"primary\x00http://10.0.0.1/v1", "", "gpt-4o-mini"},
	} {
		if got := breaker.Identity(other[0], other[1], other[2]); got == base {
			t.Errorf("Identity(%q) = Identity of primary: one endpoint would inherit the other's circuit", other)
		}
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
		visit(one, "a", coach.Failed)
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

// memShared is a Shared in memory, on the tests' clock.
type memShared struct {
	mu    sync.Mutex
	clock *clock
	until map[string]time.Time
}

func (m *memShared) OpenCircuit(_ context.Context, id string, d time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.until[id] = m.clock.now().Add(d)
	return nil
}

func (m *memShared) OpenCircuits(_ context.Context, ids []string) (map[string]time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]time.Duration{}
	for _, id := range ids {
		if left := m.until[id].Sub(m.clock.now()); left > 0 {
			out[id] = left
		}
	}
	return out, nil
}

// TestSharedByIdentity shares circuits through one store between instances whose endpoints
// share names: only those with the same identity (name, base URL, model) see each other's
// circuits. An instance that found the endpoint answering again (a panic visit) does not take
// an older opening from the store for news.
func TestSharedByIdentity(t *testing.T) {
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	shared := &memShared{clock: c, until: map[string]time.Time{}}
	tr := &transitions{}
	one := breaker.New(endpoints("a", "b"), opts(c, tr, shared))
	same := breaker.New(endpoints("a", "b"), opts(c, tr, shared))
	// Another deployment, or this one after an edit: "a" now points at another base URL.
	edited := breaker.New([]breaker.Endpoint{{Name: "a", ID: breaker.Identity("a", "http://10.9.9.9/v1", "m")}}, opts(c, tr, shared))
	for range 3 {
		visit(one, "a", coach.Failed)
	}
	one.Wait()
	ctx := context.Background()
	for _, b := range []*breaker.Breaker{one, same, edited} {
		if err := b.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if state(same, "a") != breaker.Open || state(same, "b") != breaker.Closed {
		t.Errorf("same endpoints: a %s, b %s; want a open, b closed", state(same, "a"), state(same, "b"))
	}
	if state(edited, "a") != breaker.Closed {
		t.Errorf("an endpoint of the same name elsewhere inherited the circuit: %s", state(edited, "a"))
	}
	// The endpoint answers a panic visit on one: its circuit closes there and the opening
	// still in the store does not reopen it.
	c.add(time.Second)
	if got := one.Panic(); got != "a" {
		t.Fatalf("Panic() = %q, want a", got)
	}
	one.Report("a", coach.Healthy, true)
	if err := one.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if state(one, "a") != breaker.Closed {
		t.Errorf("after a healthy panic visit and a Sync, a is %s; want closed", state(one, "a"))
	}
	// A later opening by another instance is news, and is taken.
	c.add(time.Second)
	third := breaker.New(endpoints("a", "b"), opts(c, tr, shared))
	for range 3 {
		visit(third, "a", coach.Failed)
	}
	third.Wait()
	if err := one.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if state(one, "a") != breaker.Open {
		t.Errorf("a newer opening shared by another instance left a %s; want open", state(one, "a"))
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
	b := breaker.New(endpoints("a"), breaker.Options{
		Failures: 2, FailureRate: 0.5, Window: time.Minute, Cooldown: time.Minute, Shared: redisstore.New(c, redisstore.Options{}),
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
	b.Report("a", coach.Failed, false)
	visit(b, "a", coach.Failed)
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
	br := breaker.New(endpoints("primary", "second", "third"), breaker.Options{Failures: 5, FailureRate: 0.5, Window: time.Minute, Cooldown: 30 * time.Second})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if br.Allow("primary") {
				br.Report("primary", coach.Healthy, false)
			}
		}
	})
}
