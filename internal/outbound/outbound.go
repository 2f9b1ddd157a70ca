// Package outbound owns what every call the gateway makes to another service shares: the HTTP
// client those calls go through, the reading of a server's Retry-After advice, and the wait
// before a retry that ends with the caller's context.
package outbound

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// NewClient returns the client of the gateway's outbound calls: no overall timeout (the caller
// owns its deadlines: the engine its first-byte, idle and turn deadlines, a safety classifier
// its check's), a dial bounded by connect (COACH_CONNECT_TIMEOUT), and enough idle connections
// per host that concurrent turns against one endpoint reuse connections instead of re-dialing.
func NewClient(connect time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 1024
	return &http.Client{Transport: tr}
}

// MaxRetryAfter caps the advice RetryAfter returns: a server's header is untrusted input, and
// a day is longer than any caller waits anyway (each caps the wait lower by its own rules).
const MaxRetryAfter = 24 * time.Hour

// RetryAfter reads a Retry-After field value as RFC 9110 (section 10.2.3) defines it: either
// delta-seconds (one or more ASCII digits) or an HTTP-date (IMF-fixdate, or the obsolete
// RFC 850 and asctime forms a recipient must still accept), relative to now. Decimal seconds
// ("0.4") are read too: model endpoints send them, and taking them for no advice would retry
// such an endpoint sooner than it asked. It returns 0 for an empty, negative or otherwise
// unreadable value (a sign, an exponent, a bare fraction) and for a date not after now,
// so that garbage means "no advice" rather than "retry at once forever" or "never retry"; it
// caps the rest at MaxRetryAfter.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if isDigits(v) {
		var secs int64
		for i := 0; i < len(v); i++ {
			secs = secs*10 + int64(v[i]-'0')
			if secs >= int64(MaxRetryAfter/time.Second) {
				return MaxRetryAfter
			}
		}
		return time.Duration(secs) * time.Second
	}
	if whole, frac, ok := strings.Cut(v, "."); ok && isDigits(whole) && isDigits(frac) {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs >= MaxRetryAfter.Seconds() {
			return MaxRetryAfter
		}
		return time.Duration(secs * float64(time.Second))
	}
	t, err := http.ParseTime(v)
	if err != nil || !t.After(now) {
		return 0
	}
	return min(t.Sub(now), MaxRetryAfter)
}

// isDigits reports whether v is one or more ASCII digits: delta-seconds allows no sign and no
// exponent.
func isDigits(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return v != ""
}

// Sleep waits for d or until ctx ends, and reports whether ctx is still alive: a retry's
// backoff must never outlive the call it is for. A d of zero or less does not wait.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
