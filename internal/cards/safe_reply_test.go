package cards

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
)

func hold() *coach.SafetyHold {
	return &coach.SafetyHold{Hold: true, Since: time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)}
}

// TestSafeReply checks the answer a held or crisis turn gets: an insight card with text that
// every cards client renders, sent in full as the tail, with the stored state untouched (no
// level, cycle or lastCard change; the stored bytes, not a re-encoding of them) and nothing for
// the model's history.
func TestSafeReply(t *testing.T) {
	sessions := []struct {
		name  string
		state string
		in    coach.TurnInput
		hold  *coach.SafetyHold
	}{
		{"first turn", `{"level":1,"lastCard":null,"cycles":0,"completedCycles":0}`,
			coach.TurnInput{Message: strPtr("I don't want to be alive anymore")}, nil},
		{"answer to a prompt, which would complete a cycle", `{"level":2,"lastCard":` + string(mustJSON(promptCard)) + `,"cycles":1,"completedCycles":3}`,
			coach.TurnInput{Message: strPtr("no puedo")}, nil},
		{"level-up due, stored with spaces", `{ "level": 1, "lastCard": ` + string(mustJSON(insightCard)) + `, "cycles": 2, "completedCycles": 2 }`,
			coach.TurnInput{Message: strPtr(ContinueMessage)}, nil},
		{"held after a choice card", `{"level":3,"lastCard":` + string(mustJSON(choiceCard)) + `,"cycles":2,"completedCycles":6}`,
			coach.TurnInput{Message: strPtr(ContinueMessage)}, hold()},
	}
	for _, s := range sessions {
		for _, tt := range coachtest.SafeTexts {
			t.Run(s.name+"/"+tt.Name, func(t *testing.T) {
				sess := session(t, state{}, nil)
				sess.State, sess.Safety = json.RawMessage(s.state), s.hold
				out, err := begin(t, New(Config{}), sess, s.in).SafeReply(tt.Text)
				if err != nil {
					t.Fatalf("SafeReply: %v", err)
				}
				wantFrontendCard(t, out.Result)
				var card Card
				if err := json.Unmarshal(out.Result, &card); err != nil {
					t.Fatal(err)
				}
				if want := (Card{Type: TypeInsight, Content: tt.Text}); !reflect.DeepEqual(card, want) {
					t.Errorf("result = %s, want an insight card of the text alone", out.Result)
				}
				if !validCard(card) {
					t.Errorf("the seed's validateCard rejects %s", out.Result)
				}
				if out.Tail != tt.Text {
					t.Errorf("Tail = %q, want the card's content %q", out.Tail, tt.Text)
				}
				if !bytes.Equal(out.State, []byte(s.state)) {
					t.Errorf("State = %s, want the stored state %s", out.State, s.state)
				}
				if out.History != nil || out.Fallback || out.Rules != nil {
					t.Errorf("History %v, Fallback %v, Rules %v; want none", out.History, out.Fallback, out.Rules)
				}
			})
		}
	}
}

// TestSafeReplyRejectsBlank checks that blank text, which the seed's validateCard would take but
// which shows the learner nothing, is the gateway's error rather than an empty card.
func TestSafeReplyRejectsBlank(t *testing.T) {
	for _, text := range []string{"", " \n\t"} {
		out, err := firstTurn(t).SafeReply(text)
		var e *coach.Error
		if !errors.As(err, &e) || e.Kind != coach.KindInternal {
			t.Errorf("SafeReply(%q) = %v, %v; want an internal error", text, out, err)
		}
	}
}

// TestBeginHeld checks the input of a session on safety hold. The learner was last shown the
// safe insight card while lastCard names the card before, so whatever a cards client sends goes
// through; what no cards client sends is refused as ever. The turn never levels up: its
// Prelude would put a level_up card before the supportive answer.
func TestBeginHeld(t *testing.T) {
	accepted := []struct {
		name string
		last *Card
		in   coach.TurnInput
		user string
	}{
		{"continue after a choice card", choiceCard, coach.TurnInput{Message: strPtr(ContinueMessage)}, ContinueMessage},
		{"free text after an insight", insightCard, coach.TurnInput{Message: strPtr("sigo mal")}, "sigo mal"},
		{"text over the reflection's max_length", reflectCard, coach.TurnInput{Message: strPtr("I still feel awful")}, "I still feel awful"},
		{"a choice the card does not offer", choiceCard, coach.TurnInput{Selected: strPtr("z\"")}, `{"selected": "z\""}`},
		{"selected after a prompt", promptCard, coach.TurnInput{Selected: strPtr("a")}, `{"selected": "a"}`},
		{"first turn", nil, coach.TurnInput{Message: strPtr("hola")}, "hola"},
	}
	c := New(Config{})
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			s := session(t, state{Level: 1, LastCard: tt.last, Cycles: 5}, nil)
			s.Safety = hold()
			turn := begin(t, c, s, tt.in)
			msgs := turn.Request().Messages
			if got := msgs[len(msgs)-1]; got.Role != coach.RoleUser || got.Content != tt.user {
				t.Errorf("last message = %+v, want user %q", got, tt.user)
			}
			if p := turn.Prelude(); p != nil {
				t.Errorf("Prelude = %+v, want no level_up card on hold", p)
			}
		})
	}
	refused := []struct {
		name  string
		in    coach.TurnInput
		field string
	}{
		{"nothing", coach.TurnInput{}, "message"},
		{"blank message", coach.TurnInput{Message: strPtr(" \n")}, "message"},
		{"empty selected", coach.TurnInput{Selected: strPtr("")}, "selected"},
		{"message and selected", coach.TurnInput{Message: strPtr("x"), Selected: strPtr("a")}, "message"},
		{"continue is toulmin's", coach.TurnInput{Continue: true}, "continue"},
		{"step is toulmin's", coach.TurnInput{Message: strPtr("x"), Step: "claim"}, "step"},
		{"form is module's", coach.TurnInput{Form: &coach.FormAnswer{ID: "f"}}, "form"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			s := session(t, state{Level: 1, LastCard: choiceCard}, nil)
			s.Safety = hold()
			_, err := c.Begin(s, tt.in)
			var e *coach.Error
			if !errors.As(err, &e) || e.Kind != coach.KindUnprocessable || e.Field != tt.field {
				t.Errorf("Begin error = %v, want 422 invalid_input on %q", err, tt.field)
			}
		})
	}
	// A hold that was cleared checks input against lastCard again.
	s := session(t, state{Level: 1, LastCard: choiceCard}, nil)
	s.Safety = &coach.SafetyHold{}
	if _, err := c.Begin(s, coach.TurnInput{Message: strPtr(ContinueMessage)}); err == nil {
		t.Errorf("Begin after a cleared hold took %q in answer to a choice card", ContinueMessage)
	}
}
