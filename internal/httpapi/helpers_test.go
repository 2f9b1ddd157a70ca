package httpapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/cards"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
	"github.com/coachgw/coachgw/internal/module"
	"github.com/coachgw/coachgw/internal/toulmin"
)

// serverModel is a testServer's model: every call gets answer in one fragment, however many
// turns a test runs, and the shared Model counts the calls. A test may set answer before its
// first turn.
type serverModel struct {
	*coachtest.Model
	answer string
}

// Stream queues the answer for this call and plays it.
func (m *serverModel) Stream(ctx context.Context, req coach.ModelRequest, hooks coach.StreamHooks) (coach.Stream, error) {
	m.Enqueue(coachtest.Fragments(coach.Fragment{Content: m.answer}, coach.Fragment{FinishReason: "stop"}))
	return m.Model.Stream(ctx, req, hooks)
}

// contracts returns the gateway's three contracts with their defaults and the built-in modules.
func contracts(t testing.TB) []coach.Contract {
	t.Helper()
	reg, err := module.LoadRegistry("")
	if err != nil {
		t.Fatal(err)
	}
	return []coach.Contract{toulmin.New(), cards.New(cards.DefaultConfig()), module.New(reg)}
}

// testServer is a Server over an in-memory store and a scripted model, on a loopback port.
type testServer struct {
	t     *testing.T
	URL   string
	store *coachtest.MemStore
	model *serverModel
	log   *syncBuffer
}

// syncBuffer collects log lines from concurrent requests.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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

// startServer starts a Server; change adjusts its Deps.
func startServer(t *testing.T, change func(*Deps)) *testServer {
	t.Helper()
	ts := &testServer{t: t, store: coachtest.NewMemStore(), log: &syncBuffer{},
		model: &serverModel{Model: coachtest.NewModel(), answer: `{"assistantText":"Tell me more.","step":"claim"}`}}
	d := Deps{
		Service: coach.New(coach.Deps{
			Store: ts.store, Upstreams: []coach.Upstream{{Name: "default", Model: ts.model}},
			Contracts: contracts(t), LearnerAudit: ts.store,
		}),
		Log: zerolog.New(ts.log),
	}
	if change != nil {
		change(&d)
	}
	srv := httptest.NewServer(New(d).Handler())
	t.Cleanup(srv.Close)
	ts.URL = srv.URL
	return ts
}

// response is an answer read whole.
type response struct {
	Status int
	Header http.Header
	Body   string
}

// errorCode returns the "error" member of a JSON error body.
func (r response) errorCode() string {
	var b errorBody
	_ = json.Unmarshal([]byte(r.Body), &b)
	return b.Error
}

// do sends a request with body (sent as is) and headers given as name, value pairs.
func (ts *testServer) do(method, path, body string, headers ...string) response {
	ts.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, r)
	if err != nil {
		ts.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		ts.t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: string(b)}
}

// create creates a session of contract with the given headers and returns its id.
func (ts *testServer) create(contract string, headers ...string) string {
	ts.t.Helper()
	body := `{"contract":"` + contract + `"}`
	if contract == "module" {
		body = `{"contract":"module","module":"anxiety-basics"}`
	}
	r := ts.do("POST", "/v1/sessions", body, headers...)
	if r.Status != http.StatusCreated {
		ts.t.Fatalf("creating a %s session: %d %s", contract, r.Status, r.Body)
	}
	var s struct{ ID string }
	if err := json.Unmarshal([]byte(r.Body), &s); err != nil {
		ts.t.Fatal(err)
	}
	return s.ID
}

// hexHash returns the hex SHA-256 of key, the form COACH_API_KEYS holds.
func hexHash(key string) string {
	h := HashKey(key)
	return hex.EncodeToString(h[:])
}
