// Package openai adapts any OpenAI-compatible chat completions endpoint to coach.Model, using
// github.com/sashabaranov/go-openai. It owns the request shape (messages, structured output as
// json_schema, json_object or a prompt instruction, forced function calls), the mapping of
// streamed chunks to coach.Fragment, the rewriting of JSON schemas for OpenAI's strict mode, and
// the classification of every failure as a *coach.ModelError the engine can act on.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	oai "github.com/sashabaranov/go-openai"

	"github.com/coachgw/coachgw/internal/coach"
)

// Defaults of Config.
const (
	DefaultModel          = "gpt-4o-mini"
	DefaultConnectTimeout = 5 * time.Second
	// DefaultMaxLineBytes bounds one server-sent event line. go-openai reads lines without any
	// limit, so without this a broken upstream that never sends a newline would grow memory
	// until the turn's deadline.
	DefaultMaxLineBytes = 1 << 20
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
func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat parses "json_schema", "json_object" or "prompt" (case-insensitive); the empty
// string is FormatJSONSchema, so an unset setting takes the default.
func ParseFormat(s string) (Format, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return FormatJSONSchema, nil
	}
	for i, name := range formatNames {
		if s == name {
			return Format(i), nil
		}
	}
	return 0, fmt.Errorf("openai: unknown response format %q (want json_schema, json_object or prompt)", s)
}

// Config configures a Client. Zero fields take defaults. Its String, GoString, LogValue and
// MarshalJSON methods mask APIKey and any password in BaseURL, so logging a Config is safe.
type Config struct {
	// BaseURL is the endpoint's base, e.g. "http://127.0.0.1:9000/v1"; empty means OpenAI's.
	BaseURL string
	// APIKey is sent as the bearer token; empty sends no Authorization header.
	APIKey string
	// Model is the model name sent upstream; empty means DefaultModel.
	Model string
	// Format selects how structured output is requested.
	Format Format
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
	if c.ConnectTimeout < 0 || c.MaxLineBytes < 0 {
		return errors.New("openai: timeouts and limits must not be negative")
	}
	return nil
}

// String describes c with the API key masked.
func (c Config) String() string {
	return fmt.Sprintf("openai.Config{BaseURL:%s APIKey:%s Model:%s Format:%s ConnectTimeout:%s MaxLineBytes:%d}",
		redactURL(c.BaseURL), mask(c.APIKey), c.Model, c.Format, c.ConnectTimeout, c.MaxLineBytes)
}

// GoString is String, so that %#v masks the key too.
func (c Config) GoString() string { return c.String() }

// LogValue describes c for log/slog with the API key masked.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("baseURL", redactURL(c.BaseURL)),
		slog.String("apiKey", mask(c.APIKey)),
		slog.String("model", c.Model),
		slog.String("format", c.Format.String()),
		slog.Duration("connectTimeout", c.ConnectTimeout),
		slog.Int("maxLineBytes", c.MaxLineBytes),
	)
}

// MarshalJSON describes c like LogValue, for loggers that marshal values to JSON.
func (c Config) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		BaseURL        string `json:"baseURL"`
		APIKey         string `json:"apiKey"`
		Model          string `json:"model"`
		Format         string `json:"format"`
		ConnectTimeout string `json:"connectTimeout"`
		MaxLineBytes   int    `json:"maxLineBytes"`
	}{redactURL(c.BaseURL), mask(c.APIKey), c.Model, c.Format.String(), c.ConnectTimeout.String(), c.MaxLineBytes})
}

func mask(key string) string {
	if key == "" {
		return ""
	}
	return "****"
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "<unparsable>"
	}
	return u.Redacted()
}

// Client is a coach.Model backed by an OpenAI-compatible endpoint. It is safe for concurrent use.
type Client struct {
	api     *oai.Client
	model   string
	format  Format
	baseURL string
	// key is kept only to scrub it from error messages an endpoint might echo it in.
	key string
	// reasoning marks models (o1, o3, o4, gpt-5 ...) that reject max_tokens and temperature.
	reasoning bool
	http      *doer
	schemas   schemaCache
}

var _ coach.Model = (*Client)(nil)

// New returns a Client for cfg. Check cfg with Validate first: New itself does not fail, and a
// bad base URL surfaces as a "client" ModelError on every request.
func New(cfg Config) *Client {
	if cfg.Model == "" {
		cfg.Model = DefaultModel
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.MaxLineBytes <= 0 {
		cfg.MaxLineBytes = DefaultMaxLineBytes
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = newHTTPClient(cfg.ConnectTimeout)
	}
	oc := oai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	d := &doer{hc: hc, maxLine: cfg.MaxLineBytes, now: time.Now}
	oc.HTTPClient = d
	return &Client{
		http:      d,
		api:       oai.NewClientWithConfig(oc),
		model:     cfg.Model,
		format:    cfg.Format,
		baseURL:   oc.BaseURL,
		key:       cfg.APIKey,
		reasoning: isReasoningModel(cfg.Model),
	}
}

// String describes c without its API key.
func (c *Client) String() string {
	return fmt.Sprintf("openai.Client{BaseURL:%s Model:%s Format:%s}", redactURL(c.baseURL), c.model, c.format)
}

// GoString is String, so that %#v never prints the key either.
func (c *Client) GoString() string { return c.String() }

// newHTTPClient returns a client for long-lived streams: no overall timeout (the engine owns
// first-byte, idle and turn deadlines), a bounded dial, and enough idle connections per host
// that concurrent turns against one endpoint reuse connections instead of re-dialing.
func newHTTPClient(connect time.Duration) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 1024
	return &http.Client{Transport: tr}
}

// isReasoningModel asks go-openai's own validator, which rejects max_tokens exactly for the
// reasoning model families, so the two never disagree.
func isReasoningModel(model string) bool {
	err := oai.NewReasoningValidator().Validate(oai.ChatCompletionRequest{Model: model, MaxTokens: 1})
	return errors.Is(err, oai.ErrReasoningModelMaxTokensDeprecated)
}

// Stream starts a streaming chat completion for req. Failures before the first chunk are
// *coach.ModelError; so are the errors of the returned stream's Next, except io.EOF.
func (c *Client) Stream(ctx context.Context, req coach.ModelRequest, hooks coach.StreamHooks) (coach.Stream, error) {
	creq, err := c.request(req)
	if err != nil {
		return nil, c.fail(&coach.ModelError{Class: ClassClient, Err: err})
	}
	s := &stream{c: c, ctx: ctx, alive: hooks.Activity, wait: hooks.Wait}
	// go-openai still sends the request and turns error responses into its errors, but the
	// body is encoded here, in a tenth of the time json.Marshal takes (see encodeRequest), and
	// the doer puts it in place of the body go-openai marshals. That is of a stub with only the
	// model, which go-openai checks against the endpoint and may put in the URL; its validator,
	// which also reads the tools, sees the whole request here instead.
	err = oai.NewReasoningValidator().Validate(creq)
	if err == nil {
		s.request, err = encodeRequest(&creq)
	}
	if err == nil {
		// The returned go-openai stream is dropped: s reads the body the doer handed it, and
		// dropping it frees the read buffer go-openai allocated for it.
		stub := oai.ChatCompletionRequest{Model: creq.Model}
		_, err = c.api.CreateChatCompletionStream(context.WithValue(ctx, exchangeKey{}, s), stub)
	}
	if err != nil {
		if s.errBody != nil {
			s.errBody.Close() // go-openai reads an error body but never closes it
		}
		me := classify(ctx, err, false)
		me.RetryAfter = s.retryAfter
		return nil, c.fail(me)
	}
	return s, nil
}

// request builds the go-openai request for req.
func (c *Client) request(req coach.ModelRequest) (oai.ChatCompletionRequest, error) {
	r := oai.ChatCompletionRequest{Model: c.model, Messages: messages(req.Messages), Stream: true}
	if req.MaxTokens > 0 {
		if c.reasoning {
			r.MaxCompletionTokens = req.MaxTokens
		} else {
			r.MaxTokens = req.MaxTokens
		}
	}
	if req.Temperature != 0 && !c.reasoning {
		r.Temperature = req.Temperature
	}
	switch {
	case req.Tool != nil:
		params := json.RawMessage(req.Tool.Parameters)
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		r.Tools = []oai.Tool{{Type: oai.ToolTypeFunction, Function: &oai.FunctionDefinition{
			Name: req.Tool.Name, Description: req.Tool.Description, Parameters: params,
		}}}
		r.ToolChoice = oai.ToolChoice{Type: oai.ToolTypeFunction, Function: oai.ToolFunction{Name: req.Tool.Name}}
	case req.Schema != nil:
		p, err := c.schemas.get(req.Schema.Schema)
		if err != nil {
			return r, fmt.Errorf("output schema %q: %w", req.Schema.Name, err)
		}
		switch c.format {
		case FormatJSONSchema:
			js := &oai.ChatCompletionResponseFormatJSONSchema{Name: schemaName(req.Schema.Name), Schema: p.strict, Strict: true}
			if p.strict == nil {
				js.Schema, js.Strict = p.compact, false
			}
			r.ResponseFormat = &oai.ChatCompletionResponseFormat{Type: oai.ChatCompletionResponseFormatTypeJSONSchema, JSONSchema: js}
		case FormatJSONObject:
			r.ResponseFormat = &oai.ChatCompletionResponseFormat{Type: oai.ChatCompletionResponseFormatTypeJSONObject}
			r.Messages = instruct(r.Messages, p.instruction)
		default:
			r.Messages = instruct(r.Messages, p.instruction)
		}
	}
	return r, nil
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
	// strict is the strict-mode variant, nil when the schema cannot be strict, and compact the
	// schema as given; both are ready for appendRequest to copy (see embeddedJSON).
	strict, compact embeddedJSON
	// instruction asks for the schema in the system prompt.
	instruction string
}

func (c *schemaCache) get(schema []byte) (*prepared, error) {
	c.mu.RLock()
	p := c.m[string(schema)]
	c.mu.RUnlock()
	if p != nil {
		return p, nil
	}
	p, err := prepare(schema)
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

func prepare(schema []byte) (*prepared, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, schema); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	p := &prepared{instruction: "Reply with one JSON object that validates against this JSON schema:\n" + compact.String()}
	strict, err := Strict(schema)
	if err != nil && !errors.Is(err, ErrNotStrict) {
		return nil, err
	}
	if strict != nil {
		if p.strict, err = embed(strict); err != nil {
			return nil, err
		}
	}
	if p.compact, err = embed(compact.Bytes()); err != nil {
		return nil, err
	}
	return p, nil
}
