package coach_test

import (
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// inputRecord returns the built-in screen's input record among recs.
func inputRecord(recs []safety.Record) *safety.Record {
	for i := range recs {
		if recs[i].Stage == safety.StageInput && recs[i].Classifier == safety.BuiltinName {
			return &recs[i]
		}
	}
	return nil
}

// TestTopicGoesOn: a classroom question whose words a crisis shares (a character's death, a
// debate motion, apoptosis) is a topic: the lesson streams, nothing is held or escalated, and
// the audit shows the screen saw it (action none, category topic, the rule it matched).
func TestTopicGoesOn(t *testing.T) {
	for _, msg := range []string{
		"Why did Juliet kill herself at the end of the play?",
		"Debate: should terminally ill patients be allowed to end their own lives?",
		"¿Por qué se suicida Melibea en La Celestina?",
		"How do cells kill themselves? We're studying apoptosis.",
	} {
		t.Run(msg, func(t *testing.T) {
			rig := newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Good ", "question."}}})
			got, rep := rig.turn(t, msg)
			if rep.Outcome != "ok" {
				t.Fatalf("outcome = %q (%v), want ok: the lesson goes on", rep.Outcome, rep.Err)
			}
			if l := lines(got); !strings.Contains(l, "question.") || strings.Contains(l, "safety") {
				t.Errorf("lines = %s, want the lesson and no safety line", l)
			}
			if rig.stored(t).Held() || rig.esc.count() != 0 {
				t.Errorf("held %v, escalations %d; want neither", rig.stored(t).Held(), rig.esc.count())
			}
			in := inputRecord(rig.audit.eventually(t, 1))
			if in == nil || in.Action != safety.ActionNone || !slicesHas(in.Categories, safety.CategoryTopic) || len(in.Rules) == 0 {
				t.Errorf("input record %+v, want action none, category topic and the rule that matched", in)
			}
		})
	}
}

// TestConcernForSomeoneElse: worry about a friend gets the resources and a supportive answer
// for the helper, and an escalation of severity concern; the learner is not the one at risk,
// so the session is not held and the next turn is a lesson again.
func TestConcernForSomeoneElse(t *testing.T) {
	// The screen answers before the model is asked, so the script is the next turn's.
	rig := newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Lesson ", "text."}}})
	got, rep := rig.turn(t, "My best friend told me she wants to kill herself and I don't know what to do")
	if rep.Outcome != coach.OutcomeCrisis || len(got) != 3 || got[0].Type != coach.EventSafety {
		t.Fatalf("outcome %q (%v), lines %s; want crisis: safety, delta, result", rep.Outcome, rep.Err, lines(got))
	}
	if !strings.Contains(got[1].Text, "someone") || !strings.Contains(got[1].Text, "988") || strings.Contains(lines(got), "Lesson text") {
		t.Errorf("answer %q, want the supportive answer for a helper with the resources and no lesson", got[1].Text)
	}
	if s := rig.stored(t); s.Held() {
		t.Errorf("session held %+v: worry about a friend holds no one", s.Safety)
	}
	if rig.esc.count() != 1 {
		t.Fatalf("escalations = %d, want 1", rig.esc.count())
	}
	if ep := rig.esc.episodes[0]; ep.Severity != safety.SeverityConcern || ep.ID == "" || !slicesHas(ep.Categories, safety.CategoryConcernOther) {
		t.Errorf("episode %+v, want severity concern, an id and concern_other", ep)
	}
	got, rep = rig.turn(t, "ok, can we go on?")
	var text strings.Builder
	for _, e := range got {
		if e.Type == coach.EventDelta {
			text.WriteString(e.Text)
		}
	}
	if rep.Outcome != "ok" || !strings.Contains(text.String(), "Lesson text.") {
		t.Errorf("next turn: outcome %q, lines %s; want the lesson", rep.Outcome, lines(got))
	}
}

// TestOwnRiskOutweighsConcern: a text that shows the learner at risk as well as a friend is the
// learner's crisis: held, escalated at the learner's severity.
func TestOwnRiskOutweighsConcern(t *testing.T) {
	rig := newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Lesson."}}})
	_, rep := rig.turn(t, "my friend wants to kill herself and honestly I want to kill myself too")
	if rep.Outcome != coach.OutcomeCrisis || !rig.stored(t).Held() || rig.esc.count() != 1 {
		t.Fatalf("outcome %q, held %v, escalations %d; want crisis, held, escalated", rep.Outcome, rig.stored(t).Held(), rig.esc.count())
	}
	if ep := rig.esc.episodes[0]; ep.Severity != safety.SeverityImminent {
		t.Errorf("episode severity %v, want imminent", ep.Severity)
	}
}

// TestWhom: a classifier beside the screen that finds the learner at risk outweighs the
// screen's reading that the text is about a friend.
func TestWhom(t *testing.T) {
	tests := []struct {
		name string
		v    safety.Verdict
		want safety.Concern
	}{
		{"friend", safety.Verdict{Crisis: true, Concern: safety.ConcernOther, Categories: []safety.Category{safety.CategoryConcernOther}}, safety.ConcernOther},
		{"friend, a classifier without a concern", safety.Verdict{Crisis: true, Categories: []safety.Category{safety.CategoryConcernOther}}, safety.ConcernOther},
		{"friend and a self-harm hit beside", safety.Verdict{Crisis: true, Concern: safety.ConcernOther, Categories: []safety.Category{safety.CategoryConcernOther, safety.CategorySelfHarm}}, safety.ConcernSelf},
		{"a judge says self", safety.Verdict{Crisis: true, Concern: safety.ConcernSelf, Categories: []safety.Category{safety.CategoryConcernOther}}, safety.ConcernSelf},
		{"a failed check", safety.Verdict{Crisis: true, Categories: []safety.Category{safety.CategoryUnchecked}}, safety.ConcernSelf},
		{"no categories", safety.Verdict{Crisis: true}, safety.ConcernSelf},
		{"a judge says other without a category", safety.Verdict{Crisis: true, Concern: safety.ConcernOther}, safety.ConcernOther},
		{"a topic that a classifier beside the screen found a crisis", safety.Verdict{Crisis: true, Concern: safety.ConcernTopic, Categories: []safety.Category{safety.CategorySuicide, safety.CategoryTopic}}, safety.ConcernSelf},
	}
	for _, tt := range tests {
		if got := coach.Whom(tt.v); got != tt.want {
			t.Errorf("%s: whom(%+v) = %q, want %q", tt.name, tt.v, got, tt.want)
		}
	}
}
