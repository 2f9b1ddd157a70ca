// Package apptest starts a real coachgw on a loopback port, in front of a scripted fakellm and on
// a real Redis whenever one is reachable, and reads its NDJSON streams: the harness of every
// end-to-end test.
package apptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/app"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/logcap"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
	"github.com/coachgw/coachgw/internal/schema"
)

// Gateway is a real coachgw serving on a loopback port in front of a scripted fakellm, on a real
// Redis whenever one is reachable.
type Gateway struct {
	t *testing.T
	// URL is the gateway's base URL.
	URL string
	// LLM is the scripted model endpoint behind it.
	LLM *fakellm.Server
	// Log holds the gateway's log lines.
	Log *SyncBuffer
	// Config is the configuration the gateway runs with: RedisURL ("" for the embedded Redis)
	// and RedisPrefix say where its sessions live.
	Config config.Config
	stop   func()
}

// SyncBuffer collects the gateway's log lines.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// StartLLM starts one more scripted model endpoint, e.g. a fallback endpoint for
// config.Config.Upstreams, and returns it with its base URL. It stops when the test ends.
func StartLLM(t *testing.T, o fakellm.Options) (*fakellm.Server, string) {
	t.Helper()
	llm, base, stop, err := fakellm.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return llm, base
}

// Start starts a gateway; change adjusts its configuration.
func Start(t *testing.T, change func(*config.Config)) *Gateway {
	t.Helper()
	return StartWith(t, Options{Config: change})
}

// Options configure StartWith.
type Options struct {
	// Config, when set, adjusts the gateway's configuration.
	Config func(*config.Config)
	// LLM configures the scripted model endpoint, e.g. its Fixtures. Zero chunk bounds stream 3
	// to 8 bytes of text per event.
	LLM fakellm.Options
	// Prefix, when set, is the Redis key prefix instead of a fresh one of the test's own, so that
	// gateways started with the same Prefix (e.g. from redistest.Prefix) share their sessions.
	Prefix string
	// Log, when set, receives the gateway's log lines instead of Gateway.Log, e.g. to keep a
	// long run from holding every line in memory.
	Log io.Writer
}

// StartWith starts a gateway configured by o.
func StartWith(t *testing.T, o Options) *Gateway {
	t.Helper()
	llm, base, stopLLM, err := fakellm.Start(o.LLM)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.OpenAIBaseURL = base
	cfg.RedisURL = redistest.URL(t)
	cfg.RedisPrefix = o.Prefix
	if cfg.RedisPrefix == "" {
		cfg.RedisPrefix = redistest.Prefix(t, cfg.RedisURL)
	}
	// Without a reachable Redis the gateway embeds one and saves it: in the test's own
	// directory, never the user's cache.
	cfg.DataDir = t.TempDir()
	cfg.FirstByteTimeout, cfg.IdleTimeout, cfg.TurnTimeout = 2*time.Second, 2*time.Second, 10*time.Second
	cfg.ShutdownTimeout = 5 * time.Second
	// The suites written before the safety checks (v1.3) pin how the model's fragments become
	// delta lines and when the first one is out. A holdback of 0 still checks every delta
	// before it leaves, and releases it as soon as it passed, so their lines stay as they were;
	// the safety suites set the default holdback (sentence windows) back.
	cfg.SafetyHoldbackChars = 0
	// The suites script the model endpoint's replies in order, and a safety judge on that
	// endpoint (COACH_SAFETY_JUDGE=auto) would take some of them; the judge's suites give it an
	// endpoint of its own.
	cfg.SafetyJudge = "off"
	// Every client of a test is 127.0.0.1, and load tests open more connections at once than
	// one address's share: the suites that attack the shares set it back.
	cfg.MaxConnsPerClient = 0
	if o.Config != nil {
		o.Config(&cfg)
	}
	logs := &SyncBuffer{}
	var logTo io.Writer = logs
	if o.Log != nil {
		logTo = o.Log
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The gateway's lines are capped as cmd/coachgw caps them.
	a, err := app.New(ctx, cfg, zerolog.New(logcap.Writer(logTo, logcap.MaxLine)))
	if err != nil {
		cancel()
		stopLLM()
		t.Fatalf("app.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, ln) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Serve: %v", err)
			}
			a.Close()
			stopLLM()
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	return &Gateway{t: t, URL: "http://" + ln.Addr().String(), LLM: llm, Log: logs, Config: cfg, stop: stop}
}

// Stop drains and stops the gateway and its model endpoint before the test ends, e.g. to
// check that nothing of them is left running; the test's cleanup does it otherwise.
func (g *Gateway) Stop() { g.stop() }

// Metrics returns the gateway's /metrics page.
func (g *Gateway) Metrics() string {
	g.t.Helper()
	resp, err := http.Get(g.URL + "/metrics")
	if err != nil {
		g.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatalf("GET /metrics: %v", err)
	}
	return string(b)
}

// Call sends a JSON request and decodes a JSON answer into out (when not nil).
func (g *Gateway) Call(method, path string, body any, out any) int {
	g.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, g.URL+path, r)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			g.t.Fatalf("%s %s: decoding the answer: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// Session is a session as the API returns it.
type Session struct {
	ID       string          `json:"id"`
	Contract string          `json:"contract"`
	Version  int64           `json:"version"`
	State    json.RawMessage `json:"state"`
}

// Create creates a session of contract with extra body members (module, locale).
func (g *Gateway) Create(contract string, extra map[string]string) Session {
	g.t.Helper()
	body := map[string]string{"contract": contract}
	for k, v := range extra {
		body[k] = v
	}
	var s Session
	if code := g.Call("POST", "/v1/sessions", body, &s); code != http.StatusCreated {
		g.t.Fatalf("creating a %s session: status %d", contract, code)
	}
	return s
}

// Get reads a session.
func (g *Gateway) Get(id string) Session {
	g.t.Helper()
	var s Session
	if code := g.Call("GET", "/v1/sessions/"+id, nil, &s); code != http.StatusOK {
		g.t.Fatalf("GET session: status %d", code)
	}
	return s
}

// Line is one decoded NDJSON line, with its raw text.
type Line struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Block     *int            `json:"block"`
	BlockType string          `json:"blockType"`
	Card      json.RawMessage `json:"card"`
	Result    json.RawMessage `json:"result"`
	Session   Session         `json:"session"`
	Fallback  bool            `json:"fallback"`
	Upstream  string          `json:"upstream"`
	Reason    string          `json:"reason"`
	Error     string          `json:"error"`
	Message   string          `json:"message"`
	// Raw is the line as it was sent.
	Raw string
}

// TurnResponse is a turn's answer: its status and, for a stream, its lines.
type TurnResponse struct {
	Status int
	Header http.Header
	Lines  []Line
	Body   string
}

// Turn posts a turn and reads the whole answer.
func (g *Gateway) Turn(id string, body any) TurnResponse {
	g.t.Helper()
	return g.Post("/v1/sessions/"+id+"/turns", body)
}

// Post posts body to path and reads the whole answer.
func (g *Gateway) Post(path string, body any) TurnResponse {
	g.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(g.URL+path, "application/json", bytes.NewReader(b))
	if err != nil {
		g.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatalf("reading the stream: %v", err)
	}
	tr := TurnResponse{Status: resp.StatusCode, Header: resp.Header, Body: string(raw)}
	if resp.Header.Get("Content-Type") == "application/x-ndjson" {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l Line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				g.t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
			}
			l.Raw = sc.Text()
			if err := CheckCard(l); err != nil {
				g.t.Error(err)
			}
			tr.Lines = append(tr.Lines, l)
		}
	}
	return tr
}

// Stream is a turn's answer read line by line, for tests that act while the stream is open.
type Stream struct {
	Status int
	Header http.Header
	// Lines holds the lines read so far.
	Lines []Line
	resp  *http.Response
	sc    *bufio.Scanner
	raw   bytes.Buffer
}

// OpenStream posts body as JSON to url and returns the answer as soon as its header arrived.
// It reports failures as errors, so any goroutine may call it.
func OpenStream(url string, body any) (*Stream, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	s := &Stream{Status: resp.StatusCode, Header: resp.Header, resp: resp}
	s.sc = bufio.NewScanner(io.TeeReader(resp.Body, &s.raw))
	s.sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	return s, nil
}

// OpenTurn opens a turn of session id; see OpenStream.
func (g *Gateway) OpenTurn(id string, body any) *Stream {
	g.t.Helper()
	s, err := OpenStream(g.URL+"/v1/sessions/"+id+"/turns", body)
	if err != nil {
		g.t.Fatalf("opening a turn: %v", err)
	}
	return s
}

// Next reads the next NDJSON line; it returns io.EOF after the last one, and an error for an
// answer that is not an NDJSON stream.
func (s *Stream) Next() (Line, error) {
	if ct := s.Header.Get("Content-Type"); ct != "application/x-ndjson" {
		return Line{}, fmt.Errorf("status %d, Content-Type %q: not a stream", s.Status, ct)
	}
	if !s.sc.Scan() {
		if err := s.sc.Err(); err != nil {
			return Line{}, err
		}
		return Line{}, io.EOF
	}
	var l Line
	if err := json.Unmarshal(s.sc.Bytes(), &l); err != nil {
		return Line{}, fmt.Errorf("line %q is not JSON: %w", s.sc.Text(), err)
	}
	l.Raw = s.sc.Text()
	s.Lines = append(s.Lines, l)
	return l, CheckCard(l)
}

var frontendCard = sync.OnceValue(func() *schema.Validator { return schema.Load("card.json") })

// CheckCard returns an error when l carries a card (a card line, or the result of a cards
// session) that does not follow api/schemas/card.json. Every stream read through this package
// is checked with it, so every card an end-to-end test makes the gateway send is held to the
// published schema.
func CheckCard(l Line) error {
	var card json.RawMessage
	switch {
	case l.Type == "card":
		card = l.Card
	case l.Type == "result" && l.Session.Contract == "cards":
		card = l.Result
	default:
		return nil
	}
	doc, err := schema.Decode(card)
	if err == nil {
		err = frontendCard().Validate(doc)
	}
	if err != nil {
		return fmt.Errorf("card %s does not follow api/schemas/card.json: %w", card, err)
	}
	return nil
}

// Rest reads the answer to its end and returns all of it, the lines read before included.
func (s *Stream) Rest() (TurnResponse, error) {
	defer s.Close()
	if s.Header.Get("Content-Type") == "application/x-ndjson" {
		for {
			if _, err := s.Next(); err == io.EOF {
				break
			} else if err != nil {
				return TurnResponse{}, err
			}
		}
	} else if _, err := io.Copy(io.Discard, io.TeeReader(s.resp.Body, &s.raw)); err != nil {
		return TurnResponse{}, err
	}
	return TurnResponse{Status: s.Status, Header: s.Header, Lines: s.Lines, Body: s.raw.String()}, nil
}

// Close closes the connection, as a client that leaves does.
func (s *Stream) Close() error { return s.resp.Body.Close() }

// Kinds renders the lines compactly, e.g. "delta delta result".
func (tr TurnResponse) Kinds() string {
	var k []string
	for _, l := range tr.Lines {
		if l.Type == "error" {
			k = append(k, "error:"+l.Error)
			continue
		}
		k = append(k, l.Type)
	}
	return strings.Join(k, " ")
}

// Text concatenates the delta texts after the last reset.
func (tr TurnResponse) Text() string {
	var b strings.Builder
	for _, l := range tr.Lines {
		switch l.Type {
		case "delta":
			b.WriteString(l.Text)
		case "reset":
			b.Reset()
		}
	}
	return b.String()
}

// Last returns the stream's last line.
func (tr TurnResponse) Last() Line {
	if len(tr.Lines) == 0 {
		return Line{}
	}
	return tr.Lines[len(tr.Lines)-1]
}

// CheckEnding fails unless the stream ends with exactly one result or error line.
func (tr TurnResponse) CheckEnding(t *testing.T) {
	t.Helper()
	ends := 0
	for _, l := range tr.Lines {
		if l.Type == "result" || l.Type == "error" {
			ends++
		}
	}
	if last := tr.Last().Type; ends != 1 || (last != "result" && last != "error") {
		t.Errorf("stream %q does not end with exactly one result or error line", tr.Kinds())
	}
}

// Msg is a turn body with a message.
func Msg(s string) map[string]string { return map[string]string{"message": s} }

// Eventually polls cond for up to 3 s.
func Eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Obj builds model output JSON with keys in the given order: Obj("assistantText", "Hi", ...).
func Obj(kv ...any) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(kv[i])
		v, _ := json.Marshal(kv[i+1])
		fmt.Fprintf(&b, "%s:%s", k, v)
	}
	b.WriteByte('}')
	return b.String()
}
