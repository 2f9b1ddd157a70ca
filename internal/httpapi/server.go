// Package httpapi is the gateway's HTTP adapter: the routes of api/openapi.yaml on Echo, the
// NDJSON stream of a turn, request ids and access logs, and the one mapping from domain errors to
// HTTP statuses.
package httpapi

import (
	"context"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
	"github.com/coachgw/coachgw/internal/turns"
)

// Modules lists the loaded learning modules for the /v1/modules routes.
type Modules interface {
	// Summaries returns the JSON-ready list of loaded modules.
	Summaries() any
	// Definition returns the JSON-ready definition of module id.
	Definition(id string) (any, bool)
}

// Deps is what the Server needs.
type Deps struct {
	Service *coach.Service
	Modules Modules
	// Ready reports whether this instance can serve (its state store answers). /readyz asks it
	// at most once per ReadyEvery and shares the outcome.
	Ready func(ctx context.Context) error
	// Upstreams, when set, lists the model endpoints' circuit states in /readyz's body, for
	// information: they do not change its status.
	Upstreams func() []UpstreamState
	// Metrics serves /metrics; nil leaves the route out.
	Metrics http.Handler
	// UI, when set, serves the reference ChatPanel at / and /static/, and the JavaScript
	// client's modules at /client/.
	UI http.Handler
	// ObserveHTTP, when set, is told every request's route template, status and duration.
	ObserveHTTP func(method, route string, status int, d time.Duration)
	Log         zerolog.Logger
	// MaxBodyBytes bounds request bodies; MaxMessageChars bounds a turn's message.
	MaxBodyBytes    int64
	MaxMessageChars int
	// BodyReadTimeout bounds how long a request's body may take to arrive (see readBody), and
	// WriteTimeout how long after that an answer may take to be written (see requestContext);
	// a turn's stream has the turn's own deadline instead (see runTurn).
	BodyReadTimeout time.Duration
	WriteTimeout    time.Duration
	// APIKeys are the clients' keys (see auth.go); none leaves the API open, for tenant "".
	APIKeys []APIKey
	// CORSOrigins are the browser origins allowed to call the API; none sends no CORS headers.
	CORSOrigins []string
	// Limiter and RateLimit bound each tenant's requests that start a session or a turn to
	// RateLimit a minute (see ratelimit.go); a nil Limiter or a RateLimit of 0 turns that off.
	Limiter   Limiter
	RateLimit int
	// SessionRateLimit bounds the sessions each API key (each learner reference, when one is
	// given; each client address without API keys) creates a minute (see sessionlimit.go); 0
	// turns that off.
	SessionRateLimit int
	// TurnRateLimit bounds the turns each session, and each learner reference of a tenant,
	// takes a minute (see turnlimit.go); 0 turns that off.
	TurnRateLimit int
	// Turns runs the turns of this instance: their admission per tenant, their logs for
	// resume, their stops and what a client's leaving does to them; nil runs turns without a
	// log or a bound per tenant, to their end.
	Turns *turns.Turns
	// SafetyEvents reads the tenants' safety audit for GET /v1/safety/events (v1.3, operator
	// keys only); nil leaves the route out.
	SafetyEvents SafetyEvents
}

// SafetyEvents reads a tenant's safety audit records.
type SafetyEvents interface {
	// SafetyEvents returns up to limit records of tenant after the record whose ID is after
	// ("" for the oldest kept), oldest first, and the cursor of the next page (the last record's
	// ID, or after itself when there is nothing newer). A malformed after is an invalid_input
	// error on field "after".
	SafetyEvents(ctx context.Context, tenant, after string, limit int) ([]safety.Record, string, error)
}

// DefaultBodyReadTimeout and DefaultWriteTimeout are the defaults of Deps.BodyReadTimeout and
// Deps.WriteTimeout.
const (
	DefaultBodyReadTimeout = 15 * time.Second
	DefaultWriteTimeout    = 30 * time.Second
)

// Server serves the gateway's API.
type Server struct {
	deps Deps
	echo *echo.Echo

	draining atomic.Bool
	open     atomic.Int64
	streams  sync.WaitGroup
	// ready caches Deps.Ready.
	ready *readiness
	// drain is cancelled when open streams must end; turns watch it.
	drain       context.Context
	cancelDrain context.CancelFunc
}

// New returns a Server with every route registered.
func New(d Deps) *Server {
	if d.MaxBodyBytes <= 0 {
		d.MaxBodyBytes = 64 << 10
	}
	if d.MaxMessageChars <= 0 {
		d.MaxMessageChars = 8000
	}
	if d.BodyReadTimeout <= 0 {
		d.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if d.WriteTimeout <= 0 {
		d.WriteTimeout = DefaultWriteTimeout
	}
	if d.Turns == nil {
		d.Turns = turns.New(turns.Config{})
	}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	s := &Server{deps: d, echo: e}
	if d.Ready != nil {
		s.ready = &readiness{check: d.Ready, now: time.Now}
	}
	s.drain, s.cancelDrain = context.WithCancel(context.Background())
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.requestContext, s.readBody)
	if mw := cors(d.CORSOrigins); mw != nil {
		e.Use(mw)
	}
	e.Use(s.authenticate, s.rateLimit)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	if d.Metrics != nil {
		e.GET("/metrics", echo.WrapHandler(d.Metrics))
	}
	v1 := e.Group("/v1")
	v1.POST("/sessions", s.createSession)
	v1.GET("/sessions/:id", s.getSession)
	v1.DELETE("/sessions/:id", s.deleteSession)
	v1.PUT("/sessions/:id/draft", s.putDraft)
	v1.POST("/sessions/:id/proposal", s.postProposal)
	v1.POST("/sessions/:id/turns", s.postTurn)
	v1.POST("/sessions/:id/chat", s.postChat)
	v1.GET("/sessions/:id/messages", s.getMessages)
	v1.GET("/sessions/:id/turns/current", s.getCurrentTurn)
	v1.DELETE("/sessions/:id/turns/current", s.deleteCurrentTurn)
	v1.GET("/sessions/:id/chat/stream", s.getChatStream)
	v1.GET("/sessions/:id/chat/messages", s.getChatMessages)
	v1.POST("/sessions/:id/safety", s.postSafety, operatorOnly)
	if d.SafetyEvents != nil {
		v1.GET("/safety/events", s.getSafetyEvents, operatorOnly)
	}
	v1.GET("/learners/:ref/export", s.getLearnerExport, operatorOnly)
	v1.DELETE("/learners/:ref", s.deleteLearner, operatorOnly)
	v1.GET("/modules", s.listModules)
	v1.GET("/modules/:id", s.getModule)
	e.POST("/api/coach", s.postCoach)
	if d.UI != nil {
		ui := echo.WrapHandler(d.UI)
		read := []string{http.MethodGet, http.MethodHead}
		e.Match(read, "/", ui)
		e.Match(read, "/index.html", ui)
		e.Match(read, "/static/*", ui)
		e.Match(read, "/client/*", ui)
	}
	return s
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return s.echo }

// OpenStreams returns how many turn streams are open.
func (s *Server) OpenStreams() int { return int(s.open.Load()) }

// StartDrain makes /readyz fail and refuses new turns, so a load balancer stops sending them
// while the open ones finish.
func (s *Server) StartDrain() { s.draining.Store(true) }

// EndStreams ends every open turn with a shutting_down error line and waits for them to finish
// writing, or for ctx.
func (s *Server) EndStreams(ctx context.Context) {
	s.cancelDrain()
	done := make(chan struct{})
	go func() { s.streams.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

type ctxKey int

const (
	tenantKey ctxKey = iota
	// operatorKey holds whether the request's key is an operator key of its tenant (a bool).
	operatorKey
	// keyIDKey holds the id of the request's key (KeyID, a string).
	keyIDKey
)

var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// requestContext gives every request an id (the caller's X-Request-Id when it is sane), a logger
// that carries it, and one access log line.
func (s *Server) requestContext(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		req := c.Request()
		id := req.Header.Get(echo.HeaderXRequestID)
		if !requestIDPattern.MatchString(id) {
			id = coach.NewID()[:16]
		}
		h := c.Response().Header()
		h.Set(echo.HeaderXRequestID, id)
		// Every answer is typed (JSON, NDJSON, the UI's own files): never let a browser guess.
		h.Set(echo.HeaderXContentTypeOptions, "nosniff")
		log := s.deps.Log.With().Str("request_id", id).Logger()
		c.SetRequest(req.WithContext(log.WithContext(req.Context())))
		// A client that never reads must not hold a handler, and what it holds, for ever: every
		// answer is written by a deadline (a turn's stream moves it to the turn's own). It is
		// left in place after the answer, so that net/http's last flush is bounded too; the
		// next request on the connection sets its own.
		_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(start.Add(s.deps.BodyReadTimeout + s.deps.WriteTimeout))

		err := next(c)
		if err != nil {
			c.Error(err)
		}
		if s.deps.ObserveHTTP != nil {
			// The route template, never the path, so session ids do not become labels.
			s.deps.ObserveHTTP(req.Method, c.Path(), c.Response().Status, time.Since(start))
		}
		// The path as a client sent it may be as long as the header limit: clipped like echoed input.
		log.Info().Str("method", req.Method).Str("path", loggedPath(c)).
			Int("status", c.Response().Status).Int64("bytes", c.Response().Size).
			Dur("duration", time.Since(start)).Msg("request")
		return nil
	}
}

func logger(c echo.Context) *zerolog.Logger { return zerolog.Ctx(c.Request().Context()) }

// tenant returns the tenant the request acts for.
func tenant(c echo.Context) string {
	t, _ := c.Request().Context().Value(tenantKey).(string)
	return t
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// UpstreamState is a model endpoint's circuit as /readyz lists it, for information only: the
// circuits never make this instance unready (their states are in /metrics).
type UpstreamState struct {
	Name string `json:"name"`
	// State is "closed", "open" or "half-open".
	State string `json:"state"`
}

// readyBody is /readyz's answer: the status, or the error of errorBody, and the circuits.
type readyBody struct {
	Status    string          `json:"status,omitempty"`
	Error     string          `json:"error,omitempty"`
	Message   string          `json:"message,omitempty"`
	Upstreams []UpstreamState `json:"upstreams,omitempty"`
}

func (s *Server) readyz(c echo.Context) error {
	if s.draining.Load() {
		return newHTTPError(http.StatusServiceUnavailable, coach.CodeShuttingDown, "the gateway is shutting down")
	}
	var body readyBody
	if s.deps.Upstreams != nil {
		body.Upstreams = s.deps.Upstreams()
	}
	if s.ready != nil {
		if err := s.ready.get(); err != nil {
			body.Error, body.Message = "not_ready", err.Error()
			return c.JSON(http.StatusServiceUnavailable, body)
		}
	}
	body.Status = "ready"
	return c.JSON(http.StatusOK, body)
}
