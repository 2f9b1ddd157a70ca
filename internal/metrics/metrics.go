// Package metrics owns the gateway's Prometheus metrics: what turns do (as the engine's
// coach.Observer), how Redis commands fare (as a go-redis hook), and what the HTTP layer serves.
// Each Metrics has a registry of its own, so tests and several instances in one process never
// collide on the global default registry.
//
// Label values come from small fixed sets in the gateway's own code (contract names, outcome and
// error codes, guard rule names, ModelError classes, reset reasons, Redis command names, route
// templates) or its configuration (tenants of the API keys, endpoint and model names); nothing
// a client sends, such as a session id, becomes a label.
package metrics

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

const namespace = "coachgw"

// Buckets, in seconds. A first delta takes from a few milliseconds (replay model, cached prompt)
// to the model's first-byte deadline (30s by default); a turn's duration runs up to the turn
// timeout (120s by default); a Redis command normally takes well under a millisecond on loopback
// and a few milliseconds across a network, and anything near a second means trouble.
var (
	firstDeltaBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30}
	durationBuckets   = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120}
	redisBuckets      = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}
	// The gateway's own time in a turn is a claim and a commit (a Redis round trip each), a
	// prompt and the relay's work: a millisecond or two, tens of milliseconds under a CPU queue.
	overheadBuckets = []float64{.0001, .00025, .0005, .001, .002, .003, .005, .01, .025, .05, .1, .25, .5, 1}
)

// Metrics holds the gateway's metrics and the registry that serves them. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg     *prometheus.Registry
	handler http.Handler

	turns        *prometheus.CounterVec
	firstDelta   *prometheus.HistogramVec
	turnDuration *prometheus.HistogramVec
	overhead     *prometheus.HistogramVec
	// overheadFirstLine and overheadTurn are overhead's two series, looked up once.
	overheadFirstLine, overheadTurn prometheus.Observer
	upstreamErrors                  *prometheus.CounterVec
	retries                         *prometheus.CounterVec
	resets                          *prometheus.CounterVec
	ruleFirings                     *prometheus.CounterVec
	validationFailures              *prometheus.CounterVec
	fallbacks                       *prometheus.CounterVec
	deltas                          *prometheus.CounterVec
	openStreams                     prometheus.Gauge
	turnsOverTenantCap              *prometheus.CounterVec
	downgrades                      *prometheus.CounterVec
	escalations                     *prometheus.CounterVec
	escalationAttempts              *prometheus.CounterVec

	upstreamAttempts   *prometheus.CounterVec
	upstreamFailures   *prometheus.CounterVec
	upstreamFallbacks  *prometheus.CounterVec
	breakerTransitions *prometheus.CounterVec
	breakerPanics      *prometheus.CounterVec
	unusableOutputs    *prometheus.CounterVec
	safetyChecks       *prometheus.CounterVec
	safetyAuditFails   prometheus.Counter
	safetyUnsupported  *prometheus.CounterVec
	promptTokens       *prometheus.CounterVec
	completionTokens   *prometheus.CounterVec
	usageIgnored       *prometheus.CounterVec

	redisDuration *prometheus.HistogramVec
	redisErrors   *prometheus.CounterVec

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	// tenant turns a tenant's name into the value of the tenant label (see WithTenantLabel).
	tenant func(string) string
	// labelSecret keys the HMAC of TenantHash labels (see WithLabelSecret).
	labelSecret []byte
}

// Option configures New.
type Option func(*Metrics)

// Tenant label modes (COACH_METRICS_TENANT_LABEL).
const (
	// TenantName labels by the tenant's name as configured with its API keys.
	TenantName = "name"
	// TenantHash labels by the first 12 hex digits of the HMAC-SHA-256 of the name under the
	// deployment's label secret: tenants stay apart on a dashboard, and an operator who knows
	// the secret and a name can find its series, but whoever reads /metrics, which needs no
	// key, cannot reverse a label by hashing likely names.
	TenantHash = "hash"
	// TenantNone leaves the label empty: one series for all tenants.
	TenantNone = "none"
)

// WithTenantLabel sets what the tenant label holds: TenantName, TenantHash (what New uses
// without this option) or TenantNone.
func WithTenantLabel(mode string) Option {
	return func(m *Metrics) {
		switch mode {
		case TenantName:
			m.tenant = func(t string) string { return t }
		case TenantNone:
			m.tenant = func(string) string { return "" }
		default:
			m.tenant = m.hashTenant
		}
	}
}

// WithLabelSecret sets the key of the HMAC that TenantHash labels are made with
// (COACH_METRICS_LABEL_SECRET). Without it, or with an empty one, New draws a random secret,
// so labels are stable only for the life of the process.
func WithLabelSecret(secret []byte) Option {
	return func(m *Metrics) {
		if len(secret) > 0 {
			m.labelSecret = secret
		}
	}
}

// hashTenant returns the label value of tenant in TenantHash mode; the tenant of a gateway
// with no API keys, the empty name, stays empty.
func (m *Metrics) hashTenant(tenant string) string {
	if tenant == "" {
		return ""
	}
	mac := hmac.New(sha256.New, m.labelSecret)
	mac.Write([]byte(tenant))
	return hex.EncodeToString(mac.Sum(nil)[:6])
}

var _ coach.Observer = (*Metrics)(nil)

// New returns Metrics registered on a registry of their own, together with the Go runtime and
// process collectors. Tenant labels are hashed unless an option says otherwise.
func New(opts ...Option) *Metrics {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	f := promauto.With(reg)
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return f.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		return f.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace, Name: name, Help: help, Buckets: buckets,
		}, labels)
	}
	m := &Metrics{
		reg: reg,
		turns: counter("turns_total",
			"Finished turns by outcome: ok, fallback, cancelled, or the error code of the stream's error line.",
			"contract", "outcome"),
		firstDelta: histogram("time_to_first_delta_seconds",
			"Time from a turn's start to its first delta line, for turns that sent one.",
			firstDeltaBuckets, "contract"),
		turnDuration: histogram("turn_duration_seconds",
			"Time from a turn's start to its last line, for every finished turn.",
			durationBuckets, "contract"),
		overhead: histogram("overhead_seconds",
			"Time the gateway added to a turn, the model's own time excluded, by phase: first_line (the "+
				"time to the first delta line minus the time the turn had waited on the model by then) and "+
				"turn (the turn's duration minus all its waits on the model). Turns the client left are not counted.",
			overheadBuckets, "phase"),
		upstreamErrors: counter("upstream_errors_total",
			"Failed model calls by class (rate_limited, server, connect, timeout, client, stream).",
			"contract", "class"),
		retries: counter("retries_total",
			"Model calls repeated before any text of the turn was sent, by the class of the failure "+
				"(invalid_output: a corrective retry).",
			"contract", "class"),
		resets: counter("resets_total",
			"Reset lines sent to clients (a turn restarted after text of it was sent), by reason "+
				"(stream_interrupted, stalled, invalid_output).",
			"contract", "reason"),
		ruleFirings: counter("guard_rule_firings_total",
			"Guard rules that changed a turn's result, by rule name.",
			"contract", "rule"),
		validationFailures: counter("validation_failures_total",
			"Model answers rejected as unusable (unparseable, schema-invalid, empty, cut off at the "+
				"token cap or too long), each attempt's: those retried with a correction, those that "+
				"moved the turn to another endpoint, and those that ended it.",
			"contract"),
		fallbacks: counter("fallbacks_total",
			"Results the gateway substituted for unusable model output, by kind (card, markdown).",
			"contract", "kind"),
		deltas: counter("deltas_total",
			"Delta lines sent.",
			"contract"),
		upstreamAttempts: counter("upstream_attempts_total",
			"Model calls by upstream (the endpoint's configured name).",
			"upstream"),
		upstreamFailures: counter("upstream_failures_total",
			"Failed model calls by upstream and class (rate_limited, server, connect, timeout, client, refused, stream).",
			"upstream", "class"),
		upstreamFallbacks: counter("upstream_fallbacks_total",
			"Turns that moved from one upstream to the next, by the upstream left, the one taken, and "+
				"whether text of the turn had been sent (when: before_text, after_text; after text the client got a reset line).",
			"from", "to", "when"),
		breakerTransitions: counter("breaker_transitions_total",
			"Circuit breaker state changes by upstream and the state entered (open, half-open, closed).",
			"upstream", "to"),
		breakerPanics: counter("breaker_panics_total",
			"Turns sent to an upstream whose circuit refused them because every circuit did (panic mode: "+
				"the endpoint whose circuit opened first is tried rather than none), by upstream.",
			"upstream"),
		safetyChecks: counter("safety_checks_total",
			"Safety checks of learner input and model output, by contract, stage (input, output), classifier "+
				"(builtin, moderation, llamaguard3), ran (true, or why the check did not run) and action "+
				"(none, observed, crisis, held, retracted, failed_open), as the audit records say.",
			"contract", "stage", "classifier", "ran", "action"),
		safetyUnsupported: counter("safety_unsupported_language_total",
			"Learner texts the built-in screen could not read (audited with ran \"unsupported_language\"), by "+
				"contract and language (ISO 639-1, else 639-3; from the identifier's fixed list, so the label is bounded).",
			"contract", "lang"),
		safetyAuditFails: f.NewCounter(prometheus.CounterOpts{Namespace: namespace, Name: "safety_audit_failures_total",
			Help: "Batches of safety audit records (one turn's) the store did not take."}),
		unusableOutputs: counter("upstream_unusable_output_total",
			"Model calls whose output was unusable (unparseable, schema-invalid, empty or over-long), by upstream. "+
				"They move a turn to the next endpoint after its corrective retry but never count against a circuit.",
			"upstream"),
		downgrades: counter("upstream_downgrades_total",
			"Request settings a model endpoint rejected as unsupported and gets in a weaker form from then on, "+
				"by upstream, setting (tool_choice, response_format, include_usage) and the form it gets now.",
			"upstream", "setting", "to"),
		promptTokens: counter("prompt_tokens_total",
			"Prompt tokens the answering model endpoints reported, by tenant, contract, upstream and model.",
			"tenant", "contract", "upstream", "model"),
		completionTokens: counter("completion_tokens_total",
			"Completion tokens the answering model endpoints reported, by tenant, contract, upstream and model.",
			"tenant", "contract", "upstream", "model"),
		usageIgnored: counter("usage_reports_ignored_total",
			"Usage reports of model endpoints set aside (not whole numbers, negative, or absurd for the bytes of the attempt) and replaced by an estimate from bytes, by upstream.",
			"upstream"),
		escalations: counter("escalations_total",
			"Crisis episodes given to the escalation webhook, by outcome: delivered, rejected (a 4xx or a "+
				"redirect, not retried), failed (every attempt failed), dropped (no room in the queue and none in "+
				"the overflow), abandoned (the shutdown deadline passed), duplicate (already pending or delivered), "+
				"deferred (kept in the overflow for a later attempt; counted again when it ends), erased (its "+
				"learner was erased since; not sent).",
			"outcome"),
		escalationAttempts: counter("escalation_attempts_total",
			"POSTs to the escalation webhook by result: ok, server_error (5xx, 408), rate_limited, timeout, "+
				"connect_error, client_error (other 4xx), redirect.",
			"result"),
		openStreams: f.NewGauge(prometheus.GaugeOpts{
			Namespace: namespace, Name: "open_streams",
			Help: "Turn streams in progress.",
		}),
		turnsOverTenantCap: counter("turns_over_tenant_cap_total",
			"Turns refused with 429 too_many_turns because their tenant already ran COACH_MAX_TURNS_PER_TENANT "+
				"turns at once on this instance (detached ones included), by tenant.",
			"tenant"),
		redisDuration: histogram("redis_command_duration_seconds",
			"Redis round trips by command; a pipeline is one round trip labelled pipeline, "+
				"a new connection's handshake pipeline handshake, learner safety's batched audit writes audit, "+
				"and opening a connection dial.",
			redisBuckets, "command"),
		redisErrors: counter("redis_errors_total",
			"Redis round trips that failed (not counting missing keys, callers that gave up, and "+
				"optional handshake commands the server refused), by command as in "+
				"coachgw_redis_command_duration_seconds.",
			"command"),
		httpRequests: counter("http_requests_total",
			"HTTP requests by method, route template and status.",
			"method", "route", "status"),
		httpDuration: histogram("http_request_duration_seconds",
			"HTTP request durations by route template; a turn's request lasts as long as its stream.",
			durationBuckets, "route"),
	}
	m.overheadFirstLine = m.overhead.WithLabelValues("first_line")
	m.overheadTurn = m.overhead.WithLabelValues("turn")
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		// A collector that fails (say, the process collector on an odd platform) should not hide
		// the gateway's own metrics.
		ErrorHandling: promhttp.ContinueOnError,
	})
	m.labelSecret = make([]byte, 32)
	rand.Read(m.labelSecret) // never fails: crypto/rand panics rather than return an error
	WithTenantLabel(TenantHash)(m)
	for _, o := range opts {
		o(m)
	}
	return m
}

// Handler returns the handler that serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler { return m.handler }

// TurnStarted counts an open stream.
func (m *Metrics) TurnStarted(string) { m.openStreams.Inc() }

// TurnOverTenantCap counts a turn of tenant refused because the tenant ran as many turns at once
// as it may (turns.Config.Refused).
func (m *Metrics) TurnOverTenantCap(tenant string) {
	m.turnsOverTenantCap.WithLabelValues(m.tenant(tenant)).Inc()
}

// TurnEnded records a finished turn: its outcome, timings, deltas, the guard rules that fired,
// and whether its result was a fallback or its model output failed validation.
func (m *Metrics) TurnEnded(r coach.Report) {
	m.openStreams.Dec()
	m.turns.WithLabelValues(r.Contract, r.Outcome).Inc()
	m.turnDuration.WithLabelValues(r.Contract).Observe(r.Duration.Seconds())
	if r.Deltas > 0 {
		m.firstDelta.WithLabelValues(r.Contract).Observe(r.FirstDelta.Seconds())
	}
	// A turn the client left lasted as long as the client let it, which is nobody's overhead.
	if r.Outcome != "cancelled" {
		if d, ok := r.FirstLineOverhead(); ok {
			m.overheadFirstLine.Observe(d.Seconds())
		}
		m.overheadTurn.Observe(r.TurnOverhead().Seconds())
	}
	m.deltas.WithLabelValues(r.Contract).Add(float64(r.Deltas))
	for _, s := range r.Spent {
		tenant := m.tenant(r.Tenant)
		m.promptTokens.WithLabelValues(tenant, r.Contract, s.Upstream, s.Model).Add(float64(s.Usage.PromptTokens))
		m.completionTokens.WithLabelValues(tenant, r.Contract, s.Upstream, s.Model).Add(float64(s.Usage.CompletionTokens))
		if s.Ignored {
			m.usageIgnored.WithLabelValues(s.Upstream).Inc()
		}
	}
	for _, rule := range r.Rules {
		m.ruleFirings.WithLabelValues(r.Contract, rule).Inc()
	}
	if r.Outcome == "fallback" {
		m.fallbacks.WithLabelValues(r.Contract, fallbackKind(r.Contract)).Inc()
	}
}

// fallbackKind names what a contract falls back to.
func fallbackKind(contract string) string {
	switch contract {
	case "cards":
		return "card"
	case "module":
		return "markdown"
	default:
		return "other"
	}
}

// Attempted counts a model call to upstream.
func (m *Metrics) Attempted(_, upstream string) {
	m.upstreamAttempts.WithLabelValues(upstream).Inc()
}

// ModelFailed counts a failed model call, by contract and by upstream.
func (m *Metrics) ModelFailed(contract, upstream, class string) {
	m.upstreamErrors.WithLabelValues(contract, class).Inc()
	m.upstreamFailures.WithLabelValues(upstream, class).Inc()
}

// FellBack counts a turn that moved from one upstream to the next.
func (m *Metrics) FellBack(_, from, to string, afterText bool) {
	when := "before_text"
	if afterText {
		when = "after_text"
	}
	m.upstreamFallbacks.WithLabelValues(from, to, when).Inc()
}

// BreakerTransition counts an upstream's circuit entering state to.
func (m *Metrics) BreakerTransition(upstream, to string) {
	m.breakerTransitions.WithLabelValues(upstream, to).Inc()
}

// BreakerPanic counts a turn sent to upstream in panic mode.
func (m *Metrics) BreakerPanic(upstream string) {
	m.breakerPanics.WithLabelValues(upstream).Inc()
}

// UnusableOutput counts a model call to upstream whose output was unusable.
func (m *Metrics) UnusableOutput(_, upstream string) {
	m.unusableOutputs.WithLabelValues(upstream).Inc()
}

// CircuitState is one upstream's circuit state for WatchCircuits.
type CircuitState struct{ Upstream, State string }

// circuitStates are the states coachgw_breaker_state reports, each as a series of its own.
var circuitStates = []string{"closed", "open", "half-open"}

// WatchCircuits makes /metrics report coachgw_breaker_state{upstream,state}: 1 for each
// upstream's current circuit state and 0 for the others, as states returns them when scraped.
// This is where the circuits' states live (v1.2: not in readiness). Call it once.
func (m *Metrics) WatchCircuits(states func() []CircuitState) {
	m.reg.MustRegister(circuitCollector{
		desc: prometheus.NewDesc(namespace+"_breaker_state",
			"Circuit breaker state by upstream: 1 for the state the circuit is in (closed, open, half-open), 0 for the others.",
			[]string{"upstream", "state"}, nil),
		states: states,
	})
}

type circuitCollector struct {
	desc   *prometheus.Desc
	states func() []CircuitState
}

func (c circuitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c circuitCollector) Collect(ch chan<- prometheus.Metric) {
	for _, cs := range c.states() {
		for _, s := range circuitStates {
			v := 0.0
			if s == cs.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, cs.Upstream, s)
		}
	}
}

// Retried counts a model call repeated before any text was sent, by the class of the failure
// ("invalid_output" for a corrective retry).
func (m *Metrics) Retried(contract, class string) {
	m.retries.WithLabelValues(contract, class).Inc()
}

// Reset counts a reset line sent to a client: a turn that restarted after text of it was sent.
func (m *Metrics) Reset(contract, reason string) {
	m.resets.WithLabelValues(contract, reason).Inc()
}

// Rejected counts a model answer that a turn could not use.
func (m *Metrics) Rejected(contract string) {
	m.validationFailures.WithLabelValues(contract).Inc()
}

// EscalationAttempted counts one POST to the escalation webhook by its result (escalation.Observer).
func (m *Metrics) EscalationAttempted(result string) {
	m.escalationAttempts.WithLabelValues(result).Inc()
}

// EscalationEnded counts one crisis episode given to the escalation webhook by its outcome
// (escalation.Observer).
func (m *Metrics) EscalationEnded(outcome string) {
	m.escalations.WithLabelValues(outcome).Inc()
}

// SafetyChecked counts one safety check as its audit record says.
func (m *Metrics) SafetyChecked(contract string, rec safety.Record) {
	ran := rec.Ran.NotRun
	if ran == "" {
		ran = "true"
	}
	m.safetyChecks.WithLabelValues(contract, string(rec.Stage), rec.Classifier, ran, string(rec.Action)).Inc()
	if ran == safety.NotRunUnsupportedLanguage {
		m.safetyUnsupported.WithLabelValues(contract, rec.Lang).Inc()
	}
}

// SafetyAuditFailed counts a batch of audit records the store did not take.
func (m *Metrics) SafetyAuditFailed() { m.safetyAuditFails.Inc() }

// ObserveHTTP records one served HTTP request. route must be the route template (e.g.
// "/v1/sessions/:id"), never the raw path, so that session ids stay out of the labels; an empty
// route (no route matched) is recorded as "unmatched". Methods outside the standard set are
// recorded as "other", since a client can send any method name.
func (m *Metrics) ObserveHTTP(method, route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.httpRequests.WithLabelValues(methodLabel(method), route, statusLabel(status)).Inc()
	m.httpDuration.WithLabelValues(route).Observe(d.Seconds())
}

func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	default:
		return "other"
	}
}

func statusLabel(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status)
}

// Downgraded counts a request setting that the model endpoint named upstream rejected, and
// that it gets as to from now on.
func (m *Metrics) Downgraded(upstream, setting, to string) {
	m.downgrades.WithLabelValues(upstream, setting, to).Inc()
}
