package coach_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/coachgw/coachgw/internal/coach"
	"io"
	"strings"
	"sync"
	"time"
)

// memStore is an in-memory Store with the same lock, version and tenant rules as the Redis one
// (and coachtest.MemStore, which the conformance suite in package storetest holds to them; that
// package imports coach, so the engine's own tests cannot use it), plus the failure switch and
// counters these tests need.
type memStore struct {
	mu       sync.Mutex
	sessions map[string]coach.Session
	locks    map[string]string
	// transcripts holds each session's transcript, whose entries are numbered from 1.
	transcripts map[string][]coach.TranscriptEntry
	commits     int
	renews      int
	// usage holds the tenant usage of every commit that carried one.
	usage []coach.TenantUsage
	down  bool
}

func newMemStore() *memStore {
	return &memStore{sessions: map[string]coach.Session{}, locks: map[string]string{}, transcripts: map[string][]coach.TranscriptEntry{}}
}

func (m *memStore) Create(_ context.Context, s *coach.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return coach.ErrUnavailable
	}
	m.sessions[s.ID] = *s
	return nil
}

func (m *memStore) Get(_ context.Context, tenant, id string) (*coach.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || s.Tenant != tenant {
		return nil, coach.ErrNotFound
	}
	return &s, nil
}

func (m *memStore) Delete(_ context.Context, tenant, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[id]; ok && s.Tenant == tenant {
		delete(m.sessions, id)
		delete(m.locks, id)
		delete(m.transcripts, id)
	}
	return nil
}

func (m *memStore) Claim(_ context.Context, tenant, id string, _ time.Duration) (*coach.Session, string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, "", coach.ErrUnavailable
	}
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

func (m *memStore) Commit(_ context.Context, s *coach.Session, token string, extra coach.CommitExtra) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return coach.ErrUnavailable
	}
	cur, ok := m.sessions[s.ID]
	if m.locks[s.ID] != token || !ok || cur.Tenant != s.Tenant || cur.Version != s.Version-1 {
		return coach.ErrConflict
	}
	m.sessions[s.ID] = *s
	delete(m.locks, s.ID)
	m.commits++
	if extra.Usage != nil {
		m.usage = append(m.usage, *extra.Usage)
	}
	for _, e := range extra.Transcript {
		e.Seq = int64(len(m.transcripts[s.ID]) + 1)
		m.transcripts[s.ID] = append(m.transcripts[s.ID], e)
	}
	return nil
}

func (m *memStore) Transcript(_ context.Context, tenant, id string, before int64, limit int) (coach.TranscriptPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[id]; !ok || s.Tenant != tenant {
		return coach.TranscriptPage{}, coach.ErrNotFound
	}
	return coach.PageOf(m.transcripts[id], before, limit), nil
}

func (m *memStore) Release(_ context.Context, id, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return coach.ErrUnavailable
	}
	if m.locks[id] == token {
		delete(m.locks, id)
	}
	return nil
}

func (m *memStore) Renew(_ context.Context, id, token string, _ time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return coach.ErrUnavailable
	}
	m.renews++
	if m.locks[id] != token {
		return coach.ErrConflict
	}
	return nil
}

func (m *memStore) renewals() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.renews
}

func (m *memStore) Ping(context.Context) error { return nil }

func (m *memStore) locked(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.locks[id] != ""
}

// script is one scripted model call: its fragments, then err (nil: a clean end). openErr fails
// the call before it streams; block makes Next wait for the context after the fragments. With
// batch > 0 the stream plays one that reads batch fragments at a time and calls Wait before
// each read, as the OpenAI adapter does.
type script struct {
	openErr error
	frags   []string
	err     error
	block   bool
	batch   int
	// pause is a wait before every fragment: a model that takes its time.
	pause time.Duration
	// usage, when set, is reported in a fragment of its own after frags.
	usage *coach.Usage
	// finish, when set, is the finish reason, carried by the last fragment of frags.
	finish string
	// running, when set, is carried by every fragment of frags: an endpoint that reports its
	// running totals on each chunk (vLLM's continuous usage stats).
	running []coach.Usage
	// before, when set, is called before fragment i is returned, and may wait for an event;
	// it returns false when ctx ended meanwhile.
	before func(ctx context.Context, i int) bool
}

// fakeModel plays scripts in order and records the requests.
type fakeModel struct {
	mu       sync.Mutex
	scripts  []script
	requests []coach.ModelRequest
}

func (f *fakeModel) Stream(ctx context.Context, req coach.ModelRequest, hooks coach.StreamHooks) (coach.Stream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	if len(f.scripts) == 0 {
		return nil, &coach.ModelError{Class: "client", Err: errors.New("no script left")}
	}
	s := f.scripts[0]
	f.scripts = f.scripts[1:]
	if s.openErr != nil {
		return nil, s.openErr
	}
	return &fakeStream{ctx: ctx, s: s, wait: hooks.Wait}, nil
}

func (f *fakeModel) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

type fakeStream struct {
	ctx       context.Context
	s         script
	i         int
	wait      func()
	usageSent bool
}

func (f *fakeStream) Next() (coach.Fragment, error) {
	if err := f.ctx.Err(); err != nil {
		return coach.Fragment{}, err
	}
	if f.s.batch > 0 && f.i%f.s.batch == 0 && f.wait != nil {
		f.wait()
	}
	if f.i < len(f.s.frags) {
		if f.s.pause > 0 {
			select {
			case <-f.ctx.Done():
				return coach.Fragment{}, f.ctx.Err()
			case <-time.After(f.s.pause):
			}
		}
		if f.s.before != nil && !f.s.before(f.ctx, f.i) {
			return coach.Fragment{}, f.ctx.Err()
		}
		f.i++
		fr := coach.Fragment{Content: f.s.frags[f.i-1]}
		if f.i == len(f.s.frags) {
			fr.FinishReason = f.s.finish
		}
		if f.i <= len(f.s.running) {
			fr.Usage = &f.s.running[f.i-1]
		}
		return fr, nil
	}
	if f.s.usage != nil && !f.usageSent {
		f.usageSent = true
		return coach.Fragment{Usage: f.s.usage}, nil
	}
	if f.s.block {
		<-f.ctx.Done()
		return coach.Fragment{}, f.ctx.Err()
	}
	if f.s.err != nil {
		return coach.Fragment{}, f.s.err
	}
	return coach.Fragment{}, io.EOF
}

func (f *fakeStream) Close() error { return nil }

func (f *fakeStream) NotifiesWait() bool { return f.s.batch > 0 }

// echoContract streams every fragment as a delta and accepts output that ends with "." as its
// result; "EMPTY" finishes with coach_empty_response, anything else with coach_validation_failed.
type echoContract struct{ prelude []coach.Event }

func (echoContract) Name() string { return "echo" }

func (echoContract) NewState(coach.NewSession) (json.RawMessage, error) {
	return json.RawMessage(`{"turns":0}`), nil
}

func (c echoContract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	if in.Message == nil {
		return nil, coach.FieldError("message", "message is required")
	}
	var st struct{ Turns int }
	if err := json.Unmarshal(s.State, &st); err != nil {
		return nil, err
	}
	return &echoTurn{msg: *in.Message, turns: st.Turns, prelude: c.prelude}, nil
}

type echoTurn struct {
	msg     string
	turns   int
	out     strings.Builder
	prelude []coach.Event
}

func (t *echoTurn) Prelude() []coach.Event { return t.prelude }

func (t *echoTurn) Request() coach.ModelRequest {
	return coach.ModelRequest{Messages: []coach.Message{{Role: coach.RoleUser, Content: t.msg}}}
}

func (t *echoTurn) Feed(f coach.Fragment, emit func(coach.Event)) error {
	t.out.WriteString(f.Content)
	emit(coach.Delta(f.Content))
	return nil
}

func (t *echoTurn) Reset() { t.out.Reset() }

func (t *echoTurn) Finish() (*coach.Outcome, error) {
	text := t.out.String()
	switch {
	case text == "EMPTY":
		return nil, coach.Errorf(coach.KindStream, coach.CodeEmptyResponse, "empty")
	case !strings.HasSuffix(text, "."):
		return nil, coach.Errorf(coach.KindStream, coach.CodeValidationFailed, "no final period")
	}
	res, _ := json.Marshal(map[string]string{"text": text})
	st, _ := json.Marshal(map[string]int{"turns": t.turns + 1})
	return &coach.Outcome{Result: res, State: st, History: []coach.Message{{Role: coach.RoleUser, Content: t.msg}, {Role: coach.RoleAssistant, Content: text}}}, nil
}

// fallbackContract is echoContract whose turns fall back to a fixed answer.
type fallbackContract struct{ echoContract }

func (c fallbackContract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	t, err := c.echoContract.Begin(s, in)
	if err != nil {
		return nil, err
	}
	return &fallbackTurn{t.(*echoTurn)}, nil
}

type fallbackTurn struct{ *echoTurn }

func (t *fallbackTurn) Fallback(cause error) (*coach.Outcome, error) {
	return &coach.Outcome{Result: json.RawMessage(`{"text":"fallback"}`), State: json.RawMessage(`{"turns":1}`), Fallback: true, Diagnostic: cause.Error()}, nil
}

// SafeReply answers with the gateway's text and the state unchanged.
func (t *echoTurn) SafeReply(text string) (*coach.Outcome, error) {
	res, _ := json.Marshal(map[string]any{"text": text, "safe": true})
	st, _ := json.Marshal(map[string]int{"turns": t.turns})
	return &coach.Outcome{Result: res, State: st, Tail: text}, nil
}
