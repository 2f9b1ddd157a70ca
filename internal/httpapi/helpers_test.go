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
	"time"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/cards"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/module"
	"github.com/coachgw/coachgw/internal/toulmin"
)

// memStore is an in-memory coach.Store that records every session id it is asked about, so a
// test can prove that an id never reached the store.
type memStore struct {
	mu       sync.Mutex
	sessions map[string]coach.Session
	locks    map[string]string
	asked    []string
}

var _ coach.Store = (*memStore)(nil)

func newMemStore() *memStore {
	return &memStore{sessions: map[string]coach.Session{}, locks: map[string]string{}}
}

func (m *memStore) ask(id string) {
	m.asked = append(m.asked, id)
}

// Asked returns the ids the store was asked about.
func (m *memStore) Asked() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.asked...)
}

// tenantOf returns the tenant of stored session id.
func (m *memStore) tenantOf(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[id].Tenant
}

func (m *memStore) Create(_ context.Context, s *coach.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ask(s.ID)
	m.sessions[s.ID] = *s
	return nil
}

func (m *memStore) Get(_ context.Context, tenant, id string) (*coach.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ask(id)
	s, ok := m.sessions[id]
	if !ok || s.Tenant != tenant {
		return nil, coach.ErrNotFound
	}
	return &s, nil
}

func (m *memStore) Delete(_ context.Context, tenant, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ask(id)
	if s, ok := m.sessions[id]; ok && s.Tenant == tenant {
		delete(m.sessions, id)
		delete(m.locks, id)
	}
	return nil
}

func (m *memStore) Claim(_ context.Context, tenant, id string, _ time.Duration) (*coach.Session, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ask(id)
	s, ok := m.sessions[id]
	if !ok || s.Tenant != tenant {
		return nil, "", coach.ErrNotFound
	}
	if m.locks[id] != "" {
		return nil, "", coach.ErrBusy
	}
	token := coach.NewID()
	m.locks[id] = token
	return &s, token, nil
}

func (m *memStore) Commit(_ context.Context, s *coach.Session, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.sessions[s.ID]
	if !ok || m.locks[s.ID] != token || cur.Version != s.Version-1 {
		return coach.ErrConflict
	}
	m.sessions[s.ID] = *s
	delete(m.locks, s.ID)
	return nil
}

func (m *memStore) Release(_ context.Context, id, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[id] == token {
		delete(m.locks, id)
	}
	return nil
}

func (m *memStore) Ping(context.Context) error { return nil }

// fakeModel answers every request with the same text, in one fragment, and counts the calls.
type fakeModel struct {
	mu     sync.Mutex
	answer string
	calls  int
}

func (f *fakeModel) Stream(context.Context, coach.ModelRequest) (coach.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return &fakeStream{frags: []coach.Fragment{{Content: f.answer}, {FinishReason: "stop"}}}, nil
}

// Calls returns how many model calls were made.
func (f *fakeModel) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type fakeStream struct{ frags []coach.Fragment }

func (s *fakeStream) Next() (coach.Fragment, error) {
	if len(s.frags) == 0 {
		return coach.Fragment{}, io.EOF
	}
	f := s.frags[0]
	s.frags = s.frags[1:]
	return f, nil
}

func (s *fakeStream) Close() error { return nil }

// contracts returns the gateway's three contracts with their defaults and the built-in modules.
func contracts(t testing.TB) []coach.Contract {
	t.Helper()
	reg, err := module.LoadRegistry("")
	if err != nil {
		t.Fatal(err)
	}
	return []coach.Contract{toulmin.New(), cards.New(cards.DefaultConfig()), module.New(reg)}
}

// testServer is a Server over a memStore and a fakeModel, on a loopback port.
type testServer struct {
	t     *testing.T
	URL   string
	store *memStore
	model *fakeModel
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
	ts := &testServer{t: t, store: newMemStore(), log: &syncBuffer{},
		model: &fakeModel{answer: `{"assistantText":"Tell me more.","step":"claim"}`}}
	d := Deps{
		Service: coach.NewService(ts.store, ts.model, contracts(t), coach.Options{}, nil),
		Log:     zerolog.New(ts.log),
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
