// Package config reads the gateway's settings from the environment: one struct, every field
// with a default, every secret masked when the struct is logged.
package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/redact"
)

// Config is every setting of the gateway. Field comments name the environment variable.
type Config struct {
	Addr string // COACH_ADDR

	RedisURL    string // REDIS_URL; empty runs an embedded in-process Redis
	RedisPrefix string // COACH_REDIS_PREFIX
	// RedisTimeout (COACH_REDIS_TIMEOUT) bounds each Redis operation: a Redis that does not
	// answer within it is store_unavailable.
	RedisTimeout time.Duration
	SessionTTL   time.Duration // COACH_SESSION_TTL: idle sessions expire after this

	// TranscriptMaxEntries and TranscriptMaxBytes (COACH_TRANSCRIPT_MAX_ENTRIES,
	// COACH_TRANSCRIPT_MAX_BYTES) bound each session's learner transcript; the oldest entries
	// are dropped beyond them.
	TranscriptMaxEntries int
	TranscriptMaxBytes   int

	// DataDir (COACH_DATA_DIR) is where the embedded Redis, run when REDIS_URL is unset, keeps
	// its state across restarts; empty (COACH_DATA_DIR=off) keeps nothing. SaveInterval
	// (COACH_SAVE_INTERVAL) is how often it is saved besides at shutdown.
	DataDir      string
	SaveInterval time.Duration

	OpenAIBaseURL  string // OPENAI_BASE_URL; empty runs the embedded replay model
	OpenAIAPIKey   string // OPENAI_API_KEY
	Model          string // COACH_MODEL
	ResponseFormat string // COACH_RESPONSE_FORMAT: json_schema, json_object or prompt

	// Upstreams are the model endpoints of COACH_UPSTREAMS or COACH_UPSTREAMS_FILE, in order of
	// preference; none means the one endpoint of OPENAI_BASE_URL (or the replay model).
	Upstreams []Upstream
	// BreakerFailures is COACH_BREAKER_FAILURES: the least number of failed turns within
	// BreakerWindow (COACH_BREAKER_WINDOW) before an endpoint's circuit may open; it opens when
	// they are also at least BreakerFailureRate percent (COACH_BREAKER_FAILURE_RATE) of the
	// window's turns. BreakerCooldown is COACH_BREAKER_COOLDOWN: how long it stays open.
	BreakerFailures    int
	BreakerFailureRate float64
	BreakerWindow      time.Duration
	BreakerCooldown    time.Duration

	// TokenBudgetDaily is COACH_TOKEN_BUDGET_DAILY: the tokens (prompt plus completion) each
	// tenant may use per UTC day; 0 sets no budget. TokenBudgets, from COACH_TOKEN_BUDGETS
	// (tenant=N,…), overrides it per tenant (0 there: no budget for that tenant).
	TokenBudgetDaily int64
	TokenBudgets     map[string]int64
	// TokenReserve (COACH_TOKEN_RESERVE) is the least a turn of a tenant with a budget
	// reserves besides its input, before its session is read.
	TokenReserve int

	// TracesExporter (OTEL_TRACES_EXPORTER), OTLPEndpoint and OTLPProtocol
	// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL) come from
	// OpenTelemetry's standard variables: tracing is off unless the exporter or an endpoint is
	// set (see internal/tracing). OTLPEndpoint is the URL spans are posted to:
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, else OTEL_EXPORTER_OTLP_ENDPOINT (a base URL)
	// with /v1/traces appended, as the specification says.
	TracesExporter string
	OTLPEndpoint   string
	OTLPProtocol   string

	ConnectTimeout   time.Duration // COACH_CONNECT_TIMEOUT
	FirstByteTimeout time.Duration // COACH_FIRST_BYTE_TIMEOUT
	IdleTimeout      time.Duration // COACH_IDLE_TIMEOUT
	TurnTimeout      time.Duration // COACH_TURN_TIMEOUT
	MaxAttempts      int           // COACH_MAX_ATTEMPTS
	RetryAfterCap    time.Duration // COACH_RETRY_AFTER_CAP

	ShutdownTimeout time.Duration // COACH_SHUTDOWN_TIMEOUT: how long open streams may drain
	// TurnOnDisconnect is COACH_TURN_ON_DISCONNECT: "continue" (the default since v1.2) runs a
	// turn to its end when its client goes away, "cancel" cancels it as v1 did.
	TurnOnDisconnect string
	// ResumeTTL is COACH_RESUME_TTL: how long after its end a turn's lines are kept for resume;
	// 0 keeps none (no resume; a stop reaches only the instance's own turns).
	ResumeTTL time.Duration
	// TurnLostAfter is COACH_TURN_LOST_AFTER: how long after its instance dies a running turn
	// ends, for its readers, with a turn_lost error line.
	TurnLostAfter   time.Duration
	MaxBodyBytes    int64         // COACH_MAX_BODY_BYTES
	BodyReadTimeout time.Duration // COACH_BODY_READ_TIMEOUT: how long a request body may take to arrive
	MaxMessageChars int           // COACH_MAX_MESSAGE_CHARS
	HistoryLimit    int           // COACH_HISTORY_LIMIT: messages kept per session
	HistoryBytes    int           // COACH_HISTORY_BYTES: bytes of message text kept per session
	LockTTL         time.Duration // COACH_LOCK_TTL: a session lock's life without renewal
	// MaxOutputBytes and ContractOutputBytes are COACH_MAX_OUTPUT_BYTES: the bound on the model's
	// raw output in one attempt, for every contract and for the contracts named (e.g.
	// "262144,module=524288").
	MaxOutputBytes      int
	ContractOutputBytes map[string]int
	// MaxCompletionTokens and ContractCompletionTokens are COACH_MAX_COMPLETION_TOKENS: the
	// completion cap sent with every request, for every contract and for the contracts named
	// (e.g. "2048,module=4096"), in place of the cap each contract derives from its schema.
	MaxCompletionTokens      int
	ContractCompletionTokens map[string]int
	// DowngradeTTL is COACH_DOWNGRADE_TTL: how long an endpoint keeps a weaker request
	// setting it was downgraded to before the configured one is tried again.
	DowngradeTTL time.Duration

	ModulesDir string // COACH_MODULES_DIR: extra learning modules (*.json)

	CardsCyclesPerLevel int // COACH_CARDS_CYCLES_PER_LEVEL
	CardsMaxLevel       int // COACH_CARDS_MAX_LEVEL

	ReplayDelayMin time.Duration // COACH_REPLAY_DELAY_MIN: pause between chunks of the embedded replay model
	ReplayDelayMax time.Duration // COACH_REPLAY_DELAY_MAX

	LogLevel  string // COACH_LOG_LEVEL
	LogFormat string // COACH_LOG_FORMAT: json or console

	// APIKeys are the clients' keys, from COACH_API_KEYS and the file COACH_API_KEYS_FILE; none
	// leaves the API open to anyone who can reach it.
	APIKeys []APIKey
	// RateLimit is COACH_RATE_LIMIT: requests per minute per tenant that start a session or a
	// turn; 0 turns limiting off.
	RateLimit int
	// CORSOrigins is COACH_CORS_ORIGINS: the browser origins allowed to call the API, lowercased;
	// none sends no CORS headers.
	CORSOrigins []string

	// SessionRateLimit is COACH_SESSION_RATE_LIMIT: sessions a minute each API key may create
	// (each learner reference, when one is given; each client address when no API keys are
	// configured); 0 turns it off.
	SessionRateLimit int
	// MaxSessionsPerLearner is COACH_MAX_SESSIONS_PER_LEARNER: the sessions one learner
	// reference of a tenant may have kept at once; one more is 409 too_many_sessions. 0 turns
	// the bound off.
	MaxSessionsPerLearner int
	// TurnRateLimit is COACH_TURN_RATE_LIMIT: turns a minute each session may take, and each
	// learner reference of a tenant across its sessions, whether the model answers them or the
	// gateway does (a held session's); 0 turns it off.
	TurnRateLimit int
	// MaxTurnsPerTenant is COACH_MAX_TURNS_PER_TENANT: the turns each tenant may run at once on
	// one instance, those whose clients left included; one more is 429 too_many_turns. 0 turns
	// the bound off.
	MaxTurnsPerTenant int
	// MaxTurnsPerLearner is COACH_MAX_TURNS_PER_LEARNER: the turns each learner reference of a
	// tenant may run at once on one instance, within the tenant's; one more is 429
	// too_many_turns. 0 turns the bound off.
	MaxTurnsPerLearner int
	// MaxReadersPerTurn is COACH_MAX_READERS_PER_TURN: resumers of one turn an instance serves
	// at once, all fed by its one reader of the turn's log; one more is 429 too_many_readers.
	MaxReadersPerTurn int
	// MaxHeaderBytes (COACH_MAX_HEADER_BYTES) bounds a request's header; MaxConns
	// (COACH_MAX_CONNS) the connections served at once (0: no cap); MaxConnsPerClient
	// (COACH_MAX_CONNS_PER_CLIENT) those of one client address, an IPv6 /64 (0: no cap).
	MaxHeaderBytes    int
	MaxConns          int
	MaxConnsPerClient int
	// MetricsTenantLabel is COACH_METRICS_TENANT_LABEL: what the tenant label of /metrics holds,
	// "name", "hash" (the default) or "none".
	MetricsTenantLabel string
	// MetricsLabelSecret is COACH_METRICS_LABEL_SECRET: the key of the HMAC that makes "hash"
	// tenant labels; unset, each process draws a random one, and labels change on restart.
	MetricsLabelSecret string

	// Safety settings (wire contract v1.3). SafetyMode is COACH_SAFETY_MODE: "enforce" (the
	// default), "observe" (check and audit, change nothing) or "off".
	SafetyMode string
	// SafetyHoldbackChars is COACH_SAFETY_HOLDBACK_CHARS: the most model text held back
	// unchecked while the output check waits for a sentence end.
	SafetyHoldbackChars int
	// SafetyFailure is COACH_SAFETY_FAILURE: what a classifier that fails or exceeds
	// SafetyTimeout (COACH_SAFETY_TIMEOUT) does, "closed" (a hit) or "open" (a pass, logged at
	// error level). The built-in screen never fails.
	SafetyFailure string
	SafetyTimeout time.Duration
	// ModerationURL and ModerationModel (COACH_MODERATION_URL, COACH_MODERATION_MODEL) name an
	// OpenAI-compatible /v1/moderations endpoint used beside the built-in screen;
	// ModerationAPIKey (COACH_MODERATION_API_KEY) is its key, when it needs one.
	ModerationURL    string
	ModerationModel  string
	ModerationAPIKey string
	// GuardURL, GuardModel and GuardFormat (COACH_GUARD_URL, COACH_GUARD_MODEL,
	// COACH_GUARD_FORMAT) name a guard model served as a chat model, used beside the built-in
	// screen; GuardAPIKey (COACH_GUARD_API_KEY) is its key, when it needs one.
	GuardURL    string
	GuardModel  string
	GuardFormat string
	GuardAPIKey string
	// SafetyJudge is COACH_SAFETY_JUDGE: "auto" (the default: a judge decides whom a text the
	// screen caught or could not read concerns, on SafetyJudgeURL when set, else on the first
	// model endpoint) or "off" (the screen alone). SafetyJudgeURL, SafetyJudgeModel and
	// SafetyJudgeAPIKey (COACH_SAFETY_JUDGE_URL, COACH_SAFETY_JUDGE_MODEL,
	// COACH_SAFETY_JUDGE_API_KEY) name another OpenAI-compatible chat endpoint for it; the model
	// alone overrides the first endpoint's model.
	SafetyJudge       string
	SafetyJudgeURL    string
	SafetyJudgeModel  string
	SafetyJudgeAPIKey string
	// CrisisResourcesFile is COACH_CRISIS_RESOURCES_FILE: crisis resources per locale in place
	// of the built-in ones; empty uses the built-in ones.
	CrisisResourcesFile string
	// EscalationURL and EscalationSecret (COACH_ESCALATION_URL, COACH_ESCALATION_SECRET): one
	// POST per crisis episode, signed with HMAC-SHA256 of its body; EscalationIncludeText
	// (COACH_ESCALATION_INCLUDE_TEXT) adds the learner's text to it.
	EscalationURL         string
	EscalationSecret      string
	EscalationIncludeText bool
	// PIIRedact is COACH_PII_REDACT: "mask" (the default) masks e-mail addresses, phone
	// numbers, card numbers and national ids in learner text before a model endpoint sees it;
	// "off" sends it as typed.
	PIIRedact string
	// TranscriptRetention is COACH_TRANSCRIPT_RETENTION: sessions, transcripts and safety
	// records older than this are deleted (accepts days, "365d").
	TranscriptRetention time.Duration
}

// APIKey is a client's key as configured: the tenant it acts for and the SHA-256 of the key.
// Only the hash is configured, so the configuration itself holds nothing a client can present.
type APIKey struct {
	Tenant string
	Hash   [sha256.Size]byte
	// Operator is set for an entry ending in ":operator": the key may also clear safety holds,
	// read the tenant's safety audit, and export or erase a learner's data (v1.3).
	Operator bool
}

// DefaultDataDir returns the default of DataDir: "coachgw" in the user's cache directory
// (os.UserCacheDir: $XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on macOS,
// %LocalAppData% on Windows), or in the system's temporary directory when there is none.
func DefaultDataDir() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "coachgw")
}

// Default returns the defaults.
func Default() Config {
	return Config{
		Addr:                 ":8080",
		RedisPrefix:          "coachgw",
		RedisTimeout:         time.Second,
		TokenReserve:         2048,
		SessionTTL:           24 * time.Hour,
		TranscriptMaxEntries: 1000,
		TranscriptMaxBytes:   1 << 20,
		DataDir:              DefaultDataDir(),
		SaveInterval:         30 * time.Second,
		Model:                "gpt-4o-mini",
		ResponseFormat:       "json_schema",
		ConnectTimeout:       5 * time.Second,
		FirstByteTimeout:     30 * time.Second,
		IdleTimeout:          20 * time.Second,
		TurnTimeout:          120 * time.Second,
		MaxAttempts:          3,
		RetryAfterCap:        10 * time.Second,
		BreakerFailures:      5,
		BreakerFailureRate:   50,
		BreakerWindow:        time.Minute,
		BreakerCooldown:      30 * time.Second,
		ShutdownTimeout:      30 * time.Second,
		TurnOnDisconnect:     "continue",
		ResumeTTL:            5 * time.Minute,
		TurnLostAfter:        15 * time.Second,
		MaxReadersPerTurn:    8,
		MaxBodyBytes:         64 << 10,
		BodyReadTimeout:      15 * time.Second,
		DowngradeTTL:         10 * time.Minute,
		MaxMessageChars:      8000,
		HistoryLimit:         200,
		HistoryBytes:         512 << 10,
		MaxOutputBytes:       256 << 10,
		LockTTL:              15 * time.Second,
		CardsCyclesPerLevel:  2,
		CardsMaxLevel:        5,
		ReplayDelayMin:       10 * time.Millisecond,
		ReplayDelayMax:       20 * time.Millisecond,
		LogLevel:             "info",
		LogFormat:            "json",
		SessionRateLimit:     120,
		TurnRateLimit:        30,
		MaxTurnsPerTenant:    256,
		MaxTurnsPerLearner:   8,
		MaxHeaderBytes:       64 << 10,
		MaxConns:             2048,
		MaxConnsPerClient:    64,
		MetricsTenantLabel:   "hash",
		SafetyMode:           "enforce",
		SafetyHoldbackChars:  160,
		SafetyFailure:        "closed",
		SafetyTimeout:        2 * time.Second,
		GuardFormat:          "llamaguard3",
		SafetyJudge:          "auto",
		PIIRedact:            "mask",
		TranscriptRetention:  365 * 24 * time.Hour,

		MaxSessionsPerLearner: 1000,
	}
}

// Load reads the environment through getenv over the defaults. It reports every malformed
// variable at once.
func Load(getenv func(string) string) (Config, error) {
	c := Default()
	var errs []error
	str := func(name string, dst *string) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			*dst = v
		}
	}
	dur := func(name string, dst *time.Duration) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a duration like 30s", name, v))
			return
		}
		*dst = d
	}
	num := func(name string, dst *int) {
		v := strings.TrimSpace(getenv(name))
		if v == "" {
			return
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a whole number", name, v))
			return
		}
		*dst = n
	}

	str("COACH_ADDR", &c.Addr)
	str("REDIS_URL", &c.RedisURL)
	str("COACH_REDIS_PREFIX", &c.RedisPrefix)
	dur("COACH_REDIS_TIMEOUT", &c.RedisTimeout)
	num("COACH_TOKEN_RESERVE", &c.TokenReserve)
	dur("COACH_SESSION_TTL", &c.SessionTTL)
	num("COACH_TRANSCRIPT_MAX_ENTRIES", &c.TranscriptMaxEntries)
	num("COACH_TRANSCRIPT_MAX_BYTES", &c.TranscriptMaxBytes)
	// "off" in any case: a mistyped "OFF" must not become a directory named OFF wherever the
	// gateway was started (a repository's checkout, say).
	switch v := strings.TrimSpace(getenv("COACH_DATA_DIR")); {
	case v == "":
	case strings.EqualFold(v, "off"):
		c.DataDir = ""
	default:
		c.DataDir = v
	}
	dur("COACH_SAVE_INTERVAL", &c.SaveInterval)
	str("OPENAI_BASE_URL", &c.OpenAIBaseURL)
	c.OpenAIAPIKey = strings.TrimSpace(getenv("OPENAI_API_KEY"))
	str("COACH_MODEL", &c.Model)
	str("COACH_RESPONSE_FORMAT", &c.ResponseFormat)
	dur("COACH_CONNECT_TIMEOUT", &c.ConnectTimeout)
	dur("COACH_FIRST_BYTE_TIMEOUT", &c.FirstByteTimeout)
	dur("COACH_IDLE_TIMEOUT", &c.IdleTimeout)
	dur("COACH_TURN_TIMEOUT", &c.TurnTimeout)
	num("COACH_MAX_ATTEMPTS", &c.MaxAttempts)
	dur("COACH_RETRY_AFTER_CAP", &c.RetryAfterCap)
	num("COACH_BREAKER_FAILURES", &c.BreakerFailures)
	dur("COACH_BREAKER_COOLDOWN", &c.BreakerCooldown)
	dur("COACH_BREAKER_WINDOW", &c.BreakerWindow)
	if v := strings.TrimSuffix(strings.TrimSpace(getenv("COACH_BREAKER_FAILURE_RATE")), "%"); v != "" {
		rate, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(rate > 0 && rate <= 100) {
			errs = append(errs, fmt.Errorf("COACH_BREAKER_FAILURE_RATE=%q: want a percentage above 0 and at most 100, like 50", v))
		} else {
			c.BreakerFailureRate = rate
		}
	}
	dur("COACH_SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
	str("COACH_TURN_ON_DISCONNECT", &c.TurnOnDisconnect)
	c.TurnOnDisconnect = strings.ToLower(c.TurnOnDisconnect)
	if c.TurnOnDisconnect != "continue" && c.TurnOnDisconnect != "cancel" {
		errs = append(errs, fmt.Errorf("COACH_TURN_ON_DISCONNECT=%q: want continue or cancel", c.TurnOnDisconnect))
	}
	dur("COACH_RESUME_TTL", &c.ResumeTTL)
	dur("COACH_TURN_LOST_AFTER", &c.TurnLostAfter)
	num("COACH_MAX_READERS_PER_TURN", &c.MaxReadersPerTurn)
	if c.MaxReadersPerTurn < 1 {
		errs = append(errs, fmt.Errorf("COACH_MAX_READERS_PER_TURN=%d: want at least 1", c.MaxReadersPerTurn))
	}
	var maxBody int
	num("COACH_MAX_BODY_BYTES", &maxBody)
	if maxBody > 0 {
		c.MaxBodyBytes = int64(maxBody)
	}
	dur("COACH_BODY_READ_TIMEOUT", &c.BodyReadTimeout)
	num("COACH_MAX_MESSAGE_CHARS", &c.MaxMessageChars)
	num("COACH_HISTORY_LIMIT", &c.HistoryLimit)
	num("COACH_HISTORY_BYTES", &c.HistoryBytes)
	dur("COACH_LOCK_TTL", &c.LockTTL)
	errs = parseOutputBytes(getenv("COACH_MAX_OUTPUT_BYTES"), &c, errs)
	errs = parseContractInts("COACH_MAX_COMPLETION_TOKENS", "tokens", 1, getenv("COACH_MAX_COMPLETION_TOKENS"), &c.MaxCompletionTokens, &c.ContractCompletionTokens, errs)
	dur("COACH_DOWNGRADE_TTL", &c.DowngradeTTL)
	str("COACH_MODULES_DIR", &c.ModulesDir)
	num("COACH_CARDS_CYCLES_PER_LEVEL", &c.CardsCyclesPerLevel)
	num("COACH_CARDS_MAX_LEVEL", &c.CardsMaxLevel)
	dur("COACH_REPLAY_DELAY_MIN", &c.ReplayDelayMin)
	dur("COACH_REPLAY_DELAY_MAX", &c.ReplayDelayMax)
	str("COACH_LOG_LEVEL", &c.LogLevel)
	str("COACH_LOG_FORMAT", &c.LogFormat)
	num("COACH_RATE_LIMIT", &c.RateLimit)
	c.APIKeys, errs = loadAPIKeys(getenv, errs)
	c.Upstreams, errs = loadUpstreams(getenv, c.Model, errs)
	var budget int
	num("COACH_TOKEN_BUDGET_DAILY", &budget)
	c.TokenBudgetDaily = int64(budget)
	c.TokenBudgets, errs = parseBudgets(getenv("COACH_TOKEN_BUDGETS"), errs)
	str("OTEL_TRACES_EXPORTER", &c.TracesExporter)
	c.TracesExporter = strings.ToLower(c.TracesExporter)
	if base := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")); base != "" {
		c.OTLPEndpoint = strings.TrimSuffix(base, "/") + "/v1/traces"
	}
	str("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &c.OTLPEndpoint)
	str("OTEL_EXPORTER_OTLP_PROTOCOL", &c.OTLPProtocol)
	str("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", &c.OTLPProtocol)
	c.CORSOrigins, errs = parseOrigins(getenv("COACH_CORS_ORIGINS"), errs)
	num("COACH_SESSION_RATE_LIMIT", &c.SessionRateLimit)
	num("COACH_MAX_SESSIONS_PER_LEARNER", &c.MaxSessionsPerLearner)
	num("COACH_TURN_RATE_LIMIT", &c.TurnRateLimit)
	num("COACH_MAX_TURNS_PER_TENANT", &c.MaxTurnsPerTenant)
	num("COACH_MAX_TURNS_PER_LEARNER", &c.MaxTurnsPerLearner)
	num("COACH_MAX_HEADER_BYTES", &c.MaxHeaderBytes)
	num("COACH_MAX_CONNS", &c.MaxConns)
	num("COACH_MAX_CONNS_PER_CLIENT", &c.MaxConnsPerClient)
	str("COACH_METRICS_TENANT_LABEL", &c.MetricsTenantLabel)
	c.MetricsLabelSecret = strings.TrimSpace(getenv("COACH_METRICS_LABEL_SECRET"))
	c.MetricsTenantLabel = strings.ToLower(c.MetricsTenantLabel)
	str("COACH_SAFETY_MODE", &c.SafetyMode)
	c.SafetyMode = strings.ToLower(c.SafetyMode)
	num("COACH_SAFETY_HOLDBACK_CHARS", &c.SafetyHoldbackChars)
	str("COACH_SAFETY_FAILURE", &c.SafetyFailure)
	c.SafetyFailure = strings.ToLower(c.SafetyFailure)
	dur("COACH_SAFETY_TIMEOUT", &c.SafetyTimeout)
	str("COACH_MODERATION_URL", &c.ModerationURL)
	str("COACH_MODERATION_MODEL", &c.ModerationModel)
	c.ModerationAPIKey = strings.TrimSpace(getenv("COACH_MODERATION_API_KEY"))
	str("COACH_GUARD_URL", &c.GuardURL)
	str("COACH_GUARD_MODEL", &c.GuardModel)
	str("COACH_GUARD_FORMAT", &c.GuardFormat)
	c.GuardFormat = strings.ToLower(c.GuardFormat)
	c.GuardAPIKey = strings.TrimSpace(getenv("COACH_GUARD_API_KEY"))
	str("COACH_SAFETY_JUDGE", &c.SafetyJudge)
	c.SafetyJudge = strings.ToLower(c.SafetyJudge)
	str("COACH_SAFETY_JUDGE_URL", &c.SafetyJudgeURL)
	str("COACH_SAFETY_JUDGE_MODEL", &c.SafetyJudgeModel)
	c.SafetyJudgeAPIKey = strings.TrimSpace(getenv("COACH_SAFETY_JUDGE_API_KEY"))
	str("COACH_CRISIS_RESOURCES_FILE", &c.CrisisResourcesFile)
	str("COACH_ESCALATION_URL", &c.EscalationURL)
	c.EscalationSecret = strings.TrimSpace(getenv("COACH_ESCALATION_SECRET"))
	switch v := strings.ToLower(strings.TrimSpace(getenv("COACH_ESCALATION_INCLUDE_TEXT"))); v {
	case "", "false", "0", "no":
	case "true", "1", "yes":
		c.EscalationIncludeText = true
	default:
		errs = append(errs, fmt.Errorf("COACH_ESCALATION_INCLUDE_TEXT=%q: want true or false", v))
	}
	str("COACH_PII_REDACT", &c.PIIRedact)
	c.PIIRedact = strings.ToLower(c.PIIRedact)
	if v := strings.TrimSpace(getenv("COACH_TRANSCRIPT_RETENTION")); v != "" {
		d, err := parseDays(v)
		if err != nil || d < time.Hour {
			errs = append(errs, fmt.Errorf("COACH_TRANSCRIPT_RETENTION=%q: want a duration of at least 1h, like 365d or 720h", v))
		} else {
			c.TranscriptRetention = d
		}
	}

	switch c.ResponseFormat {
	case "json_schema", "json_object", "prompt":
	default:
		errs = append(errs, fmt.Errorf("COACH_RESPONSE_FORMAT=%q: want json_schema, json_object or prompt", c.ResponseFormat))
	}
	switch c.LogFormat {
	case "json", "console":
	default:
		errs = append(errs, fmt.Errorf("COACH_LOG_FORMAT=%q: want json or console", c.LogFormat))
	}
	if _, err := zerolog.ParseLevel(c.LogLevel); err != nil {
		errs = append(errs, fmt.Errorf("COACH_LOG_LEVEL=%q: %v", c.LogLevel, err))
	}
	if c.ReplayDelayMax < c.ReplayDelayMin {
		c.ReplayDelayMax = c.ReplayDelayMin
	}
	if c.BreakerFailures < 1 {
		errs = append(errs, errors.New("COACH_BREAKER_FAILURES must be at least 1"))
	}
	if c.BreakerCooldown < time.Second {
		errs = append(errs, errors.New("COACH_BREAKER_COOLDOWN must be at least 1s"))
	}
	if c.BreakerWindow < time.Second {
		errs = append(errs, errors.New("COACH_BREAKER_WINDOW must be at least 1s"))
	}
	if c.TranscriptMaxEntries < 1 || c.TranscriptMaxBytes < 1 {
		errs = append(errs, fmt.Errorf("COACH_TRANSCRIPT_MAX_ENTRIES and COACH_TRANSCRIPT_MAX_BYTES must be at least 1"))
	}
	if c.SaveInterval <= 0 {
		errs = append(errs, fmt.Errorf("COACH_SAVE_INTERVAL must be positive"))
	}
	if c.DowngradeTTL < time.Second {
		errs = append(errs, fmt.Errorf("COACH_DOWNGRADE_TTL must be at least 1s"))
	}
	if c.TurnLostAfter <= 0 {
		errs = append(errs, fmt.Errorf("COACH_TURN_LOST_AFTER=%v: want a positive duration", c.TurnLostAfter))
	}
	if c.LockTTL < 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("COACH_LOCK_TTL=%v: want at least 100ms (a running turn renews its lock every third of it)", c.LockTTL))
	}
	if c.MaxHeaderBytes < 4<<10 {
		errs = append(errs, fmt.Errorf("COACH_MAX_HEADER_BYTES=%d: want at least 4096", c.MaxHeaderBytes))
	}
	switch c.MetricsTenantLabel {
	case "name", "hash", "none":
	default:
		errs = append(errs, fmt.Errorf("COACH_METRICS_TENANT_LABEL=%q: want name, hash or none", c.MetricsTenantLabel))
	}
	errs = c.checkSafety(errs)
	if c.CardsMaxLevel < 1 {
		errs = append(errs, fmt.Errorf("COACH_CARDS_MAX_LEVEL must be at least 1"))
	}
	if c.RedisTimeout < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("COACH_REDIS_TIMEOUT=%v: want at least 10ms", c.RedisTimeout))
	}
	return c, errors.Join(errs...)
}

// MarshalZerologObject logs the configuration with secrets masked.
func (c Config) MarshalZerologObject(e *zerolog.Event) {
	e.Str("addr", c.Addr).
		Str("redis", MaskURL(c.RedisURL)).
		Str("redisPrefix", c.RedisPrefix).
		Dur("redisTimeout", c.RedisTimeout).
		Int("tokenReserve", c.TokenReserve).
		Dur("sessionTTL", c.SessionTTL).
		Int("transcriptMaxEntries", c.TranscriptMaxEntries).
		Int("transcriptMaxBytes", c.TranscriptMaxBytes).
		Str("dataDir", c.DataDir).
		Dur("saveInterval", c.SaveInterval).
		Str("openaiBaseURL", MaskURL(c.OpenAIBaseURL)).
		Str("openaiAPIKey", Mask(c.OpenAIAPIKey)).
		Str("model", c.Model).
		Str("responseFormat", c.ResponseFormat).
		Str("turnOnDisconnect", c.TurnOnDisconnect).
		Dur("resumeTTL", c.ResumeTTL).
		Dur("turnLostAfter", c.TurnLostAfter).
		Int("maxReadersPerTurn", c.MaxReadersPerTurn).
		Dur("firstByteTimeout", c.FirstByteTimeout).
		Dur("idleTimeout", c.IdleTimeout).
		Dur("turnTimeout", c.TurnTimeout).
		Int("maxAttempts", c.MaxAttempts).
		Array("upstreams", upstreamsLog(c.Upstreams)).
		Int64("tokenBudgetDaily", c.TokenBudgetDaily).
		Int("tokenBudgets", len(c.TokenBudgets)).
		Str("tracesExporter", c.TracesExporter).
		Str("otlpEndpoint", MaskURL(c.OTLPEndpoint)).
		Int("breakerFailures", c.BreakerFailures).
		Float64("breakerFailureRate", c.BreakerFailureRate).
		Dur("breakerWindow", c.BreakerWindow).
		Dur("breakerCooldown", c.BreakerCooldown).
		Dur("shutdownTimeout", c.ShutdownTimeout).
		Int64("maxBodyBytes", c.MaxBodyBytes).
		Dur("bodyReadTimeout", c.BodyReadTimeout).
		Int("maxOutputBytes", c.MaxOutputBytes).
		Int("maxCompletionTokens", c.MaxCompletionTokens).
		Dur("downgradeTTL", c.DowngradeTTL).
		Int("historyBytes", c.HistoryBytes).
		Dur("lockTTL", c.LockTTL).
		Str("modulesDir", c.ModulesDir).
		Int("apiKeys", len(c.APIKeys)).
		Int("rateLimit", c.RateLimit).
		Int("sessionRateLimit", c.SessionRateLimit).
		Int("maxSessionsPerLearner", c.MaxSessionsPerLearner).
		Int("turnRateLimit", c.TurnRateLimit).
		Int("maxTurnsPerTenant", c.MaxTurnsPerTenant).
		Int("maxTurnsPerLearner", c.MaxTurnsPerLearner).
		Int("maxHeaderBytes", c.MaxHeaderBytes).
		Int("maxConns", c.MaxConns).
		Int("maxConnsPerClient", c.MaxConnsPerClient).
		Str("metricsTenantLabel", c.MetricsTenantLabel).
		Str("metricsLabelSecret", Mask(c.MetricsLabelSecret)).
		Strs("corsOrigins", c.CORSOrigins).
		Str("safetyMode", c.SafetyMode).
		Int("safetyHoldbackChars", c.SafetyHoldbackChars).
		Str("safetyFailure", c.SafetyFailure).
		Dur("safetyTimeout", c.SafetyTimeout).
		Str("moderationURL", MaskURL(c.ModerationURL)).
		Str("moderationModel", c.ModerationModel).
		Str("moderationAPIKey", Mask(c.ModerationAPIKey)).
		Str("guardURL", MaskURL(c.GuardURL)).
		Str("guardModel", c.GuardModel).
		Str("guardFormat", c.GuardFormat).
		Str("guardAPIKey", Mask(c.GuardAPIKey)).
		Str("safetyJudge", c.SafetyJudge).
		Str("safetyJudgeURL", MaskURL(c.SafetyJudgeURL)).
		Str("safetyJudgeModel", c.SafetyJudgeModel).
		Str("safetyJudgeAPIKey", Mask(c.SafetyJudgeAPIKey)).
		Str("crisisResourcesFile", c.CrisisResourcesFile).
		Str("escalationURL", MaskURL(c.EscalationURL)).
		Str("escalationSecret", Mask(c.EscalationSecret)).
		Bool("escalationIncludeText", c.EscalationIncludeText).
		Str("piiRedact", c.PIIRedact).
		Dur("transcriptRetention", c.TranscriptRetention)
}

// checkSafety validates the safety settings (wire contract v1.3).
func (c *Config) checkSafety(errs []error) []error {
	switch c.SafetyMode {
	case "off", "observe", "enforce":
	default:
		errs = append(errs, fmt.Errorf("COACH_SAFETY_MODE=%q: want off, observe or enforce", c.SafetyMode))
	}
	switch c.SafetyFailure {
	case "closed", "open":
	default:
		errs = append(errs, fmt.Errorf("COACH_SAFETY_FAILURE=%q: want closed or open", c.SafetyFailure))
	}
	if c.SafetyTimeout < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("COACH_SAFETY_TIMEOUT=%v: want at least 10ms", c.SafetyTimeout))
	}
	switch c.GuardFormat {
	case "llamaguard3":
	default:
		errs = append(errs, fmt.Errorf("COACH_GUARD_FORMAT=%q: want llamaguard3", c.GuardFormat))
	}
	if (c.ModerationURL == "") != (c.ModerationModel == "") && c.ModerationURL == "" {
		errs = append(errs, errors.New("COACH_MODERATION_MODEL is set without COACH_MODERATION_URL"))
	}
	switch c.SafetyJudge {
	case "auto", "off":
	default:
		errs = append(errs, fmt.Errorf("COACH_SAFETY_JUDGE=%q: want auto or off", c.SafetyJudge))
	}
	if c.SafetyJudgeURL != "" && c.SafetyJudgeModel == "" {
		errs = append(errs, errors.New("COACH_SAFETY_JUDGE_URL needs COACH_SAFETY_JUDGE_MODEL (the judge model's name)"))
	}
	if c.GuardURL != "" && c.GuardModel == "" {
		errs = append(errs, errors.New("COACH_GUARD_URL needs COACH_GUARD_MODEL (the guard model's name)"))
	}
	for _, u := range []struct{ name, url string }{
		{"COACH_MODERATION_URL", c.ModerationURL}, {"COACH_GUARD_URL", c.GuardURL}, {"COACH_SAFETY_JUDGE_URL", c.SafetyJudgeURL}, {"COACH_ESCALATION_URL", c.EscalationURL},
	} {
		if u.url == "" {
			continue
		}
		if p, err := url.Parse(u.url); err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			errs = append(errs, fmt.Errorf("%s: want an http or https URL", u.name))
		}
	}
	if c.EscalationURL != "" && len(c.EscalationSecret) < 16 {
		errs = append(errs, errors.New("COACH_ESCALATION_URL needs COACH_ESCALATION_SECRET of at least 16 characters to sign its requests"))
	}
	switch c.PIIRedact {
	case "off", "mask":
	default:
		errs = append(errs, fmt.Errorf("COACH_PII_REDACT=%q: want off or mask", c.PIIRedact))
	}
	return errs
}

// parseDays reads a Go duration that may also be a whole number of days ("365d").
func parseDays(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100*365 {
			return 0, fmt.Errorf("want whole days")
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}

// tenantPattern is what a tenant name may look like: it ends up in Redis keys and logs.
var tenantPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// loadAPIKeys reads COACH_API_KEYS (comma-separated) and the file named by COACH_API_KEYS_FILE
// (one entry a line, # comments), both made of tenant:sha256hex entries, each optionally ending
// in ":operator" for an operator key. Errors name the source
// and the entry's position but never repeat the entry: a key pasted by mistake instead of its
// hash must not end up in a log.
func loadAPIKeys(getenv func(string) string, errs []error) ([]APIKey, []error) {
	var keys []APIKey
	seen := map[[sha256.Size]byte]bool{}
	add := func(where, entry string) {
		k, err := parseAPIKey(entry)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where, err))
			return
		}
		if seen[k.Hash] {
			errs = append(errs, fmt.Errorf("%s: the same key hash is configured twice", where))
			return
		}
		seen[k.Hash] = true
		keys = append(keys, k)
	}
	n := 0
	for entry := range strings.SplitSeq(getenv("COACH_API_KEYS"), ",") {
		if entry = strings.TrimSpace(entry); entry != "" {
			n++
			add(fmt.Sprintf("COACH_API_KEYS entry %d", n), entry)
		}
	}
	if name := strings.TrimSpace(getenv("COACH_API_KEYS_FILE")); name != "" {
		data, err := os.ReadFile(name)
		if err != nil {
			return keys, append(errs, fmt.Errorf("COACH_API_KEYS_FILE: %w", err))
		}
		for i, line := range strings.Split(string(data), "\n") {
			entry, _, _ := strings.Cut(line, "#")
			if entry = strings.TrimSpace(entry); entry != "" {
				add(fmt.Sprintf("COACH_API_KEYS_FILE line %d", i+1), entry)
			}
		}
	}
	return keys, errs
}

func parseAPIKey(entry string) (APIKey, error) {
	entry, operator := strings.CutSuffix(entry, ":operator")
	tenant, digest, ok := strings.Cut(entry, ":")
	tenant, digest = strings.TrimSpace(tenant), strings.TrimSpace(digest)
	if !ok || !tenantPattern.MatchString(tenant) {
		return APIKey{}, errors.New("want tenant:sha256hex with a tenant of 1 to 64 letters, digits, '.', '_' or '-'")
	}
	var k APIKey
	if n, err := hex.Decode(k.Hash[:], []byte(digest)); err != nil || n != sha256.Size || len(digest) != 2*sha256.Size {
		return APIKey{}, errors.New("the part after the tenant must be the SHA-256 of the key in hex (64 characters), not the key itself")
	}
	k.Tenant, k.Operator = tenant, operator
	return k, nil
}

// parseOrigins reads COACH_CORS_ORIGINS: comma-separated origins, each exactly
// scheme://host[:port] (a trailing slash is dropped), compared case-insensitively.
func parseOrigins(v string, errs []error) ([]string, []error) {
	var origins []string
	for o := range strings.SplitSeq(v, ",") {
		o = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(o)), "/")
		if o == "" {
			continue
		}
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.ContainsAny(o, "*?") {
			errs = append(errs, fmt.Errorf("COACH_CORS_ORIGINS: %q is not an origin like https://app.example.com (exact origins only, no wildcards)", o))
			continue
		}
		origins = append(origins, o)
	}
	return origins, errs
}

// parseOutputBytes reads COACH_MAX_OUTPUT_BYTES: comma-separated entries, each a number of
// bytes for every contract or contract=bytes for one, e.g. "262144,module=524288".
func parseOutputBytes(v string, c *Config, errs []error) []error {
	return parseContractInts("COACH_MAX_OUTPUT_BYTES", "bytes", 1024, v, &c.MaxOutputBytes, &c.ContractOutputBytes, errs)
}

// parseContractInts reads the setting name, whose value v is comma-separated entries, each a
// number (of unit, at least least) for every contract, stored in all, or contract=number for
// one, stored in per.
func parseContractInts(name, unit string, least int, v string, all *int, per *map[string]int, errs []error) []error {
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		contract, num, named := strings.Cut(entry, "=")
		if !named {
			num = contract
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		contract = strings.TrimSpace(contract)
		if err != nil || n < least || named && contract == "" {
			errs = append(errs, fmt.Errorf("%s: %q: want %s (at least %d) or contract=%s", name, entry, unit, least, unit))
			continue
		}
		if !named {
			*all = n
			continue
		}
		if *per == nil {
			*per = map[string]int{}
		}
		(*per)[contract] = n
	}
	return errs
}

// Mask hides a secret, keeping only whether it is set.
func Mask(secret string) string {
	if secret == "" {
		return ""
	}
	return "****"
}

// MaskURL hides the credentials of a URL such as redis://:pw@host:6379/0 or an OTLP endpoint
// with ?token=: its userinfo and token query parameters (see redact.URL).
func MaskURL(u string) string { return redact.URL(u) }

// upstreamsLog logs the endpoints without their keys: only the variable a key is read from.
type upstreamsLog []Upstream

// MarshalZerologArray logs each endpoint.
func (l upstreamsLog) MarshalZerologArray(a *zerolog.Array) {
	for _, u := range l {
		a.Dict(zerolog.Dict().Str("name", u.Name).Str("baseURL", MaskURL(u.BaseURL)).
			Str("apiKeyEnv", u.APIKeyEnv).Str("apiKey", Mask(u.APIKey)).Str("model", u.Model).
			Str("profile", u.Profile).Str("toolChoice", u.ToolChoice).Str("responseFormat", u.ResponseFormat))
	}
}

// TokenBudget returns tenant's token budget per UTC day: its entry of COACH_TOKEN_BUDGETS, else
// COACH_TOKEN_BUDGET_DAILY; 0 means none.
func (c Config) TokenBudget(tenant string) int64 {
	if n, ok := c.TokenBudgets[tenant]; ok {
		return n
	}
	return c.TokenBudgetDaily
}

// parseBudgets reads COACH_TOKEN_BUDGETS: comma-separated tenant=tokens entries.
func parseBudgets(v string, errs []error) (map[string]int64, []error) {
	var m map[string]int64
	for i, entry := range strings.Split(v, ",") {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		tenant, n, ok := strings.Cut(entry, "=")
		tokens, err := strconv.ParseInt(strings.TrimSpace(n), 10, 64)
		if tenant = strings.TrimSpace(tenant); !ok || err != nil || tokens < 0 || !tenantPattern.MatchString(tenant) {
			errs = append(errs, fmt.Errorf("COACH_TOKEN_BUDGETS entry %d: want tenant=tokens, e.g. acme=2000000", i+1))
			continue
		}
		if m == nil {
			m = map[string]int64{}
		}
		m[tenant] = tokens
	}
	return m, errs
}
