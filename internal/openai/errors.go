package openai

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/outbound"
	"github.com/coachgw/coachgw/internal/redact"
)

// Classes of the *coach.ModelError values this package returns.
const (
	// ClassRateLimited is HTTP 429; retryable, with the endpoint's Retry-After when it gave one.
	ClassRateLimited = "rate_limited"
	// ClassServer is HTTP 5xx, and 409, which OpenAI uses for transient conflicts; retryable.
	ClassServer = "server"
	// ClassConnect is a failure to reach the endpoint or to get a response from it; retryable.
	ClassConnect = "connect"
	// ClassTimeout is HTTP 408, a network timeout or the context's deadline; retryable.
	ClassTimeout = "timeout"
	// ClassClient is any other HTTP 4xx (401, 403, 404: the endpoint refuses us), or a request
	// that cannot be built; not retryable.
	ClassClient = "client"
	// ClassInvalid is a 400, 413 or 422 that is neither a refusal nor a setting a downgrade
	// avoids: the endpoint rejects this request, which says nothing about its health; not
	// retryable (coach.ClassInvalid).
	ClassInvalid = coach.ClassInvalid
	// ClassRefused is a 400 refusing the request for its content: the context is too long, or
	// a content policy or filter objects. Not retryable, and no other endpoint is asked
	// (coach.ClassRefused).
	ClassRefused = coach.ClassRefused
	// ClassStream is a stream that broke or turned malformed after it started; retryable.
	ClassStream = "stream"
	// ClassCanceled is a canceled context; not retryable.
	ClassCanceled = "canceled"
)

// classify maps err, which ended a request (streaming says after its response began), to a
// ModelError. The context wins: once it is done, whatever the transport said is a consequence.
func classify(ctx context.Context, err error, streaming bool) *coach.ModelError {
	if cerr := ctx.Err(); cerr != nil {
		if !errors.Is(err, cerr) {
			err = fmt.Errorf("%w: %w", cerr, err)
		}
		if errors.Is(cerr, context.DeadlineExceeded) {
			return &coach.ModelError{Class: ClassTimeout, Retryable: true, Err: err}
		}
		return &coach.ModelError{Class: ClassCanceled, Err: err}
	}
	if status := httpStatus(err); status != 0 {
		return byStatus(status, err, nil)
	}
	var op *net.OpError
	var dns *net.DNSError
	if errors.As(err, &op) && op.Op == "dial" || errors.As(err, &dns) {
		return &coach.ModelError{Class: ClassConnect, Retryable: true, Err: err}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &coach.ModelError{Class: ClassTimeout, Retryable: true, Err: err}
	}
	if streaming {
		return &coach.ModelError{Class: ClassStream, Retryable: true, Err: err}
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Op != "parse" {
		// The http.Client failed without a response: reset, EOF, TLS and the like. (A URL
		// that does not parse is a *url.Error too, but from building the request.)
		return &coach.ModelError{Class: ClassConnect, Retryable: true, Err: err}
	}
	return &coach.ModelError{Class: ClassClient, Err: err}
}

// classifyResponse classifies err, an error response to a request whose messages' texts,
// lower-cased, are sent (see sentTexts), so that the endpoint's words can be told from
// the learner's echoed back.
func classifyResponse(ctx context.Context, err error, sent []string) *coach.ModelError {
	if status := httpStatus(err); status != 0 && ctx.Err() == nil {
		return byStatus(status, err, sent)
	}
	return classify(ctx, err, false)
}

// httpStatus returns the status of an HTTP error response, or 0. An error event inside a
// stream is an APIError with no status.
func httpStatus(err error) int {
	// A *RequestError may wrap an empty *APIError (a body such as {"error":"overloaded"} that is
	// not OpenAI's error object), which knows no status: the outer error is asked first.
	var re *oai.RequestError
	if errors.As(err, &re) {
		return re.HTTPStatusCode
	}
	var ae *oai.APIError
	if errors.As(err, &ae) {
		return ae.HTTPStatusCode
	}
	return 0
}

// byStatus classifies an error response; sent are the request's texts (see classifyResponse),
// nil when unknown.
func byStatus(status int, err error, sent []string) *coach.ModelError {
	switch {
	case status == http.StatusTooManyRequests:
		return &coach.ModelError{Class: ClassRateLimited, Retryable: true, Err: err}
	case status == http.StatusRequestTimeout:
		return &coach.ModelError{Class: ClassTimeout, Retryable: true, Err: err}
	case status >= 500 && serverFlag(err, sent) != nil:
		// The server must be started differently: retrying cannot help, another endpoint
		// may.
		return &coach.ModelError{Class: ClassMisconfigured, Err: err}
	case status == http.StatusConflict || status >= 500:
		return &coach.ModelError{Class: ClassServer, Retryable: true, Err: err}
	case (status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge) && refused(err, sent):
		return &coach.ModelError{Class: ClassRefused, ContextFull: mentions(err, sent, contextCodes, contextPhrases), Err: err}
	case status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity:
		return &coach.ModelError{Class: ClassInvalid, Err: err}
	default:
		// Other 4xx, and 1xx/3xx responses that go-openai also treats as failures (an
		// unfollowed redirect points at a misconfigured base URL): retrying cannot help.
		return &coach.ModelError{Class: ClassClient, Err: err}
	}
}

// refusedCodes are the error codes by which endpoints refuse a request for its content: OpenAI's
// context_length_exceeded and content_policy_violation, Azure's content_filter, llama.cpp's
// exceed_context_size_error (sent as the type).
var refusedCodes = []string{"context_length_exceeded", "content_policy_violation", "content_filter", "exceed_context_size_error"}

// refusedPhrases are how endpoints without such codes say the same in their message: vLLM and
// OpenAI ("maximum context length"), Anthropic ("prompt is too long"), Ollama and llama.cpp
// ("context size", "context window"), Gemini ("The input token count (…) exceeds the maximum
// number of tokens allowed (…)").
var refusedPhrases = []string{"maximum context length", "context length", "prompt is too long", "context size", "context window", "exceeds the maximum number of tokens", "content policy", "content management policy"}

// refused reports whether err, a 400 or 413 response, refuses the request for its content
// rather than its shape: another endpoint would refuse it too, so the turn does not move on.
// A body that is not OpenAI's error object (Gemini's list of errors, say) is read as text,
// but only where it cannot be the learner's words (as rejectedSetting: not when it echoes
// sent, and never by a phrase one of sent holds): a learner who writes "context length"
// to an endpoint that quotes requests in its errors must not turn the endpoint's rejection
// into a refusal, which keeps the turn from every other endpoint.
func refused(err error, sent []string) bool {
	return mentions(err, sent, refusedCodes, refusedPhrases)
}

// contextCodes and contextPhrases are the refusals (of refusedCodes and refusedPhrases) that
// say the prompt does not fit the endpoint's context window: llama-server's "request (8314
// tokens) exceeds the available context size", OpenAI's context_length_exceeded.
var (
	contextCodes   = []string{"context_length_exceeded", "exceed_context_size_error"}
	contextPhrases = []string{"maximum context length", "context length", "prompt is too long", "context size", "context window", "exceeds the maximum number of tokens"}
)

// mentions reports whether err, an error response, carries one of codes (as its code or type)
// or, where it cannot be the learner's words (see refused), one of phrases.
func mentions(err error, sent, codes, phrases []string) bool {
	var ae *oai.APIError
	var re *oai.RequestError
	var text string
	if errors.As(err, &re) {
		text = string(re.Body)
	}
	if errors.As(err, &ae) {
		code, _ := ae.Code.(string)
		for _, c := range codes {
			if code == c || ae.Type == c {
				return true
			}
		}
		text += " " + ae.Message
	}
	msg := strings.ToLower(text)
	if echoes(msg, sent) {
		return false
	}
	for _, p := range phrases {
		if strings.Contains(msg, p) && !anyContains(sent, p) {
			return true
		}
	}
	return false
}

// ClassMisconfigured is a 5xx whose error says the server must be started with a flag it
// lacks (see serverFlags): not retryable, since it will not fix itself, and reported to the
// operator once (Config.OnMisconfigured). The turn moves on to the next endpoint.
const ClassMisconfigured = "misconfigured"

// Misconfiguration is an endpoint's error that names how its server must be started.
type Misconfiguration struct {
	// Endpoint is Config.Name.
	Endpoint string
	// Problem is the phrase of the error that shows it, and Fix what the operator should do.
	Problem, Fix string
}

// serverFlags are the errors by which servers say they were started without a flag a
// request needs: llama-server answers a request with tools 500 "tools param requires --jinja
// flag" unless started with --jinja (its chat template engine).
var serverFlags = []Misconfiguration{
	{Problem: "requires --jinja flag", Fix: "start llama-server with --jinja (or set this endpoint's toolChoice to none)"},
}

// serverFlag returns the misconfiguration err, a 5xx, names, or nil. Like refused, it reads
// no phrase the learner sent.
func serverFlag(err error, sent []string) *Misconfiguration {
	var ae *oai.APIError
	var re *oai.RequestError
	var text string
	if errors.As(err, &re) {
		text = string(re.Body)
	}
	if errors.As(err, &ae) {
		text += " " + ae.Message
	}
	msg := strings.ToLower(text)
	if echoes(msg, sent) {
		return nil
	}
	for i := range serverFlags {
		if p := serverFlags[i].Problem; strings.Contains(msg, p) && !anyContains(sent, p) {
			return &serverFlags[i]
		}
	}
	return nil
}

// misconfiguration tells OnMisconfigured of the problem me names, once per problem for the
// Client's endpoint.
func (c *Client) misconfiguration(me *coach.ModelError) {
	if me.Class != ClassMisconfigured || c.onMisconfigured == nil {
		return
	}
	m := serverFlag(me.Err, nil)
	if m == nil {
		return
	}
	if _, told := c.misconfigured.LoadOrStore(m.Problem, true); told {
		return
	}
	c.onMisconfigured(Misconfiguration{Endpoint: c.name, Problem: m.Problem, Fix: m.Fix})
}

// retryAfter reads the endpoint's advice: OpenAI's retry-after-ms (fractional milliseconds)
// when present and readable, else the standard Retry-After (outbound.RetryAfter). It is zero
// when there is none or it has passed.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return clampDelay(ms * float64(time.Millisecond))
		}
	}
	return outbound.RetryAfter(h.Get("Retry-After"), now)
}

// clampDelay caps retry-after-ms as outbound.RetryAfter caps Retry-After, and reads a negative
// or NaN value as no advice.
func clampDelay(ns float64) time.Duration {
	switch {
	case math.IsNaN(ns) || ns <= 0:
		return 0
	case ns >= float64(outbound.MaxRetryAfter):
		return outbound.MaxRetryAfter
	default:
		return time.Duration(ns)
	}
}

// maxErrorExcerpt bounds the message of an error this package returns: an endpoint's error body
// may be 64 KiB and quote the whole prompt, and the message goes into warn lines and
// Downgrade.Reason.
const maxErrorExcerpt = 1024

// fail makes me's message fit for warn lines: an endpoint's error response is told by its
// status and identifiers alone (see withoutWords), and the credentials (see
// redact.NewScrubber), which other errors may carry in a URL, are scrubbed and the message cut
// to maxErrorExcerpt bytes. A replaced, scrubbed or cut error keeps no chain, so no cause can
// leak what was removed.
func (c *Client) fail(me *coach.ModelError) *coach.ModelError {
	if msg, ok := withoutWords(me.Err); ok {
		me.Err = errors.New(msg)
	}
	msg := me.Err.Error()
	if clean := redact.Excerpt(c.scrub.Scrub(msg), maxErrorExcerpt); clean != msg {
		me.Err = errors.New(clean)
	}
	return me
}

// withoutWords describes err by the status, type, code and param of the endpoint's error
// response it carries, and reports whether it carries one. The response's message and body are
// left out: endpoints quote the request in them ("could not process message: …"), and the
// learner's words must not reach any log line above debug. A type, code or param is kept only
// when it looks like an identifier, which a quoted sentence does not.
func withoutWords(err error) (string, bool) {
	var re *oai.RequestError
	var ae *oai.APIError
	hasRE, hasAE := errors.As(err, &re), errors.As(err, &ae)
	if !hasRE && !hasAE {
		return "", false
	}
	var b strings.Builder
	b.WriteString("the endpoint answered")
	status := httpStatus(err)
	if status != 0 {
		fmt.Fprintf(&b, " %d %s", status, http.StatusText(status))
	} else {
		b.WriteString(" an error event")
	}
	if hasAE {
		var ids []string
		add := func(name, v string) {
			if identifier(v) {
				ids = append(ids, name+" "+v)
			}
		}
		add("type", ae.Type)
		switch code := ae.Code.(type) {
		case string:
			add("code", code)
		case float64:
			add("code", strconv.FormatFloat(code, 'f', -1, 64))
		}
		if ae.Param != nil {
			add("param", *ae.Param)
		}
		if len(ids) > 0 {
			b.WriteString(" (" + strings.Join(ids, ", ") + ")")
		}
	}
	b.WriteString("; its message is not shown, since it may quote the learner")
	return b.String(), true
}

// maxIdentifier bounds an identifier withoutWords keeps.
const maxIdentifier = 64

// identifier reports whether s looks like an error type, code or parameter name
// ("invalid_request_error", "messages[0].content"): short, with no spaces.
func identifier(s string) bool {
	if s == "" || len(s) > maxIdentifier {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("_-.:/[]", r):
		default:
			return false
		}
	}
	return true
}
