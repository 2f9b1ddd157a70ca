// Package app wires the gateway together from its configuration: the state store, the model
// endpoint (or the embedded replay model), the contracts, the engine and the HTTP server. It
// owns start-up and graceful shutdown; cmd/coachgw and the end-to-end tests share it.
package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"

	"github.com/coachgw/coachgw/internal/breaker"
	"github.com/coachgw/coachgw/internal/cards"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/connlimit"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/httpapi"
	"github.com/coachgw/coachgw/internal/metrics"
	"github.com/coachgw/coachgw/internal/module"
	"github.com/coachgw/coachgw/internal/openai"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/replay"
	"github.com/coachgw/coachgw/internal/toulmin"
	"github.com/coachgw/coachgw/internal/tracing"
	"github.com/coachgw/coachgw/internal/turns"
	"github.com/coachgw/coachgw/internal/web"
)

// App is a configured gateway, ready to serve.
type App struct {
	cfg       config.Config
	log       zerolog.Logger
	api       *httpapi.Server
	store     *redisstore.Store
	upstreams []upstream
	breaker   *breaker.Breaker
	closers   []func()
}

// Option adjusts what New builds.
type Option func(*options)

type options struct {
	observe func(coach.Observer) coach.Observer
}

// WithObserver has the engine report its turns to wrap(m) instead of to the gateway's metrics m,
// so that a caller in the same process (coachgw qualify) sees every turn's Report and the calls
// behind it. The Observer wrap returns must pass every call on to m, which serves /metrics.
func WithObserver(wrap func(m coach.Observer) coach.Observer) Option {
	return func(o *options) { o.observe = wrap }
}

// New builds the gateway. Problems that make it useless (an unparsable setting, an invalid
// module file) are errors; a Redis that does not answer yet is not: the gateway starts unready
// and recovers when Redis comes back.
func New(ctx context.Context, cfg config.Config, log zerolog.Logger, opts ...Option) (_ *App, err error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	a := &App{cfg: cfg, log: log}
	defer func() {
		if err != nil {
			a.Close() // what was started before the failure
		}
	}()

	m := metrics.New(metrics.WithTenantLabel(cfg.MetricsTenantLabel), metrics.WithLabelSecret([]byte(cfg.MetricsLabelSecret)))
	client, err := a.redis()
	if err != nil {
		return nil, err
	}
	client.AddHook(m.RedisHook())
	probe, err := a.pool(client, probeConns, "the readiness probe")
	if err != nil {
		return nil, err
	}
	a.store = redisstore.New(client, redisstore.Options{
		Probe:  probe,
		Prefix: cfg.RedisPrefix, TTL: cfg.SessionTTL,
		TranscriptMaxEntries: cfg.TranscriptMaxEntries, TranscriptMaxBytes: cfg.TranscriptMaxBytes,
		Timeout: cfg.RedisTimeout, Retention: cfg.TranscriptRetention,
		MaxLearnerSessions: cfg.MaxSessionsPerLearner,
	})
	if err := a.store.Prepare(ctx); err != nil {
		log.Error().Err(err).Msg("Redis does not answer; the gateway is not ready until it does")
	}

	if err := a.models(m); err != nil {
		return nil, err
	}
	modules, err := module.LoadRegistry(cfg.ModulesDir)
	if err != nil {
		return nil, fmt.Errorf("loading learning modules: %w", err)
	}
	contracts := []coach.Contract{
		toulmin.New(),
		cards.New(cards.Config{CyclesPerLevel: cfg.CardsCyclesPerLevel, MaxLevel: cfg.CardsMaxLevel}),
		module.New(modules),
	}
	for name := range cfg.ContractOutputBytes {
		if !slices.ContainsFunc(contracts, func(c coach.Contract) bool { return c.Name() == name }) {
			return nil, fmt.Errorf("COACH_MAX_OUTPUT_BYTES: there is no contract %q", name)
		}
	}
	for name := range cfg.ContractCompletionTokens {
		if !slices.ContainsFunc(contracts, func(c coach.Contract) bool { return c.Name() == name }) {
			return nil, fmt.Errorf("COACH_MAX_COMPLETION_TOKENS: there is no contract %q", name)
		}
	}
	ups := make([]coach.Upstream, len(a.upstreams))
	endpoints := make([]breaker.Endpoint, len(a.upstreams))
	for i, u := range a.upstreams {
		ups[i] = u.Upstream
		endpoints[i] = breaker.Endpoint{Name: u.Name, ID: breaker.Identity(u.Name, u.baseURL, u.ModelName)}
	}
	a.breaker = breaker.New(endpoints, breaker.Options{
		Failures: cfg.BreakerFailures, FailureRate: cfg.BreakerFailureRate / 100, Window: cfg.BreakerWindow,
		Cooldown: cfg.BreakerCooldown, Shared: a.store,
		Warn: func(err error, msg string) { log.Warn().Err(err).Msg(msg) },
		OnTransition: func(name string, to breaker.State) {
			m.BreakerTransition(name, string(to))
			log.Warn().Str("upstream", name).Str("state", string(to)).Msg("model endpoint circuit")
		},
		OnPanic: m.BreakerPanic,
	})
	m.WatchCircuits(func() []metrics.CircuitState {
		states := a.breaker.States()
		out := make([]metrics.CircuitState, len(states))
		for i, c := range states {
			out[i] = metrics.CircuitState{Upstream: c.Name, State: string(c.State)}
		}
		return out
	})
	tracer, err := a.tracer(ctx)
	if err != nil {
		return nil, err
	}
	syncCtx, stopSync := context.WithCancel(context.Background())
	a.closers = append(a.closers, stopSync)
	// Other instances' open circuits are read every second, or four times a cooldown when that
	// is shorter, so that they are seen well before they end.
	go a.breaker.Run(syncCtx, max(10*time.Millisecond, min(time.Second, cfg.BreakerCooldown/4)))
	var obs coach.Observer = m
	if o.observe != nil {
		obs = o.observe(m)
	}
	guard, err := a.guard(cfg)
	if err != nil {
		return nil, err
	}
	// The audit records of all turns go out together, every 200 ms, off every turn's path.
	audit := redisstore.NewSafetyAudit(client, cfg.RedisPrefix, cfg.TranscriptRetention, 0)
	auditBatch := redisstore.NewAuditBatcher(audit, 200*time.Millisecond, m.SafetyAuditFailed)
	a.closers = append(a.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = auditBatch.Close(ctx)
	})
	svc := coach.New(coach.Deps{
		Safety:  guard,
		Audit:   auditBatch,
		MaskPII: cfg.PIIRedact == "mask",
		// The adapter drops the text too unless it is configured; the engine leaves it out first.
		Escalator:    a.escalator(m, redisstore.NewEscalationOverflow(client, cfg.RedisPrefix)),
		EscalateText: cfg.EscalationIncludeText,
		Store:        a.store,
		Upstreams:    ups,
		Breaker:      a.breaker,
		Budget:       budget(cfg),
		Tracer:       tracer,
		Contracts:    contracts,
		Options: coach.Options{
			HistoryLimit:             cfg.HistoryLimit,
			HistoryBytes:             cfg.HistoryBytes,
			LockTTL:                  cfg.LockTTL,
			MaxOutputBytes:           cfg.MaxOutputBytes,
			ContractOutputBytes:      cfg.ContractOutputBytes,
			MaxCompletionTokens:      cfg.MaxCompletionTokens,
			ContractCompletionTokens: cfg.ContractCompletionTokens,
			FirstByteTimeout:         cfg.FirstByteTimeout,
			IdleTimeout:              cfg.IdleTimeout,
			TurnTimeout:              cfg.TurnTimeout,
			MaxAttempts:              cfg.MaxAttempts,
			RetryAfterCap:            cfg.RetryAfterCap,
			TokenReserve:             cfg.TokenReserve,
		},
		Observer:     obs,
		LearnerAudit: auditBatch,
	})
	readers, err := a.pool(client, readerConns, "the turn log's readers")
	if err != nil {
		return nil, err
	}
	readers.AddHook(m.RedisHook())
	// The instance's id is drawn at its start, so that an instance found dead stays dead: a
	// restart is another instance.
	instance := rand.Text()
	instances := redisstore.NewInstances(client, cfg.RedisPrefix)
	turnLog := redisstore.NewTurnLog(client, cfg.RedisPrefix, instance).WithReaders(readers)
	running := turns.New(turns.Config{
		Log: turnLog, ResumeTTL: cfg.ResumeTTL, CancelOnDisconnect: cfg.TurnOnDisconnect == "cancel",
		MaxPerTenant: cfg.MaxTurnsPerTenant, MaxPerLearner: cfg.MaxTurnsPerLearner, Refused: m.TurnOverTenantCap,
		MaxReadersPerTurn: cfg.MaxReadersPerTurn,
		Instances:         instances, LostAfter: cfg.TurnLostAfter, Instance: instance,
	})
	if cfg.ResumeTTL > 0 {
		a.keepAlive(instances, instance, cfg.TurnLostAfter)
	}
	a.api = httpapi.New(httpapi.Deps{
		Service:         svc,
		Modules:         moduleCatalog{modules},
		Ready:           a.ready,
		Upstreams:       a.upstreamStates,
		Metrics:         m.Handler(),
		UI:              web.Handler(),
		ObserveHTTP:     m.ObserveHTTP,
		Log:             log,
		MaxBodyBytes:    cfg.MaxBodyBytes,
		MaxMessageChars: cfg.MaxMessageChars,
		BodyReadTimeout: cfg.BodyReadTimeout,
		APIKeys:         a.apiKeys(),
		CORSOrigins:     cfg.CORSOrigins,
		Limiter:         a.store,
		RateLimit:       cfg.RateLimit,

		SessionRateLimit: cfg.SessionRateLimit,
		TurnRateLimit:    cfg.TurnRateLimit,
		Turns:            running,
		SafetyEvents:     audit,
	})
	// A stop, and a reader's following, reach the instance that runs the turn through the
	// channels to which every instance subscribes once. A Redis that does not answer yet leaves
	// them to the local turns.
	if cfg.ResumeTTL > 0 {
		if err := turnLog.Subscribe(syncCtx, running.StopLocal, running.Followed); err != nil {
			log.Error().Err(err).Msg("cannot subscribe to turn stops and follows; they reach only this instance's turns")
		}
	}
	return a, nil
}

// keepAlive keeps instance alive in instances (see turns.Heartbeat) until the App closes, which
// is after Serve has drained its turns; it then lets go at once. The first beat is made before
// New returns, ahead of any turn; one that fails is logged, and the next period tries again.
func (a *App) keepAlive(instances *redisstore.Instances, instance string, lostAfter time.Duration) {
	ttl, period := turns.Heartbeat(lostAfter)
	beat := func() {
		ctx, cancel := context.WithTimeout(context.Background(), period)
		defer cancel()
		if err := instances.Beat(ctx, instance, ttl); err != nil {
			a.log.Warn().Err(err).Str("instance", instance).Msg("cannot keep this instance alive in Redis; other instances will find its running turns lost")
		}
	}
	beat()
	stop := every(period, beat)
	a.closers = append(a.closers, func() {
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := instances.Leave(ctx, instance); err != nil {
			a.log.Warn().Err(err).Str("instance", instance).Msg("cannot remove this instance from Redis; it is found dead once its key expires")
		}
	})
}

// every calls f every period on a goroutine of its own until the returned stop is called; stop
// returns once f is no longer running.
func every(period time.Duration, f func()) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				f()
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// redis returns the configured Redis client, or an embedded one when none is configured.
func (a *App) redis() (redis.UniversalClient, error) {
	if a.cfg.RedisURL == "" && a.cfg.DataDir != "" {
		return a.savedRedis()
	}
	if a.cfg.RedisURL == "" {
		client, stop, err := redisstore.Embedded()
		if err != nil {
			return nil, fmt.Errorf("starting the embedded Redis: %w", err)
		}
		a.closers = append(a.closers, stop)
		a.log.Warn().Msg("REDIS_URL is not set and COACH_DATA_DIR is off: sessions live in an embedded in-process Redis and are lost on exit")
		return client, nil
	}
	client, err := redisstore.Open(a.cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	a.closers = append(a.closers, func() { _ = client.Close() })
	return client, nil
}

// readerConns is the pool of the turn log's readers: each distinct turn resumed on this
// instance holds one of them while its one reader blocks (turns.Turns.Follow). More turns
// followed at once than this share them, each read waiting for a connection up to the pool's
// timeout, which is longer than a read's block; a resumer whose wait runs out has its response
// ended and resumes with ?after=N. The store's own pool, and readiness, are never touched.
const readerConns = 16

// probeConns is the pool of the readiness probe: /readyz asks at most once per ReadyEvery
// however often it is called, so one connection serves it.
const probeConns = 1

// pool returns a second client of the store's Redis (client) with a pool of its own of size
// connections, for what must not share the store's pool (see redisstore.OpenPool); what names
// what it is for in an error.
func (a *App) pool(client redis.UniversalClient, size int, what string) (redis.UniversalClient, error) {
	var c redis.UniversalClient
	var err error
	if a.cfg.RedisURL == "" {
		c, err = redisstore.PoolOf(client, size)
	} else {
		c, err = redisstore.OpenPool(a.cfg.RedisURL, size)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	a.closers = append(a.closers, func() { _ = c.Close() })
	return c, nil
}

// tracer returns the tracer of the engine's spans when OpenTelemetry's variables ask for traces,
// else nil; Close flushes the spans still buffered.
func (a *App) tracer(ctx context.Context) (trace.Tracer, error) {
	tracer, shutdown, err := tracing.New(ctx, tracing.Settings{
		Exporter: a.cfg.TracesExporter, Endpoint: a.cfg.OTLPEndpoint, Protocol: a.cfg.OTLPProtocol,
	})
	if err != nil {
		return nil, err
	}
	if tracer != nil {
		a.log.Info().Str("endpoint", config.MaskURL(a.cfg.OTLPEndpoint)).Msg("tracing turns to OTLP")
	}
	a.closers = append(a.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			a.log.Warn().Err(err).Msg("flushing the last spans")
		}
	})
	return tracer, nil
}

// budget returns the engine's token budget per tenant, or nil when no tenant has one, so that
// turns then claim their session without reading the tenant's counters.
func budget(cfg config.Config) func(string) int64 {
	if cfg.TokenBudgetDaily <= 0 && len(cfg.TokenBudgets) == 0 {
		return nil
	}
	return cfg.TokenBudget
}

// savedRedis starts the embedded Redis kept in COACH_DATA_DIR: loaded now, saved every
// COACH_SAVE_INTERVAL and once more when the App closes, after the server has stopped. A saved
// file that cannot be read is reported and set aside, never fatal.
func (a *App) savedRedis() (redis.UniversalClient, error) {
	path := filepath.Join(a.cfg.DataDir, redisstore.SnapshotFile)
	saved, client, rep, err := redisstore.StartSaved(path)
	if err != nil {
		return nil, fmt.Errorf("starting the embedded Redis: %w", err)
	}
	log := a.log.With().Str("path", path).Logger()
	if rep.Tightened != 0 {
		log.Warn().Str("was", rep.Tightened.String()).Msg("COACH_DATA_DIR was open to other users: tightened to 0700, since the saved sessions hold learners' text")
	}
	if rep.Loose != nil {
		log.Error().Err(rep.Loose).Msg("COACH_DATA_DIR is open to other users and was left so")
	}
	if rep.StaleTemps > 0 {
		log.Info().Int("files", rep.StaleTemps).Msg("removed the temporary files of saves that never finished")
	}
	switch {
	case rep.Problem != nil && rep.SetAside != "":
		log.Error().Err(rep.Problem).Str("set_aside", rep.SetAside).
			Msg("the saved embedded Redis could not be read: it was renamed and kept, and the gateway starts without the sessions it held")
	case rep.Problem != nil:
		log.Error().Err(rep.Problem).
			Msg("the saved embedded Redis could not be read nor renamed: it is left as it is, and this run's sessions will not be saved over it")
	case rep.Found:
		log.Info().Int("keys", rep.Keys).Int("expired", rep.Expired).Int("skipped", rep.Skipped).Time("saved_at", rep.SavedAt).
			Msg("loaded the saved embedded Redis")
	}
	if rep.Unwritable != nil {
		log.Error().Err(rep.Unwritable).
			Msgf("REDIS_URL is not set: sessions live in an embedded in-process Redis, which cannot be saved to %s: they are lost on exit unless that changes (COACH_DATA_DIR)", path)
	} else {
		log.Warn().Dur("save_interval", a.cfg.SaveInterval).
			Msgf("REDIS_URL is not set: sessions live in an embedded in-process Redis, saved to %s every %s and at shutdown (COACH_DATA_DIR, COACH_SAVE_INTERVAL)", path, a.cfg.SaveInterval)
	}

	save := func(what string, done zerolog.Level) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rep, err := saved.Save(ctx)
		switch {
		case err != nil:
			log.Error().Err(err).Msg(what + ": saving the embedded Redis failed")
		case rep.Unsaved > 0:
			log.Warn().Int("keys", rep.Keys).Int("unsaved", rep.Unsaved).Msg(what + ": saved the embedded Redis, leaving out keys of a type it cannot save")
		default:
			log.WithLevel(done).Int("keys", rep.Keys).Bool("unchanged", rep.Unchanged).Msg(what + ": saved the embedded Redis")
		}
	}
	stop := every(a.cfg.SaveInterval, func() { save("periodic save", zerolog.DebugLevel) })
	a.closers = append(a.closers, func() {
		stop()
		save("shutdown", zerolog.InfoLevel)
		saved.Close()
	})
	return client, nil
}

// upstream is a configured model endpoint: the engine's view of it and where it listens.
type upstream struct {
	coach.Upstream
	baseURL string
	// apiKey is the endpoint's key, for the safety judge that runs on the first endpoint.
	apiKey string
}

// models builds the clients of the configured model endpoints: those of COACH_UPSTREAMS (or
// its file) in their order, or else the one of OPENAI_BASE_URL, or else the embedded replay
// model served on a loopback port, so that all of them go through the same client code.
func (a *App) models(m *metrics.Metrics) error {
	format, err := openai.ParseFormat(a.cfg.ResponseFormat)
	if err != nil {
		return err
	}
	if len(a.cfg.Upstreams) == 0 {
		cfg := openai.Config{
			BaseURL: a.cfg.OpenAIBaseURL, APIKey: a.cfg.OpenAIAPIKey, Model: a.cfg.Model,
			Format: format, ConnectTimeout: a.cfg.ConnectTimeout, OnDowngrade: a.downgraded(m),
			DowngradeTTL: a.cfg.DowngradeTTL, OnMisconfigured: a.misconfigured,
		}
		name := "default"
		if cfg.BaseURL == "" {
			_, base, stop, err := fakellm.Start(fakellm.Options{
				DelayMin: a.cfg.ReplayDelayMin, DelayMax: a.cfg.ReplayDelayMax,
				Responder: replay.Responder(), Model: "coachgw-replay", Log: a.log.With().Str("component", "replay").Logger(),
			})
			if err != nil {
				return fmt.Errorf("starting the embedded replay model: %w", err)
			}
			a.closers = append(a.closers, stop)
			a.log.Warn().Str("url", base).Msg("OPENAI_BASE_URL is not set: answering with the embedded replay model")
			cfg.BaseURL, cfg.APIKey, cfg.Model, name = base, "", "coachgw-replay", "replay"
		}
		cfg.Name = name
		return a.addUpstream(name, "openai", cfg)
	}
	for _, u := range a.cfg.Upstreams {
		profile := u.Profile
		if profile == "" {
			profile = openai.GenericProfile
		}
		cfg := openai.Config{
			Name: u.Name, BaseURL: u.BaseURL, APIKey: u.APIKey, Model: u.Model,
			Profile: profile, ToolChoice: u.ToolChoice, ResponseFormat: u.ResponseFormat, IncludeUsage: u.IncludeUsage,
			ConnectTimeout: a.cfg.ConnectTimeout, OnDowngrade: a.downgraded(m),
			DowngradeTTL: a.cfg.DowngradeTTL, OnMisconfigured: a.misconfigured, MaxCompletionTokens: u.MaxCompletionTokens,
		}
		if err := a.addUpstream(u.Name, genAISystem(u.Profile), cfg); err != nil {
			return fmt.Errorf("upstream %s: %w", u.Name, err)
		}
		a.upstreams[len(a.upstreams)-1].ContextWindow = a.contextWindow(u)
	}
	return nil
}

// contextWindow returns the context window of a model endpoint: its entry's contextWindow, or
// for a llama-server (profile llamacpp) the n_ctx its GET /props reports, asked once at start
// within the connect timeout; 0 when neither says. The start log says which it is.
func (a *App) contextWindow(u config.Upstream) int {
	n, source := u.ContextWindow, "contextWindow"
	if n == 0 && u.Profile == "llamacpp" {
		ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ConnectTimeout)
		defer cancel()
		var err error
		if n, err = openai.ContextWindow(ctx, http.DefaultClient, u.BaseURL, u.APIKey); err != nil {
			a.log.Warn().Str("upstream", u.Name).Err(err).
				Msg("the model endpoint's context window is unknown: a request too long for it is retried after its refusal")
			return 0
		}
		source = "props"
	}
	if n > 0 {
		a.log.Info().Str("upstream", u.Name).Int("contextWindow", n).Str("from", source).Msg("model endpoint: its context window")
	}
	return n
}

// downgraded returns the OnDowngrade of a model endpoint's openai.Config: a warning, since
// the endpoint's profile promised more than it takes, and a metric.
func (a *App) downgraded(m *metrics.Metrics) func(openai.Downgrade) {
	return func(d openai.Downgrade) {
		a.log.Warn().Str("upstream", d.Endpoint).Str("setting", d.Setting).Str("from", d.From).Str("to", d.To).
			Str("reason", d.Reason).Msg("the model endpoint rejected a request setting; it gets the weaker form from now on")
		m.Downgraded(d.Endpoint, d.Setting, d.To)
	}
}

// misconfigured is the OnMisconfigured of every model endpoint: an error, once per endpoint
// and problem, since the endpoint fails every such request until its operator restarts it.
func (a *App) misconfigured(mc openai.Misconfiguration) {
	a.log.Error().Str("upstream", mc.Endpoint).Str("problem", mc.Problem).Str("fix", mc.Fix).
		Msg("the model endpoint's server must be started differently; its requests fail until it is")
}

// addUpstream checks cfg and adds its client as the next upstream.
func (a *App) addUpstream(name, system string, cfg openai.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	client := openai.New(cfg)
	// The global deadlines are logged with the configuration; an endpoint whose profile needs
	// longer ones (a local server reading a long prompt) gets these instead, which an operator
	// judging its timeouts needs to see.
	firstByte, idle := client.Deadlines()
	a.log.Info().Str("upstream", name).Str("profile", cfg.Profile).
		Dur("firstByteTimeout", max(a.cfg.FirstByteTimeout, firstByte)).Dur("idleTimeout", max(a.cfg.IdleTimeout, idle)).
		Msg("model endpoint: its effective deadlines")
	if !client.AsksUsage() {
		a.log.Info().Str("upstream", name).
			Msg("this model endpoint is not asked for its token usage: its tokens are estimated from bytes (one per 4 bytes sent and received)")
	}
	a.upstreams = append(a.upstreams, upstream{
		Upstream: coach.Upstream{Name: name, Model: client, ModelName: cfg.Model, System: system},
		baseURL:  cfg.BaseURL,
		apiKey:   cfg.APIKey,
	})
	return nil
}

// genAISystem names the provider family of a profile as OpenTelemetry's gen_ai.system does.
func genAISystem(profile string) string {
	switch profile {
	case "openai":
		return "openai"
	case "anthropic-openai":
		return "anthropic"
	case "gemini-openai":
		return "gemini"
	case "ollama", "vllm", "llamacpp", "lmstudio":
		return profile
	default:
		return "_OTHER"
	}
}

// ready reports whether this instance can serve: whether its Redis answers. The model
// endpoints' circuits are not asked (v1.2): they are shared by every instance, so a load
// balancer that took them for this instance's health would pull every pod at once, and a turn
// still reaches an endpoint whose circuit is open (panic mode). Nor is any endpoint dialled:
// /readyz is unauthenticated, and must not turn its callers into connections to the model.
func (a *App) ready(ctx context.Context) error {
	if err := a.store.Ping(ctx); err != nil {
		return errors.New("redis does not answer")
	}
	return nil
}

// upstreamStates returns each model endpoint's circuit state for /readyz.
func (a *App) upstreamStates() []httpapi.UpstreamState {
	states := a.breaker.States()
	out := make([]httpapi.UpstreamState, len(states))
	for i, c := range states {
		out[i] = httpapi.UpstreamState{Name: c.Name, State: string(c.State)}
	}
	return out
}

// Handler returns the gateway's HTTP handler.
func (a *App) Handler() http.Handler { return a.api.Handler() }

// Serve answers requests on ln until ctx is done, then shuts down gracefully: readiness fails
// first, no new turn is accepted, open streams may finish until 80% of the shutdown timeout
// and are then ended with a shutting_down error line, and the server closes.
//
// What a client can hold before it is authenticated is bounded: a header of at most
// COACH_MAX_HEADER_BYTES (net/http answers 431 past it and closes; its default, 1 MB, let 400
// connections of unfinished headers take 460 MB), sent within ReadHeaderTimeout, on one of at
// most COACH_MAX_CONNS connections, at most COACH_MAX_CONNS_PER_CLIENT of them from one client
// address. At the cap the longest-idle connection is closed for a new one, which waits only
// while every connection serves a request (see connlimit), so /healthz and /readyz stay
// reachable under any connection flood.
func (a *App) Serve(ctx context.Context, ln net.Listener) error {
	limited := connlimit.New(ln, a.cfg.MaxConns, a.cfg.MaxConnsPerClient)
	srv := &http.Server{
		Handler:           a.api.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    a.cfg.MaxHeaderBytes,
		ConnState:         limited.ConnState,
	}
	ln = limited
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	a.log.Info().Str("addr", ln.Addr().String()).Msg("listening")

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.log.Info().Int("open_streams", a.api.OpenStreams()).Dur("timeout", a.cfg.ShutdownTimeout).Msg("shutting down: draining open streams")
	a.api.StartDrain()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	streamsCtx, cancelStreams := context.WithTimeout(shutdownCtx, a.cfg.ShutdownTimeout*8/10)
	defer cancelStreams()
	// Shutdown closes the listener and waits for the open streams to finish on their own. At
	// the drain deadline the streams still open are ended, and a second Shutdown waits for
	// their last lines: its idle-connection polling starts over at a millisecond, where the
	// first one's has slowed to half a second and would outlast the shutdown timeout.
	if err := srv.Shutdown(streamsCtx); err != nil {
		if n := a.api.OpenStreams(); n > 0 {
			a.log.Warn().Int("open_streams", n).Msg("drain deadline: ending open streams")
		}
		a.api.EndStreams(shutdownCtx)
		if err := srv.Shutdown(shutdownCtx); err != nil {
			a.log.Error().Err(err).Msg("shutdown deadline passed with connections still open")
			_ = srv.Close()
		}
	}
	a.log.Info().Msg("stopped")
	return nil
}

// Close releases what New started.
func (a *App) Close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// moduleCatalog serves the module registry to the HTTP layer.
type moduleCatalog struct{ reg *module.Registry }

func (m moduleCatalog) Summaries() any { return m.reg.List() }

func (m moduleCatalog) Definition(id string) (any, bool) {
	mod, ok := m.reg.Get(id)
	return mod, ok
}
