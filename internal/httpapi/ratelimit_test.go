package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeLimiter answers Allow from its fields and records the calls.
type fakeLimiter struct {
	mu    sync.Mutex
	ok    bool
	retry time.Duration
	err   error
	calls []string
}

func (f *fakeLimiter) Allow(_ context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, key+"/"+time.Duration(int64(window)/int64(limit)).String())
	return f.ok, f.retry, f.err
}

func (f *fakeLimiter) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// TestRateLimitRoutes checks which routes count: the ones that start a session or a turn.
func TestRateLimitRoutes(t *testing.T) {
	lim := &fakeLimiter{ok: true}
	ts := startServer(t, func(d *Deps) { withKeys(d); d.Limiter, d.RateLimit = lim, 30 })
	auth := []string{"Authorization", "Bearer " + keyBeta}
	id := ts.create("toulmin", auth...)
	tests := []struct {
		method, path, body string
		counted            bool
	}{
		{"POST", "/v1/sessions", `{"contract":"cards"}`, true},
		{"POST", "/v1/sessions/" + id + "/turns", `{"message":"hello"}`, true},
		{"POST", "/api/coach", `{"sessionId":"` + id + `","message":"hello again"}`, true},
		{"POST", "/v1/sessions/" + id + "/chat", `{"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}]}`, true},
		{"POST", "/v1/sessions/" + strings.Repeat("0", 32) + "/turns", `{"message":"hello"}`, true},
		{"GET", "/v1/sessions/" + id, "", false},
		{"PUT", "/v1/sessions/" + id + "/draft", `{"field":"claim","value":"x"}`, false},
		{"POST", "/v1/sessions/" + id + "/proposal", `{"action":"reject"}`, false},
		{"DELETE", "/v1/sessions/" + strings.Repeat("1", 32), "", false},
		{"GET", "/v1/modules", "", false},
		{"GET", "/healthz", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			before := len(lim.Calls())
			ts.do(tt.method, tt.path, tt.body, auth...)
			calls := lim.Calls()[before:]
			want := 0
			if tt.counted {
				want = 1
			}
			if len(calls) != want {
				t.Fatalf("limiter calls %q, want %d", calls, want)
			}
			if want == 1 && calls[0] != "beta/2s" {
				t.Errorf("limiter asked %q, want key beta at 30 a minute (one every 2s)", calls[0])
			}
		})
	}
}

func TestRateLimitAnswers(t *testing.T) {
	tests := []struct {
		name       string
		lim        *fakeLimiter
		rate       int
		wantStatus int
		wantRetry  string
		wantLog    string
	}{
		{name: "allowed", lim: &fakeLimiter{ok: true}, rate: 10, wantStatus: http.StatusCreated},
		{name: "refused", lim: &fakeLimiter{retry: 2100 * time.Millisecond}, rate: 10, wantStatus: http.StatusTooManyRequests, wantRetry: "3"},
		{name: "refused for less than a second", lim: &fakeLimiter{retry: time.Millisecond}, rate: 10, wantStatus: http.StatusTooManyRequests, wantRetry: "1"},
		{name: "limiter down fails open", lim: &fakeLimiter{err: errors.New("redis rate limit: connection refused")}, rate: 10,
			wantStatus: http.StatusCreated, wantLog: "rate limiter unavailable"},
		{name: "limit off", lim: &fakeLimiter{}, rate: 0, wantStatus: http.StatusCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, func(d *Deps) { d.Limiter, d.RateLimit = tt.lim, tt.rate })
			r := ts.do("POST", "/v1/sessions", `{"contract":"toulmin"}`)
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d %s, want %d", r.Status, r.Body, tt.wantStatus)
			}
			if got := r.Header.Get("Retry-After"); got != tt.wantRetry {
				t.Errorf("Retry-After = %q, want %q", got, tt.wantRetry)
			}
			if tt.wantStatus == http.StatusTooManyRequests && r.errorCode() != codeRateLimited {
				t.Errorf("body %s, want error %q", r.Body, codeRateLimited)
			}
			if tt.wantLog != "" && !strings.Contains(ts.log.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, ts.log.String())
			}
			if tt.rate == 0 && len(tt.lim.Calls()) != 0 {
				t.Errorf("limiter called %q with limiting off", tt.lim.Calls())
			}
			if tt.rate > 0 && len(tt.lim.Calls()) == 1 && tt.lim.Calls()[0] != "/6s" {
				t.Errorf("open mode asked the limiter %q, want the shared tenant \"\"", tt.lim.Calls()[0])
			}
		})
	}
}
