package escalation

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/safety"
)

const secret = "0123456789abcdef-test-secret"

// counts is a hand-written Observer.
type counts struct {
	mu       sync.Mutex
	results  []string
	outcomes []string
}

func (c *counts) EscalationAttempted(r string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results = append(c.results, r)
}

func (c *counts) EscalationEnded(o string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.outcomes = append(c.outcomes, o)
}

func (c *counts) get() (results, outcomes []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.results), slices.Clone(c.outcomes)
}

// outcome returns how many episodes ended with o.
func (c *counts) outcome(o string) int {
	_, outs := c.get()
	n := 0
	for _, x := range outs {
		if x == o {
			n++
		}
	}
	return n
}

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is a test server that answers each request with the next of answers (the last one
// repeats) and records what it got.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []received
	hits atomic.Int32
}

// answer is what a receiver does with one request.
type answer func(w http.ResponseWriter, r *http.Request)

func status(code int, header ...string) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
	}
}

func newReceiver(t *testing.T, answers ...answer) *receiver {
	t.Helper()
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := int(rc.hits.Add(1))
		rc.mu.Lock()
		rc.got = append(rc.got, received{header: r.Header.Clone(), body: body})
		rc.mu.Unlock()
		answers[min(n, len(answers))-1](w, r)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.got)
}

func episode(id, tenant string) safety.Episode {
	return safety.Episode{
		ID: id, Time: time.Date(2026, 3, 1, 10, 30, 0, 0, time.FixedZone("CET", 3600)), Tenant: tenant, Session: "s-" + id,
		Learner: safety.Learner{Ref: "learner-ref-42", AssertedBy: "3f2a9c0b1d4e"}, Contract: "module", Module: "anxiety-basics", Locale: "es-US",
		Severity: safety.SeverityHigh, Categories: []safety.Category{safety.CategorySuicide},
		Text: "ya no quiero estar vivo",
	}
}

// fast returns options with backoffs short enough for tests; o's non-zero fields win.
func fast(url string, obs Observer, o Options) Options {
	o.URL, o.Secret, o.Observer = url, secret, obs
	if o.Backoff == 0 {
		o.Backoff = time.Millisecond
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = 4 * time.Millisecond
	}
	return o
}

// closeWithin closes w with a deadline that only guards against a hang (it is no speed claim).
func closeWithin(t *testing.T, w *Webhook) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestRequest(t *testing.T) {
	now := time.Unix(1772357400, 0)
	for _, includeText := range []bool{false, true} {
		t.Run(fmt.Sprintf("include text %v", includeText), func(t *testing.T) {
			rc := newReceiver(t, status(http.StatusNoContent))
			obs := &counts{}
			w := New(fast(rc.URL, obs, Options{IncludeText: includeText, Now: func() time.Time { return now }}))
			w.Escalate(episode("ep-1", "acme"))
			closeWithin(t, w)

			got := rc.requests()
			if len(got) != 1 {
				t.Fatalf("requests = %d, want 1", len(got))
			}
			r := got[0]
			mac := hmac.New(sha256.New, []byte(secret))
			mac.Write(r.body)
			wantSig := "sha256=" + fmt.Sprintf("%x", mac.Sum(nil))
			if sig := r.header.Get(HeaderSignature); !hmac.Equal([]byte(sig), []byte(wantSig)) {
				t.Errorf("%s = %q, want %q (HMAC-SHA256 of the body)", HeaderSignature, sig, wantSig)
			}
			if h := r.header.Get(HeaderEpisode); h != "ep-1" {
				t.Errorf("%s = %q, want ep-1", HeaderEpisode, h)
			}
			if h := r.header.Get(HeaderTimestamp); h != strconv.FormatInt(now.Unix(), 10) {
				t.Errorf("%s = %q, want %d", HeaderTimestamp, h, now.Unix())
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var body map[string]any
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{
				"episode": "ep-1", "time": "2026-03-01T09:30:00Z", "tenant": "acme", "session": "s-ep-1",
				"learner": map[string]any{"ref": "learner-ref-42", "asserted_by": "3f2a9c0b1d4e"}, "contract": "module", "module": "anxiety-basics", "locale": "es-US",
				"severity": "high", "categories": []any{"suicide"}, "sent": float64(now.Unix()),
			}
			if includeText {
				want["text"] = "ya no quiero estar vivo"
			}
			if !jsonEqual(body, want) {
				t.Errorf("body = %s\nwant %v", r.body, want)
			}
			if !includeText && bytes.Contains(r.body, []byte("vivo")) {
				t.Errorf("body holds the learner's text without IncludeText: %s", r.body)
			}
			if res, outs := obs.get(); !slices.Equal(res, []string{ResultOK}) || !slices.Equal(outs, []string{OutcomeDelivered}) {
				t.Errorf("attempts %q, outcomes %q; want [ok] [delivered]", res, outs)
			}
		})
	}
}

func jsonEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name        string
		answers     []answer
		maxAttempts int
		wantResults []string
		wantOutcome string
	}{
		{"500 then 200: delivered once, after a retry", []answer{status(500), status(200)}, 0,
			[]string{ResultServerError, ResultOK}, OutcomeDelivered},
		{"400: refused, not retried", []answer{status(400), status(200)}, 0,
			[]string{ResultClientError}, OutcomeRejected},
		{"401: refused, not retried", []answer{status(401), status(200)}, 0,
			[]string{ResultClientError}, OutcomeRejected},
		{"429 with a Retry-After beyond the cap, then 200", []answer{status(429, "Retry-After", "3600"), status(200)}, 0,
			[]string{ResultRateLimited, ResultOK}, OutcomeDelivered},
		{"503 with an HTTP-date Retry-After, then 202", []answer{status(503, "Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"), status(202)}, 0,
			[]string{ResultServerError, ResultOK}, OutcomeDelivered},
		{"408 is retried", []answer{status(408), status(200)}, 0,
			[]string{ResultServerError, ResultOK}, OutcomeDelivered},
		{"502 every time: given up after MaxAttempts", []answer{status(502)}, 3,
			[]string{ResultServerError, ResultServerError, ResultServerError}, OutcomeFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newReceiver(t, tt.answers...)
			obs := &counts{}
			w := New(fast(rc.URL, obs, Options{MaxAttempts: tt.maxAttempts, RetryAfterCap: 2 * time.Millisecond}))
			w.Escalate(episode("ep-1", "acme"))
			closeWithin(t, w)
			res, outs := obs.get()
			if !slices.Equal(res, tt.wantResults) {
				t.Errorf("attempts = %q, want %q", res, tt.wantResults)
			}
			if !slices.Equal(outs, []string{tt.wantOutcome}) {
				t.Errorf("outcomes = %q, want [%s]", outs, tt.wantOutcome)
			}
			if got := int(rc.hits.Load()); got != len(tt.wantResults) {
				t.Errorf("requests = %d, want %d", got, len(tt.wantResults))
			}
			// Every attempt is signed anew over its own body.
			for i, r := range rc.requests() {
				if sig := r.header.Get(HeaderSignature); sig != Sign(secret, r.body) {
					t.Errorf("request %d: signature %q does not match its body", i, sig)
				}
			}
		})
	}
}

func TestRedirectIsNotFollowed(t *testing.T) {
	elsewhere := newReceiver(t, status(200))
	rc := newReceiver(t, status(http.StatusTemporaryRedirect, "Location", elsewhere.URL))
	obs := &counts{}
	w := New(fast(rc.URL, obs, Options{}))
	w.Escalate(episode("ep-1", "acme"))
	closeWithin(t, w)
	if n := elsewhere.hits.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests, want 0", n)
	}
	if res, outs := obs.get(); !slices.Equal(res, []string{ResultRedirect}) || !slices.Equal(outs, []string{OutcomeRejected}) {
		t.Errorf("attempts %q, outcomes %q; want [redirect] [rejected]", res, outs)
	}
}

func TestHangingReceiverTimesOutAndIsRetried(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	rc := newReceiver(t, hang, status(200))
	obs := &counts{}
	w := New(fast(rc.URL, obs, Options{Timeout: 50 * time.Millisecond}))
	w.Escalate(episode("ep-1", "acme"))
	closeWithin(t, w)
	if res, outs := obs.get(); !slices.Equal(res, []string{ResultTimeout, ResultOK}) || !slices.Equal(outs, []string{OutcomeDelivered}) {
		t.Errorf("attempts %q, outcomes %q; want [timeout ok] [delivered]", res, outs)
	}
}

func TestConnectErrorIsRetried(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/hook"
	ln.Close() // nothing listens there now
	obs := &counts{}
	w := New(fast(url, obs, Options{MaxAttempts: 2}))
	w.Escalate(episode("ep-1", "acme"))
	closeWithin(t, w)
	if res, outs := obs.get(); !slices.Equal(res, []string{ResultConnect, ResultConnect}) || !slices.Equal(outs, []string{OutcomeFailed}) {
		t.Errorf("attempts %q, outcomes %q; want [connect_error connect_error] [failed]", res, outs)
	}
}

func TestAnEpisodeIsDeliveredOnce(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	obs := &counts{}
	w := New(fast(rc.URL, obs, Options{}))
	w.Escalate(episode("ep-1", "acme"))
	w.Escalate(episode("ep-1", "acme")) // while the first is pending
	close(release)
	closeWithin(t, w)
	// After delivery: an episode already delivered is not sent again.
	w2 := New(fast(rc.URL, obs, Options{}))
	w2.Escalate(episode("ep-2", "acme"))
	for obs.outcome(OutcomeDelivered) < 2 {
		time.Sleep(time.Millisecond)
	}
	w2.Escalate(episode("ep-2", "acme"))
	closeWithin(t, w2)
	if got := rc.hits.Load(); got != 2 {
		t.Errorf("requests = %d, want 2 (ep-1 and ep-2 once each)", got)
	}
	if got := obs.outcome(OutcomeDuplicate); got != 2 {
		t.Errorf("duplicates = %d, want 2", got)
	}
}

// TestQueueFull floods a receiver that does not answer: Escalate returns every time (a blocked
// Escalate would hang this test), the episodes past the queue's bound are dropped and counted,
// and the queued ones are delivered once the receiver answers.
func TestQueueFull(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	obs := &counts{}
	w := New(fast(rc.URL, obs, Options{QueueSize: 2, TenantQueueSize: 2}))
	for i := range 5 {
		w.Escalate(episode(fmt.Sprint("ep-", i), "acme"))
	}
	if got := obs.outcome(OutcomeDropped); got != 3 {
		t.Errorf("dropped = %d, want 3", got)
	}
	close(release)
	closeWithin(t, w)
	if got := obs.outcome(OutcomeDelivered); got != 2 {
		t.Errorf("delivered = %d, want 2", got)
	}
}

// TestOneTenantsFloodLeavesRoomForAnother attacks the shared queue from one tenant's side: its
// learners' episodes against a receiver that never answers fill only that tenant's share.
func TestOneTenantsFloodLeavesRoomForAnother(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	obs := &counts{}
	w := New(fast(rc.URL, obs, Options{QueueSize: 8, TenantQueueSize: 2}))
	for i := range 20 {
		w.Escalate(episode(fmt.Sprint("flood-", i), "noisy"))
	}
	w.Escalate(episode("quiet-1", "quiet"))
	if got := obs.outcome(OutcomeDropped); got != 18 {
		t.Errorf("dropped = %d, want 18 (the noisy tenant's episodes past its share)", got)
	}
	close(release)
	closeWithin(t, w)
	var ids []string
	for _, r := range rc.requests() {
		ids = append(ids, r.header.Get(HeaderEpisode))
	}
	if !slices.Contains(ids, "quiet-1") {
		t.Errorf("delivered %q: the quiet tenant's episode is missing", ids)
	}
}

// TestOneLearnerKeysFloodLeavesRoomForOthers attacks the tenant's share from one learner key:
// 20 episodes naming made-up references, all asserted by that key, against a receiver that never
// answers take only the key's share; another learner of the tenant is still taken.
func TestOneLearnerKeysFloodLeavesRoomForOthers(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { <-release })
	obs := &counts{}
	w := New(fast(rc.URL, obs, Options{QueueSize: 16, TenantQueueSize: 8, SourceQueueSize: 2}))
	for i := range 20 {
		ep := episode(fmt.Sprint("flood-", i), "acme")
		ep.Learner = safety.Learner{Ref: fmt.Sprint("classmate-", i), AssertedBy: "3f2a9c0b1d4e"}
		w.Escalate(ep)
	}
	other := episode("other-1", "acme")
	other.Learner = safety.Learner{Ref: "pupil-7", AssertedBy: "9d8c7b6a5f4e"}
	w.Escalate(other)
	if got := obs.outcome(OutcomeDropped); got != 18 {
		t.Errorf("dropped = %d, want 18 (the flooding key's episodes past its share)", got)
	}
	close(release)
	closeWithin(t, w)
	var ids []string
	for _, r := range rc.requests() {
		ids = append(ids, r.header.Get(HeaderEpisode))
	}
	if !slices.Contains(ids, "other-1") {
		t.Errorf("delivered %q: the other learner's episode is missing", ids)
	}
}

func TestCloseDrains(t *testing.T) {
	// The first attempt of each episode fails and its retry would wait an hour: Close tries the
	// waiting retries at once and returns when they are delivered.
	var seen sync.Map
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) {
		if _, again := seen.LoadOrStore(r.Header.Get(HeaderEpisode), true); !again {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	obs := &counts{}
	w := New(fast(rc.URL, obs, Options{Backoff: time.Hour, MaxBackoff: time.Hour}))
	for i := range 3 {
		w.Escalate(episode(fmt.Sprint("ep-", i), "acme"))
	}
	for {
		if res, _ := obs.get(); len(res) == 3 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	closeWithin(t, w)
	if got := obs.outcome(OutcomeDelivered); got != 3 {
		t.Errorf("delivered = %d, want 3", got)
	}
	w.Escalate(episode("late", "acme"))
	if got := obs.outcome(OutcomeDropped); got != 1 {
		t.Errorf("an episode after Close: dropped = %d, want 1", got)
	}
}

func TestCloseDeadlineAbandons(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	obs := &counts{}
	w := New(fast(rc.URL, obs, Options{Timeout: time.Hour}))
	w.Escalate(episode("ep-1", "acme"))
	for rc.hits.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the deadline has passed
	if err := w.Close(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want context.Canceled", err)
	}
	if res, outs := obs.get(); len(res) != 0 || !slices.Equal(outs, []string{OutcomeAbandoned}) {
		t.Errorf("attempts %q, outcomes %q; want none counted and [abandoned]", res, outs)
	}
}

// TestLogsHoldNoSecretsOrText runs failing deliveries of an episode with its text against a
// receiver that echoes the request, and reads every log line for what must never be there.
func TestLogsHoldNoSecretsOrText(t *testing.T) {
	echo := func(code int) answer {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			fmt.Fprintf(w, "%v %s", r.Header, r.URL)
		}
	}
	rc := newReceiver(t, echo(500), echo(400))
	var logs bytes.Buffer
	var mu sync.Mutex
	log := zerolog.New(zerolog.SyncWriter(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	})))
	url := strings.Replace(rc.URL, "http://", "http://hookuser:hookpass@", 1) + "/hook?token=tok-SECRET-1"
	obs := &counts{}
	w := New(fast(url, obs, Options{IncludeText: true, Log: log}))
	w.Escalate(episode("ep-1", "acme"))
	closeWithin(t, w)
	// A connection error carries the URL in its text.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://hookuser:hookpass@" + ln.Addr().String() + "/hook?token=tok-SECRET-1"
	ln.Close()
	w = New(fast(dead, obs, Options{IncludeText: true, Log: log, MaxAttempts: 1}))
	w.Escalate(episode("ep-2", "acme"))
	closeWithin(t, w)

	mu.Lock()
	out := logs.String()
	mu.Unlock()
	if !strings.Contains(out, "ep-1") || !strings.Contains(out, "ep-2") {
		t.Fatalf("logs name no episode:\n%s", out)
	}
	for _, bad := range []string{"vivo", secret, "hookpass", "tok-SECRET-1", "learner-ref-42", "sha256="} {
		if strings.Contains(out, bad) {
			t.Errorf("logs hold %q:\n%s", bad, out)
		}
	}
	if s := fmt.Sprintf("%v %#v %s", w, w, w); strings.Contains(s, secret) || strings.Contains(s, "hookpass") {
		t.Errorf("printing the webhook shows a credential: %s", s)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestWait(t *testing.T) {
	w := New(Options{URL: "http://127.0.0.1:1/", Secret: secret, Backoff: time.Second, MaxBackoff: 10 * time.Second, RetryAfterCap: 30 * time.Second})
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{1, 0, 500 * time.Millisecond, time.Second},
		{2, 0, time.Second, 2 * time.Second},
		{4, 0, 4 * time.Second, 8 * time.Second},
		{5, 0, 5 * time.Second, 10 * time.Second}, // capped at MaxBackoff
		{60, 0, 5 * time.Second, 10 * time.Second},
		{1, 20 * time.Second, 20 * time.Second, 20 * time.Second}, // the receiver's advice
		{1, time.Hour, 30 * time.Second, 30 * time.Second},        // capped
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("attempt %d retry-after %v", tt.attempt, tt.retryAfter), func(t *testing.T) {
			for range 200 {
				if got := w.wait(tt.attempt, tt.retryAfter); got < tt.lo || got > tt.hi {
					t.Fatalf("wait = %v, want within [%v, %v]", got, tt.lo, tt.hi)
				}
			}
		})
	}
	// The defaults: 8 attempts, the waits between them at most about 10 minutes in all.
	d := New(Options{URL: "http://127.0.0.1:1/", Secret: secret})
	var most time.Duration
	for a := 1; a < d.o.MaxAttempts; a++ {
		most += min(d.o.Backoff<<(a-1), d.o.MaxBackoff)
	}
	if d.o.MaxAttempts != 8 || most != 615*time.Second {
		t.Errorf("defaults: %d attempts, waits up to %v; want 8 and 10m15s", d.o.MaxAttempts, most)
	}
}
