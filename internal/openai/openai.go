// Package openai adapts an OpenAI-compatible chat completions endpoint to coach.Model. It owns
// what the gateway sends to a model endpoint and how it reads the answer.
//
// One call of Client.Stream is one plain net/http exchange that this package performs itself:
//
//  1. request turns the coach.ModelRequest into a go-openai ChatCompletionRequest, shaped by
//     the endpoint's Profile (profile.go): how a forced tool is asked for (a named tool_choice,
//     "required", or no tools and the arguments as structured output), how structured output
//     is asked for (response_format json_schema, strict when the schema allows it (strict.go);
//     json_object; or the schema in the system prompt), and whether usage is asked for.
//  2. encodeRequest writes the body (encode.go): the bytes json.Marshal would write, in a
//     tenth of its time, and Stream POSTs them to BaseURL + "/chat/completions".
//  3. An error response becomes go-openai's own error value (*APIError or *RequestError) and
//     is classified as a *coach.ModelError the engine can act on (errors.go). A 400 that
//     names a part of the request the endpoint does not support (response_format,
//     tool_choice, stream_options) weakens that part for this Client from then on and sends
//     the request again (downgrade.go).
//  4. A successful body is read by stream (stream.go): server-sent events line by line, each
//     chunk decoded in one pass (chunk.go) into coach.Fragments, the usage report into a
//     Fragment with Usage. When a tool's arguments were asked for as content, or the model
//     wrote them there anyway, the content is handed on as the tool's arguments, so that the
//     contracts never learn how the endpoint was asked.
//
// go-openai supplies the request, response and error types and its reasoning-model validator,
// but not the exchange. Its stream decodes each chunk by reflection, which cost about a third
// of the gateway's CPU per relayed delta and most of its allocations per turn (BenchmarkStream
// against BenchmarkGoOpenAIBaseline, in BENCHMARKS.md); it reads lines without any length
// limit; and it hides what the engine needs: the response headers (Retry-After) and every
// read of the body (coach.StreamHooks).
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/outbound"
	"github.com/coachgw/coachgw/internal/redact"
)

// Defaults of Config.
const (
	DefaultModel          = "gpt-4o-mini"
	DefaultConnectTimeout = 5 * time.Second
	// DefaultMaxLineBytes bounds one server-sent event line. go-openai reads lines without any
	// limit, so without this a broken upstream that never sends a newline would grow memory
	// until the turn's deadline.
	DefaultMaxLineBytes = 1 << 20
	// DefaultDowngradeTTL is the default of Config.DowngradeTTL.
	DefaultDowngradeTTL = 10 * time.Minute
)

// Format says how a request with a coach.OutputSchema asks for structured output.
type Format uint8

// Formats. FormatJSONSchema is the default: OpenAI's response_format json_schema, strict when
// the schema allows it. FormatJSONObject sends response_format json_object and puts the schema
// into the system prompt; FormatPrompt only puts it into the system prompt, for endpoints that
// know no response_format at all.
const (
	FormatJSONSchema Format = iota
	FormatJSONObject
	FormatPrompt
)

var formatNames = [...]string{FormatJSONSchema: "json_schema", FormatJSONObject: "json_object", FormatPrompt: "prompt"}

// String returns the format's configuration name.
func (f Format) String() string { return settingName(formatNames[:], int(f), "Format") }

// ParseFormat parses "json_schema", "json_object" or "prompt" (case-insensitive); the empty
// string is FormatJSONSchema, so an unset setting takes the default.
func ParseFormat(s string) (Format, error) {
	if strings.TrimSpace(s) == "" {
		return FormatJSONSchema, nil
	}
	if i := settingIndex(formatNames[:], s); i >= 0 {
		return Format(i), nil
	}
	return 0, fmt.Errorf("openai: unknown response format %q (want json_schema, json_object or prompt)", s)
}

// settingName returns names[i], the configuration name of value i of a setting of type kind.
func settingName(names []string, i int, kind string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("%s(%d)", kind, i)
}

// settingIndex returns the index of s in names, ignoring case and surrounding space, or -1.
func settingIndex(names []string, s string) int {
	s = strings.ToLower(strings.TrimSpace(s))
	for i, name := range names {
		if s == name {
			return i
		}
	}
	return -1
}

// Config configures a Client. Zero fields take defaults. Its String, GoString, LogValue and
// MarshalJSON methods mask APIKey and any password in BaseURL, so logging a Config is safe.
type Config struct {
	// Name names the endpoint in logs and metrics (default "default").
	Name string
	// BaseURL is the endpoint's base, e.g. "http://127.0.0.1:9000/v1"; empty means OpenAI's.
	BaseURL string
	// APIKey is sent as the bearer token; empty sends no Authorization header.
	APIKey string
	// Model is the model name sent upstream; empty means DefaultModel.
	Model string
	// Profile names what the endpoint honours (see Profiles). DefaultProfile ("") keeps the
	// behaviour from before profiles: a named tool choice, Format, and no usage request.
	Profile string
	// ToolChoice, ResponseFormat and IncludeUsage, when set, override the profile's settings:
	// "named", "required" or "none"; "json_schema", "json_object" or "prompt"; and whether to
	// send stream_options.include_usage.
	ToolChoice     string
	ResponseFormat string
	IncludeUsage   *bool
	// Format selects how structured output is requested when Profile is DefaultProfile and
	// ResponseFormat is empty.
	Format Format
	// OnDowngrade, when set, is told each time the endpoint rejected part of a request and
	// the Client weakened it for every later request; it must be quick and safe for concurrent
	// use.
	OnDowngrade func(Downgrade)
	// DowngradeTTL is how long a downgrade lasts (default DefaultDowngradeTTL): after it the
	// Client sends the configured shape again, so an endpoint that was upgraded, or a
	// rejection that was a fluke, does not weaken every request until a restart.
	DowngradeTTL time.Duration
	// OnMisconfigured, when set, is told once per problem when the endpoint's error says that
	// the server itself must be started differently (llama-server's "tools param requires
	// --jinja flag"); it must be quick and safe for concurrent use.
	OnMisconfigured func(Misconfiguration)
	// MaxCompletionTokens, when positive, replaces the completion cap every request asks
	// for (coach.ModelRequest.MaxTokens, which each contract derives from its schema).
	MaxCompletionTokens int
	// HTTPClient, when set, carries the requests; its Timeout must be zero or longer than any
	// turn, since it bounds whole streams. When nil, the Client builds its own.
	HTTPClient *http.Client
	// ConnectTimeout bounds dialing (default DefaultConnectTimeout). It applies only to the
	// client built when HTTPClient is nil.
	ConnectTimeout time.Duration
	// MaxLineBytes bounds one streamed line (default DefaultMaxLineBytes); a longer line fails
	// the stream with a "stream" ModelError.
	MaxLineBytes int
}

// Validate reports settings that cannot work.
func (c Config) Validate() error {
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil {
			return errors.New("openai: base URL does not parse") // the parse error may quote credentials
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("openai: base URL %s must be an absolute http or https URL", u.Redacted())
		}
	}
	if int(c.Format) >= len(formatNames) {
		return fmt.Errorf("openai: unknown format %d", c.Format)
	}
	if _, err := c.resolve(); err != nil {
		return err
	}
	if c.ConnectTimeout < 0 || c.MaxLineBytes < 0 || c.DowngradeTTL < 0 || c.MaxCompletionTokens < 0 {
		return errors.New("openai: timeouts and limits must not be negative")
	}
	return nil
}

// String describes c with the API key masked.
func (c Config) String() string {
	return fmt.Sprintf("openai.Config{Name:%s BaseURL:%s APIKey:%s Model:%s Profile:%s Shape:%s ConnectTimeout:%s MaxLineBytes:%d}",
		c.Name, redactURL(c.BaseURL), mask(c.APIKey), c.Model, c.Profile, c.shapeString(), c.ConnectTimeout, c.MaxLineBytes)
}

// shapeString describes the request shape c resolves to.
func (c Config) shapeString() string {
	sh, err := c.resolve()
	if err != nil {
		return "invalid"
	}
	return sh.String()
}

// GoString is String, so that %#v masks the key too.
func (c Config) GoString() string { return c.String() }

// LogValue describes c for log/slog with the API key masked.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("name", c.Name),
		slog.String("baseURL", redactURL(c.BaseURL)),
		slog.String("apiKey", mask(c.APIKey)),
		slog.String("model", c.Model),
		slog.String("profile", c.Profile),
		slog.String("shape", c.shapeString()),
		slog.Duration("connectTimeout", c.ConnectTimeout),
		slog.Int("maxLineBytes", c.MaxLineBytes),
	)
}

// MarshalJSON describes c like LogValue, for loggers that marshal values to JSON.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Name           string `json:"name"`
		BaseURL        string `json:"baseURL"`
		APIKey         string `json:"apiKey"`
		Model          string `json:"model"`
		Profile        string `json:"profile"`
		Shape          string `json:"shape"`
		ConnectTimeout string `json:"connectTimeout"`
		MaxLineBytes   int    `json:"maxLineBytes"`
	}{c.Name, redactURL(c.BaseURL), mask(c.APIKey), c.Model, c.Profile, c.shapeString(), c.ConnectTimeout.String(), c.MaxLineBytes})
}

func mask(key string) string {
	if key == "" {
		return ""
	}
	return "****"
}

// redactURL is s without its userinfo and query tokens (see redact.URL).
func redactURL(s string) string { return redact.URL(s) }

// Client is a coach.Model backed by an OpenAI-compatible endpoint. It is safe for concurrent use.
type Client struct {
	name  string
	url   string
	model string
	hc    *http.Client
	// key is sent as the bearer token. scrub removes it, and the base URL's userinfo and
	// query tokens, in the encodings an endpoint might echo them in, from error messages.
	key   string
	scrub redact.Scrubber
	// reasoning marks models (o1, o3, o4, gpt-5 ...) that reject max_tokens and temperature.
	reasoning bool
	// capParam is the profile's name for the completion cap, and maxTokens the Config's
	// override of the requests' own cap (0: none).
	capParam  string
	maxTokens int
	// limits are what the profile's grammar compiler refuses in a schema (see Limits).
	limits Limits
	// firstByte and idle are the profile's least deadlines (see Deadlines).
	firstByte, idle time.Duration
	maxLine         int
	now             func() time.Time
	// shape is the request shape sent now: base, the Config's, weakened by every downgrade
	// so far; expires is when the weakened shape goes back to base (Unix nanoseconds, 0
	// while the shape is base).
	shape       atomic.Pointer[shape]
	base        *shape
	ttl         time.Duration
	expires     atomic.Int64
	onDowngrade func(Downgrade)
	// onMisconfigured is told of each problem in misconfigured once.
	onMisconfigured func(Misconfiguration)
	misconfigured   sync.Map
	schemas         schemaCache
	// prose counts the callers whose forced call was answered in prose (see callWatch).
	prose proseVotes
}

var _ coach.Model = (*Client)(nil)

// openAIBaseURL is the endpoint of an empty Config.BaseURL.
const openAIBaseURL = "https://api.openai.com/v1"

// New returns a Client for cfg. Check cfg with Validate first: New itself does not fail; a bad
// base URL surfaces as a "client" ModelError on every request, and settings that do not parse
// leave the profile's.
func New(cfg Config) *Client {
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.Name == "" {
		cfg.Name = "default"
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = openAIBaseURL
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = outbound.NewClient(cfg.ConnectTimeout)
	}
	if cfg.DowngradeTTL <= 0 {
		cfg.DowngradeTTL = DefaultDowngradeTTL
	}
	p, _ := LookupProfile(cfg.Profile)
	sh, err := cfg.resolve()
	if err != nil {
		sh = p.shape()
	}
	c := &Client{
		name:            cfg.Name,
		url:             strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions",
		model:           cfg.Model,
		hc:              hc,
		key:             cfg.APIKey,
		scrub:           redact.NewScrubber(cfg.APIKey, cfg.BaseURL),
		reasoning:       isReasoningModel(cfg.Model),
		capParam:        p.CapParam,
		maxTokens:       cfg.MaxCompletionTokens,
		limits:          p.Limits,
		firstByte:       p.FirstByteTimeout,
		idle:            p.IdleTimeout,
		maxLine:         cfg.MaxLineBytes,
		now:             time.Now,
		base:            &sh,
		ttl:             cfg.DowngradeTTL,
		onDowngrade:     cfg.OnDowngrade,
		onMisconfigured: cfg.OnMisconfigured,
	}
	c.shape.Store(&sh)
	return c
}

// AsksUsage reports whether c asks its endpoint for a usage report
// (stream_options.include_usage) in the form it sends now: where it does not, the engine
// estimates the endpoint's tokens from bytes.
func (c *Client) AsksUsage() bool { return c.shape.Load().usage }

// String describes c without its API key.
func (c *Client) String() string {
	return fmt.Sprintf("openai.Client{Name:%s URL:%s Model:%s Shape:%s}", c.name, redactURL(c.url), c.model, c.shape.Load())
}

// GoString is String, so that %#v never prints the key either.
func (c *Client) GoString() string { return c.String() }

// isReasoningModel asks go-openai's own validator, which rejects max_tokens exactly for the
// reasoning model families, so the two never disagree.
func isReasoningModel(model string) bool {
	err := oai.NewReasoningValidator().Validate(oai.ChatCompletionRequest{Model: model, MaxTokens: 1})
	return errors.Is(err, oai.ErrReasoningModelMaxTokensDeprecated)
}

// Stream starts a streaming chat completion for req. Failures before the first chunk are
// *coach.ModelError; so are the errors of the returned stream's Next, except io.EOF. When the
// endpoint rejects part of the request's shape, Stream weakens it (see downgrade) and asks
// again, at most once for each part.
func (c *Client) Stream(ctx context.Context, req coach.ModelRequest, hooks coach.StreamHooks) (coach.Stream, error) {
	for tries := 0; ; tries++ {
		sh := c.current()
		s, err := c.open(ctx, req, *sh, hooks)
		if err == nil {
			if req.Tool != nil && sh.tool == ToolRequired {
				// Where "required" does not force the call, the model may answer in prose. A
				// named choice is forced by the endpoint's decoder (OpenAI, vLLM); prose
				// there is the model's own fault, left to the engine's corrective retry.
				return &callWatch{Stream: s, c: c, used: sh, caller: req.Caller}, nil
			}
			return s, nil
		}
		if tries < maxDowngrades && c.downgrade(sh, req, err) {
			continue
		}
		c.misconfiguration(err)
		return nil, c.fail(err)
	}
}

// Deadlines returns the least first-byte and idle deadlines of the endpoint's profile, zero
// where it has none (coach.Deadlines): a CPU model reading a long prompt sends nothing but
// keep-alive comments for longer than a hosted endpoint takes to answer.
func (c *Client) Deadlines() (firstByte, idle time.Duration) { return c.firstByte, c.idle }

// open sends req in shape sh and returns the stream of a successful response.
func (c *Client) open(ctx context.Context, req coach.ModelRequest, sh shape, hooks coach.StreamHooks) (*stream, *coach.ModelError) {
	creq, err := c.request(req, sh)
	if err == nil {
		// go-openai's validator knows which models reject which fields.
		err = oai.NewReasoningValidator().Validate(creq)
	}
	var body []byte
	if err == nil {
		body, err = encodeRequest(&creq)
	}
	if err != nil {
		return nil, &coach.ModelError{Class: ClassClient, Err: err}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, classify(ctx, err, false)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	hreq.Header.Set("Cache-Control", "no-cache")
	if c.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.key)
	}
	// A nil value marks the request idempotent without sending the header, so that the
	// transport itself resends it when a reused keep-alive connection turns out to be dead,
	// instead of failing the turn into the engine's slower backoff.
	hreq.Header["X-Idempotency-Key"] = nil
	release := releaseBody(hreq)
	resp, err := c.hc.Do(hreq)
	release()
	if err != nil {
		return nil, classify(ctx, err, false)
	}
	if resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusBadRequest {
		me := classifyResponse(ctx, errorResponse(resp), sentTexts(req))
		me.RetryAfter = retryAfter(resp.Header, c.now())
		return nil, me
	}
	return &stream{c: c, ctx: ctx, body: resp.Body, alive: hooks.Activity, wait: hooks.Wait, asArgs: contentAsArgs(req, sh)}, nil
}

// request builds the go-openai request for req in shape sh.
func (c *Client) request(req coach.ModelRequest, sh shape) (oai.ChatCompletionRequest, error) {
	r := oai.ChatCompletionRequest{Model: c.model, Messages: messages(req.Messages), Stream: true}
	if limit := c.completionCap(req); limit > 0 && sh.cap {
		if c.reasoning || c.capParam == CapMaxCompletionTokens {
			r.MaxCompletionTokens = limit
		} else {
			r.MaxTokens = limit
		}
	}
	if req.Temperature != 0 && !c.reasoning {
		r.Temperature = req.Temperature
	}
	if sh.usage {
		r.StreamOptions = &oai.StreamOptions{IncludeUsage: true}
	}
	schema := req.Schema
	if req.Tool != nil {
		params := json.RawMessage(req.Tool.Parameters)
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		if sh.tool != ToolNone {
			// The endpoint compiles the parameters into a grammar too (llama-server does, for
			// a forced call), so they leave out what it refuses.
			var fitted any = params
			if !c.limits.zero() {
				p, err := c.schemas.get(params, c.base.bounds, c.limits)
				if err != nil {
					return r, fmt.Errorf("tool %q parameters: %w", req.Tool.Name, err)
				}
				fitted = p.compact
			}
			r.Tools = []oai.Tool{{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{
				Name: req.Tool.Name, Description: req.Tool.Description, Parameters: fitted,
			}}}
			r.ToolChoice = "required"
			if sh.tool == ToolNamed {
				r.ToolChoice = oai.ToolChoice{Type: oai.ToolTypeFunction, Function: oai.ToolFunction{Name: req.Tool.Name}}
			}
			if sh.oneCall {
				r.ParallelToolCalls = false
			}
			return r, nil
		}
		// No tools: the arguments are the answer's structured output, and the history's
		// calls of the tool become the JSON answers they stand for.
		schema = &coach.OutputSchema{Name: req.Tool.Name, Schema: params}
		r.Messages = instruct(withoutToolCalls(r.Messages), toolAsContent(req.Tool))
	}
	if schema == nil {
		return r, nil
	}
	p, err := c.schemas.get(schema.Schema, c.base.bounds, c.limits)
	if err != nil {
		return r, fmt.Errorf("output schema %q: %w", schema.Name, err)
	}
	switch sh.format {
	case FormatJSONSchema:
		strict := p.strict
		if sh.bounds == 0 {
			strict = p.bare
		}
		js := &oai.ChatCompletionResponseFormatJSONSchema{Name: schemaName(schema.Name), Schema: strict, Strict: true}
		if strict == nil {
			js.Schema, js.Strict = p.compact, false
		}
		r.ResponseFormat = &oai.ChatCompletionResponseFormat{Type: oai.ChatCompletionResponseFormatTypeJSONSchema, JSONSchema: js}
	case FormatJSONObject:
		r.ResponseFormat = &oai.ChatCompletionResponseFormat{Type: oai.ChatCompletionResponseFormatTypeJSONObject}
		r.Messages = instruct(r.Messages, p.instruction)
	default:
		r.Messages = instruct(r.Messages, p.instruction)
	}
	return r, nil
}

// toolAsContent tells a model that is offered no tools to write the forced call's arguments
// as its reply, since the contract's own prompt asks it to call the tool.
func toolAsContent(t *coach.Tool) string {
	return "Tools are not available here: instead of calling " + t.Name + ", reply with only its arguments, " +
		"as one JSON object. Your JSON replies in this conversation are such " + t.Name + " calls."
}

// withoutToolCalls rewrites a history for a request without tools: an assistant's tool call
// becomes its arguments as the assistant's content, which is how the model answers now, and
// a tool result, which only acknowledged the call, is dropped.
func withoutToolCalls(msgs []oai.ChatCompletionMessage) []oai.ChatCompletionMessage {
	out := msgs[:0]
	for _, m := range msgs {
		switch {
		case m.Role == coach.RoleTool:
			continue
		case len(m.ToolCalls) > 0:
			var b strings.Builder
			b.WriteString(m.Content)
			for _, tc := range m.ToolCalls {
				if b.Len() > 0 {
					b.WriteByte('\n')
				}
				b.WriteString(tc.Function.Arguments)
			}
			m = oai.ChatCompletionMessage{Role: m.Role, Content: b.String()}
		}
		out = append(out, m)
	}
	return out
}

// messages converts the conversation; the slice is fresh, so instruct may change it.
func messages(in []coach.Message) []oai.ChatCompletionMessage {
	out := make([]oai.ChatCompletionMessage, len(in), len(in)+1)
	for i, m := range in {
		om := oai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		if len(m.ToolCalls) > 0 {
			om.ToolCalls = make([]oai.ToolCall, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				om.ToolCalls[j] = oai.ToolCall{ID: tc.ID, Type: oai.ToolTypeFunction,
					Function: oai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}}
			}
		}
		out[i] = om
	}
	return out
}

// sessionFacts heads the section that, by the contracts' convention, ends every system prompt
// (the embedded replay model reads it); the schema instruction goes before it so that it stays last.
const sessionFacts = "\n## Session facts"

// instruct adds the schema instruction to the first system message, or prepends a system
// message when there is none.
func instruct(msgs []oai.ChatCompletionMessage, instruction string) []oai.ChatCompletionMessage {
	for i := range msgs {
		if msgs[i].Role != coach.RoleSystem {
			continue
		}
		content := msgs[i].Content
		switch at := strings.LastIndex(content, sessionFacts); {
		case strings.HasPrefix(content, sessionFacts[1:]):
			msgs[i].Content = instruction + "\n\n" + content
		case at >= 0:
			msgs[i].Content = strings.TrimRight(content[:at], "\n") + "\n\n" + instruction + "\n" + content[at:]
		default:
			msgs[i].Content = content + "\n\n" + instruction
		}
		return msgs
	}
	msgs = append(msgs, oai.ChatCompletionMessage{})
	copy(msgs[1:], msgs)
	msgs[0] = oai.ChatCompletionMessage{Role: coach.RoleSystem, Content: instruction}
	return msgs
}

// schemaName returns name as OpenAI accepts it (^[a-zA-Z0-9_-]{1,64}$), replacing other characters.
func schemaName(name string) string {
	valid := func(r rune) bool {
		return r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	if name == "" {
		return "result"
	}
	if len(name) <= 64 && strings.IndexFunc(name, func(r rune) bool { return !valid(r) }) < 0 {
		return name
	}
	name = strings.Map(func(r rune) rune {
		if valid(r) {
			return r
		}
		return '_'
	}, name)
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// maxCachedSchemas bounds schemaCache; schemas come from the contracts' code, so a handful is normal.
const maxCachedSchemas = 64

// schemaCache keeps the prepared forms of each schema a request has used, since rewriting a
// schema on every turn would cost far more than the rest of building the request.
type schemaCache struct {
	mu sync.RWMutex
	m  map[string]*prepared
}

// prepared holds a schema in every form a request may send.
type prepared struct {
	// strict is the strict-mode variant with the bounds the endpoint enforces, bare the one
	// without any (after a schema_bounds downgrade), both nil when the schema cannot be
	// strict; compact is the schema as given, for tool parameters and where it cannot be
	// strict. All leave out what the endpoint's Limits refuse, and all are ready for appendRequest to copy (see
	// embeddedJSON).
	strict, bare, compact embeddedJSON
	// instruction asks for the schema in the system prompt.
	instruction string
}

// get returns the prepared forms of schema; a Client's cache serves one endpoint, whose
// bounds and limits never change.
func (c *schemaCache) get(schema []byte, bounds Bounds, limits Limits) (*prepared, error) {
	c.mu.RLock()
	p := c.m[string(schema)]
	c.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	p, err := prepare(schema, bounds, limits)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = make(map[string]*prepared)
	}
	if len(c.m) < maxCachedSchemas {
		c.m[string(schema)] = p
	}
	c.mu.Unlock()
	return p, nil
}

func prepare(schema []byte, bounds Bounds, limits Limits) (*prepared, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, schema); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	p := &prepared{instruction: "Reply with one JSON object that validates against this JSON schema:\n" + compact.String()}
	for _, v := range []struct {
		dst    *embeddedJSON
		bounds Bounds
	}{{&p.strict, bounds}, {&p.bare, 0}} {
		strict, err := StrictFor(schema, v.bounds)
		if err != nil && !errors.Is(err, ErrNotStrict) {
			return nil, err
		}
		if strict != nil {
			if *v.dst, err = embed(limits.fit(strict)); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if p.compact, err = embed(limits.fit(compact.Bytes())); err != nil {
		return nil, err
	}
	return p, nil
}
