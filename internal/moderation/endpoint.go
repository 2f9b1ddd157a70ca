// Package moderation adapts remote content-moderation services to safety.Classifier, so that
// they run beside the built-in screen: an OpenAI-compatible /v1/moderations endpoint (New) and
// a guard model served as an OpenAI-compatible chat model, in Llama Guard 3's format
// (NewLlamaGuard3). Both speak HTTP, which is why they live here and not in internal/safety.
//
// Both go through the endpoint machinery of the gateway's model endpoints: the same HTTP client
// (outbound.NewClient, with COACH_CONNECT_TIMEOUT bounding the dial), every check bounded by
// a timeout (COACH_SAFETY_TIMEOUT), and a circuit breaker (internal/breaker) of its own, keyed
// by the classifier's identity, so that a classifier's outage never opens a model endpoint's
// circuit nor the other way round. While the circuit is open a check fails at once with an
// error wrapping safety.ErrUnavailable; the safety.Guard then applies COACH_SAFETY_FAILURE.
//
// A learner's text must never be able to open a circuit that every learner's checks share.
// Only the endpoint's own faults count as failures: no connection, a cut response, a 5xx or
// 408, a check that ran out of time. Every other answer, a 4xx or a body that does not parse,
// counts as the endpoint being healthy, because it answered: a 400 refusing a text for its
// content, or a guard model talked by a learner's text into writing something other than its
// verdict, is that one text's failure and fails that one check (an error, never a clean
// verdict), not the endpoint.
//
// Errors never carry the checked text, and never the body of an error response (which may
// echo it), nor the API key: they name the classifier, the status and the error type only.
package moderation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/breaker"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/openai"
	"github.com/coachgw/coachgw/internal/outbound"
	"github.com/coachgw/coachgw/internal/redact"
	"github.com/coachgw/coachgw/internal/safety"
)

// Defaults of Options.
const (
	// DefaultTimeout is COACH_SAFETY_TIMEOUT's default.
	DefaultTimeout = 2 * time.Second
	// maxBody bounds the body of an answer: a verdict is a few hundred bytes, so an endpoint
	// that sends more is broken, and is not read into memory without end.
	maxBody = 1 << 20
)

// Options configure a classifier.
type Options struct {
	// Name is the classifier's name in audit records and logs and its circuit's name (default
	// "moderation" for New, "llamaguard3" for NewLlamaGuard3). It should be the Name of the
	// safety.NamedClassifier the classifier is given to the Guard as.
	Name string
	// BaseURL is the endpoint's base URL, as OPENAI_BASE_URL ("https://host/v1"): New posts to
	// BaseURL + "/moderations", NewLlamaGuard3 to BaseURL + "/chat/completions". Required.
	BaseURL string
	// Model is the model asked for (COACH_MODERATION_MODEL, COACH_GUARD_MODEL).
	Model string
	// APIKey, when set, is sent as the bearer token. It is never logged nor put in an error.
	APIKey string
	// HTTPClient, when set, carries the requests; when nil the classifier builds one with
	// outbound.NewClient(ConnectTimeout), as the model endpoints do.
	HTTPClient *http.Client
	// ConnectTimeout bounds dialing (default openai.DefaultConnectTimeout) when HTTPClient is nil.
	ConnectTimeout time.Duration
	// Timeout bounds each check (default DefaultTimeout), whatever the caller's context says;
	// a safety.Guard bounds it too, with COACH_SAFETY_TIMEOUT.
	Timeout time.Duration
	// Breaker configures the classifier's circuit, as COACH_BREAKER_* configure the model
	// endpoints'. Zero Failures, FailureRate, Window or Cooldown take the gateway's defaults
	// (5, 50 %, 1m, 30s). OnPanic is not used: a classifier never sends a check through an open
	// circuit, since COACH_SAFETY_FAILURE already says what a check that cannot run counts as.
	Breaker breaker.Options
}

// endpoint is what both classifiers share: where to post, with which client, under which circuit.
type endpoint struct {
	name    string
	url     string
	model   string
	key     string
	hc      *http.Client
	scrub   redact.Scrubber
	timeout time.Duration
	breaker *breaker.Breaker
	// breakerID is the circuit's identity in a shared store.
	breakerID string
}

func newEndpoint(o Options, defaultName, path string) *endpoint {
	if o.Name == "" {
		o.Name = defaultName
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = openai.DefaultConnectTimeout
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = outbound.NewClient(o.ConnectTimeout)
	}
	bo := o.Breaker
	if bo.Failures <= 0 {
		bo.Failures = 5
	}
	if bo.FailureRate <= 0 {
		bo.FailureRate = 0.5
	}
	if bo.Window <= 0 {
		bo.Window = time.Minute
	}
	if bo.Cooldown <= 0 {
		bo.Cooldown = 30 * time.Second
	}
	bo.OnPanic = nil
	base := strings.TrimRight(o.BaseURL, "/")
	// The circuit's identity hashes the classifier's name, URL and model, so that on a shared
	// Redis it never meets a model endpoint's circuit (breaker.Identity).
	id := breaker.Identity(o.Name, base+path, o.Model)
	return &endpoint{
		name:      o.Name,
		url:       base + path,
		model:     o.Model,
		key:       o.APIKey,
		hc:        hc,
		scrub:     redact.NewScrubber(o.APIKey, o.BaseURL),
		timeout:   o.Timeout,
		breaker:   breaker.New([]breaker.Endpoint{{Name: o.Name, ID: id}}, bo),
		breakerID: id,
	}
}

// post sends req as JSON and returns the body of a 2xx answer. Every call the circuit allows is
// reported to it once, as the package comment says.
func (e *endpoint) post(ctx context.Context, req any) ([]byte, error) {
	if !e.breaker.Allow(e.name) {
		return nil, fmt.Errorf("%s: the circuit is open: %w", e.name, safety.ErrUnavailable)
	}
	health := coach.Inconclusive
	defer func() { e.breaker.Report(e.name, health, false) }()

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", e.name, err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, e.errorf("building the request", err)
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Accept", "application/json")
	if e.key != "" {
		hr.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.hc.Do(hr)
	if err != nil {
		health = transportHealth(parent)
		return nil, e.errorf("no answer", contextFirst(ctx, err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		health = transportHealth(parent)
		return nil, e.errorf("reading the answer", contextFirst(ctx, err))
	}
	if resp.StatusCode >= 500 || resp.StatusCode == http.StatusRequestTimeout {
		health = coach.Failed
		return nil, e.statusError(resp.StatusCode, data)
	}
	health = coach.Healthy
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, e.statusError(resp.StatusCode, data)
	}
	if len(data) > maxBody {
		return nil, fmt.Errorf("%s: the answer is longer than %d bytes", e.name, maxBody)
	}
	return data, nil
}

// transportHealth is what a request that got no full answer says of the endpoint: nothing when
// the caller gave up (the learner left), a failure otherwise (no connection, a cut answer, or
// no answer within the check's time).
func transportHealth(parent context.Context) coach.Verdict {
	if errors.Is(parent.Err(), context.Canceled) {
		return coach.Inconclusive
	}
	return coach.Failed
}

// contextFirst makes the context's error the one errors.Is finds first once it is done, so that
// a safety.Guard tells a timeout from another failure whatever the transport said.
func contextFirst(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w: %w", cerr, err)
	}
	return err
}

// statusError describes an answer that is not a verdict by its status and, when the body is an
// OpenAI error object, its type and code: never its message, which may quote the checked text.
func (e *endpoint) statusError(status int, body []byte) error {
	msg := fmt.Sprintf("%s: the endpoint answered %d", e.name, status)
	var er oai.ErrorResponse
	if json.Unmarshal(body, &er) == nil && er.Error != nil {
		kind := er.Error.Type
		if code, ok := er.Error.Code.(string); ok && code != "" {
			kind += "/" + code
		}
		if kind != "" {
			msg += " (" + redact.Excerpt(e.scrub.Scrub(kind), 64) + ")"
		}
	}
	return &statusErr{msg: msg, status: status}
}

// statusErr is an answer with a status other than 2xx.
type statusErr struct {
	msg    string
	status int
}

func (e *statusErr) Error() string { return e.msg }

// errorf wraps err, whose message is scrubbed of the key and the base URL's credentials (a
// transport error quotes the URL), keeping it for errors.Is.
func (e *endpoint) errorf(what string, err error) error {
	return &scrubbedErr{msg: fmt.Sprintf("%s: %s: %s", e.name, what, e.scrub.Scrub(redact.URL(err.Error()))), err: err}
}

type scrubbedErr struct {
	msg string
	err error
}

func (e *scrubbedErr) Error() string { return e.msg }
func (e *scrubbedErr) Unwrap() error { return e.err }

// Classifier is a remote classifier: a safety.Classifier with a circuit the wiring can watch and
// share. New and NewLlamaGuard3 return one. It is safe for concurrent use.
type Classifier struct {
	ep *endpoint
	// request is the body sent to check t.
	request func(t safety.Text) any
	// verdict reads the body of a 2xx answer; an error means it holds no verdict.
	verdict func(stage safety.Stage, body []byte) (safety.Verdict, error)
}

var _ safety.Classifier = (*Classifier)(nil)

// Check checks one text. An empty text is clean without a request; otherwise an error means
// the text was not checked, and is never returned with a verdict.
func (c *Classifier) Check(ctx context.Context, t safety.Text) (safety.Verdict, error) {
	if strings.TrimSpace(t.Content) == "" {
		return safety.Verdict{}, nil
	}
	if t.Stage != safety.StageInput && t.Stage != safety.StageOutput {
		return safety.Verdict{}, fmt.Errorf("%s: unknown stage %q", c.ep.name, t.Stage)
	}
	body, err := c.ep.post(ctx, c.request(t))
	if err != nil {
		return safety.Verdict{}, err
	}
	v, err := c.verdict(t.Stage, body)
	if err != nil {
		return safety.Verdict{}, fmt.Errorf("%s: %w", c.ep.name, err)
	}
	return v, nil
}

// Name is the classifier's name (Options.Name).
func (c *Classifier) Name() string { return c.ep.name }

// Breaker is the classifier's circuit breaker, with its one circuit named Name: the wiring
// runs its Run to share open circuits (when Options.Breaker.Shared is set) and shows its
// States beside the model endpoints'.
func (c *Classifier) Breaker() *breaker.Breaker { return c.ep.breaker }

// String describes the classifier without its key.
func (c *Classifier) String() string {
	return fmt.Sprintf("moderation.Classifier{Name:%s URL:%s Model:%s}", c.ep.name, redact.URL(c.ep.url), c.ep.model)
}

// GoString is String, so that %#v never prints the key either.
func (c *Classifier) GoString() string { return c.String() }
