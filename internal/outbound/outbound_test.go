package outbound

import (
	"context"
	"net/http"
	"testing"
	"time"
)

var now = time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)

func TestRetryAfter(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  time.Duration
	}{
		{"absent", "", 0},
		{"blank", "   ", 0},
		{"delta-seconds", "3", 3 * time.Second},
		{"zero seconds", "0", 0},
		{"leading zeros", "007", 7 * time.Second},
		{"surrounding whitespace", " 5 ", 5 * time.Second},
		{"negative", "-5", 0},
		{"plus sign", "+5", 0},
		{"fractional seconds", "0.25", 250 * time.Millisecond},
		{"decimal seconds", "1.5", 1500 * time.Millisecond},
		{"bare fraction", ".5", 0},
		{"trailing point", "2.", 0},
		{"huge decimal", "99999999999.5", MaxRetryAfter},
		{"exponent", "1e3", 0},
		{"hex", "0x10", 0},
		{"garbage", "soon", 0},
		{"digits then garbage", "12abc", 0},
		{"just under the cap", "86399", 86399 * time.Second},
		{"at the cap", "86400", MaxRetryAfter},
		{"overflowing int64", "99999999999999999999999999", MaxRetryAfter},
		{"IMF-fixdate", now.Add(time.Minute).Format(http.TimeFormat), time.Minute},
		{"RFC 850 date", now.Add(2 * time.Minute).Format(time.RFC850), 2 * time.Minute},
		{"asctime date", now.Add(3 * time.Minute).Format(time.ANSIC), 3 * time.Minute},
		{"date now", now.Format(http.TimeFormat), 0},
		{"date in the past", now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{"date far ahead", now.Add(400 * 24 * time.Hour).Format(http.TimeFormat), MaxRetryAfter},
		{"date with a bad zone", "Sun, 01 Mar 2026 09:01:00 PST", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RetryAfter(tt.value, now); got != tt.want {
				t.Errorf("RetryAfter(%q) = %v, want %v", tt.value, got, tt.want)
			}
		})
	}
}

// FuzzRetryAfter feeds the parser what a server may send: it must never panic and never return
// a wait below zero or above the cap.
func FuzzRetryAfter(f *testing.F) {
	for _, seed := range []string{"", "3", "-1", "0.5", "1e30", "99999999999999999999", now.Format(http.TimeFormat), "Sunday, 01-Mar-26 09:00:00 GMT", "Sun Mar  1 09:00:00 2026", "\x00"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got := RetryAfter(v, now); got < 0 || got > MaxRetryAfter {
			t.Errorf("RetryAfter(%q) = %v, want within [0, %v]", v, got, MaxRetryAfter)
		}
	})
}

func TestSleep(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		d    time.Duration
		want bool
	}{
		{"no wait on a live context", context.Background(), 0, true},
		{"negative wait on a live context", context.Background(), -time.Second, true},
		{"a wait that ends", context.Background(), time.Millisecond, true},
		{"no wait on an ended context", canceled, 0, false},
		{"a long wait on an ended context", canceled, time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Sleep(tt.ctx, tt.d); got != tt.want {
				t.Errorf("Sleep(%v) = %v, want %v", tt.d, got, tt.want)
			}
		})
	}
}

func TestNewClient(t *testing.T) {
	c := NewClient(2 * time.Second)
	tr, ok := c.Transport.(*http.Transport)
	if !ok {
		t.Fatalf("transport = %T, want *http.Transport", c.Transport)
	}
	if c.Timeout != 0 || tr.MaxIdleConnsPerHost != 1024 || tr.DialContext == nil {
		t.Errorf("client timeout %v, idle per host %d, dial set %v; want 0, 1024, true", c.Timeout, tr.MaxIdleConnsPerHost, tr.DialContext != nil)
	}
}
