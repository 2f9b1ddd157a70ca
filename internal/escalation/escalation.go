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
// one learner's client cannot fill its tenant's share with references it made up.
//
// An episode that finds no room is not lost: with an Overflow (Options.Overflow) it is kept
// outside the process, counted deferred and logged at error level, and taken back into the
// queue when its tenant's share has room again, by this instance or another; so is an episode
// whose attempts ran out, or that was still pending at the shutdown's deadline. The overflow
// keeps one entry per source, learner reference and session (a later episode of the same
// learner's session replaces an earlier one still waiting), and bounds each source's entries,
// so a flood of one learner key takes the key's own room and never another learner's. Without
// an Overflow such an episode is dropped, counted and logged at error level.
//
// An episode whose learner was erased after the episode began (Options.Tombstones) is not sent:
// each attempt checks first.
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
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/openai"
	"github.com/coachgw/coachgw/internal/outbound"
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
	// OutcomeDeferred is an episode kept in the Overflow for a later attempt: it found no room
	// in the queue, its attempts ran out, or the shutdown's deadline passed. It is counted
	// again by the outcome of its later attempts.
	OutcomeDeferred = "deferred"
	// OutcomeErased is an episode whose learner was erased after it began: it is not sent.
	OutcomeErased = "erased"
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
	// EscalationEnded is called with each outcome of an episode (OutcomeDelivered, ...): once
	// per Escalate call, and once more each time an episode taken back from the Overflow ends.
	EscalationEnded(outcome string)
}

// Overflow keeps, outside the process, the episodes the queue has no room for, so that they
// outlive the process and are retried by whichever instance has room (see
// redisstore.EscalationOverflow). An entry's key is its source (see overflowSource), a space,
// and what tells one learner's session from another: an entry of the same key replaces the one
// before it. Methods must be safe for concurrent use.
type Overflow interface {
	// Keep stores the episode's body (its JSON) under key in tenant's overflow, due at due,
	// replacing what key held. It reports false when source has no room left; evicted is the
	// id of another source's episode removed to make room for this one, or "".
	Keep(ctx context.Context, tenant, source, key, episode string, body []byte, due time.Time) (kept bool, evicted string, err error)
	// Due returns up to n of tenant's entries due by now, and makes each due again only at
	// lease, so that no other instance takes them meanwhile.
	Due(ctx context.Context, tenant string, now time.Time, n int, lease time.Time) ([]Entry, error)
	// Done removes key from tenant's overflow when it still holds episode.
	Done(ctx context.Context, tenant, source, key, episode string) error
	// Tenants returns the tenants whose overflow may hold entries.
	Tenants(ctx context.Context) ([]string, error)
}

// Entry is one episode kept in an Overflow.
type Entry struct {
	Key, Episode string
	Body         []byte
}

// Tombstones tells when a learner was erased (coach.LearnerTombstones; *redisstore.Store).
type Tombstones interface {
	ErasedAt(ctx context.Context, tenant, learner string) (time.Time, bool, error)
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
	// DefaultOverflowInterval is how often the Overflow is asked for due episodes, besides
	// each time an episode's delivery ends.
	DefaultOverflowInterval = 5 * time.Second
	// overflowTimeout bounds one call of the Overflow or the Tombstones.
	overflowTimeout = 2 * time.Second
	// overflowBatch bounds the entries one look at the Overflow takes per tenant.
	overflowBatch = 32
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
	// outbound.NewClient(ConnectTimeout). Redirects are never followed either way.
	HTTPClient *http.Client
	// ConnectTimeout bounds dialing when HTTPClient is nil (default openai.DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Timeout bounds each attempt, from dial to the answer's status (default DefaultTimeout).
	Timeout time.Duration
	// MaxAttempts bounds the POSTs of one episode in one stay in the queue (default
	// DefaultMaxAttempts); with an Overflow an episode whose attempts ran out is kept there and
	// taken back MaxBackoff later.
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
	// Overflow, when set, keeps the episodes the queue has no room for (see Overflow); without
	// it they are dropped.
	Overflow Overflow
	// OverflowInterval is how often the Overflow is asked for due episodes (default
	// DefaultOverflowInterval).
	OverflowInterval time.Duration
	// Tombstones, when set, is asked before each attempt whether the episode's learner was
	// erased since the episode began; such an episode is not sent.
	Tombstones Tombstones
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
	// freed wakes the overflow's loop when an episode's delivery ends; lease is how long an
	// entry taken from the Overflow is left to this instance before another may take it.
	freed chan struct{}
	lease time.Duration
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
		hc = *outbound.NewClient(o.ConnectTimeout)
	}
	// A redirect is answered, not followed: the operator configured where episodes go, and a
	// receiver (or whoever took over its address) must not send them, signed, elsewhere.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if o.OverflowInterval <= 0 {
		o.OverflowInterval = DefaultOverflowInterval
	}
	stop, stopNow := context.WithCancel(context.Background())
	w := &Webhook{
		o: o, hc: &hc, scrub: redact.NewScrubber(o.Secret, o.URL), url: redact.URL(o.URL),
		sem: make(chan struct{}, o.Concurrency), stop: stop, stopNow: stopNow, drain: make(chan struct{}),
		pending: map[string]struct{}{}, byTenant: map[string]int{}, bySource: map[string]int{}, delivered: map[string]struct{}{},
		freed: make(chan struct{}, 1), lease: attemptsSpan(o),
	}
	if o.Overflow != nil {
		w.wg.Add(1)
		go w.refillLoop()
	}
	return w
}

// attemptsSpan returns the longest the attempts of one episode may take under o: every wait
// at its longest and every attempt at its timeout, with a minute to spare.
func attemptsSpan(o Options) time.Duration {
	d := time.Duration(o.MaxAttempts)*o.Timeout + time.Minute
	wait := o.Backoff
	for a := 1; a < o.MaxAttempts; a++ {
		d += min(wait, o.MaxBackoff)
		if wait < o.MaxBackoff {
			wait *= 2
		}
	}
	return d
}

// Escalate queues ep for delivery and returns at once. An episode whose id is pending or was
// delivered is not sent again; one that finds no room in the queue is kept in the Overflow, or
// dropped when there is none.
func (w *Webhook) Escalate(ep safety.Episode) {
	if !w.o.IncludeText {
		ep.Text = ""
	}
	w.mu.Lock()
	_, isPending := w.pending[ep.ID]
	_, wasDelivered := w.delivered[ep.ID]
	if isPending || wasDelivered {
		w.mu.Unlock()
		w.ended(OutcomeDuplicate)
		return
	}
	full := w.full(ep)
	if full == "" {
		w.admit(ep)
		w.mu.Unlock()
		return
	}
	if w.closed || w.o.Overflow == nil {
		// After Close nothing waits for a goroutine: the episode is kept (or dropped) here.
		w.mu.Unlock()
		w.keep(ep, full, w.o.Now().Add(w.o.Backoff))
		return
	}
	w.wg.Add(1)
	w.mu.Unlock()
	go func() {
		defer w.wg.Done()
		w.keep(ep, full, w.o.Now().Add(w.o.Backoff))
	}()
}

// full returns why the queue has no room for ep, or "" when it has. w.mu must be held.
func (w *Webhook) full(ep safety.Episode) string {
	switch {
	case w.closed:
		return "the gateway is shutting down"
	case len(w.pending) >= w.o.QueueSize:
		return "the queue is full"
	case w.byTenant[ep.Tenant] >= w.o.TenantQueueSize:
		return "the tenant's share of the queue is full"
	case w.bySource[source(ep)] >= w.o.SourceQueueSize:
		return "the share of the queue of the episode's learner key or reference is full"
	}
	return ""
}

// admit takes ep into the queue and starts its delivery. w.mu must be held.
func (w *Webhook) admit(ep safety.Episode) {
	w.pending[ep.ID] = struct{}{}
	w.byTenant[ep.Tenant]++
	w.bySource[source(ep)]++
	w.wg.Add(1)
	go w.deliver(ep)
}

// keep puts ep in the Overflow, due at due, and counts it deferred; without an Overflow, or
// when it cannot take ep, ep is dropped. Either is logged at error level with why the queue
// did not take it.
func (w *Webhook) keep(ep safety.Episode, why string, due time.Time) {
	var evicted string
	err := errors.New("no overflow is configured")
	if w.o.Overflow != nil {
		var kept bool
		kept, evicted, err = w.put(ep, due)
		if err == nil && !kept {
			err = errors.New("the overflow's share of the episode's learner key or reference is full")
		}
	}
	if err != nil {
		w.ended(OutcomeDropped)
		w.logEpisode(w.o.Log.Error(), ep).Str("reason", why).Str("error", redact.Excerpt(w.scrub.Scrub(err.Error()), 300)).
			Msg("crisis escalation dropped: it is not sent to the escalation webhook")
	} else {
		w.ended(OutcomeDeferred)
		w.logEpisode(w.o.Log.Error(), ep).Str("reason", why).Time("due", due).
			Msg("crisis escalation deferred: it is kept in the overflow and tried again later")
	}
	if evicted != "" {
		w.ended(OutcomeDropped)
		w.o.Log.Error().Str("episode", evicted).Str("tenant", ep.Tenant).Str("url", w.url).
			Msg("crisis escalation dropped from the overflow: its learner key or reference held the most of its tenant's full overflow")
	}
}

// put writes ep to the Overflow, due at due.
func (w *Webhook) put(ep safety.Episode, due time.Time) (bool, string, error) {
	body, err := json.Marshal(ep)
	if err != nil {
		return false, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), overflowTimeout)
	defer cancel()
	return w.o.Overflow.Keep(ctx, ep.Tenant, overflowSource(ep), overflowKey(ep), ep.ID, body, due)
}

// done removes ep from the Overflow, if it is there: its delivery came to an end that no retry
// changes.
func (w *Webhook) done(ep safety.Episode) {
	if w.o.Overflow == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), overflowTimeout)
	defer cancel()
	if err := w.o.Overflow.Done(ctx, ep.Tenant, overflowSource(ep), overflowKey(ep), ep.ID); err != nil {
		w.logEpisode(w.o.Log.Warn(), ep).Str("error", redact.Excerpt(err.Error(), 300)).
			Msg("a crisis escalation that ended stays in the overflow; it is tried again, and receivers deduplicate on its episode id")
	}
}

// overflowSource is ep's source within its tenant's overflow: the learner key that asserted
// its reference, else the reference, else its session. None holds a space.
func overflowSource(ep safety.Episode) string {
	switch {
	case ep.Learner.AssertedBy != "":
		return "key/" + ep.Learner.AssertedBy
	case ep.Learner.Ref != "":
		return "ref/" + ep.Learner.Ref
	}
	return "session/" + ep.Session
}

// overflowKey is ep's entry key in its tenant's overflow: its source, its learner reference
// and its session, so that a later episode of the same learner's session replaces one still
// waiting, and every other learner's keeps its own entry.
func overflowKey(ep safety.Episode) string {
	return overflowSource(ep) + " " + ep.Learner.Ref + " " + ep.Session
}

// refillLoop takes due episodes from the Overflow into the queue, every OverflowInterval and
// whenever a delivery ends, until Close begins.
func (w *Webhook) refillLoop() {
	defer w.wg.Done()
	t := time.NewTicker(w.o.OverflowInterval)
	defer t.Stop()
	for {
		select {
		case <-w.drain:
			return
		case <-t.C:
		case <-w.freed:
		}
		w.refill()
	}
}

// refill takes as many due episodes of each tenant from the Overflow as its share of the queue
// has room for. One that its source's share has no room for is left in the Overflow, due
// again after Backoff.
func (w *Webhook) refill() {
	ctx, cancel := context.WithTimeout(w.stop, overflowTimeout)
	defer cancel()
	tenants, err := w.o.Overflow.Tenants(ctx)
	if err != nil {
		w.o.Log.Warn().Str("error", redact.Excerpt(err.Error(), 300)).Msg("cannot read the escalation overflow; trying again later")
		return
	}
	for _, tenant := range tenants {
		w.mu.Lock()
		n := min(w.o.QueueSize-len(w.pending), w.o.TenantQueueSize-w.byTenant[tenant], overflowBatch)
		w.mu.Unlock()
		if n <= 0 {
			continue
		}
		now := w.o.Now()
		entries, err := w.o.Overflow.Due(ctx, tenant, now, n, now.Add(w.o.Backoff))
		if err != nil {
			w.o.Log.Warn().Str("tenant", tenant).Str("error", redact.Excerpt(err.Error(), 300)).
				Msg("cannot read the escalation overflow; trying again later")
			return
		}
		for _, e := range entries {
			var ep safety.Episode
			if err := json.Unmarshal(e.Body, &ep); err != nil || ep.ID != e.Episode || ep.Tenant != tenant {
				// Not an episode this code wrote: no retry makes it one.
				src, _, _ := strings.Cut(e.Key, " ")
				_ = w.o.Overflow.Done(ctx, tenant, src, e.Key, e.Episode)
				w.ended(OutcomeDropped)
				w.o.Log.Error().Str("tenant", tenant).Str("episode", e.Episode).
					Msg("crisis escalation dropped: its entry in the overflow cannot be read")
				continue
			}
			w.readmit(ep)
		}
	}
}

// readmit takes ep, from the Overflow, into the queue when there is room, and extends its
// lease there to the longest its attempts may take. The lease is extended before ep is
// admitted: its delivery may end, and keep it again due sooner, before a later extension could
// overwrite that with the long lease.
func (w *Webhook) readmit(ep safety.Episode) {
	w.mu.Lock()
	_, isPending := w.pending[ep.ID]
	_, wasDelivered := w.delivered[ep.ID]
	blocked := isPending || w.full(ep) != ""
	w.mu.Unlock()
	switch {
	case wasDelivered:
		w.done(ep)
		w.ended(OutcomeDuplicate)
		return
	case blocked:
		return
	}
	if _, _, err := w.put(ep, w.o.Now().Add(w.lease)); err != nil {
		w.logEpisode(w.o.Log.Warn(), ep).Str("error", redact.Excerpt(err.Error(), 300)).
			Msg("cannot extend an escalation's lease in the overflow; another instance may send it too, and receivers deduplicate on its episode id")
	}
	w.mu.Lock()
	_, isPending = w.pending[ep.ID]
	if isPending || w.full(ep) != "" {
		w.mu.Unlock()
		// The room went meanwhile: ep is due again soon, as any episode without room is.
		_, _, _ = w.put(ep, w.o.Now().Add(w.o.Backoff))
		return
	}
	w.admit(ep)
	w.mu.Unlock()
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

// deliver posts ep until it is taken, refused or given up. With an Overflow, an episode whose
// attempts ran out, or that the shutdown's deadline abandoned, is kept there for later.
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
	select {
	case w.freed <- struct{}{}:
	default:
	}
	if w.o.Overflow != nil {
		switch outcome {
		case OutcomeFailed:
			w.keep(ep, "the escalation webhook did not take it in any attempt", w.o.Now().Add(w.o.MaxBackoff))
			return
		case OutcomeAbandoned:
			w.keep(ep, "the shutdown deadline passed before the webhook took it", w.o.Now())
			return
		}
		w.done(ep)
	}
	w.ended(outcome)
}

// erased reports whether ep's learner was erased since ep began. A tombstone that cannot be
// read is logged and does not hold the episode back: a crisis goes out.
func (w *Webhook) erased(ep safety.Episode) bool {
	if w.o.Tombstones == nil || ep.Learner.Ref == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), overflowTimeout)
	defer cancel()
	at, ok, err := w.o.Tombstones.ErasedAt(ctx, ep.Tenant, ep.Learner.Ref)
	if err != nil {
		w.logEpisode(w.o.Log.Warn(), ep).Str("error", redact.Excerpt(err.Error(), 300)).
			Msg("cannot tell whether a crisis escalation's learner was erased; sending it")
		return false
	}
	return ok && !at.Before(ep.Time.Truncate(time.Millisecond))
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
		if w.erased(ep) {
			w.logEpisode(w.o.Log.Info(), ep).Int("attempts", attempt-1).
				Msg("crisis escalation not sent: its learner was erased")
			return OutcomeErased
		}
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
		r.result, r.retry, r.retryAfter = ResultRateLimited, true, outbound.RetryAfter(resp.Header.Get("Retry-After"), w.o.Now())
	case s >= 500 || s == http.StatusRequestTimeout:
		r.result, r.retry, r.retryAfter = ResultServerError, true, outbound.RetryAfter(resp.Header.Get("Retry-After"), w.o.Now())
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
