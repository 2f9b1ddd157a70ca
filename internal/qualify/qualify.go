// Package qualify owns `coachgw qualify`: judging a model endpoint before learners are pointed at
// it. For each configured endpoint alone it starts a gateway in this process, built as coachgw
// builds itself but with that one endpoint, drives scripted learner sessions of every contract in
// English and Spanish through it, and reports per contract and endpoint what the learners got
// (results, fallbacks, empty answers, errors), what it took (corrective retries, transport
// retries, resets, guard firings, tokens) and how long (first delta and whole turn, p50 and p95).
// What a learner cannot see on the wire (guard firings, retries, tokens of failed attempts) is
// read from the engine's own turn reports, through the gateway's observer.
package qualify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/app"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/replay"
	"github.com/coachgw/coachgw/pkg/coachclient"
)

// Contracts and Locales are what a run covers unless told otherwise.
var (
	Contracts = []string{"toulmin", "cards", "module"}
	Locales   = []string{"en", "es"}
)

// Options configure a run.
type Options struct {
	// Config is the gateway's configuration as coachgw loads it from the environment; its model
	// endpoints are the ones judged.
	Config config.Config
	// Endpoints, when set, limits the run to the endpoints of these names.
	Endpoints []string
	// Contracts and Locales default to the package's.
	Contracts []string
	Locales   []string
	// Sessions is the number of sessions per contract and locale; Turns the turns of each.
	Sessions, Turns int
	// Module is the learning module of module sessions (default: the first one listed).
	Module string
	// RecordDir, when set, receives the wire of every model call: <endpoint>/<contract>-<locale>-
	// s<session>-t<turn>-<call>.sse with its .request.json, in testdata/streams's format.
	RecordDir string
}

// Endpoint is one model endpoint to judge: the name coachgw gives it, and the configuration of
// a gateway that has it alone.
type Endpoint struct {
	Name string
	cfg  config.Config
	// base is the endpoint's base URL; empty for the embedded replay model.
	base string
}

// Endpoints returns the endpoints of cfg as coachgw would use them: each of COACH_UPSTREAMS, or
// else the one of OPENAI_BASE_URL, or else the embedded replay model. Each gets a gateway
// configuration of its own, whose state lives under a key prefix of this run (so a shared Redis
// keeps it apart from live sessions and live circuits), is not saved to disk, is not traced and
// has no API keys, rate limit or token budget of its own.
func Endpoints(cfg config.Config, run string) []Endpoint {
	cfg.RedisPrefix += ":qualify:" + run
	cfg.DataDir = ""
	cfg.APIKeys, cfg.RateLimit, cfg.CORSOrigins = nil, 0, nil
	cfg.TokenBudgetDaily, cfg.TokenBudgets = 0, nil
	cfg.TracesExporter, cfg.OTLPEndpoint = "", ""
	if len(cfg.Upstreams) == 0 {
		name := "default"
		if cfg.OpenAIBaseURL == "" {
			name = "replay"
		}
		return []Endpoint{{Name: name, cfg: cfg, base: cfg.OpenAIBaseURL}}
	}
	eps := make([]Endpoint, len(cfg.Upstreams))
	for i, u := range cfg.Upstreams {
		c := cfg
		c.Upstreams = []config.Upstream{u}
		eps[i] = Endpoint{Name: u.Name, cfg: c, base: u.BaseURL}
	}
	return eps
}

// Run judges every endpoint in turn and returns the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if len(opts.Contracts) == 0 {
		opts.Contracts = Contracts
	}
	if len(opts.Locales) == 0 {
		opts.Locales = Locales
	}
	opts.Sessions, opts.Turns = max(opts.Sessions, 1), max(opts.Turns, 1)
	eps := Endpoints(opts.Config, runID())
	if len(opts.Endpoints) > 0 {
		eps = slices.DeleteFunc(eps, func(e Endpoint) bool { return !slices.Contains(opts.Endpoints, e.Name) })
		if len(eps) == 0 {
			return nil, fmt.Errorf("no configured endpoint is named %v", opts.Endpoints)
		}
	}
	rep := &Report{Contracts: opts.Contracts, Locales: opts.Locales, Sessions: opts.Sessions, Turns: opts.Turns}
	for _, ep := range eps {
		er, err := judge(ctx, ep, opts)
		if err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", ep.Name, err)
		}
		rep.Endpoints = append(rep.Endpoints, *er)
	}
	return rep, nil
}

// runID names one run's keys.
func runID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// judge runs the sessions of every contract and locale against one endpoint's own gateway.
func judge(ctx context.Context, ep Endpoint, opts Options) (*EndpointReport, error) {
	cfg := ep.cfg
	var rec *recorder
	if opts.RecordDir != "" {
		var err error
		if rec, err = startRecorder(ep, filepath.Join(opts.RecordDir, ep.Name), cfg); err != nil {
			return nil, err
		}
		defer rec.stop()
		cfg = rec.cfg
	}
	errs := &errorLog{}
	obs := newTally()
	log := zerolog.New(errs).Level(zerolog.ErrorLevel).With().Timestamp().Logger()
	a, err := app.New(ctx, cfg, log, app.WithObserver(obs.wrap))
	if err != nil {
		return nil, err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- a.Serve(sctx, ln) }()
	defer func() {
		stop()
		<-served
	}()
	c := coachclient.New("http://" + ln.Addr().String())

	module := opts.Module
	if module == "" && slices.Contains(opts.Contracts, "module") {
		if module, err = firstModule(ctx, "http://"+ln.Addr().String()); err != nil {
			return nil, err
		}
	}
	var turns []Turn
	for _, contract := range opts.Contracts {
		for _, locale := range opts.Locales {
			for s := range opts.Sessions {
				got, err := session(ctx, c, contract, locale, module, s, opts.Turns, rec)
				turns = append(turns, got...)
				if err != nil {
					return nil, fmt.Errorf("%s session in %s: %w", contract, locale, err)
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	er := &EndpointReport{Name: ep.Name, GatewayErrors: errs.messages()}
	for _, contract := range opts.Contracts {
		er.Rows = append(er.Rows, summarize(ep.Name, contract, turns, obs.of(contract)))
	}
	if rec != nil {
		er.Recorded = rec.count
	}
	return er, nil
}

// session plays one scripted session of contract and returns its turns. Its error is a failure
// of the learner's own side (creating the session, a proposal decision, a card it cannot read);
// what the model did is in the turns.
func session(ctx context.Context, c *coachclient.Client, contract, locale, module string, n, turns int, rec *recorder) ([]Turn, error) {
	req := coachclient.CreateSessionRequest{Contract: contract, Locale: locale}
	if contract == "module" {
		req.Module = module
	}
	sess, err := c.CreateSession(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("creating the session: %w", err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = c.DeleteSession(dctx, sess.ID)
	}()
	l, err := newLearner(c, contract, locale, n)
	if err != nil {
		return nil, err
	}
	var out []Turn
	var last []byte
	for i := range turns {
		in, more, err := l.next(ctx, sess, last)
		if err != nil || !more {
			return out, err
		}
		t := take(ctx, c, sess, in)
		t.Contract, t.Locale = contract, locale
		if rec != nil {
			if err := rec.keep(fmt.Sprintf("%s-%s-s%02d-t%02d", contract, locale, n+1, i+1)); err != nil {
				return out, err
			}
		}
		out = append(out, t)
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if t.session == nil {
			// The turn failed and changed nothing: the learner says the same again, as one would.
			if sess, err = c.GetSession(ctx, sess.ID); err != nil {
				return out, fmt.Errorf("reading the session after a failed turn: %w", err)
			}
			continue
		}
		sess, last = t.session, t.result
	}
	return out, nil
}

// firstModule returns the id of the first learning module the gateway lists.
func firstModule(ctx context.Context, base string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/modules", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var list []struct {
		ID string `json:"id"`
	}
	if err := decodeJSON(resp, &list); err != nil || len(list) == 0 {
		return "", fmt.Errorf("listing the learning modules: %v (%d listed)", err, len(list))
	}
	return list[0].ID, nil
}

// errorLog keeps the distinct messages of the gateway's error-level log lines, which name what
// an operator must fix (an endpoint's server flag, a Redis that does not answer).
type errorLog struct {
	mu   sync.Mutex
	seen []string
}

// maxGatewayErrors bounds the distinct messages kept.
const maxGatewayErrors = 20

func (l *errorLog) Write(p []byte) (int, error) {
	var line struct {
		Message string `json:"message"`
		Error   string `json:"error"`
		Problem string `json:"problem"`
		Fix     string `json:"fix"`
	}
	if err := json.Unmarshal(p, &line); err == nil && line.Message != "" {
		msg := line.Message
		if line.Error != "" {
			msg += ": " + line.Error
		}
		if line.Problem != "" {
			msg += " (" + line.Problem + ")"
		}
		if line.Fix != "" {
			msg += "; fix: " + line.Fix
		}
		l.mu.Lock()
		if !slices.Contains(l.seen, msg) && len(l.seen) < maxGatewayErrors {
			l.seen = append(l.seen, msg)
		}
		l.mu.Unlock()
	}
	return len(p), nil
}

func (l *errorLog) messages() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// recorder is a recording proxy in front of one endpoint (fakellm's Recording): the gateway
// calls it, it calls the endpoint, and each exchange is saved; keep names the files of the
// turn just taken.
type recorder struct {
	cfg          config.Config
	dir, staging string
	stopProxy    func()
	stopReplay   func()
	count        int
}

// startRecorder starts the proxy in front of ep and returns the recorder, whose cfg points the
// gateway at the proxy. The embedded replay model, which the gateway would start on its own, is
// started here so that it can stand behind the proxy.
func startRecorder(ep Endpoint, dir string, cfg config.Config) (*recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	staging, err := os.MkdirTemp(dir, ".staging-")
	if err != nil {
		return nil, err
	}
	r := &recorder{dir: dir, staging: staging, stopReplay: func() {}}
	base := ep.base
	if base == "" {
		_, base, r.stopReplay, err = fakellm.Start(fakellm.Options{
			DelayMin: cfg.ReplayDelayMin, DelayMax: cfg.ReplayDelayMax,
			Responder: replay.Responder(), Model: "coachgw-replay",
		})
		if err != nil {
			return nil, fmt.Errorf("starting the embedded replay model: %w", err)
		}
		cfg.Model = "coachgw-replay"
	}
	_, proxy, stop, err := fakellm.Start(fakellm.Options{Record: &fakellm.Recording{Upstream: base, Dir: staging}})
	if err != nil {
		r.stopReplay()
		return nil, err
	}
	r.stopProxy = stop
	if len(cfg.Upstreams) == 1 {
		cfg.Upstreams = slices.Clone(cfg.Upstreams)
		cfg.Upstreams[0].BaseURL = proxy
	} else {
		cfg.OpenAIBaseURL = proxy
	}
	r.cfg = cfg
	return r, nil
}

// keep moves the exchanges recorded since the last call to <name>-<call>.sse and
// <name>-<call>.request.json, in the order they were made.
func (r *recorder) keep(name string) error {
	entries, err := os.ReadDir(r.staging)
	if err != nil {
		return err
	}
	var calls []string
	for _, e := range entries {
		if base, ok := strings.CutSuffix(e.Name(), ".sse"); ok {
			calls = append(calls, base)
		}
	}
	slices.SortFunc(calls, byCall)
	for i, base := range calls {
		dst := filepath.Join(r.dir, fmt.Sprintf("%s-%d", name, i+1))
		for _, ext := range []string{".sse", ".request.json"} {
			if err := os.Rename(filepath.Join(r.staging, base+ext), dst+ext); err != nil {
				return err
			}
		}
		r.count++
	}
	return nil
}

// byCall orders recordings by the number fakellm gave the call, after the name's last "-".
func byCall(a, b string) int {
	return seqOf(a) - seqOf(b)
}

func seqOf(name string) int {
	n, _ := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
	return n
}

func (r *recorder) stop() {
	r.stopProxy()
	r.stopReplay()
	_ = os.RemoveAll(r.staging)
}

// decodeJSON reads a 200 answer's JSON body into out.
func decodeJSON(resp *http.Response, out any) error {
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}
