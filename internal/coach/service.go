package coach

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/coachgw/coachgw/internal/safety"
)

// Options tunes the Service. Zero fields take the defaults of DefaultOptions.
type Options struct {
	// LockTTL bounds how long a crashed gateway can keep a session locked: a running turn
	// renews its lock every LockTTL/3, so the lock outlives any turn while its gateway lives,
	// and expires LockTTL after a crash.
	LockTTL time.Duration
	// HistoryLimit is how many messages a session keeps, and HistoryBytes how many bytes of
	// message text (contents and tool-call arguments) they may hold together.
	HistoryLimit int
	HistoryBytes int
	// MaxOutputBytes bounds the model's raw output in one attempt: the bytes of content and
	// of tool calls (arguments, ids and names) it streams. Past it the attempt is unusable output (see
	// outputTooLong); ContractOutputBytes sets the bound of the contracts it names instead.
	MaxOutputBytes      int
	ContractOutputBytes map[string]int
	// MaxCompletionTokens, when positive, replaces the completion cap every contract derives
	// for its requests (ModelRequest.MaxTokens); ContractCompletionTokens sets it for the
	// contracts it names instead.
	MaxCompletionTokens      int
	ContractCompletionTokens map[string]int
	// FirstByteTimeout bounds the wait for the model's first fragment, IdleTimeout the wait
	// between fragments, and TurnTimeout a whole turn including retries. A Model that
	// implements Deadlines may lengthen the first two for its endpoint.
	FirstByteTimeout time.Duration
	IdleTimeout      time.Duration
	TurnTimeout      time.Duration
	// MaxAttempts bounds model calls made before any text reached the client.
	MaxAttempts int
	// BackoffBase and BackoffMax shape the exponential backoff between those attempts;
	// RetryAfterCap bounds how long an endpoint's Retry-After is honoured.
	BackoffBase   time.Duration
	BackoffMax    time.Duration
	RetryAfterCap time.Duration
	// Recoveries is how many times a turn is restarted (with a reset line) after text was sent
	// or its output was unusable; a negative value disables recovery.
	Recoveries int
	// TokenReserve is what a turn of a tenant with a budget reserves besides its input's
	// tokens before its session is read: an allowance for the prompt around the input and the
	// answer (see Service.reservation).
	TokenReserve int
}

// Defaults of the Options that bound sizes. A real answer is a few kilobytes: the bounds only
// stop an endpoint that streams without end, or a session that would grow without end.
const (
	DefaultMaxOutputBytes = 256 << 10
	DefaultHistoryBytes   = 512 << 10
)

// DefaultOptions returns the defaults.
func DefaultOptions() Options {
	return Options{
		LockTTL:          15 * time.Second,
		HistoryLimit:     200,
		HistoryBytes:     DefaultHistoryBytes,
		MaxOutputBytes:   DefaultMaxOutputBytes,
		FirstByteTimeout: 30 * time.Second,
		IdleTimeout:      20 * time.Second,
		TurnTimeout:      120 * time.Second,
		MaxAttempts:      3,
		BackoffBase:      200 * time.Millisecond,
		BackoffMax:       2 * time.Second,
		RetryAfterCap:    10 * time.Second,
		Recoveries:       1,
		TokenReserve:     DefaultTokenReserve,
	}
}

// DefaultTokenReserve is the default of Options.TokenReserve: a prompt of a few thousand bytes
// and an answer of 1024 tokens, toulmin's cap.
const DefaultTokenReserve = 2048

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	set := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&o.LockTTL, d.LockTTL)
	set(&o.FirstByteTimeout, d.FirstByteTimeout)
	set(&o.IdleTimeout, d.IdleTimeout)
	set(&o.TurnTimeout, d.TurnTimeout)
	set(&o.BackoffBase, d.BackoffBase)
	set(&o.BackoffMax, d.BackoffMax)
	set(&o.RetryAfterCap, d.RetryAfterCap)
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = d.HistoryLimit
	}
	if o.HistoryBytes <= 0 {
		o.HistoryBytes = d.HistoryBytes
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = d.MaxOutputBytes
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = d.MaxAttempts
	}
	if o.TokenReserve <= 0 {
		o.TokenReserve = d.TokenReserve
	}
	switch {
	case o.Recoveries == 0:
		o.Recoveries = d.Recoveries
	case o.Recoveries < 0:
		o.Recoveries = 0
	}
	return o
}

// Service runs sessions and turns over a Store and one or more model endpoints for a set of
// contracts.
type Service struct {
	store     Store
	upstreams []Upstream
	breaker   Breaker
	budget    func(tenant string) int64
	tracer    trace.Tracer
	contracts map[string]Contract
	opts      Options
	obs       Observer
	now       func() time.Time
	// safety, auditor and escalator are Deps' Safety, Audit and Escalator.
	safety       *safety.Guard
	auditor      SafetyAudit
	escalator    Escalator
	escalateText bool
	maskPII      bool
	// learnerAudit is Deps.LearnerAudit.
	learnerAudit LearnerAudit
}

// NewService returns a Service with one model endpoint, named "default". obs may be nil.
func NewService(store Store, model Model, contracts []Contract, opts Options, obs Observer) *Service {
	return New(Deps{
		Store: store, Upstreams: []Upstream{{Name: "default", Model: model}},
		Contracts: contracts, Options: opts, Observer: obs,
	})
}

// New returns a Service over d.
func New(d Deps) *Service {
	m := make(map[string]Contract, len(d.Contracts))
	for _, c := range d.Contracts {
		m[c.Name()] = c
	}
	if d.Observer == nil {
		d.Observer = NopObserver{}
	}
	if d.Breaker == nil {
		d.Breaker = NoBreaker{}
	}
	if d.Tracer == nil {
		d.Tracer = noopTracer
	}
	return &Service{
		store: d.Store, upstreams: d.Upstreams, breaker: d.Breaker, budget: d.Budget, tracer: d.Tracer, contracts: m,
		opts: d.Options.withDefaults(), obs: d.Observer, now: time.Now,
		safety: d.Safety, auditor: d.Audit, escalator: d.Escalator, escalateText: d.EscalateText, maskPII: d.MaskPII,
		learnerAudit: d.LearnerAudit,
	}
}

// Upstreams returns the model endpoints in order of preference.
func (s *Service) Upstreams() []Upstream { return s.upstreams }

// Options returns the effective options.
func (s *Service) Options() Options { return s.opts }

// Contract returns the named contract.
func (s *Service) Contract(name string) (Contract, bool) {
	c, ok := s.contracts[name]
	return c, ok
}

// CreateSession starts a session of contract for tenant.
func (s *Service) CreateSession(ctx context.Context, tenant, contract string, opts NewSession) (*Session, error) {
	c, ok := s.contracts[contract]
	if !ok {
		return nil, Errorf(KindInvalid, CodeUnknownContract, "unknown contract %q", Clip(contract))
	}
	locale, ok := normalLocale(opts.Locale)
	if !ok {
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "locale must be \"en\" or \"es\", optionally with a region (\"es-MX\")")
	}
	opts.Locale = locale
	if opts.Learner != "" && !ValidLearner(opts.Learner) {
		return nil, Errorf(KindInvalid, CodeInvalidRequest, "learner must be 1 to 128 printable ASCII characters without spaces")
	}
	state, err := c.NewState(opts)
	if err != nil {
		return nil, err
	}
	now := s.now().UTC()
	sess := &Session{
		ID: NewID(), Contract: contract, Locale: opts.Locale, Version: 1, State: state,
		CreatedAt: now, UpdatedAt: now, Tenant: tenant, Learner: opts.Learner,
	}
	if lh := s.learnerHolds(opts.Learner); lh != nil {
		// A held learner's new session starts held, in the same episode: the operator's
		// clear of any session of the episode ends it.
		hold, err := lh.LearnerHold(ctx, tenant, opts.Learner)
		if err != nil {
			return nil, err
		}
		sess.Safety = hold
	}
	if opts.Learner != "" {
		sess.LearnerAssertedBy = opts.AssertedBy
	}
	if err := s.store.Create(ctx, sess); err != nil {
		return nil, err
	}
	return sess, nil
}

// GetSession returns a session of tenant.
func (s *Service) GetSession(ctx context.Context, tenant, id string) (*Session, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	return s.store.Get(ctx, tenant, id)
}

// DeleteSession removes a session of tenant. Only an operator deletes a held session: for
// anyone else it is a safety_hold conflict, so that a learner cannot delete the crisis away
// from the operator's export, or the session a webhook named.
func (s *Service) DeleteSession(ctx context.Context, tenant, id string, operator bool) error {
	if !ValidID(id) {
		return nil
	}
	if !operator && s.safety.Enforcing() {
		sess, err := s.store.Get(ctx, tenant, id)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil
		case err != nil:
			return err
		case sess.Held():
			return Errorf(KindConflict, CodeSafetyHold, "the session is on a safety hold: only an operator deletes it")
		}
	}
	return s.store.Delete(ctx, tenant, id)
}

// Update changes a session outside a turn: it claims the session (so it never races a turn),
// lets change compute the new state from the current session, and commits it as a new version.
// input, when not nil, is the learner's request, written to the transcript in the same commit
// (a proposal's accept or reject; a draft edit is not part of the conversation and passes nil).
// A session of another contract than contract is an invalid_request error.
func (s *Service) Update(ctx context.Context, tenant, id, contract string, input json.RawMessage, change func(*Session) (json.RawMessage, error)) (*Session, error) {
	return s.update(ctx, tenant, id, input, func(sess *Session) error {
		if sess.Contract != contract {
			return Errorf(KindInvalid, CodeInvalidRequest, "this route is for %s sessions, not %s", contract, sess.Contract)
		}
		return nil
	}, change)
}

// SetDraft sets field of the draft of session id of tenant to value, through its contract's
// Drafting.
func (s *Service) SetDraft(ctx context.Context, tenant, id, field, value string) (*Session, error) {
	return s.updateDraft(ctx, tenant, id, nil, func(d Drafting, state json.RawMessage) (json.RawMessage, error) {
		return d.SetDraft(state, field, value)
	})
}

// Decide applies the learner's action on the pending proposal of session id of tenant, through
// its contract's Drafting; input is the learner's request as the transcript keeps it.
func (s *Service) Decide(ctx context.Context, tenant, id, action string, input json.RawMessage) (*Session, error) {
	return s.updateDraft(ctx, tenant, id, input, func(d Drafting, state json.RawMessage) (json.RawMessage, error) {
		return d.Decide(state, action)
	})
}

// updateDraft is Update for the contracts that implement Drafting: a session of any other
// contract is an invalid_request error naming the contracts that have drafts.
func (s *Service) updateDraft(ctx context.Context, tenant, id string, input json.RawMessage, change func(Drafting, json.RawMessage) (json.RawMessage, error)) (*Session, error) {
	var d Drafting
	return s.update(ctx, tenant, id, input, func(sess *Session) error {
		var ok bool
		if d, ok = s.contracts[sess.Contract].(Drafting); !ok {
			var names []string
			for name, c := range s.contracts {
				if _, ok := c.(Drafting); ok {
					names = append(names, name)
				}
			}
			slices.Sort(names)
			return Errorf(KindInvalid, CodeInvalidRequest, "this route is for %s sessions, not %s", strings.Join(names, " or "), sess.Contract)
		}
		return nil
	}, func(sess *Session) (json.RawMessage, error) { return change(d, sess.State) })
}

// update is Update with the check of the session's contract given by accept.
func (s *Service) update(ctx context.Context, tenant, id string, input json.RawMessage, accept func(*Session) error, change func(*Session) (json.RawMessage, error)) (*Session, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	sess, token, err := s.store.Claim(ctx, tenant, id, s.opts.LockTTL)
	if err != nil {
		return nil, err
	}
	var state json.RawMessage
	err = accept(sess)
	switch {
	case err != nil:
	case input != nil && sess.Held() && s.safety.Enforcing():
		// A decision is the learner moving the lesson on (accepting a proposal advances the
		// step); a held session continues no exercise until an operator clears the hold. A
		// draft edit (input nil) is the learner's own text and stays possible.
		err = Errorf(KindConflict, CodeSafetyHold, "the session is on a safety hold: the lesson continues when it is cleared")
	default:
		state, err = change(sess)
	}
	if err != nil {
		s.release(sess.ID, token)
		return nil, err
	}
	next := *sess
	next.State = state
	next.Version++
	next.UpdatedAt = s.now().UTC()
	var extra CommitExtra
	if input != nil {
		extra.Transcript = []TranscriptEntry{learnerEntry(next.UpdatedAt, input)}
	}
	if err := s.store.Commit(ctx, &next, token, extra); err != nil {
		s.release(sess.ID, token)
		return nil, err
	}
	return &next, nil
}

// ClearSafetyHold ends the safety hold of session id of tenant (an operator's decision) and
// returns the session. It claims the session like a turn does, so it never races one: while a
// turn holds the session it is ErrBusy, and a turn that claimed the session before it cannot
// commit afterwards over the cleared hold (its version no longer matches). The cleared session
// is a new version without Safety, and the hold of the session's learner ends with it when it
// is of the same episode (see LearnerHolds). A session without a hold is returned as it is,
// unchanged: clearing is idempotent.
func (s *Service) ClearSafetyHold(ctx context.Context, tenant, id string) (*Session, error) {
	if !ValidID(id) {
		return nil, ErrNotFound
	}
	sess, token, err := s.store.Claim(ctx, tenant, id, s.opts.LockTTL)
	if err != nil {
		return nil, err
	}
	if sess.Safety == nil {
		s.release(sess.ID, token)
		return sess, nil
	}
	if lh := s.learnerHolds(sess.Learner); lh != nil {
		// The learner's hold ends first: should the session's commit then fail, the clear
		// is asked again, while the other order could leave a learner held with no held
		// session to clear.
		if err := lh.ClearLearnerHold(ctx, tenant, sess.Learner, sess.Safety.Episode); err != nil {
			s.release(sess.ID, token)
			return nil, err
		}
	}
	next := *sess
	next.Safety = nil
	next.Version++
	next.UpdatedAt = s.now().UTC()
	if err := s.store.Commit(ctx, &next, token, CommitExtra{}); err != nil {
		s.release(sess.ID, token)
		return nil, err
	}
	return &next, nil
}

// Transcript returns a page of the transcript of session id of tenant: up to limit entries
// (0: DefaultTranscriptPage) whose Seq is below before (0: the newest), oldest first.
func (s *Service) Transcript(ctx context.Context, tenant, id string, before int64, limit int) (TranscriptPage, error) {
	switch {
	case limit == 0:
		limit = DefaultTranscriptPage
	case limit < 0 || limit > MaxTranscriptPage:
		return TranscriptPage{}, FieldError("limit", "limit must be between 1 and %d", MaxTranscriptPage)
	}
	if before < 0 {
		return TranscriptPage{}, FieldError("before", "before must be a positive sequence number")
	}
	if !ValidID(id) {
		return TranscriptPage{}, ErrNotFound
	}
	return s.store.Transcript(ctx, tenant, id, before, limit)
}

// release drops a lock on a context of its own: it runs when the turn's context may be gone.
func (s *Service) release(id, token string) {
	s.retryWhileUnavailable(func() error { return s.tryRelease(id, token) })
}

// retryWhileUnavailable calls try, and when the store is unavailable keeps calling it in the
// background until the lock would have expired anyway, so that the session is free (and a
// turn's tokens settled) as soon as the store is back rather than after the whole lock TTL.
func (s *Service) retryWhileUnavailable(try func() error) {
	if err := try(); err == nil || !errors.Is(err, ErrUnavailable) {
		return
	}
	go func() {
		deadline := s.now().Add(s.opts.LockTTL)
		for wait := time.Second; s.now().Before(deadline); wait = min(2*wait, 10*time.Second) {
			time.Sleep(wait)
			if err := try(); err == nil || !errors.Is(err, ErrUnavailable) {
				return
			}
		}
	}()
}

func (s *Service) tryRelease(id, token string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.store.Release(ctx, id, token)
}

// NewID returns a new random session id: 32 lowercase hex characters.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// ValidID reports whether id has the form NewID gives. Anything else cannot name a session, and
// checking it early keeps odd ids (key-injection attempts among them) away from the store.
func ValidID(id string) bool {
	if len(id) != 32 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// normalLocale returns locale in its stored form: "en" when empty, the language lowercased and
// the region uppercased ("es-mx" becomes "es-MX"). The language must be one the contracts speak;
// the region, two letters, only chooses the crisis resources.
func normalLocale(locale string) (string, bool) {
	if locale == "" {
		return "en", true
	}
	lang, region, hasRegion := strings.Cut(locale, "-")
	lang = strings.ToLower(lang)
	if lang != "en" && lang != "es" {
		return "", false
	}
	if !hasRegion {
		return lang, true
	}
	if len(region) != 2 || !isASCIILetter(region[0]) || !isASCIILetter(region[1]) {
		return "", false
	}
	return lang + "-" + strings.ToUpper(region), true
}

func isASCIILetter(b byte) bool { return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' }

// ValidLearner reports whether ref may be a learner reference: 1 to 128 printable ASCII
// characters without spaces. It is opaque to the gateway (an id of the client's own), and an
// operator names it in a route's path.
func ValidLearner(ref string) bool {
	if ref == "" || len(ref) > 128 {
		return false
	}
	for i := 0; i < len(ref); i++ {
		if ref[i] <= ' ' || ref[i] > '~' || ref[i] == '/' {
			return false
		}
	}
	return true
}
