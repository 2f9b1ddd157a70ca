// Package escalation adapts coach.Escalator to the signed escalation webhook of the wire
// contract v1.3 (COACH_ESCALATION_URL): one POST per crisis episode, whose body is the episode
// as JSON and whose X-Coach-Signature is the HMAC-SHA256 of that body with
// COACH_ESCALATION_SECRET. docs/safety.md ("Escalation webhook") describes the request and how a
// receiver verifies it.
//
// Escalate only queues: a learner's turn never waits for the receiver. Each queued episode is
// posted by a goroutine of its own, at most Concurrency at a time, and retried with exponential
// backoff and jitter while the receiver cannot take it (no connection, no answer within the
// per-request timeout, a 5xx, 408 or 429, whose Retry-After is honoured up to a cap), for at
// most MaxAttempts attempts. Any other answer (a 4xx, a redirect, which is never followed) is
// final: the receiver refused this request, and the same bytes would be refused again.
//
// What is shared must not be steerable by one tenant's traffic: the queue is bounded as a whole
// and per tenant, so one tenant's flood of episodes against a receiver that does not answer
// fills only its own share, and another tenant's episode is still taken. Within a tenant, the
// episodes of one source (one learner key, by the key that asserted the learner reference, or
// one learner reference that an operator key gave) hold at most their own share too, so that
// one learner's client cannot fill its tenant's share with references it made up. An episode
// that finds no room is dropped, counted and logged at error level.
//
// Logs name the episode, tenant and session, never the learner reference, the learner's text,
// the body of a request or of an answer (which may echo it), the secret or the URL's
// credentials.
package escalation

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/openai"
	"github.com/coachgw/coachgw/internal/redact"
	"github.com/coachgw/coachgw/internal/safety"
)

// Headers of the webhook's request.
const (
	// HeaderSignature is "sha256=" followed by the lowercase hex HMAC-SHA256 of the body.
	HeaderSignature = "X-Coach-Signature"
	// HeaderEpisode repeats the body's "episode", the id receivers deduplicate on.
	HeaderEpisode = "X-Coach-Episode"
	// HeaderTimestamp repeats the body's "sent" (Unix seconds of this attempt), which is signed
	// with the rest of the body; receivers reject requests whose "sent" is too old.
	HeaderTimestamp = "X-Coach-Timestamp"
)

// Outcomes of an episode, as Observer.EscalationEnded is told them.
const (
	// OutcomeDelivered is an episode the receiver answered with a 2xx.
	OutcomeDelivered = "delivered"
	// OutcomeRejected is an episode the receiver refused with an answer that no retry changes
	// (a 4xx other than 408 and 429, or a redirect).
	OutcomeRejected = "rejected"
	// OutcomeFailed is an episode still not taken after MaxAttempts attempts.
	OutcomeFailed = "failed"
	// OutcomeDropped is an episode that found the queue (or its tenant's share) full, or
	// came after Close.
	OutcomeDropped = "dropped"
	// OutcomeAbandoned is an episode still pending when Close's deadline passed.
	OutcomeAbandoned = "abandoned"
	// OutcomeDuplicate is an episode whose id was already pending or delivered: it is not sent
	// again.
	OutcomeDuplicate = "duplicate"
)

// Results of one attempt, as Observer.EscalationAttempted is told them.
const (
	ResultOK          = "ok"
	ResultServerError = "server_error" // 5xx or 408
	ResultRateLimited = "rate_limited" // 429
	ResultTimeout     = "timeout"      // no answer within Options.Timeout
	ResultConnect     = "connect_error"
	ResultClientError = "client_error" // any other 4xx
	ResultRedirect    = "redirect"     // 3xx, not followed
)

// Observer counts what the webhook does; *metrics.Metrics implements it.
type Observer interface {
	// EscalationAttempted is called after each POST with its result (ResultOK, ...).
	EscalationAttempted(result string)
	// EscalationEnded is called once per Escalate call with its episode's outcome
	// (OutcomeDelivered, ...).
	EscalationEnded(outcome string)
}

// Defaults of Options.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxAttempts = 8
	DefaultBackoff     = 5 * time.Second
	// DefaultMaxBackoff caps one wait: with DefaultBackoff and DefaultMaxAttempts the waits
	// before the last attempt add up to at most 5+10+20+40+80+160+300 s, about 10 minutes
	// (jitter takes up to half of each off).
	DefaultMaxBackoff = 5 * time.Minute
	DefaultQueueSize  = 1000
	// DefaultSourceQueueSize is how many episodes of one learner key or reference may be
	// pending: a learner in crisis has one episode per session held, rarely more than a few.
	DefaultSourceQueueSize = 8
	DefaultConcurrency     = 4
	// maxAnswer bounds how much of an answer's body is read (and discarded) so that its
	// connection can be reused; an answer longer than that closes it instead.
	maxAnswer = 64 << 10
	// remembered is how many delivered episode ids are kept, per QueueSize, to tell a repeat.
	remembered = 4
)

// Options configure New.
type Options struct {
	// URL is COACH_ESCALATION_URL. Required.
	URL string
	// Secret is COACH_ESCALATION_SECRET, the HMAC key. Required.
	Secret string
	// IncludeText is COACH_ESCALATION_INCLUDE_TEXT: without it an episode's Text is never sent,
	// whatever the caller filled in.
	IncludeText bool
	// HTTPClient carries the requests; when nil, New builds one with
	// openai.NewHTTPClient(ConnectTimeout). Redirects are never followed either way.
	HTTPClient *http.Client
	// ConnectTimeout bounds dialing when HTTPClient is nil (default openai.DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Timeout bounds each attempt, from dial to the answer's status (default DefaultTimeout).
	Timeout time.Duration
	// MaxAttempts bounds the POSTs of one episode (default DefaultMaxAttempts).
	MaxAttempts int
	// Backoff is the wait before the second attempt; each later wait doubles, up to MaxBackoff
	// (defaults DefaultBackoff, DefaultMaxBackoff). A wait is drawn at random from its upper
	// half, so that the retries of many episodes do not arrive at once.
	Backoff, MaxBackoff time.Duration
	// RetryAfterCap caps the wait a 429's or 5xx's Retry-After asks for (default MaxBackoff).
	RetryAfterCap time.Duration
	// QueueSize bounds the episodes pending at once, queued or between retries (default
	// DefaultQueueSize); TenantQueueSize bounds one tenant's share (default a quarter of
	// QueueSize, at least 1); SourceQueueSize bounds the share of one source within its tenant
	// (a learner key, or a learner reference an operator key gave; default DefaultSourceQueueSize,
	// at most TenantQueueSize).
	QueueSize, TenantQueueSize, SourceQueueSize int
	// Concurrency bounds the POSTs in flight at once (default DefaultConcurrency).
	Concurrency int
	// Observer, when set, counts attempts and outcomes.
	Observer Observer
	// Log receives the webhook's warnings and errors.
	Log zerolog.Logger
	// Now is the clock of the "sent" field (default time.Now).
	Now func() time.Time
}

// Webhook posts crisis episodes to the operator's receiver. It implements coach.Escalator; its
// methods are safe for concurrent use.
type Webhook struct {
	o     Options
	hc    *http.Client
	scrub redact.Scrubber
	// url is the URL as logs may show it.
	url string
	sem chan struct{}

	// stop cancels the attempts in flight and ends the waits when Close's deadline passes;
	// drain is closed when Close begins, so that waiting retries are tried at once.
	stop     context.Context
	stopNow  context.CancelFunc
	drain    chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	closed   bool
	pending  map[string]struct{} // episode ids queued or between retries
	byTenant map[string]int      // pending episodes per tenant
	bySource map[string]int      // pending episodes per source (see source)
	// delivered remembers the ids of the latest delivered episodes, oldest first, so that a
	// repeat is not sent again.
	delivered     map[string]struct{}
	deliveredFIFO []string
}

var _ coach.Escalator = (*Webhook)(nil)

// New returns a Webhook for o. Close it to drain what is pending.
func New(o Options) *Webhook {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = openai.DefaultConnectTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	o.MaxBackoff = max(o.MaxBackoff, o.Backoff)
	if o.RetryAfterCap <= 0 {
		o.RetryAfterCap = o.MaxBackoff
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.TenantQueueSize <= 0 {
		o.TenantQueueSize = max(1, o.QueueSize/4)
	}
	if o.SourceQueueSize <= 0 {
		o.SourceQueueSize = DefaultSourceQueueSize
	}
	o.SourceQueueSize = min(o.SourceQueueSize, o.TenantQueueSize)
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	var hc http.Client
	if o.HTTPClient != nil {
		hc = *o.HTTPClient
	} else {
		hc = *openai.NewHTTPClient(o.ConnectTimeout)
	}
	// A redirect is answered, not followed: the operator configured where episodes go, and a
	// receiver (or whoever took over its address) must not send them, signed, elsewhere.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	stop, stopNow := context.WithCancel(context.Background())
	return &Webhook{
		o: o, hc: &hc, scrub: redact.NewScrubber(o.Secret, o.URL), url: redact.URL(o.URL),
		sem: make(chan struct{}, o.Concurrency), stop: stop, stopNow: stopNow, drain: make(chan struct{}),
		pending: map[string]struct{}{}, byTenant: map[string]int{}, bySource: map[string]int{}, delivered: map[string]struct{}{},
	}
}

// Escalate queues ep for delivery and returns at once. An episode whose id is pending or was
// delivered is not sent again; one that finds no room in the queue is dropped.
func (w *Webhook) Escalate(ep safety.Episode) {
	if !w.o.IncludeText {
		ep.Text = ""
	}
	w.mu.Lock()
	_, isPending := w.pending[ep.ID]
	_, wasDelivered := w.delivered[ep.ID]
	var full string
	switch {
	case isPending || wasDelivered:
		w.mu.Unlock()
		w.ended(OutcomeDuplicate)
		return
	case w.closed:
		full = "the gateway is shutting down"
	case len(w.pending) >= w.o.QueueSize:
		full = "the queue is full"
	case w.byTenant[ep.Tenant] >= w.o.TenantQueueSize:
		full = "the tenant's share of the queue is full"
	case w.bySource[source(ep)] >= w.o.SourceQueueSize:
		full = "the share of the queue of the episode's learner key or reference is full"
	}
	if full != "" {
		w.mu.Unlock()
		w.ended(OutcomeDropped)
		w.logEpisode(w.o.Log.Error(), ep).Str("reason", full).
			Msg("crisis escalation dropped: it is not sent to the escalation webhook")
		return
	}
	w.pending[ep.ID] = struct{}{}
	w.byTenant[ep.Tenant]++
	w.bySource[source(ep)]++
	w.wg.Add(1)
	w.mu.Unlock()
	go w.deliver(ep)
}

// Close stops taking episodes and waits until every pending one is delivered or given up, or
// until ctx is done; a retry that was waiting is tried at once. At ctx's end the attempts still
// in flight are cancelled and their episodes abandoned (logged at error level); Close then
// returns ctx's error.
func (w *Webhook) Close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.drain)
	}
	w.mu.Unlock()
	done := make(chan struct{})
	go func() {
		w.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		w.stopNow()
		return nil
	case <-ctx.Done():
		w.stopNow()
		<-done
		return ctx.Err()
	}
}

// deliver posts ep until it is taken, refused or given up.
func (w *Webhook) deliver(ep safety.Episode) {
	defer w.wg.Done()
	outcome := w.attempts(ep)
	w.mu.Lock()
	delete(w.pending, ep.ID)
	if w.byTenant[ep.Tenant]--; w.byTenant[ep.Tenant] <= 0 {
		delete(w.byTenant, ep.Tenant)
	}
	if src := source(ep); w.bySource[src] > 1 {
		w.bySource[src]--
	} else {
		delete(w.bySource, src)
	}
	if outcome == OutcomeDelivered {
		w.remember(ep.ID)
	}
	w.mu.Unlock()
	w.ended(outcome)
}

// source returns whose share of its tenant's queue ep takes: the learner key that asserted its
// learner reference, else the reference, else its session.
func source(ep safety.Episode) string {
	switch {
	case ep.Learner.AssertedBy != "":
		return ep.Tenant + "\x00key\x00" + ep.Learner.AssertedBy
	case ep.Learner.Ref != "":
		return ep.Tenant + "\x00ref\x00" + ep.Learner.Ref
	}
	return ep.Tenant + "\x00session\x00" + ep.Session
}

// remember adds a delivered id, forgetting the oldest beyond the bound. w.mu must be held.
func (w *Webhook) remember(id string) {
	w.delivered[id] = struct{}{}
	w.deliveredFIFO = append(w.deliveredFIFO, id)
	if len(w.deliveredFIFO) > remembered*w.o.QueueSize {
		delete(w.delivered, w.deliveredFIFO[0])
		w.deliveredFIFO = w.deliveredFIFO[1:]
	}
}

// attempts runs the attempts of ep and returns its outcome.
func (w *Webhook) attempts(ep safety.Episode) string {
	drain := w.drain
	for attempt := 1; ; attempt++ {
		a, ok := w.attempt(ep)
		if ok {
			w.observe(a.result)
		}
		switch {
		case ok && a.result == ResultOK:
			if attempt > 1 {
				w.logEpisode(w.o.Log.Info(), ep).Int("attempts", attempt).Msg("crisis escalation delivered")
			}
			return OutcomeDelivered
		case !ok || w.stop.Err() != nil:
			w.logEpisode(w.o.Log.Error(), ep).Int("attempts", attempt).
				Msg("crisis escalation abandoned: the shutdown deadline passed before the webhook took it")
			return OutcomeAbandoned
		case !a.retry:
			w.logAttempt(w.o.Log.Error(), ep, attempt, a).
				Msg("the escalation webhook refused a crisis escalation; it is not retried")
			return OutcomeRejected
		case attempt >= w.o.MaxAttempts:
			w.logAttempt(w.o.Log.Error(), ep, attempt, a).
				Msg("crisis escalation failed: the escalation webhook did not take it in any attempt")
			return OutcomeFailed
		}
		wait := w.wait(attempt, a.retryAfter)
		w.logAttempt(w.o.Log.Warn(), ep, attempt, a).Dur("retryIn", wait).
			Msg("the escalation webhook did not take a crisis escalation; retrying")
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-drain:
			// Shutting down: try once more now rather than wait past the process's end; later
			// waits run their course until Close's deadline.
			drain = nil
		case <-w.stop.Done():
			t.Stop()
			w.logEpisode(w.o.Log.Error(), ep).Int("attempts", attempt).
				Msg("crisis escalation abandoned: the shutdown deadline passed before the webhook took it")
			return OutcomeAbandoned
		}
		t.Stop()
	}
}

// wait returns how long to wait after the failed attempt number attempt: the receiver's
// Retry-After when it gave one (capped), else the exponential backoff, drawn from its upper half.
func (w *Webhook) wait(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, w.o.RetryAfterCap)
	}
	d := w.o.Backoff
	for i := 1; i < attempt && d < w.o.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, w.o.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// result is what one attempt came to.
type result struct {
	result     string
	retry      bool
	status     int
	retryAfter time.Duration
	err        error
}

// attempt posts ep once. It reports false when Close's deadline passed before the attempt
// could start or while it ran: such an attempt says nothing about the receiver.
func (w *Webhook) attempt(ep safety.Episode) (result, bool) {
	select {
	case w.sem <- struct{}{}:
	case <-w.stop.Done():
		return result{}, false
	}
	defer func() { <-w.sem }()
	sent := w.o.Now().Unix()
	body, err := Body(ep, sent)
	if err != nil {
		// An Episode always encodes; this would be a bug, and a retry would not fix it.
		return result{result: ResultClientError, err: err}, true
	}
	ctx, cancel := context.WithTimeout(w.stop, w.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.o.URL, bytes.NewReader(body))
	if err != nil {
		return result{result: ResultClientError, err: err}, true
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "coachgw")
	req.Header.Set(HeaderSignature, Sign(w.o.Secret, body))
	req.Header.Set(HeaderEpisode, ep.ID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(sent, 10))
	resp, err := w.hc.Do(req)
	if err != nil {
		switch {
		case w.stop.Err() != nil:
			return result{}, false
		case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
			return result{result: ResultTimeout, retry: true, err: err}, true
		}
		return result{result: ResultConnect, retry: true, err: err}, true
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxAnswer)
	_ = resp.Body.Close()
	r := result{status: resp.StatusCode}
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		r.result = ResultOK
	case s == http.StatusTooManyRequests:
		r.result, r.retry, r.retryAfter = ResultRateLimited, true, retryAfter(resp.Header.Get("Retry-After"), w.o.Now())
	case s >= 500 || s == http.StatusRequestTimeout:
		r.result, r.retry, r.retryAfter = ResultServerError, true, retryAfter(resp.Header.Get("Retry-After"), w.o.Now())
	case s >= 300 && s < 400:
		r.result = ResultRedirect
	default:
		r.result = ResultClientError
	}
	return r, true
}

// Body returns the request body of ep sent at sent (Unix seconds): the episode's fields, its
// time in UTC, and "sent", as JSON.
func Body(ep safety.Episode, sent int64) ([]byte, error) {
	ep.Time = ep.Time.UTC()
	return json.Marshal(struct {
		safety.Episode
		Sent int64 `json:"sent"`
	}{ep, sent})
}

// Sign returns the X-Coach-Signature of body under secret: "sha256=" and the lowercase hex
// HMAC-SHA256.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// retryAfter reads a Retry-After header, in seconds or as an HTTP date; 0 when absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, int64(24*time.Hour/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func (w *Webhook) observe(r string) {
	if w.o.Observer != nil {
		w.o.Observer.EscalationAttempted(r)
	}
}

func (w *Webhook) ended(outcome string) {
	if w.o.Observer != nil {
		w.o.Observer.EscalationEnded(outcome)
	}
}

// logEpisode adds what may be logged of ep: never its learner reference or text.
func (w *Webhook) logEpisode(e *zerolog.Event, ep safety.Episode) *zerolog.Event {
	return e.Str("episode", ep.ID).Str("tenant", ep.Tenant).Str("session", ep.Session).
		Str("severity", ep.Severity.String()).Str("url", w.url)
}

// logAttempt adds one attempt's result: its status or its error, scrubbed of the URL's
// credentials and the secret, never an answer's body.
func (w *Webhook) logAttempt(e *zerolog.Event, ep safety.Episode, attempt int, a result) *zerolog.Event {
	e = w.logEpisode(e, ep).Int("attempt", attempt).Str("result", a.result)
	if a.status != 0 {
		e = e.Int("status", a.status)
	}
	if a.err != nil {
		e = e.Str("error", redact.Excerpt(w.scrub.Scrub(a.err.Error()), 300))
	}
	return e
}

// String describes the webhook without its secret or the URL's credentials, so that printing
// one (%v prints a struct's fields) never shows them.
func (w *Webhook) String() string { return fmt.Sprintf("escalation.Webhook{URL:%s}", w.url) }

// GoString is String, so that %#v never prints the secret either.
func (w *Webhook) GoString() string { return w.String() }
