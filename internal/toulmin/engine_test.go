package toulmin

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// memStore is an in-memory coach.Store for driving the contract through the real engine.
type memStore struct {
	mu       sync.Mutex
	sessions map[string]coach.Session
	locks    map[string]string
}

func newMemStore() *memStore {
	return &memStore{sessions: map[string]coach.Session{}, locks: map[string]string{}}
}

func (m *memStore) Create(_ context.Context, s *coach.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
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

func (m *memStore) Delete(_ context.Context, _, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sessions, id)
	return nil
}

func (m *memStore) Claim(ctx context.Context, tenant, id string, _ time.Duration) (*coach.Session, string, error) {
	s, err := m.Get(ctx, tenant, id)
	if err != nil {
		return nil, "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[id] != "" {
		return nil, "", coach.ErrBusy
	}
	token := coach.NewID()
	m.locks[id] = token
	return s, token, nil
}

func (m *memStore) Commit(_ context.Context, s *coach.Session, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.locks[s.ID] != token || m.sessions[s.ID].Version+1 != s.Version {
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

// scriptModel answers each call with the next scripted output, in 5-byte fragments.
type scriptModel struct {
	mu      sync.Mutex
	outputs []string
	reqs    []coach.ModelRequest
}

func (m *scriptModel) Stream(_ context.Context, req coach.ModelRequest) (coach.Stream, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs = append(m.reqs, req)
	out := m.outputs[0]
	m.outputs = m.outputs[1:]
	return &scriptStream{frags: chunks(out, 5)}, nil
}

type scriptStream struct{ frags []string }

func (s *scriptStream) Next() (coach.Fragment, error) {
	if len(s.frags) == 0 {
		return coach.Fragment{}, io.EOF
	}
	f := s.frags[0]
	s.frags = s.frags[1:]
	return coach.Fragment{Content: f}, nil
}

func (s *scriptStream) Close() error { return nil }

// runTurn runs one turn through svc and returns its events.
func runTurn(t *testing.T, svc *coach.Service, id string, in coach.TurnInput) []coach.Event {
	t.Helper()
	run, err := svc.StartTurn(context.Background(), "t", id, in)
	if err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	var events []coach.Event
	run.Run(context.Background(), func(e coach.Event) error {
		events = append(events, e)
		return nil
	})
	return events
}

// deltasSinceReset returns the delta text after the last reset line.
func deltasSinceReset(events []coach.Event) string {
	var b strings.Builder
	for _, e := range events {
		switch e.Type {
		case coach.EventReset:
			b.Reset()
		case coach.EventDelta:
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func TestThroughEngine(t *testing.T) {
	model := &scriptModel{outputs: []string{
		// Turn 1: a first-turn proposal at 0.5 that the guards strip.
		`{"assistantText":"Good topic. Which cities?","step":"claim","confidence":0.5,"proposedUpdate":{"field":"claim","value":"Cars are bad.","rationale":"r"},"nextQuestion":"Which city do you mean?"}`,
		// Turn 2: an invalid answer, then a proposal after the corrective retry.
		`{"assistantText":"Here you go.","step":"claim","confidence":3}`,
		`{"assistantText":"Try this wording.","step":"claim","confidence":0.85,"shouldAdvance":true,"proposedUpdate":{"field":"claim","value":"` + goodClaim + `","rationale":"more specific"}}`,
	}}
	store := newMemStore()
	svc := coach.NewService(store, model, []coach.Contract{New()}, coach.DefaultOptions(), nil)
	sess, err := svc.CreateSession(context.Background(), "t", Name, coach.NewSession{})
	if err != nil {
		t.Fatal(err)
	}

	msg := "Cars in cities"
	events := runTurn(t, svc, sess.ID, coach.TurnInput{Message: &msg, Step: StepClaim})
	last := events[len(events)-1]
	if last.Type != coach.EventResult {
		t.Fatalf("turn 1 ended with %+v", last)
	}
	if got := deltasSinceReset(events); got != "Good topic. Which cities?" {
		t.Errorf("turn 1 deltas = %q", got)
	}
	if want := `{"assistantText":"Good topic. Which cities?\n\nWhich city do you mean?","step":"claim","confidence":0.5,"nextQuestion":"Which city do you mean?"}`; string(last.Result) != want {
		t.Errorf("turn 1 result\n got  %s\n want %s", last.Result, want)
	}

	msg = "Please rewrite it"
	events = runTurn(t, svc, sess.ID, coach.TurnInput{Message: &msg})
	last = events[len(events)-1]
	if last.Type != coach.EventResult {
		t.Fatalf("turn 2 ended with %+v", last)
	}
	resets := 0
	for _, e := range events {
		if e.Type == coach.EventReset {
			resets++
		}
	}
	if resets != 1 || deltasSinceReset(events) != "Try this wording." {
		t.Errorf("turn 2: %d resets, deltas after it %q", resets, deltasSinceReset(events))
	}
	if retry := model.reqs[2].Messages; !strings.Contains(retry[len(retry)-1].Content, "confidence") {
		t.Errorf("the retry's correction does not say what was wrong: %q", retry[len(retry)-1].Content)
	}
	if first := model.reqs[1].Messages; len(first) != 4 {
		t.Errorf("turn 2 request has %d messages, want system + 2 history + user", len(first))
	}
	st := readState(t, last.Session.State)
	if st.Step != StepClaim || st.PendingProposal == nil || st.PendingProposal.Value != goodClaim || st.Turns[StepClaim] != 2 {
		t.Errorf("state after turn 2 = %s", last.Session.State)
	}

	stored, err := svc.Update(context.Background(), "t", sess.ID, Name, func(s *coach.Session) (json.RawMessage, error) {
		return Decide(s.State, ActionAccept)
	})
	if err != nil {
		t.Fatal(err)
	}
	st = readState(t, stored.State)
	if st.Step != StepGrounds || st.Draft[StepClaim] != goodClaim || st.PendingProposal != nil {
		t.Errorf("state after accept = %s", stored.State)
	}
	if len(stored.History) != 4 || stored.History[3].Content != "Try this wording." {
		t.Errorf("history = %+v", stored.History)
	}

	msg = "next"
	if _, err := svc.StartTurn(context.Background(), "t", sess.ID, coach.TurnInput{Message: &msg, Step: StepClaim}); err == nil {
		t.Fatalf("a stale step started a turn")
	} else {
		wantCode(t, err, coach.CodeStepMismatch)
	}
}
