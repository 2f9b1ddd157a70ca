package app_test

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
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
)

// gateway is a real coachgw serving on a loopback port in front of a scripted fakellm, on a real
// Redis whenever one is reachable.
type gateway struct {
	t   *testing.T
	url string
	llm *fakellm.Server
	log *syncBuffer
}

// syncBuffer collects the gateway's log lines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startGateway starts a gateway; change adjusts its configuration.
func startGateway(t *testing.T, change func(*config.Config)) *gateway {
	t.Helper()
	llm, base, stopLLM, err := fakellm.Start(fakellm.Options{ChunkMin: 3, ChunkMax: 8})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.OpenAIBaseURL = base
	cfg.RedisURL = redistest.URL(t)
	cfg.RedisPrefix = redistest.Prefix(t, cfg.RedisURL)
	cfg.FirstByteTimeout, cfg.IdleTimeout, cfg.TurnTimeout = 2*time.Second, 2*time.Second, 10*time.Second
	cfg.ShutdownTimeout = 5 * time.Second
	if change != nil {
		change(&cfg)
	}
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, cfg, zerolog.New(logs))
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
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		a.Close()
		stopLLM()
		if t.Failed() {
			t.Logf("gateway log:\n%s", logs.String())
		}
	})
	return &gateway{t: t, url: "http://" + ln.Addr().String(), llm: llm, log: logs}
}

// call sends a JSON request and decodes a JSON answer into out (when not nil).
func (g *gateway) call(method, path string, body any, out any) int {
	g.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, g.url+path, r)
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

type session struct {
	ID       string          `json:"id"`
	Contract string          `json:"contract"`
	Version  int64           `json:"version"`
	State    json.RawMessage `json:"state"`
}

func (g *gateway) create(contract string, extra map[string]string) session {
	g.t.Helper()
	body := map[string]string{"contract": contract}
	for k, v := range extra {
		body[k] = v
	}
	var s session
	if code := g.call("POST", "/v1/sessions", body, &s); code != http.StatusCreated {
		g.t.Fatalf("creating a %s session: status %d", contract, code)
	}
	return s
}

func (g *gateway) get(id string) session {
	g.t.Helper()
	var s session
	if code := g.call("GET", "/v1/sessions/"+id, nil, &s); code != http.StatusOK {
		g.t.Fatalf("GET session: status %d", code)
	}
	return s
}

// line is one decoded NDJSON line, with its raw text.
type line struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Block     *int            `json:"block"`
	BlockType string          `json:"blockType"`
	Card      json.RawMessage `json:"card"`
	Result    json.RawMessage `json:"result"`
	Session   session         `json:"session"`
	Fallback  bool            `json:"fallback"`
	Reason    string          `json:"reason"`
	Error     string          `json:"error"`
	Message   string          `json:"message"`
	raw       string
}

// turnResponse is a turn's answer: its status and, for a stream, its lines.
type turnResponse struct {
	status int
	header http.Header
	lines  []line
	body   string
}

// turn posts a turn and reads the whole answer.
func (g *gateway) turn(id string, body any) turnResponse {
	g.t.Helper()
	return g.post("/v1/sessions/"+id+"/turns", body)
}

func (g *gateway) post(path string, body any) turnResponse {
	g.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(g.url+path, "application/json", bytes.NewReader(b))
	if err != nil {
		g.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		g.t.Fatalf("reading the stream: %v", err)
	}
	tr := turnResponse{status: resp.StatusCode, header: resp.Header, body: string(raw)}
	if resp.Header.Get("Content-Type") == "application/x-ndjson" {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				g.t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
			}
			l.raw = sc.Text()
			tr.lines = append(tr.lines, l)
		}
	}
	return tr
}

// kinds renders the lines compactly, e.g. "delta delta result".
func (tr turnResponse) kinds() string {
	var k []string
	for _, l := range tr.lines {
		if l.Type == "error" {
			k = append(k, "error:"+l.Error)
			continue
		}
		k = append(k, l.Type)
	}
	return strings.Join(k, " ")
}

// text concatenates the delta texts after the last reset.
func (tr turnResponse) text() string {
	var b strings.Builder
	for _, l := range tr.lines {
		switch l.Type {
		case "delta":
			b.WriteString(l.Text)
		case "reset":
			b.Reset()
		}
	}
	return b.String()
}

// last returns the stream's last line.
func (tr turnResponse) last() line {
	if len(tr.lines) == 0 {
		return line{}
	}
	return tr.lines[len(tr.lines)-1]
}

// checkEnding fails unless the stream ends with exactly one result or error line.
func (tr turnResponse) checkEnding(t *testing.T) {
	t.Helper()
	ends := 0
	for _, l := range tr.lines {
		if l.Type == "result" || l.Type == "error" {
			ends++
		}
	}
	if last := tr.last().Type; ends != 1 || (last != "result" && last != "error") {
		t.Errorf("stream %q does not end with exactly one result or error line", tr.kinds())
	}
}

// eventually polls cond for up to 3 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// obj builds model output JSON with keys in the given order: obj("assistantText", "Hi", ...).
func obj(kv ...any) string {
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
