package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
	"github.com/coachgw/coachgw/internal/safety"
	"github.com/coachgw/coachgw/internal/toulmin"
)

// crisisNotice is the notice a crisis turn of a session in es-US is shown.
var crisisNotice = &coach.SafetyNotice{Kind: "crisis", Locale: "es-US", Message: "No tienes que pasar por esto a solas.",
	Resources: []safety.Resource{
		{Name: "988 Línea de Prevención del Suicidio y Crisis", Phone: "988", Text: "Envía AYUDA al 988", URL: "https://988lineadevida.org"},
		{Name: "Emergencias", Phone: "911"},
	}}

// noticeContract is the toulmin contract whose turns send crisisNotice's safety line before the
// model is called: it stands in for the engine's crisis path, so that the HTTP adapters are
// tested on the line whatever emits it.
type noticeContract struct{ coach.Contract }

func (c noticeContract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	t, err := c.Contract.Begin(s, in)
	if err != nil {
		return nil, err
	}
	return noticeTurn{t}, nil
}

type noticeTurn struct{ coach.Turn }

func (t noticeTurn) Prelude() []coach.Event {
	return append([]coach.Event{{Type: coach.EventSafety, Safety: crisisNotice}}, t.Turn.Prelude()...)
}

// holdWithCrisisTurn puts session id on a safety hold, with a crisis turn in its transcript as the
// engine stores it: the learner's entry, and the coach's result carrying the notice.
func holdWithCrisisTurn(t *testing.T, ts *testServer, tenant, id string) {
	t.Helper()
	ctx := context.Background()
	s, token, err := ts.store.Claim(ctx, tenant, id, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	no := false
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	s.Version++
	s.Safety = &coach.SafetyHold{Hold: true, Since: at, Episode: "ep1"}
	extra := coach.CommitExtra{Transcript: []coach.TranscriptEntry{
		{At: at, Role: coach.TranscriptLearner, Input: json.RawMessage(`{"message":"ya no quiero vivir"}`)},
		{At: at, Role: coach.TranscriptCoach, Result: json.RawMessage(`{"assistantText":"Estoy aquí contigo."}`), Fallback: &no, Safety: crisisNotice},
	}}
	if err := ts.store.Commit(ctx, s, token, extra); err != nil {
		t.Fatal(err)
	}
}

// TestChatSafety checks the AI SDK route on a crisis turn: the safety line is a data-coach-safety
// part before the turn's text, kept in the message (not transient), with the line's members as
// its data; the result's session carries the hold; and chat/messages restores the crisis turn
// with its data-coach-safety part first, as streamed, while /messages keeps the notice on the
// coach entry.
func TestChatSafety(t *testing.T) {
	store := coachtest.NewMemStore()
	model := &serverModel{Model: coachtest.NewModel(), answer: `{"assistantText":"Estoy aquí contigo.","step":"claim"}`}
	ts := startServer(t, func(d *Deps) {
		withKeys(d)
		d.Service = coach.NewService(store, model, []coach.Contract{noticeContract{toulmin.New()}}, coach.Options{}, nil)
	})
	ts.store, ts.model = store, model
	acme := []string{"Authorization", "Bearer " + keyAcme}
	id := ts.create("toulmin", acme...)
	holdWithCrisisTurn(t, ts, "acme", id)

	r := ts.do("POST", "/v1/sessions/"+id+"/chat", chatText("sigo aquí"), acme...)
	if r.Status != http.StatusOK {
		t.Fatalf("turn: %d %s", r.Status, r.Body)
	}
	var types []string
	var safetyPart, resultPart json.RawMessage
	for _, ev := range strings.Split(strings.TrimSpace(r.Body), "\n\n") {
		payload := strings.TrimPrefix(ev, "data: ")
		if payload == "[DONE]" {
			continue
		}
		var p struct {
			Type      string
			Transient bool
			Data      json.RawMessage
		}
		if err := json.Unmarshal([]byte(payload), &p); err != nil {
			t.Fatalf("%s: %v", payload, err)
		}
		types = append(types, p.Type)
		switch p.Type {
		case "data-coach-safety":
			safetyPart = p.Data
			if p.Transient {
				t.Errorf("the safety part is transient: the SDK would not keep it in the message")
			}
		case "data-coach-result":
			resultPart = p.Data
		}
	}
	if got, want := strings.Join(types, " "), "start data-coach-safety text-start text-delta text-end data-coach-result finish"; got != want {
		t.Errorf("parts %q, want %q", got, want)
	}
	wantNotice, _ := json.Marshal(crisisNotice)
	if compactJSON(t, safetyPart) != compactJSON(t, wantNotice) {
		t.Errorf("safety data %s, want %s", safetyPart, wantNotice)
	}
	var result struct {
		Session struct {
			Safety *struct {
				Hold    bool
				Since   time.Time
				Episode string
			}
		}
	}
	if err := json.Unmarshal(resultPart, &result); err != nil {
		t.Fatal(err)
	}
	if s := result.Session.Safety; s == nil || !s.Hold || s.Since.IsZero() || s.Episode != "ep1" {
		t.Errorf("result session safety %+v, want the hold", s)
	}

	m := ts.do("GET", "/v1/sessions/"+id+"/chat/messages", "", acme...)
	var page struct {
		Messages []struct {
			ID, Role string
			Parts    []struct {
				Type string
				Data json.RawMessage
			}
		}
	}
	if err := json.Unmarshal([]byte(m.Body), &page); err != nil || m.Status != http.StatusOK {
		t.Fatalf("chat/messages: %d %s", m.Status, m.Body)
	}
	if len(page.Messages) < 2 {
		t.Fatalf("got %d messages, want the crisis turn's two first", len(page.Messages))
	}
	crisis := page.Messages[1]
	var parts []string
	for _, p := range crisis.Parts {
		parts = append(parts, p.Type)
	}
	if got, want := strings.Join(parts, " "), "data-coach-safety text data-coach-result"; crisis.Role != "assistant" || got != want {
		t.Fatalf("crisis turn %s %q, want an assistant message of %q", crisis.Role, got, want)
	}
	if compactJSON(t, crisis.Parts[0].Data) != compactJSON(t, wantNotice) {
		t.Errorf("restored safety data %s, want %s", crisis.Parts[0].Data, wantNotice)
	}

	raw := ts.do("GET", "/v1/sessions/"+id+"/messages", "", acme...)
	var entries struct {
		Messages []coach.TranscriptEntry
	}
	if err := json.Unmarshal([]byte(raw.Body), &entries); err != nil || len(entries.Messages) < 2 {
		t.Fatalf("messages: %d %s", raw.Status, raw.Body)
	}
	if got := entries.Messages[1].Safety; got == nil || got.Locale != "es-US" || len(got.Resources) != 2 {
		t.Errorf("/messages coach entry safety %+v, want the notice", got)
	}
}

// compactJSON re-encodes a JSON document so that two compare by content.
func compactJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}
