package toulmin

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
	"github.com/coachgw/coachgw/internal/schema"
)

// TestSafeReply checks the answer a held or crisis turn gets: a CoachAIResult that validates,
// carries text and the session's step and nothing else, sent in full as the tail, with the
// stored state untouched (byte for byte: the stored bytes, not a re-encoding of them).
func TestSafeReply(t *testing.T) {
	held := &coach.SafetyHold{Hold: true, Since: time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)}
	sessions := []struct {
		name  string
		state string
		in    coach.TurnInput
		hold  *coach.SafetyHold
	}{
		{"first turn of the claim", `{"step":"claim","draft":{},"turns":{},"pendingProposal":null,"isComplete":false}`,
			coach.TurnInput{Message: ptr("I don't want to be here anymore")}, nil},
		{"pending proposal, stored with spaces", `{ "step": "grounds", "draft": {"claim": "Homework helps."}, "turns": {"claim": 2, "grounds": 1},
 "pendingProposal": {"field": "grounds", "value": "Studies show it.", "rationale": "r"}, "isComplete": false }`,
			coach.TurnInput{Message: ptr("nada importa ya"), Step: StepGrounds}, nil},
		{"held, continue", `{"step":"rebuttal","draft":{"claim":"c"},"turns":{"rebuttal":3},"pendingProposal":null,"isComplete":false}`,
			coach.TurnInput{Continue: true}, held},
		{"held, message", `{"step":"warrant","draft":{},"turns":{},"pendingProposal":null,"isComplete":false}`,
			coach.TurnInput{Message: ptr("ok")}, held},
	}
	for _, s := range sessions {
		for _, tt := range coachtest.SafeTexts {
			t.Run(s.name+"/"+tt.Name, func(t *testing.T) {
				sess := &coach.Session{Locale: "es-US", State: json.RawMessage(s.state), Safety: s.hold}
				tr, err := New().Begin(sess, s.in)
				if err != nil {
					t.Fatalf("Begin: %v", err)
				}
				out, err := tr.(coach.SafeReplier).SafeReply(tt.Text)
				if err != nil {
					t.Fatalf("SafeReply: %v", err)
				}
				doc, err := schema.Decode(out.Result)
				if err != nil {
					t.Fatalf("result %s: %v", out.Result, err)
				}
				if err := schema.Load("coach-ai-result.json").Validate(doc); err != nil {
					t.Errorf("result %s does not follow coach-ai-result.json: %v", out.Result, err)
				}
				var st State
				if err := json.Unmarshal([]byte(s.state), &st); err != nil {
					t.Fatal(err)
				}
				want := map[string]any{"assistantText": tt.Text, "step": st.Step}
				if got := doc.(map[string]any); !reflect.DeepEqual(got, want) {
					t.Errorf("result = %v, want %v (no proposal, no advance, no question)", got, want)
				}
				if out.Tail != tt.Text {
					t.Errorf("Tail = %q, want the assistantText %q", out.Tail, tt.Text)
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

// TestSafeReplyState checks that the state SafeReply keeps is no alias of the session's: the
// engine stores it while the session it claimed is still in use.
func TestSafeReplyState(t *testing.T) {
	sess := &coach.Session{Locale: "en", State: mustState(t, State{Step: StepClaim})}
	tr, err := New().Begin(sess, coach.TurnInput{Continue: true})
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	out, err := tr.(coach.SafeReplier).SafeReply("I'm here.")
	if err != nil {
		t.Fatalf("SafeReply: %v", err)
	}
	before := string(sess.State)
	out.State[0] = 'x'
	if string(sess.State) != before {
		t.Errorf("changing the outcome's state changed the session's: %s", sess.State)
	}
}

// TestSafeReplyRejects checks that text no CoachAIResult can carry is the gateway's error,
// not an invalid result.
func TestSafeReplyRejects(t *testing.T) {
	for _, text := range []string{"", " \n\t", strings.Repeat("á", 8001)} {
		tr := begin(t, State{Step: StepClaim}, "hello")
		out, err := tr.SafeReply(text)
		if e := coach.AsError(err); err == nil || e.Kind != coach.KindInternal {
			t.Errorf("SafeReply(%.20q) = %v, %v; want an internal error", text, out, err)
		}
	}
	tr := begin(t, State{Step: StepClaim}, "hello")
	if _, err := tr.SafeReply(strings.Repeat("á", 8000)); err != nil {
		t.Errorf("SafeReply of 8000 characters (the schema's maxLength): %v", err)
	}
}
