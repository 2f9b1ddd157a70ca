package module

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

// TestSafeReply checks the answer a held or crisis turn gets: one paragraph with text and no
// form, progress as it was (what the learner's input mentioned is not counted, no milestone),
// the text sent in full as the tail in that paragraph's block, and the stored state untouched.
func TestSafeReply(t *testing.T) {
	c := newContract(t)
	held := &coach.SafetyHold{Hold: true, Since: time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)}
	withForms := newSession(t, c, "anxiety-basics", "en")
	offerForms(t, c, withForms)
	sessions := []struct {
		name     string
		module   string
		state    string // "" keeps the session's (withForms)
		in       coach.TurnInput
		hold     *coach.SafetyHold
		progress map[string]any
	}{
		{"fresh, input covering half the topics", "quarters",
			`{"module":"quarters","coveredTopics":[],"percentage":0,"milestones":[],"forms":{}}`,
			message("I panic and I get so angry I want to die"), nil,
			map[string]any{"percentage": 0.0, "covered_topics": []any{}, "newly_covered": []any{}, "remaining_topics": 4.0}},
		{"a quarter covered, stored with spaces", "quarters",
			`{ "module": "quarters", "coveredTopics": ["panic"], "percentage": 25, "milestones": ["25%"], "forms": {} }`,
			message("tengo ira y ya no quiero seguir"), nil,
			map[string]any{"percentage": 25.0, "covered_topics": []any{"panic"}, "newly_covered": []any{}, "remaining_topics": 3.0}},
		{"held, a form answer", "anxiety-basics", "", formInput("checkin", `{"intensity":9,"when":"night","notes":"I avoid everything"}`), held, nil},
		{"held, a message", "anxiety-basics", "", message("sigo aquí"), held, nil},
	}
	for _, s := range sessions {
		for _, tt := range coachtest.SafeTexts {
			t.Run(s.name+"/"+tt.Name, func(t *testing.T) {
				sess := newSession(t, c, s.module, "es-US")
				sess.State, sess.Safety = json.RawMessage(s.state), s.hold
				if s.state == "" {
					sess.State = withForms.State
				}
				stored := bytes.Clone(sess.State)
				tn, err := c.Begin(sess, s.in)
				if err != nil {
					t.Fatalf("Begin: %v", err)
				}
				out, err := tn.(coach.SafeReplier).SafeReply(tt.Text)
				if err != nil {
					t.Fatalf("SafeReply: %v", err)
				}
				doc, err := schema.Decode(out.Result)
				if err != nil {
					t.Fatalf("result %s: %v", out.Result, err)
				}
				if err := schema.Load("structured-response.json").Validate(doc); err != nil {
					t.Errorf("result %s does not follow structured-response.json: %v", out.Result, err)
				}
				res := resultDoc(t, out.Result)
				wantContent := map[string]any{"text_blocks": []any{map[string]any{"type": "paragraph", "content": tt.Text}}}
				if got := res["content"]; !reflect.DeepEqual(got, wantContent) {
					t.Errorf("content = %v, want one paragraph of the text, no form, next step or media", got)
				}
				meta := res["meta"].(map[string]any)
				if meta["response_type"] != "conversational" || meta["emotion"] != "supportive" {
					t.Errorf("meta = %v, want response_type conversational, emotion supportive", meta)
				}
				want := s.progress
				if want == nil {
					st := decodeState(t, stored)
					covered := make([]any, len(st.CoveredTopics))
					for i, id := range st.CoveredTopics {
						covered[i] = id
					}
					mod, _ := c.reg.Get(st.Module)
					want = map[string]any{"percentage": float64(st.Percentage), "covered_topics": covered,
						"newly_covered": []any{}, "remaining_topics": float64(len(mod.topics) - len(covered))}
				}
				if got := meta["progress"]; !reflect.DeepEqual(got, want) {
					t.Errorf("progress = %v, want %v (as before the turn, no milestone)", got, want)
				}
				if out.Tail != tt.Text {
					t.Errorf("Tail = %q, want the paragraph's content %q", out.Tail, tt.Text)
				}
				if e := out.TailDelta(); e.Block != 0 || e.BlockType != "paragraph" || e.Text != tt.Text {
					t.Errorf("TailDelta = %+v, want the text in block 0, a paragraph", e)
				}
				if !bytes.Equal(out.State, stored) {
					t.Errorf("State = %s, want the stored state %s", out.State, stored)
				}
				if out.History != nil || out.Fallback || out.Rules != nil {
					t.Errorf("History %v, Fallback %v, Rules %v; want none", out.History, out.Fallback, out.Rules)
				}
			})
		}
	}
}

// TestSafeReplyRejects checks that text no text block can carry is the gateway's error, not an
// invalid result.
func TestSafeReplyRejects(t *testing.T) {
	c := newContract(t)
	for _, text := range []string{"", " \n\t", strings.Repeat("ñ", 8001)} {
		tn, err := c.Begin(newSession(t, c, "quarters", "es"), message("hola"))
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		out, err := tn.(coach.SafeReplier).SafeReply(text)
		if err == nil || asError(t, err).Kind != coach.KindInternal {
			t.Errorf("SafeReply(%.20q) = %v, %v; want an internal error", text, out, err)
		}
	}
}
