package coachclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coachgw/coachgw/internal/outbound"
)

// DefaultMaxLineBytes is the default bound of one stream line and of a JSON response body.
const DefaultMaxLineBytes = 1 << 20

// maxErrorBody bounds how much of an error response is read: a gateway error body is tiny, and
// whatever a proxy in front sends instead is of no use beyond that.
const maxErrorBody = 64 << 10

// Client calls one coachgw gateway. It is safe for concurrent use.
type Client struct {
	base    string
	hc      *http.Client
	apiKey  string
	maxLine int
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient makes the Client send its requests with hc instead of http.DefaultClient. A turn
// lasts as long as its stream, so hc should not have a Timeout shorter than a turn: bound calls
// with their contexts instead.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) {
		if hc != nil {
			c.hc = hc
		}
	}
}

// WithAPIKey sends key as a bearer token with every request.
func WithAPIKey(key string) Option {
	return func(c *Client) { c.apiKey = key }
}

// WithMaxLineBytes bounds one line of a turn's stream, and the body of any other answer, to n
// bytes (DefaultMaxLineBytes when n is not positive). A longer line ends the stream with
// ErrLineTooLong.
func WithMaxLineBytes(n int) Option {
	return func(c *Client) {
		if n <= 0 {
			n = DefaultMaxLineBytes
		}
		c.maxLine = n
	}
}

// New returns a Client of the gateway at baseURL (e.g. "http://127.0.0.1:8080"; a path prefix,
// as behind a reverse proxy, is kept).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{base: strings.TrimRight(baseURL, "/"), hc: http.DefaultClient, maxLine: DefaultMaxLineBytes}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Session is a coaching session as the gateway reports it. State is contract-specific (see the
// gateway's api/openapi.yaml).
type Session struct {
	ID        string          `json:"id"`
	Contract  string          `json:"contract"`
	Locale    string          `json:"locale,omitempty"`
	Version   int64           `json:"version"`
	State     json.RawMessage `json:"state"`
	CreatedAt time.Time       `json:"createdAt,omitzero"`
	UpdatedAt time.Time       `json:"updatedAt,omitzero"`
	// Limits are the longest texts the session accepts; nil from a gateway that does not say.
	Limits *Limits `json:"limits,omitempty"`
}

// Limits are the longest texts a session accepts, in characters (Unicode code points); a
// longer one is answered 422 invalid_input.
type Limits struct {
	// MessageChars bounds a turn's message.
	MessageChars int `json:"messageChars"`
	// DraftChars bounds a draft value of a toulmin session; 0 on other contracts.
	DraftChars int `json:"draftChars,omitempty"`
}

// CreateSessionRequest asks for a new session. Contract is "toulmin", "cards" or "module";
// Module names the learning module of a module session; Locale is "en" (the default) or "es".
type CreateSessionRequest struct {
	Contract string `json:"contract"`
	Module   string `json:"module,omitempty"`
	Locale   string `json:"locale,omitempty"`
}

// Proposal decisions for DecideProposal.
const (
	Accept = "accept"
	Reject = "reject"
)

// CreateSession starts a session.
func (c *Client) CreateSession(ctx context.Context, in CreateSessionRequest) (*Session, error) {
	var s Session
	if err := c.call(ctx, http.MethodPost, "/v1/sessions", in, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// GetSession reads session id.
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	var s Session
	if err := c.call(ctx, http.MethodGet, sessionPath(id), nil, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DeleteSession removes session id; removing a session that does not exist is not an error.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	return c.call(ctx, http.MethodDelete, sessionPath(id), nil, nil)
}

// SetDraft sets the draft of one step of a toulmin session (field is a Toulmin step such as
// "claim") and returns the session after the change.
func (c *Client) SetDraft(ctx context.Context, id, field, value string) (*Session, error) {
	var s Session
	body := struct {
		Field string `json:"field"`
		Value string `json:"value"`
	}{field, value}
	if err := c.call(ctx, http.MethodPut, sessionPath(id)+"/draft", body, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// DecideProposal accepts or rejects (action Accept or Reject) the pending proposal of a toulmin
// session and returns the session after the decision. Without a pending proposal the answer is
// an *APIError with Code "no_pending_proposal".
func (c *Client) DecideProposal(ctx context.Context, id, action string) (*Session, error) {
	var s Session
	body := struct {
		Action string `json:"action"`
	}{action}
	if err := c.call(ctx, http.MethodPost, sessionPath(id)+"/proposal", body, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// Roles of a TranscriptEntry.
const (
	RoleLearner = "learner"
	RoleCoach   = "coach"
)

// TranscriptEntry is one entry of a session's transcript, the conversation as the learner saw
// it. A learner entry has Input: the turn's body as it was sent ({"message":…}, {"selected":…},
// {"form":…}, {"continue":true}) or a proposal decision ({"action":"accept"}). A coach entry has
// either Result (a turn's result as its result line sent it) with Fallback, or Card (a card sent
// before the result, such as an injected level_up card).
type TranscriptEntry struct {
	Seq      int64           `json:"seq"`
	At       time.Time       `json:"at"`
	Role     string          `json:"role"`
	Input    json.RawMessage `json:"input,omitempty"`
	Result   json.RawMessage `json:"result,omitempty"`
	Fallback bool            `json:"fallback,omitempty"`
	Card     json.RawMessage `json:"card,omitempty"`
}

// MessagesPage is one page of a transcript, oldest entry first.
type MessagesPage struct {
	Messages []TranscriptEntry `json:"messages"`
	// Next is the Before of the page of older entries; nil on the oldest page.
	Next *int64 `json:"next"`
}

// MessagesOptions selects a page of a transcript: up to Limit entries (1 to 200; 0 is the
// gateway's default, 50) whose Seq is below Before (0: the newest).
type MessagesOptions struct {
	Limit  int
	Before int64
}

// Messages reads one page of the transcript of session id: the newest page unless opts.Before
// says otherwise. Follow Next for older pages, or use Transcript for all of it.
func (c *Client) Messages(ctx context.Context, id string, opts MessagesOptions) (*MessagesPage, error) {
	q := url.Values{}
	if opts.Limit != 0 {
		q.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Before != 0 {
		q.Set("before", strconv.FormatInt(opts.Before, 10))
	}
	path := sessionPath(id) + "/messages"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var p MessagesPage
	if err := c.call(ctx, http.MethodGet, path, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Transcript reads the whole transcript of session id, oldest entry first, a page of pageSize
// entries at a time (0: the gateway's default).
func (c *Client) Transcript(ctx context.Context, id string, pageSize int) ([]TranscriptEntry, error) {
	var pages [][]TranscriptEntry
	opts := MessagesOptions{Limit: pageSize}
	for {
		p, err := c.Messages(ctx, id, opts)
		if err != nil {
			return nil, err
		}
		pages = append(pages, p.Messages)
		// A page must reach further back than the last, or a misbehaving server would keep the
		// loop going for ever.
		if p.Next == nil || (opts.Before != 0 && *p.Next >= opts.Before) {
			break
		}
		opts.Before = *p.Next
	}
	var all []TranscriptEntry
	for i := len(pages) - 1; i >= 0; i-- {
		all = append(all, pages[i]...)
	}
	return all, nil
}

func sessionPath(id string) string { return "/v1/sessions/" + url.PathEscape(id) }

// call sends a JSON request and decodes a JSON answer into out (when out is not nil).
func (c *Client) call(ctx context.Context, method, path string, in, out any) error {
	resp, err := c.send(ctx, method, path, in, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return apiError(resp)
	}
	if out == nil {
		// Reading what little there is lets the connection be reused.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.maxLine)+1))
	if err != nil {
		return fmt.Errorf("coachclient: %s %s: reading the answer: %w", method, path, err)
	}
	if len(body) > c.maxLine {
		return fmt.Errorf("coachclient: %s %s: the answer is over %d bytes", method, path, c.maxLine)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("coachclient: %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// send makes a request with in (if not nil) as its JSON body.
func (c *Client) send(ctx context.Context, method, path string, in any, accept string) (*http.Response, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("coachclient: encoding the %s %s request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("coachclient: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	return c.hc.Do(req)
}

// APIError is an answer of the gateway other than 2xx: the status and the gateway's error body
// {"error","message","field"}.
type APIError struct {
	Status int
	// Code is the gateway's stable error code, e.g. "session_not_found" or "session_busy". It is
	// empty when the body was not the gateway's (say, a proxy's error page).
	Code    string
	Message string
	// Field names the offending input of an invalid_input error.
	Field string
	// RetryAfter is the wait the answer's Retry-After header advises (429, 503), zero without one.
	RetryAfter time.Duration
}

// Error returns the status, the code and the message.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("coachgw: ")
	b.WriteString(strconv.Itoa(e.Status))
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Field != "" {
		b.WriteString(" (field " + e.Field + ")")
	}
	return b.String()
}

// apiError reads a non-2xx answer.
func apiError(resp *http.Response) *APIError {
	e := &APIError{Status: resp.StatusCode, RetryAfter: outbound.RetryAfter(resp.Header.Get("Retry-After"), time.Now())}
	var body struct {
		Error   string `json:"error"`
		Message string `json:"message"`
		Field   string `json:"field"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if json.Unmarshal(raw, &body) == nil {
		e.Code, e.Message, e.Field = body.Error, body.Message, body.Field
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	return e
}

// TurnRequest is a learner's turn. Which fields a session takes depends on its contract:
// toulmin a Message (or Continue) and optionally the Step the UI believes is current; cards a
// Message or a Selected option; module a Message or a Form answer. Message, Continue, Selected
// and FormAnswer build the common ones.
type TurnRequest struct {
	Message *string `json:"message,omitempty"`
	// Continue, on a toulmin session and instead of a Message, asks the coach to open the
	// current step: it is not a learner message, so the learner's next message is still the
	// step's first turn.
	Continue bool    `json:"continue,omitempty"`
	Step     string  `json:"step,omitempty"`
	Selected *string `json:"selected,omitempty"`
	Form     *Form   `json:"form,omitempty"`
}

// Form is a submitted form of a module session.
type Form struct {
	ID     string         `json:"id"`
	Values map[string]any `json:"values"`
}

// Message returns a turn that says text.
func Message(text string) TurnRequest { return TurnRequest{Message: &text} }

// Continue returns a toulmin turn without a learner message, in which the coach opens the
// current step (what a client sends after a proposal was accepted).
func Continue() TurnRequest { return TurnRequest{Continue: true} }

// Selected returns a cards turn that picks option id of the last card.
func Selected(id string) TurnRequest { return TurnRequest{Selected: &id} }

// FormAnswer returns a module turn that submits form id with values.
func FormAnswer(id string, values map[string]any) TurnRequest {
	if values == nil {
		values = map[string]any{}
	}
	return TurnRequest{Form: &Form{ID: id, Values: values}}
}

// CoachRequest is a turn on the seed's /api/coach route (toulmin sessions).
type CoachRequest struct {
	SessionID string `json:"sessionId"`
	Message   string `json:"message"`
	Step      string `json:"step,omitempty"`
}

// Turn takes a turn of session id and returns its stream. Problems the gateway finds before the
// stream starts (unknown session, session_busy, invalid_input, ...) are an *APIError; once the
// stream runs, a failed turn ends with an Error event. Cancelling ctx ends the stream and, with
// it, the turn. The caller must Close the stream (or read it to the end).
func (c *Client) Turn(ctx context.Context, sessionID string, in TurnRequest) (*Stream, error) {
	return c.stream(ctx, sessionPath(sessionID)+"/turns", in)
}

// Coach takes a turn on the seed's POST /api/coach route; otherwise it is Turn.
func (c *Client) Coach(ctx context.Context, in CoachRequest) (*Stream, error) {
	return c.stream(ctx, "/api/coach", in)
}

func (c *Client) stream(ctx context.Context, path string, in any) (*Stream, error) {
	rctx, cancel := context.WithCancel(ctx)
	resp, err := c.send(rctx, http.MethodPost, path, in, ndjsonType)
	if err != nil {
		cancel()
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer cancel()
		defer resp.Body.Close()
		return nil, apiError(resp)
	}
	if ct := resp.Header.Get("Content-Type"); !isNDJSON(ct) {
		resp.Body.Close()
		cancel()
		return nil, fmt.Errorf("coachclient: POST %s: the answer is %q, not an NDJSON stream", path, ct)
	}
	st := newStream(ctx, resp.Body, cancel, c.maxLine)
	st.turn = resp.Header.Get("X-Coach-Turn")
	return st, nil
}

const ndjsonType = "application/x-ndjson"

// isNDJSON accepts the gateway's media type, its unregistered twin, and none at all (a proxy
// may drop it).
func isNDJSON(contentType string) bool {
	if contentType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == ndjsonType || mt == "application/ndjson")
}
