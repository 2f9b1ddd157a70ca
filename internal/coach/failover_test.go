package coach

import (
	"testing"
	"time"
)

// fixedBreaker allows the endpoints of allow and names panic for panic mode.
type fixedBreaker struct {
	allow map[string]bool
	panic string
}

func (b fixedBreaker) Allow(upstream string) bool                { return b.allow[upstream] }
func (b fixedBreaker) Panic() string                             { return b.panic }
func (b fixedBreaker) Report(upstream string, v Verdict, p bool) {}

func TestFirstAndNextUpstream(t *testing.T) {
	ups := []Upstream{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	tests := []struct {
		name         string
		b            fixedBreaker
		wantFirst    int
		wantPanicked bool
		// wantNext is nextUpstream after the first.
		wantNext int
	}{
		{"all closed", fixedBreaker{allow: map[string]bool{"a": true, "b": true, "c": true}}, 0, false, 1},
		{"first open", fixedBreaker{allow: map[string]bool{"b": true, "c": true}}, 1, false, 2},
		{"only the last closed", fixedBreaker{allow: map[string]bool{"c": true}}, 2, false, -1},
		{"all open, panic names b", fixedBreaker{panic: "b"}, 1, true, -1},
		{"all open, panic names none", fixedBreaker{}, -1, false, -1},
		{"all open, panic names an unknown endpoint", fixedBreaker{panic: "z"}, -1, false, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, panicked := firstUpstream(ups, tt.b)
			if got != tt.wantFirst || panicked != tt.wantPanicked {
				t.Fatalf("firstUpstream = %d, %v; want %d, %v", got, panicked, tt.wantFirst, tt.wantPanicked)
			}
			if got < 0 {
				return
			}
			if next := nextUpstream(ups, tt.b, got); next != tt.wantNext {
				t.Errorf("nextUpstream(%d) = %d, want %d", got, next, tt.wantNext)
			}
		})
	}
}

func TestLeavesAndVerdict(t *testing.T) {
	o := Options{MaxAttempts: 3, RetryAfterCap: 5 * time.Second}
	model := func(class string, retryAfter time.Duration) *ModelError {
		return &ModelError{Class: class, RetryAfter: retryAfter}
	}
	tests := []struct {
		name        string
		me          *ModelError
		invalid     bool
		exhausted   bool
		retries     int
		wantLeaves  bool
		wantVerdict Verdict
	}{
		{"unusable output, retry left", nil, true, false, 0, false, Healthy},
		{"unusable output, exhausted", nil, true, true, 0, true, Healthy},
		{"no model error, not invalid", nil, false, false, 0, false, Inconclusive},
		{"5xx", model("server_error", 0), false, false, 0, true, Failed},
		{"timeout", model("timeout", 0), false, false, 0, true, Failed},
		{"refused for its content", model(ClassRefused, 0), false, false, 0, false, Healthy},
		{"cancelled", model(ClassCanceled, 0), false, false, 0, false, Inconclusive},
		{"rejected request shape", model(ClassInvalid, 0), false, false, 0, true, Inconclusive},
		{"429 worth waiting for", model(ClassRateLimited, 2*time.Second), false, false, 0, false, Inconclusive},
		{"429 worth waiting for, last retry", model(ClassRateLimited, 2*time.Second), false, false, 2, true, Inconclusive},
		{"429 beyond the cap", model(ClassRateLimited, time.Minute), false, false, 0, true, Failed},
		{"429 without advice", model(ClassRateLimited, 0), false, false, 0, true, Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := leaves(o, tt.me, tt.exhausted, tt.retries); got != tt.wantLeaves {
				t.Errorf("leaves = %v, want %v", got, tt.wantLeaves)
			}
			if got := verdict(o, tt.me, tt.invalid); got != tt.wantVerdict {
				t.Errorf("verdict = %v, want %v", got, tt.wantVerdict)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	o := Options{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second, RetryAfterCap: 3 * time.Second}
	least := func(time.Duration) time.Duration { return 0 }
	most := func(n time.Duration) time.Duration { return n - 1 }
	tests := []struct {
		name       string
		n          int
		retryAfter time.Duration
		jitter     func(time.Duration) time.Duration
		want       time.Duration
	}{
		{"first retry, least jitter", 1, 0, least, 50 * time.Millisecond},
		{"first retry, most jitter", 1, 0, most, 100 * time.Millisecond},
		{"third retry, least jitter", 3, 0, least, 200 * time.Millisecond},
		{"past the cap, most jitter", 6, 0, most, time.Second},
		{"shift overflow stays at the cap", 80, 0, least, 500 * time.Millisecond},
		{"Retry-After above the backoff", 1, 2 * time.Second, most, 2 * time.Second},
		{"Retry-After beyond its cap", 1, time.Minute, least, 3 * time.Second},
		{"Retry-After below the backoff", 4, 10 * time.Millisecond, least, 400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := backoff(o, tt.n, tt.retryAfter, tt.jitter); got != tt.want {
				t.Errorf("backoff(%d, %v) = %v, want %v", tt.n, tt.retryAfter, got, tt.want)
			}
		})
	}
}
