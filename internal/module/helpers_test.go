package module

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// quarterModule has four topics, so every topic is worth exactly 25%.
const quarterModule = `{
  "id": "quarters",
  "title": "Quarters",
  "description": "A module whose topics are a quarter each.",
  "sections": [
    {"id": "one", "title": "One", "topics": [
      {"id": "panic", "name": {"en": "Panic", "es": "Pánico"},
       "keywords": {"en": ["panic"], "es": ["pánico"]}},
      {"id": "anger", "name": {"en": "Anger", "es": "Ira"},
       "keywords": {"en": ["anger", "angry"], "es": ["ira", "enfado"]}}
    ]},
    {"id": "two", "title": "Two", "topics": [
      {"id": "fight_or_flight", "name": {"en": "Fight-Flight Response", "es": "Lucha o huida"},
       "keywords": {"en": ["fight or flight"], "es": ["lucha o huida"]}},
      {"id": "avoidance", "name": {"en": "Avoidance", "es": "Evitación"},
       "keywords": {"en": ["avoid*"], "es": ["evit*"]}}
    ]}
  ]
}`

func mustParse(t testing.TB, data string) *Module {
	t.Helper()
	m, err := Parse("test.json", []byte(data))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return m
}

// newContract returns a module contract over the built-in modules and quarterModule.
func newContract(t testing.TB) *Contract {
	t.Helper()
	reg, err := NewRegistry(append(Builtin(), mustParse(t, quarterModule))...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return New(reg)
}

// newSession returns a fresh session of module id.
func newSession(t testing.TB, c *Contract, id, locale string) *coach.Session {
	t.Helper()
	st, err := c.NewState(coach.NewSession{Locale: locale, Module: id})
	if err != nil {
		t.Fatalf("NewState(%q): %v", id, err)
	}
	return &coach.Session{ID: coach.NewID(), Contract: Name, Locale: locale, Version: 1, State: st}
}

func message(s string) coach.TurnInput { return coach.TurnInput{Message: &s} }

// turnResult is everything one turn produced.
type turnResult struct {
	turn   *turn
	events []coach.Event
	out    *coach.Outcome
	err    error
}

// runTurn begins a turn, feeds it the fragments and finishes it. A Begin error is fatal.
func runTurn(t testing.TB, c *Contract, s *coach.Session, in coach.TurnInput, fragments ...string) turnResult {
	t.Helper()
	tn, err := c.Begin(s, in)
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	var r turnResult
	r.turn = tn.(*turn)
	_ = tn.Request()
	for _, f := range fragments {
		if err := tn.Feed(coach.Fragment{Content: f}, func(e coach.Event) { r.events = append(r.events, e) }); err != nil {
			t.Fatalf("Feed: %v", err)
		}
	}
	r.out, r.err = tn.Finish()
	return r
}

// commit applies an outcome to the session as the engine would.
func commit(s *coach.Session, out *coach.Outcome) {
	s.Version++
	s.State = out.State
	s.History = append(s.History, out.History...)
}

func decodeState(t testing.TB, raw json.RawMessage) State {
	t.Helper()
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("state: %v", err)
	}
	return st
}

// resultDoc decodes a result into a generic document.
func resultDoc(t testing.TB, raw json.RawMessage) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return doc
}

// progressOf returns meta.progress of a result.
func progressOf(t testing.TB, raw json.RawMessage) map[string]any {
	t.Helper()
	p, ok := resultDoc(t, raw)["meta"].(map[string]any)["progress"].(map[string]any)
	if !ok {
		t.Fatalf("result has no meta.progress: %s", raw)
	}
	return p
}

// response returns a minimal valid structured response whose meta.progress reports topics.
func response(text string, reported ...string) string {
	p := ""
	if reported != nil {
		b, _ := json.Marshal(reported)
		p = `,"progress":{"newly_covered":` + string(b) + `}`
	}
	b, _ := json.Marshal(text)
	return `{"content":{"text_blocks":[{"type":"paragraph","content":` + string(b) + `}]},"meta":{"response_type":"conversational"` + p + `}}`
}

// asError returns err as a *coach.Error or fails.
func asError(t testing.TB, err error) *coach.Error {
	t.Helper()
	var e *coach.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a *coach.Error", err)
	}
	return e
}

func joinDeltas(events []coach.Event) map[int]string {
	out := make(map[int]string)
	for _, e := range events {
		if e.Type == coach.EventDelta {
			out[e.Block] += e.Text
		}
	}
	return out
}

func contains(t testing.TB, what, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s = %q, want it to contain %q", what, s, sub)
	}
}
