package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestReadinessCache checks the cache on a settable clock: one check per ReadyEvery, its
// outcome shared by every caller in between, failures included.
func TestReadinessCache(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var checks int
	var down error
	r := &readiness{
		check: func(context.Context) error { checks++; return down },
		now:   func() time.Time { return now },
	}
	steps := []struct {
		advance    time.Duration
		down       bool
		wantChecks int
		wantErr    bool
	}{
		{0, false, 1, false},
		{300 * time.Millisecond, true, 1, false}, // the store went down; the cached answer stands
		{699 * time.Millisecond, true, 1, false},
		{time.Millisecond, true, 2, true}, // a second after the first check: asked again
		{500 * time.Millisecond, false, 2, true},
		{500 * time.Millisecond, false, 3, false},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		down = nil
		if s.down {
			down = errors.New("redis does not answer")
		}
		err := r.get()
		if checks != s.wantChecks || (err != nil) != s.wantErr {
			t.Errorf("step %d: checks %d, err %v; want %d checks, error %v", i, checks, err, s.wantChecks, s.wantErr)
		}
	}
}

// TestReadyz checks /readyz end to end: 200 while the check passes whatever the circuits say,
// 503 when the store does not answer, and a flood of requests costs at most one check a second.
func TestReadyz(t *testing.T) {
	var checks atomic.Int32
	var down atomic.Bool
	ts := startServer(t, func(d *Deps) {
		d.Ready = func(context.Context) error {
			checks.Add(1)
			if down.Load() {
				return errors.New("redis does not answer")
			}
			return nil
		}
		d.Upstreams = func() []UpstreamState {
			return []UpstreamState{{Name: "primary", State: "open"}, {Name: "second", State: "open"}}
		}
	})
	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if r := ts.do("GET", "/readyz", ""); r.Status != http.StatusOK || !strings.Contains(r.Body, `"state":"open"`) {
					t.Errorf("/readyz with every circuit open = %d %s, want 200 listing them", r.Status, r.Body)
					return
				}
			}
		}()
	}
	wg.Wait()
	if limit := int32(time.Since(start)/ReadyEvery) + 1; checks.Load() > limit {
		t.Errorf("200 requests made %d checks in %v, want at most %d (one a second)", checks.Load(), time.Since(start), limit)
	}
	down.Store(true)
	deadline := time.Now().Add(5 * ReadyEvery)
	for {
		r := ts.do("GET", "/readyz", "")
		if r.Status == http.StatusServiceUnavailable && r.errorCode() == "not_ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with the store down = %d %s, want 503 not_ready within a few seconds", r.Status, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
