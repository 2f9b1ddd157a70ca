package metrics

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/redis/go-redis/v9"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// want is one expected series value; value -1 means the series must not exist.
type want struct {
	name   string
	labels []string
	value  float64
}

func TestObserver(t *testing.T) {
	tests := []struct {
		name  string
		calls func(m *Metrics)
		want  []want
	}{
		{
			name: "ok turn with deltas and guard rules",
			calls: func(m *Metrics) {
				m.TurnStarted("toulmin")
				m.TurnEnded(coach.Report{
					Contract: "toulmin", Outcome: "ok", FirstDelta: 250 * time.Millisecond,
					Duration: 2 * time.Second, Deltas: 5, Attempts: 1,
					Rules: []string{"strip_proposal", "force_advance", "strip_proposal"},
				})
			},
			want: []want{
				{"coachgw_turns_total", []string{"contract", "toulmin", "outcome", "ok"}, 1},
				{"coachgw_time_to_first_delta_seconds", []string{"contract", "toulmin"}, 1},
				{"coachgw_turn_duration_seconds", []string{"contract", "toulmin"}, 1},
				{"coachgw_deltas_total", []string{"contract", "toulmin"}, 5},
				{"coachgw_guard_rule_firings_total", []string{"contract", "toulmin", "rule", "strip_proposal"}, 2},
				{"coachgw_guard_rule_firings_total", []string{"contract", "toulmin", "rule", "force_advance"}, 1},
				{"coachgw_open_streams", nil, 0},
				{"coachgw_fallbacks_total", []string{"contract", "toulmin", "kind", "other"}, -1},
				{"coachgw_validation_failures_total", []string{"contract", "toulmin"}, -1},
			},
		},
		{
			name: "a turn without deltas has no time to first delta",
			calls: func(m *Metrics) {
				m.TurnStarted("cards")
				m.TurnEnded(coach.Report{Contract: "cards", Outcome: "coach_stream_failed", Duration: time.Second})
			},
			want: []want{
				{"coachgw_turns_total", []string{"contract", "cards", "outcome", "coach_stream_failed"}, 1},
				{"coachgw_time_to_first_delta_seconds", []string{"contract", "cards"}, -1},
				{"coachgw_turn_duration_seconds", []string{"contract", "cards"}, 1},
				{"coachgw_deltas_total", []string{"contract", "cards"}, 0},
			},
		},
		{
			name: "fallbacks by contract",
			calls: func(m *Metrics) {
				for _, c := range []string{"cards", "cards", "module"} {
					m.TurnStarted(c)
					m.TurnEnded(coach.Report{Contract: c, Outcome: "fallback", Deltas: 1, FirstDelta: time.Millisecond})
				}
			},
			want: []want{
				{"coachgw_fallbacks_total", []string{"contract", "cards", "kind", "card"}, 2},
				{"coachgw_fallbacks_total", []string{"contract", "module", "kind", "markdown"}, 1},
				{"coachgw_turns_total", []string{"contract", "cards", "outcome", "fallback"}, 2},
				{"coachgw_turns_total", []string{"contract", "module", "outcome", "fallback"}, 1},
			},
		},
		{
			name: "validation failures count rejected answers; resets count reset lines only",
			calls: func(m *Metrics) {
				// A corrective retry before text, whose answer is rejected too.
				m.TurnStarted("toulmin")
				m.Rejected("toulmin")
				m.Retried("toulmin", "invalid_output")
				m.Rejected("toulmin")
				m.TurnEnded(coach.Report{Contract: "toulmin", Outcome: coach.CodeValidationFailed})
				// A stall after text: a reset line, then an empty answer.
				m.TurnStarted("toulmin")
				m.Reset("toulmin", "stalled")
				m.Rejected("toulmin")
				m.TurnEnded(coach.Report{Contract: "toulmin", Outcome: coach.CodeEmptyResponse, Resets: 1})
				m.TurnStarted("toulmin")
				m.TurnEnded(coach.Report{Contract: "toulmin", Outcome: coach.CodeStepMismatch})
			},
			want: []want{
				{"coachgw_validation_failures_total", []string{"contract", "toulmin"}, 3},
				{"coachgw_retries_total", []string{"contract", "toulmin", "class", "invalid_output"}, 1},
				{"coachgw_resets_total", []string{"contract", "toulmin", "reason", "invalid_output"}, -1},
				{"coachgw_resets_total", []string{"contract", "toulmin", "reason", "stalled"}, 1},
				{"coachgw_turns_total", []string{"contract", "toulmin", "outcome", coach.CodeStepMismatch}, 1},
			},
		},
		{
			name: "escalation attempts by result and episodes by outcome",
			calls: func(m *Metrics) {
				m.EscalationAttempted("server_error")
				m.EscalationAttempted("ok")
				m.EscalationEnded("delivered")
				m.EscalationEnded("dropped")
				m.EscalationEnded("dropped")
			},
			want: []want{
				{"coachgw_escalation_attempts_total", []string{"result", "server_error"}, 1},
				{"coachgw_escalation_attempts_total", []string{"result", "ok"}, 1},
				{"coachgw_escalations_total", []string{"outcome", "delivered"}, 1},
				{"coachgw_escalations_total", []string{"outcome", "dropped"}, 2},
				{"coachgw_escalations_total", []string{"outcome", "failed"}, -1},
			},
		},
		{
			name: "upstream errors and retries by class",
			calls: func(m *Metrics) {
				m.ModelFailed("module", "default", "rate_limited")
				m.Retried("module", "rate_limited")
				m.ModelFailed("module", "default", "rate_limited")
				m.Retried("module", "rate_limited")
				m.ModelFailed("module", "default", "server")
			},
			want: []want{
				{"coachgw_upstream_errors_total", []string{"contract", "module", "class", "rate_limited"}, 2},
				{"coachgw_upstream_errors_total", []string{"contract", "module", "class", "server"}, 1},
				{"coachgw_retries_total", []string{"contract", "module", "class", "rate_limited"}, 2},
				{"coachgw_retries_total", []string{"contract", "module", "class", "server"}, -1},
			},
		},
		{
			name: "per-upstream attempts, failures, fallbacks and breaker transitions",
			calls: func(m *Metrics) {
				m.Attempted("toulmin", "primary")
				m.ModelFailed("toulmin", "primary", "server")
				m.FellBack("toulmin", "primary", "local", false)
				m.Attempted("toulmin", "local")
				m.Attempted("cards", "primary")
				m.ModelFailed("cards", "primary", "stream")
				m.FellBack("cards", "primary", "local", true)
				m.Attempted("cards", "local")
				m.BreakerTransition("primary", "open")
			},
			want: []want{
				{"coachgw_upstream_attempts_total", []string{"upstream", "primary"}, 2},
				{"coachgw_upstream_attempts_total", []string{"upstream", "local"}, 2},
				{"coachgw_upstream_failures_total", []string{"upstream", "primary", "class", "server"}, 1},
				{"coachgw_upstream_failures_total", []string{"upstream", "primary", "class", "stream"}, 1},
				{"coachgw_upstream_failures_total", []string{"upstream", "local", "class", "server"}, -1},
				{"coachgw_upstream_fallbacks_total", []string{"from", "primary", "to", "local", "when", "before_text"}, 1},
				{"coachgw_upstream_fallbacks_total", []string{"from", "primary", "to", "local", "when", "after_text"}, 1},
				{"coachgw_breaker_transitions_total", []string{"upstream", "primary", "to", "open"}, 1},
			},
		},
		{
			name: "tokens by tenant, contract, upstream and model",
			calls: func(m *Metrics) {
				for range 2 {
					m.TurnStarted("cards")
					m.TurnEnded(coach.Report{Contract: "cards", Outcome: "ok", Tenant: "acme", Upstream: "primary", Model: "gpt-4o-mini",
						Usage: &coach.Usage{PromptTokens: 100, CompletionTokens: 20},
						Spent: []coach.Spent{{Upstream: "primary", Model: "gpt-4o-mini", Usage: coach.Usage{PromptTokens: 100, CompletionTokens: 20}}}})
				}
				m.TurnStarted("cards")
				m.TurnEnded(coach.Report{Contract: "cards", Outcome: "ok", Tenant: "acme", Upstream: "local"})
				// A turn that fell back from primary to local after primary had reported its
				// tokens: both endpoints' tokens count, each under its own labels.
				m.TurnStarted("cards")
				m.TurnEnded(coach.Report{Contract: "cards", Outcome: "ok", Tenant: "acme", Upstream: "second", Model: "qwen",
					Usage: &coach.Usage{PromptTokens: 7, CompletionTokens: 3},
					Spent: []coach.Spent{
						{Upstream: "primary", Model: "gpt-4o-mini", Usage: coach.Usage{PromptTokens: 50, CompletionTokens: 5}},
						{Upstream: "second", Model: "qwen", Usage: coach.Usage{PromptTokens: 7, CompletionTokens: 3}},
					}})
			},
			want: []want{
				{"coachgw_prompt_tokens_total", []string{"tenant", testLabels.hashTenant("acme"), "contract", "cards", "upstream", "primary", "model", "gpt-4o-mini"}, 250},
				{"coachgw_completion_tokens_total", []string{"tenant", testLabels.hashTenant("acme"), "contract", "cards", "upstream", "primary", "model", "gpt-4o-mini"}, 45},
				{"coachgw_prompt_tokens_total", []string{"tenant", testLabels.hashTenant("acme"), "contract", "cards", "upstream", "second", "model", "qwen"}, 7},
				{"coachgw_completion_tokens_total", []string{"tenant", testLabels.hashTenant("acme"), "contract", "cards", "upstream", "second", "model", "qwen"}, 3},
				{"coachgw_prompt_tokens_total", []string{"tenant", testLabels.hashTenant("acme"), "contract", "cards", "upstream", "local", "model", ""}, -1},
			},
		},
		{
			name: "open streams follow started and ended turns",
			calls: func(m *Metrics) {
				m.TurnStarted("toulmin")
				m.TurnStarted("cards")
				m.TurnStarted("module")
				m.TurnEnded(coach.Report{Contract: "cards", Outcome: "cancelled"})
			},
			want: []want{
				{"coachgw_open_streams", nil, 2},
				{"coachgw_turns_total", []string{"contract", "cards", "outcome", "cancelled"}, 1},
			},
		},
		{
			name: "endpoint downgrades by setting",
			calls: func(m *Metrics) {
				m.Downgraded("local", "tool_choice", "required")
				m.Downgraded("local", "tool_choice", "none")
				m.Downgraded("primary", "include_usage", "false")
			},
			want: []want{
				{"coachgw_upstream_downgrades_total", []string{"upstream", "local", "setting", "tool_choice", "to", "required"}, 1},
				{"coachgw_upstream_downgrades_total", []string{"upstream", "local", "setting", "tool_choice", "to", "none"}, 1},
				{"coachgw_upstream_downgrades_total", []string{"upstream", "primary", "setting", "include_usage", "to", "false"}, 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(WithLabelSecret(testLabelSecret))
			tt.calls(m)
			for _, w := range tt.want {
				if got := value(t, m, w.name, w.labels...); got != w.value {
					t.Errorf("%s%q = %v, want %v", w.name, w.labels, got, w.value)
				}
			}
		})
	}
}

func TestHistogramBuckets(t *testing.T) {
	m := New()
	m.TurnStarted("toulmin")
	m.TurnEnded(coach.Report{Contract: "toulmin", Outcome: "ok", Deltas: 1,
		FirstDelta: 3 * time.Millisecond, Duration: 90 * time.Second})

	tests := []struct {
		name      string
		metric    string
		bounds    []float64
		sum       float64
		firstHits float64 // the smallest upper bound that counts the observation
	}{
		{"time to first delta spans 1ms to 30s", "coachgw_time_to_first_delta_seconds", firstDeltaBuckets, 0.003, 0.005},
		{"turn duration spans up to the turn timeout", "coachgw_turn_duration_seconds", durationBuckets, 90, 120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := series(t, m, tt.metric, "contract", "toulmin")
			if s == nil {
				t.Fatalf("no %s series", tt.metric)
			}
			h := s.GetHistogram()
			var bounds []float64
			first := -1.0
			for _, b := range h.GetBucket() {
				bounds = append(bounds, b.GetUpperBound())
				if first < 0 && b.GetCumulativeCount() == 1 {
					first = b.GetUpperBound()
				}
			}
			if !slices.Equal(bounds, tt.bounds) {
				t.Errorf("buckets = %v, want %v", bounds, tt.bounds)
			}
			if h.GetSampleSum() != tt.sum {
				t.Errorf("sum = %v, want %v", h.GetSampleSum(), tt.sum)
			}
			if first != tt.firstHits {
				t.Errorf("first bucket counting the observation = %v, want %v", first, tt.firstHits)
			}
		})
	}
}

func TestObserveHTTP(t *testing.T) {
	tests := []struct {
		name          string
		method, route string
		status        int
		want          []string // method, route, status labels
	}{
		{"route template", http.MethodPost, "/v1/sessions/:id/turns", 200, []string{"POST", "/v1/sessions/:id/turns", "200"}},
		{"error status", http.MethodGet, "/v1/sessions/:id", 404, []string{"GET", "/v1/sessions/:id", "404"}},
		{"no route matched", http.MethodGet, "", 404, []string{"GET", "unmatched", "404"}},
		{"made-up method", "BREW", "/healthz", 405, []string{"other", "/healthz", "405"}},
		{"impossible status", http.MethodGet, "/healthz", 0, []string{"GET", "/healthz", "other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			m.ObserveHTTP(tt.method, tt.route, tt.status, 20*time.Millisecond)
			labels := []string{"method", tt.want[0], "route", tt.want[1], "status", tt.want[2]}
			if got := value(t, m, "coachgw_http_requests_total", labels...); got != 1 {
				t.Errorf("http_requests_total%q = %v, want 1", labels, got)
			}
			if got := count(t, m, "coachgw_http_requests_total"); got != 1 {
				t.Errorf("http_requests_total has %d series, want 1", got)
			}
			if got := value(t, m, "coachgw_http_request_duration_seconds", "route", tt.want[1]); got != 1 {
				t.Errorf("http_request_duration_seconds{route=%q} count = %v, want 1", tt.want[1], got)
			}
		})
	}
}

func TestHandlerServesEverything(t *testing.T) {
	m := New()
	m.TurnStarted("toulmin")
	m.TurnEnded(coach.Report{Contract: "toulmin", Outcome: "ok", Deltas: 2, FirstDelta: time.Millisecond})
	m.ObserveHTTP(http.MethodGet, "/healthz", 200, time.Millisecond)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, want 200", resp.StatusCode)
	}
	wantLines := []string{
		`coachgw_turns_total{contract="toulmin",outcome="ok"} 1`,
		`coachgw_deltas_total{contract="toulmin"} 2`,
		`coachgw_open_streams 0`,
		`coachgw_http_requests_total{method="GET",route="/healthz",status="200"} 1`,
		`# TYPE go_goroutines gauge`,
	}
	if runtime.GOOS == "linux" {
		wantLines = append(wantLines, `# TYPE process_cpu_seconds_total counter`)
	}
	for _, w := range wantLines {
		if !strings.Contains(string(body), w+"\n") {
			t.Errorf("exposition lacks %q", w)
		}
	}
}

// TestNaming lints every metric the package defines against Prometheus' naming conventions.
func TestNaming(t *testing.T) {
	m := New()
	// Give every vector a series so that Gather returns its family.
	m.TurnStarted("toulmin")
	m.TurnEnded(coach.Report{Contract: "toulmin", Outcome: "fallback", Deltas: 1, Rules: []string{"r"}, Spent: []coach.Spent{{Upstream: "default", Usage: coach.Usage{PromptTokens: 1}}}})
	m.ModelFailed("toulmin", "default", "server")
	m.Retried("toulmin", "server")
	m.Reset("toulmin", "invalid_output")
	m.Rejected("toulmin")
	m.SafetyChecked("toulmin", safety.Record{Stage: safety.StageInput, Classifier: safety.BuiltinName, Action: safety.ActionNone})
	m.SafetyChecked("toulmin", safety.Record{Stage: safety.StageInput, Classifier: safety.BuiltinName, Action: safety.ActionNone,
		Ran: safety.Ran{NotRun: safety.NotRunUnsupportedLanguage}, Lang: "fr"})
	m.SafetyAuditFailed()
	m.Attempted("toulmin", "default")
	m.EscalationAttempted("ok")
	m.EscalationEnded("delivered")
	m.FellBack("toulmin", "default", "local", false)
	m.BreakerTransition("default", "open")
	m.ObserveHTTP(http.MethodGet, "/healthz", 200, time.Millisecond)
	m.TurnOverTenantCap("acme")
	h := m.RedisHook()
	_ = h.ProcessHook(func(ctx context.Context, cmd redis.Cmder) error { return errors.New("down") })(
		context.Background(), redis.NewCmd(context.Background(), "get", "k"))

	mfs, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var ours []string
	for _, mf := range mfs {
		if strings.HasPrefix(mf.GetName(), namespace+"_") {
			ours = append(ours, mf.GetName())
		}
	}
	wantNames := []string{
		"coachgw_deltas_total", "coachgw_fallbacks_total", "coachgw_guard_rule_firings_total",
		"coachgw_http_request_duration_seconds", "coachgw_http_requests_total", "coachgw_open_streams", "coachgw_overhead_seconds",
		"coachgw_breaker_transitions_total", "coachgw_prompt_tokens_total", "coachgw_completion_tokens_total",
		"coachgw_escalation_attempts_total", "coachgw_escalations_total",
		"coachgw_redis_command_duration_seconds", "coachgw_redis_errors_total", "coachgw_resets_total",
		"coachgw_retries_total", "coachgw_safety_audit_failures_total", "coachgw_safety_checks_total",
		"coachgw_safety_unsupported_language_total",
		"coachgw_time_to_first_delta_seconds", "coachgw_turn_duration_seconds",
		"coachgw_turns_total", "coachgw_turns_over_tenant_cap_total", "coachgw_upstream_attempts_total", "coachgw_upstream_errors_total",
		"coachgw_upstream_failures_total", "coachgw_upstream_fallbacks_total", "coachgw_validation_failures_total",
	}
	slices.Sort(wantNames)
	if !slices.Equal(ours, wantNames) {
		t.Errorf("metrics = %q, want %q", ours, wantNames)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, namespace+"_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

func TestInstancesAreIndependent(t *testing.T) {
	a, b := New(), New()
	a.ModelFailed("toulmin", "default", "server")
	if got := value(t, a, "coachgw_upstream_errors_total", "contract", "toulmin", "class", "server"); got != 1 {
		t.Errorf("first instance: got %v, want 1", got)
	}
	if got := value(t, b, "coachgw_upstream_errors_total", "contract", "toulmin", "class", "server"); got != -1 {
		t.Errorf("second instance: got %v, want no series", got)
	}
}

func TestConcurrentTurns(t *testing.T) {
	m := New()
	const turns = 50
	var wg sync.WaitGroup
	for i := range turns {
		wg.Go(func() {
			contract := []string{"toulmin", "cards"}[i%2]
			m.TurnStarted(contract)
			m.Reset(contract, "stream_interrupted")
			m.TurnEnded(coach.Report{Contract: contract, Outcome: "ok", Deltas: 3, FirstDelta: time.Millisecond})
		})
	}
	wg.Wait()
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"coachgw_turns_total", []string{"contract", "toulmin", "outcome", "ok"}, turns / 2},
		{"coachgw_turns_total", []string{"contract", "cards", "outcome", "ok"}, turns / 2},
		{"coachgw_deltas_total", []string{"contract", "cards"}, 3 * turns / 2},
		{"coachgw_resets_total", []string{"contract", "toulmin", "reason", "stream_interrupted"}, turns / 2},
		{"coachgw_open_streams", nil, 0},
	}
	for _, tt := range tests {
		if got := value(t, m, tt.name, tt.labels...); got != tt.want {
			t.Errorf("%s%q = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
}

// TestTenantLabel reads /metrics in each COACH_METRICS_TENANT_LABEL mode: the unauthenticated
// page shows a tenant's name only when the operator asked for names.
func TestTenantLabel(t *testing.T) {
	secret := []byte("deployment secret")
	hashed := New(WithLabelSecret(secret)).hashTenant("acme")
	for _, tc := range []struct {
		mode, want string
	}{
		{TenantName, `tenant="acme"`},
		{TenantHash, `tenant="` + hashed + `"`},
		{TenantNone, `tenant=""`},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			m := New(WithTenantLabel(tc.mode), WithLabelSecret(secret))
			body := scrapeTenant(t, m, "acme")
			found := false
			for _, line := range strings.Split(body, "\n") {
				found = found || strings.HasPrefix(line, "coachgw_prompt_tokens_total{") && strings.Contains(line, tc.want)
			}
			if !found {
				t.Errorf("mode %s: /metrics has no prompt tokens series with %s", tc.mode, tc.want)
			}
			if tc.mode != TenantName && strings.Contains(body, "acme") {
				t.Errorf("mode %s: /metrics shows the tenant's name", tc.mode)
			}
		})
	}
	if len(hashed) != 12 || hashed == New(WithLabelSecret(secret)).hashTenant("acme2") {
		t.Errorf("hashTenant(acme) = %q, want 12 hex digits distinct per tenant", hashed)
	}
}

// TestUnsupportedLanguageCounted: a text the screen could not read is counted by its
// language; a text it read is not.
func TestUnsupportedLanguageCounted(t *testing.T) {
	m := New()
	for _, rec := range []safety.Record{
		{Stage: safety.StageInput, Classifier: safety.BuiltinName, Ran: safety.Ran{NotRun: safety.NotRunUnsupportedLanguage}, Lang: "de"},
		{Stage: safety.StageInput, Classifier: safety.BuiltinName, Ran: safety.Ran{NotRun: safety.NotRunUnsupportedLanguage}, Lang: "de"},
		{Stage: safety.StageInput, Classifier: safety.BuiltinName},
	} {
		m.SafetyChecked("toulmin", rec)
	}
	if got := testutil.ToFloat64(m.safetyUnsupported.WithLabelValues("toulmin", "de")); got != 2 {
		t.Errorf("unsupported German texts = %v, want 2", got)
	}
	if got := testutil.CollectAndCount(m.safetyUnsupported); got != 1 {
		t.Errorf("series = %d, want 1 (a read text is not counted)", got)
	}
}

// TestTenantLabelNotReversible attacks the hashed label as a reader of /metrics would: hash
// likely tenant names without the deployment's secret and look for them on the page. Neither a
// configured secret nor the random one of a deployment without it lets the guess match, and
// two processes without a secret label the same tenant differently.
func TestTenantLabelNotReversible(t *testing.T) {
	guesses := func(name string) []string {
		sum := sha256.Sum256([]byte(name))
		empty := hmac.New(sha256.New, nil)
		empty.Write([]byte(name))
		return []string{hex.EncodeToString(sum[:6]), hex.EncodeToString(empty.Sum(nil)[:6])}
	}
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"configured secret", []Option{WithLabelSecret([]byte("deployment secret"))}},
		{"random secret", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := scrapeTenant(t, New(tc.opts...), "acme")
			for _, g := range guesses("acme") {
				if strings.Contains(body, `tenant="`+g+`"`) {
					t.Errorf("/metrics has tenant=%q, the hash of a guessed name", g)
				}
			}
		})
	}
	if a, b := New().hashTenant("acme"), New().hashTenant("acme"); a == b {
		t.Errorf("two processes without a secret both label acme %q, want distinct random keys", a)
	}
}

// testLabelSecret keys the tenant labels the tests expect, as testLabels computes them.
var (
	testLabelSecret = []byte("test label secret")
	testLabels      = &Metrics{labelSecret: testLabelSecret}
)

// scrapeTenant records one turn of tenant on m and returns its /metrics page.
func scrapeTenant(t *testing.T, m *Metrics, tenant string) string {
	t.Helper()
	m.TurnStarted("cards")
	m.TurnEnded(coach.Report{Contract: "cards", Outcome: "ok", Tenant: tenant,
		Spent: []coach.Spent{{Upstream: "primary", Model: "m", Usage: coach.Usage{PromptTokens: 1, CompletionTokens: 1}}}})
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}
