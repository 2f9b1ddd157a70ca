package coach_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// juliet is a classroom question the screen's broad net catches.
const juliet = "Why did Juliet kill herself?"

var (
	judgedTopic = safety.Verdict{Concern: safety.ConcernTopic, Rules: []string{"judge.topic"}}
	judgedSelf  = safety.Verdict{Crisis: true, Concern: safety.ConcernSelf, Severity: safety.SeverityHigh,
		Categories: []safety.Category{safety.CategorySuicide}, Rules: []string{"judge.self"}}
)

func withJudge(rig *safetyRig, j *fakeClassifier) *safetyRig {
	rig.guard.Judge = safety.NamedClassifier{Name: "judge", Classifier: j}
	return rig
}

// TestJudgeTopicGoesOn: a question about a character, caught by the screen, is judged a topic:
// the lesson goes on, nothing is held or escalated, and no line left before the judge spoke.
func TestJudgeTopicGoesOn(t *testing.T) {
	streamed := make(chan struct{})
	var mu sync.Mutex
	var got []coach.Event
	var leaked []string
	j := &fakeClassifier{verdict: judgedTopic, wait: func(ctx context.Context) error {
		select {
		case <-streamed:
		case <-ctx.Done():
			return ctx.Err()
		}
		mu.Lock()
		defer mu.Unlock()
		leaked = append(leaked, lines(got))
		return nil
	}}
	scripts := []script{{frags: []string{"She believes Romeo is dead. ", "Grief and haste."}, before: func(_ context.Context, i int) bool {
		if i == 1 {
			close(streamed)
		}
		return true
	}}}
	rig := withJudge(newSafetyRig(t, safety.ModeEnforce, scripts), j)
	rig.guard.Timeout = 5 * time.Second
	msg := juliet
	run, err := rig.svc.StartTurn(context.Background(), "t1", rig.sess.ID, coach.TurnInput{Message: &msg})
	if err != nil {
		t.Fatal(err)
	}
	rep := run.Run(context.Background(), coach.EmitFunc(func(e coach.Event) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, e)
		return nil
	}))
	if rep.Outcome != "ok" {
		t.Fatalf("outcome = %q (%v), want ok: the lesson goes on", rep.Outcome, rep.Err)
	}
	if len(leaked) != 1 || leaked[0] != "" {
		t.Errorf("lines sent before the judge's verdict: %q, want none", leaked)
	}
	if !strings.Contains(lines(got), "Romeo") || strings.Contains(lines(got), "safety") {
		t.Errorf("lines = %s, want the lesson and no safety line", lines(got))
	}
	if rig.stored(t).Held() || rig.esc.count() != 0 {
		t.Errorf("a topic held the session or escalated")
	}
	if len(j.texts) != 1 || j.texts[0].Content != juliet || j.texts[0].Tenant != "t1" {
		t.Errorf("the judge got %+v, want the learner's text and tenant", j.texts)
	}
	recs := rig.audit.eventually(t, 2)
	byName := map[string]safety.Record{}
	for _, r := range recs {
		if r.Stage == safety.StageInput {
			byName[r.Classifier] = r
		}
	}
	if r := byName["judge"]; r.Action != safety.ActionNone || !slicesHas(r.Rules, "judge.topic") || r.Ran.NotRun != "" {
		t.Errorf("judge record %+v, want ran, action none, rule judge.topic", r)
	}
	if r := byName[safety.BuiltinName]; r.Action != safety.ActionNone || len(r.Rules) == 0 {
		t.Errorf("screen record %+v, want the rule it matched and action none", r)
	}
}

// TestJudgeSelfIsACrisis: the judge confirms the screen: crisis, hold and escalation.
func TestJudgeSelfIsACrisis(t *testing.T) {
	rig := withJudge(newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Let's"}, block: true}}), &fakeClassifier{verdict: judgedSelf})
	got, rep := rig.turn(t, crisisMessage)
	if rep.Outcome != coach.OutcomeCrisis || len(got) == 0 || got[0].Type != coach.EventSafety {
		t.Fatalf("outcome %q, lines %s; want crisis, safety line first", rep.Outcome, lines(got))
	}
	if !rig.stored(t).Held() || rig.esc.count() != 1 {
		t.Errorf("held %v, escalations %d; want held and escalated once", rig.stored(t).Held(), rig.esc.count())
	}
}

// TestJudgeFailure: a judge that fails never clears the screen's hit, whatever
// COACH_SAFETY_FAILURE says; the mode decides what its failure means for text the screen could
// not read, and how the failure is audited.
func TestJudgeFailure(t *testing.T) {
	const french = "Personne ne m'aime, je vais me tuer ce soir"
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	tests := []struct {
		name        string
		failure     safety.Failure
		judge       *fakeClassifier
		msg         string
		wantOutcome string
		wantHeld    bool
		wantAction  safety.Action
		wantRan     string
	}{
		{"closed, error, caught", safety.FailClosed, &fakeClassifier{err: errors.New("503")}, crisisMessage, coach.OutcomeCrisis, true, safety.ActionCrisis, "error"},
		{"closed, hang, caught", safety.FailClosed, &fakeClassifier{wait: hang}, crisisMessage, coach.OutcomeCrisis, true, safety.ActionCrisis, "timeout"},
		{"open, error, caught", safety.FailOpen, &fakeClassifier{err: errors.New("503")}, crisisMessage, coach.OutcomeCrisis, true, safety.ActionFailedOpen, "error"},
		{"closed, error, unreadable", safety.FailClosed, &fakeClassifier{err: errors.New("503")}, french, coach.OutcomeCrisis, false, safety.ActionCrisis, "error"},
		{"open, error, unreadable", safety.FailOpen, &fakeClassifier{err: errors.New("503")}, french, "ok", false, safety.ActionFailedOpen, "error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := withJudge(newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Hello."}}, {frags: []string{"Hello."}}}), tt.judge)
			rig.guard.Failure = tt.failure
			rig.guard.Timeout = 30 * time.Millisecond
			done := make(chan coach.Report, 1)
			go func() { _, rep := rig.turn(t, tt.msg); done <- rep }()
			var rep coach.Report
			select {
			case rep = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the turn hung on its judge")
			}
			if rep.Outcome != tt.wantOutcome {
				t.Errorf("outcome = %q (%v), want %q", rep.Outcome, rep.Err, tt.wantOutcome)
			}
			if held := rig.stored(t).Held(); held != tt.wantHeld || (rig.esc.count() == 1) != tt.wantHeld {
				t.Errorf("held %v, escalations %d; want held and escalated: %v", held, rig.esc.count(), tt.wantHeld)
			}
			recs := rig.audit.eventually(t, 2)
			found := false
			for _, r := range recs {
				if r.Classifier == "judge" {
					found = true
					if r.Ran.NotRun != tt.wantRan || r.Action != tt.wantAction {
						t.Errorf("judge record ran %q action %q, want %q %q", r.Ran.NotRun, r.Action, tt.wantRan, tt.wantAction)
					}
				}
			}
			if !found {
				t.Errorf("no judge record in %+v", recs)
			}
		})
	}
}

// TestUnsupportedLanguageAudited: a crisis in a language the screen cannot read, with no judge,
// is not silently clean: its record says the screen did not read it, and names the language.
func TestUnsupportedLanguageAudited(t *testing.T) {
	for _, tt := range []struct{ msg, lang string }{
		{"Personne ne m'aime, je vais me tuer ce soir", "fr"},
		{"Ich will nicht mehr leben, ich bringe mich um", "de"},
		{"Não aguento mais, quero morrer, vou me matar", "pt"},
	} {
		rig := newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Hello."}}})
		if _, rep := rig.turn(t, tt.msg); rep.Outcome != "ok" {
			t.Errorf("%s: outcome %q (%v), want ok (nothing here can read it)", tt.lang, rep.Outcome, rep.Err)
		}
		recs := rig.audit.eventually(t, 1)
		var in *safety.Record
		for i := range recs {
			if recs[i].Stage == safety.StageInput {
				in = &recs[i]
			}
		}
		if in == nil || in.Ran.NotRun != safety.NotRunUnsupportedLanguage || in.Lang != tt.lang || in.Action != safety.ActionNone {
			t.Errorf("%s: input record %+v, want ran unsupported_language, lang %s, action none", tt.lang, in, tt.lang)
		}
	}
}
