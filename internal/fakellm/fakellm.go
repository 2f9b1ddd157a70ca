// Package fakellm is an OpenAI-compatible chat-completions server that answers from a script
// instead of a model. It owns the byte-level imitation of the endpoint: the SSE framing and chunk
// shapes of a streamed completion, the JSON of a non-streamed one, the error bodies, and the ways
// a real endpoint misbehaves (rate limits, refused connections, stalls, cut streams, garbage lines,
// huge lines, trickling bytes). The gateway embeds it to serve the replay model, integration tests
// and benchmarks script it as their upstream, and it can replay or record fixture streams.
//
// A request is answered, in this order of preference, by the fixture named in the
// X-Fakellm-Fixture header, by the oldest reply queued with Enqueue (or POST /_fakellm/enqueue),
// or by Options.Responder. A fault named in the X-Fakellm-Fault header replaces the fault of
// that reply. The header syntax is a list of key[=value] items separated by ";":
//
//	status=429;retry_after=2     answer 429 with an OpenAI error body and Retry-After: 2
//	refuse                       close the connection without answering
//	first_byte_delay=3s          wait before writing anything, headers included
//	stall_after=3;stall=2s       pause 2s before the fourth event
//	cut_after=5                  close the connection after five events, without [DONE]
//	malformed                    insert a line that is neither valid SSE data nor JSON
//	long_line=70000              insert a valid chunk whose data line is 70000 bytes long
//	drip=100ms                   write the response one byte every 100ms
//
// Durations are Go durations; a bare number is seconds.
//
// Routes: POST /v1/chat/completions (streamed or not) and GET /v1/models, with or without the
// "/v1" prefix, and the control routes for out-of-process users:
//
//	POST /_fakellm/enqueue   queue a JSON array of Reply (or one Reply); answers the stats
//	GET  /_fakellm/stats     {"requests":N,"open":N,"served":N,"queued":N}
//	POST /_fakellm/reset     drop the queue and the request log, zero the counters
//
// Reply in JSON uses the keys content, tool_call {id, name, arguments}, chunks, fixture and
// fault, whose keys are those of the header, with durations as strings:
//
//	[{"content":"{\"assistantText\":\"Hi\",\"step\":\"claim\"}"},
//	 {"tool_call":{"name":"display_card","arguments":"{}"},"fault":{"stall_after":3,"stall":"2s"}},
//	 {"fixture":"cards-scenario"},
//	 {"content":"x","fault":{"status":429,"retry_after":"2"}}]
package fakellm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/outbound"
)

// Header names a client may set to steer one request.
const (
	// FaultHeader carries a fault to play for this request, in the syntax of the package comment.
	FaultHeader = "X-Fakellm-Fault"
	// FixtureHeader names a fixture (with or without ".sse") to replay for this request.
	FixtureHeader = "X-Fakellm-Fixture"
)

const maxRequestBody = 32 << 20

// Options configure a Server. The zero value streams 3 to 8 bytes of text per event without
// pauses and answers unscripted requests with an error.
type Options struct {
	// ChunkMin and ChunkMax bound the bytes of text per streamed event (default 3 and 8). A
	// piece grows past ChunkMax only to keep a multi-byte character whole.
	ChunkMin, ChunkMax int
	// DelayMin and DelayMax bound the pause before every event after the first (default none).
	DelayMin, DelayMax time.Duration
	// Responder answers requests for which no reply is queued. Nil answers them with a 500
	// error reply ("no script").
	Responder Responder
	// Seed makes chunk sizes, pauses and ids reproducible: the same seed, the same order of
	// requests and the same Now give the same bytes.
	Seed uint64
	// OnChunk, when set, is called after each event that carries text was flushed, with the
	// text's sequence number within its response (0-based), the text and the wall-clock time of
	// the flush. It runs on the request's goroutine and must be quick.
	OnChunk func(seq int, text string, at time.Time)
	// Fixtures holds the recorded streams that Reply.Fixture and FixtureHeader name.
	Fixtures fs.FS
	// Record, when set, turns the server into a recording proxy: see Recording.
	Record *Recording
	// RequestLog is how many of the latest requests Requests keeps (default 1000; negative keeps
	// none), so that a long-running server does not grow without bound.
	RequestLog int
	// Model is the model listed by GET /v1/models and reported when a request names none
	// (default "fakellm").
	Model string
	// Now stamps the "created" field of responses and the names of recordings (default time.Now).
	Now func() time.Time
	// Log receives a debug line per request and warnings for failures; the zero Logger discards.
	Log zerolog.Logger
}

// Responder answers a request that no queued reply answers.
type Responder interface {
	Respond(req *Request) Reply
}

// ResponderFunc adapts a function to Responder.
type ResponderFunc func(req *Request) Reply

// Respond calls f(req).
func (f ResponderFunc) Respond(req *Request) Reply { return f(req) }

// Request is a chat-completion request as the server understood it.
type Request struct {
	Model    string
	Messages []Message
	Tools    []Tool
	// ToolChoice is the function the request forces the model to call, or empty.
	ToolChoice string
	// ResponseFormat is "json_schema", "json_object" or empty (plain text).
	ResponseFormat string
	Stream         bool
	// IncludeUsage reports stream_options.include_usage: a usage chunk precedes [DONE].
	IncludeUsage bool
	// Header holds the request's HTTP headers.
	Header http.Header
	// Raw is the request body exactly as received.
	Raw []byte
}

// Message is one chat message of a request. Content joins the text parts of a multi-part content.
type Message struct {
	Role       string
	Content    string
	ToolCallID string
	ToolCalls  []ToolCall
}

// ToolCall is a function call, made by the model in a Reply or replayed in a request's history.
type ToolCall struct {
	// ID is generated ("call_…") when a Reply leaves it empty.
	ID        string `json:"id,omitempty"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool is a function a request offers the model.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// Reply is a scripted answer. Content and ToolCall.Arguments are split into chunks of the
// configured sizes unless Chunks gives the pieces; with both Content and ToolCall, the content
// streams first. A non-streamed request gets the same answer as one chat.completion object.
type Reply struct {
	Content  string    `json:"content,omitempty"`
	ToolCall *ToolCall `json:"tool_call,omitempty"`
	// Chunks, when set, are exactly the text pieces streamed one per event: pieces of
	// ToolCall.Arguments when there is a tool call, of Content otherwise (whose value it then
	// replaces). Pieces should be valid UTF-8: JSON encoding turns invalid bytes into U+FFFD.
	Chunks []string `json:"chunks,omitempty"`
	// Fault is played while answering. With a Fault.Status, Content, when set, is the error
	// body's message instead of the status text.
	Fault Fault `json:"fault,omitzero"`
	// Fixture, when set, names a recorded response in Options.Fixtures (".sse" may be left
	// off) that is replayed byte for byte instead of the fields above; Fault still applies.
	Fixture string `json:"fixture,omitempty"`
}

// Server is the fake endpoint; it is an http.Handler safe for concurrent use.
type Server struct {
	opts Options

	mu    sync.Mutex
	queue []Reply
	reqs  []*Request
	// seq numbers requests; it seeds each one's randomness so that replies do not depend on
	// how concurrent requests interleave their writes.
	seq uint64

	open   atomic.Int64
	served atomic.Int64
}

// New returns a Server with opts, defaults filled in.
func New(opts Options) *Server {
	if opts.ChunkMin <= 0 && opts.ChunkMax <= 0 {
		opts.ChunkMin, opts.ChunkMax = 3, 8
	}
	opts.ChunkMin = max(opts.ChunkMin, 1)
	opts.ChunkMax = max(opts.ChunkMax, opts.ChunkMin)
	opts.DelayMin = max(opts.DelayMin, 0)
	opts.DelayMax = max(opts.DelayMax, opts.DelayMin)
	if opts.Model == "" {
		opts.Model = "fakellm"
	}
	if opts.RequestLog == 0 {
		opts.RequestLog = 1000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Server{opts: opts}
}

// Start serves a new Server on 127.0.0.1 at a free port. baseURL ends in "/v1", ready for an
// OpenAI client. stop cancels the streams in progress, shuts the listener down and waits for
// the handlers to return; it may be called more than once.
func Start(opts Options) (s *Server, baseURL string, stop func(), err error) {
	s = New(opts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opts.Log.Error().Err(err).Msg("fakellm: serve")
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
			<-done
		})
	}
	return s, "http://" + ln.Addr().String() + "/v1", stop, nil
}

// Enqueue appends replies to the script. Queued replies answer requests first come, first
// served, before the Responder is asked.
func (s *Server) Enqueue(r ...Reply) {
	s.mu.Lock()
	s.queue = append(s.queue, r...)
	s.mu.Unlock()
}

// Requests returns the chat-completion requests received so far, oldest first: all of them, or
// the latest Options.RequestLog.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return nil
	}
	return append([]*Request(nil), s.reqs[max(0, len(s.reqs)-s.opts.RequestLog):]...)
}

// Open returns how many chat-completion requests are being answered right now.
func (s *Server) Open() int { return int(s.open.Load()) }

// Served returns how many chat-completion requests were answered in full, error replies
// included; refused, cut and abandoned answers do not count. Like Open, it changes when the
// handler returns, which can be just after the client has read the last byte.
func (s *Server) Served() int { return int(s.served.Load()) }

// ServeHTTP routes the OpenAI and control endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch path := r.URL.Path; path {
	case "/_fakellm/enqueue":
		s.only(w, r, http.MethodPost, s.handleEnqueue)
	case "/_fakellm/stats":
		s.only(w, r, http.MethodGet, s.handleStats)
	case "/_fakellm/reset":
		s.only(w, r, http.MethodPost, s.handleReset)
	default:
		switch strings.TrimPrefix(path, "/v1") {
		case "/chat/completions":
			s.only(w, r, http.MethodPost, s.handleChat)
		case "/models":
			s.only(w, r, http.MethodGet, s.handleModels)
		default:
			writeError(w, http.StatusNotFound, "Unknown request URL: "+r.Method+" "+path)
		}
	}
}

func (s *Server) only(w http.ResponseWriter, r *http.Request, method string, h http.HandlerFunc) {
	if r.Method != method {
		w.Header().Set("Allow", method)
		writeError(w, http.StatusMethodNotAllowed, "Method "+r.Method+" not allowed; use "+method)
		return
	}
	h(w, r)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	s.open.Add(1)
	defer s.open.Add(-1)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "fakellm: reading the request body: "+err.Error())
		return
	}
	req, perr := parseRequest(body)
	req.Header = r.Header.Clone()
	seq := s.remember(req)
	log := s.opts.Log.With().Uint64("req", seq).Logger()
	log.Debug().Bool("stream", req.Stream).Str("model", req.Model).Int("messages", len(req.Messages)).Msg("fakellm: chat completion")
	if perr != nil {
		writeError(w, http.StatusBadRequest, "fakellm: "+perr.Error())
		s.served.Add(1)
		return
	}
	var done bool
	if s.opts.Record != nil {
		done = s.proxy(w, r, req, seq, log)
	} else {
		done = s.answer(w, r, req, seq, log)
	}
	if done {
		s.served.Add(1)
	}
}

// remember logs req for Requests and returns its sequence number (1-based).
func (s *Server) remember(req *Request) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	if keep := s.opts.RequestLog; keep > 0 {
		if len(s.reqs) == 2*keep {
			// Copy rather than reslice so the dropped requests can be collected; doing it at
			// twice the limit keeps the cost per request constant.
			s.reqs = append(make([]*Request, 0, 2*keep), s.reqs[keep:]...)
		}
		s.reqs = append(s.reqs, req)
	}
	return s.seq
}

// next picks the reply to req: the fixture the header names, the oldest queued reply, or the
// Responder's. ok is false when there is no script.
func (s *Server) next(r *http.Request, req *Request) (rep Reply, ok bool) {
	if name := r.Header.Get(FixtureHeader); name != "" {
		return Reply{Fixture: name}, true
	}
	s.mu.Lock()
	if len(s.queue) > 0 {
		rep = s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return rep, true
	}
	s.mu.Unlock()
	if s.opts.Responder == nil {
		return Reply{}, false
	}
	return s.opts.Responder.Respond(req), true
}

// answer plays the reply to req and reports whether it was written in full.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, req *Request, seq uint64, log zerolog.Logger) bool {
	// The header is checked first so that a typo in it neither hides behind a missing script
	// nor uses up a queued reply.
	h := r.Header.Get(FaultHeader)
	headerFault, err := ParseFault(h)
	if err != nil {
		writeError(w, http.StatusBadRequest, "fakellm: "+FaultHeader+": "+err.Error())
		return true
	}
	rep, ok := s.next(r, req)
	if !ok {
		writeError(w, http.StatusInternalServerError, "fakellm: no script")
		return true
	}
	fault := rep.Fault
	if h != "" {
		fault = headerFault
	}
	if err := fault.validate(); err != nil {
		writeError(w, http.StatusBadRequest, "fakellm: "+err.Error())
		return true
	}
	if fault != (Fault{}) {
		log.Debug().Str("fault", fault.String()).Msg("fakellm: playing fault")
	}
	ctx := r.Context()
	rng := rand.New(rand.NewPCG(s.opts.Seed, seq))
	if !outbound.Sleep(ctx, fault.FirstByteDelay) {
		return false
	}
	if fault.Refuse {
		hangUp(w)
		return false
	}
	if fault.Status != 0 {
		if fault.RetryAfter != "" {
			w.Header().Set("Retry-After", fault.RetryAfter)
		}
		msg := http.StatusText(fault.Status) + " (fakellm fault)"
		if rep.Content != "" {
			msg = rep.Content // the endpoint's own words, e.g. a context length error
		}
		writeError(w, fault.Status, msg)
		return true
	}

	m := meta{id: "chatcmpl-" + randomID(rng, 29), created: s.opts.Now().Unix(), model: req.Model}
	if m.model == "" {
		m.model = s.opts.Model
	}
	var p *plan
	contentType := "text/event-stream"
	switch {
	case rep.Fixture != "":
		b, err := s.fixture(rep.Fixture)
		if err != nil {
			log.Warn().Err(err).Msg("fakellm: fixture")
			writeError(w, http.StatusInternalServerError, "fakellm: "+err.Error())
			return true
		}
		if isJSON(b) {
			contentType = "application/json"
			p = &plan{events: [][]byte{b}, texts: []string{""}}
		} else {
			p = fixturePlan(b, s.opts.OnChunk != nil)
		}
	case req.Stream:
		p = s.streamPlan(req, rep, m, rng)
	default:
		contentType = "application/json"
		body := completion(req, rep, m)
		p = &plan{events: [][]byte{body}, texts: []string{""}}
		w.Header().Set("Content-Length", itoa(len(body)))
	}
	if contentType == "text/event-stream" {
		p.insertFaults(fault, m)
		w.Header().Set("Cache-Control", "no-cache")
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if err := flush(w); err != nil {
		return false
	}
	return s.write(ctx, w, p, fault, rng)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	writeJSON(w, http.StatusOK, struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{ID: s.opts.Model, Object: "model", OwnedBy: "fakellm"}}})
}

func (s *Server) handleEnqueue(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "fakellm: reading the request body: "+err.Error())
		return
	}
	var replies []Reply
	if isJSON(body) {
		var one Reply
		err = json.Unmarshal(body, &one)
		replies = []Reply{one}
	} else {
		err = json.Unmarshal(body, &replies)
	}
	if err == nil {
		for _, rep := range replies {
			if err = rep.Fault.validate(); err != nil {
				break
			}
		}
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "fakellm: enqueue wants a JSON array of replies: "+err.Error())
		return
	}
	s.Enqueue(replies...)
	s.handleStats(w, r)
}

// stats is the body of GET /_fakellm/stats.
type stats struct {
	// Requests counts the chat-completion requests received since the start or the last reset.
	Requests int `json:"requests"`
	Open     int `json:"open"`
	Served   int `json:"served"`
	Queued   int `json:"queued"`
}

func (s *Server) handleStats(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	st := stats{Requests: int(s.seq), Queued: len(s.queue)}
	s.mu.Unlock()
	st.Open, st.Served = s.Open(), s.Served()
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.queue, s.reqs, s.seq = nil, nil, 0
	s.served.Store(0)
	s.mu.Unlock()
	s.handleStats(w, r)
}

// isJSON reports whether b holds a JSON object rather than SSE.
func isJSON(b []byte) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

// hangUp closes the client's connection without another byte, as a crashed or overloaded
// endpoint would. What was flushed before stays delivered.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// HTTP/2 and wrapped writers cannot be hijacked; aborting the handler resets the stream.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

func flush(w http.ResponseWriter) error {
	if err := http.NewResponseController(w).Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}
