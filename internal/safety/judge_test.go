package safety

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
)

// fakeJudge answers every check with its verdict or its error, and counts the checks.
type fakeJudge struct {
	v     Verdict
	err   error
	calls atomic.Int32
}

func (f *fakeJudge) Check(context.Context, Text) (Verdict, error) {
	f.calls.Add(1)
	return f.v, f.err
}

func TestGuardJudge(t *testing.T) {
	const (
		crisis  = "I want to kill myself tonight, I have the pills ready."
		benign  = "Can you help me find the claim in this paragraph about school uniforms?"
		french  = "Personne ne m'aime, je vais me tuer ce soir"
		english = "en"
	)
	self := Verdict{Crisis: true, Concern: ConcernSelf, Severity: SeverityHigh, Categories: []Category{CategorySuicide}, Rules: []string{"judge.self"}}
	other := Verdict{Crisis: true, Concern: ConcernOther, Severity: SeverityConcern, Categories: []Category{CategoryConcernOther}, Rules: []string{"judge.other"}}
	topic := Verdict{Concern: ConcernTopic, Rules: []string{"judge.topic"}}
	down := errors.New("judge down")
	tests := []struct {
		name    string
		text    string
		judge   Verdict
		err     error
		failure Failure
		// wantCalls is how many times the judge is asked.
		wantCalls   int32
		wantCrisis  bool
		wantConcern Concern
		// wantDetected is whether the verdict starts a hold (a crisis found, not a failed check).
		wantDetected bool
		wantNotRun   string
	}{
		{name: "clean text is not judged", text: benign, judge: self, failure: FailClosed, wantCalls: 0},
		{name: "a caught topic goes on", text: crisis, judge: topic, failure: FailClosed, wantCalls: 1, wantConcern: ConcernTopic},
		{name: "a caught crisis stays one", text: crisis, judge: self, failure: FailClosed, wantCalls: 1, wantCrisis: true, wantConcern: ConcernSelf, wantDetected: true},
		{name: "worry about a friend", text: crisis, judge: other, failure: FailClosed, wantCalls: 1, wantCrisis: true, wantConcern: ConcernOther, wantDetected: true},
		{name: "failed closed: the screen's hit stands", text: crisis, err: down, failure: FailClosed, wantCalls: 1, wantCrisis: true, wantConcern: ConcernSelf, wantDetected: true},
		{name: "failed open: the screen's hit stands", text: crisis, err: down, failure: FailOpen, wantCalls: 1, wantCrisis: true, wantConcern: ConcernSelf, wantDetected: true},
		{name: "unreadable text is judged", text: french, judge: self, failure: FailClosed, wantCalls: 1, wantCrisis: true, wantConcern: ConcernSelf, wantDetected: true, wantNotRun: NotRunUnsupportedLanguage},
		{name: "unreadable text, failed closed", text: french, err: down, failure: FailClosed, wantCalls: 1, wantCrisis: true, wantNotRun: NotRunUnsupportedLanguage},
		{name: "unreadable text, failed open", text: french, err: down, failure: FailOpen, wantCalls: 1, wantNotRun: NotRunUnsupportedLanguage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &fakeJudge{v: tt.judge, err: tt.err}
			var failedOpen []string
			g := &Guard{Mode: ModeEnforce, Screen: newScreen(t), Failure: tt.failure, Judge: NamedClassifier{Name: "judge", Classifier: j},
				FailedOpen: func(c string, _ Stage, _ error) { failedOpen = append(failedOpen, c) }}
			v, checks := g.Check(context.Background(), Text{Stage: StageInput, Locale: english, Content: tt.text})
			if got := j.calls.Load(); got != tt.wantCalls {
				t.Errorf("judge asked %d times, want %d", got, tt.wantCalls)
			}
			if v.Crisis != tt.wantCrisis || v.Concern != tt.wantConcern || Detected(v) != tt.wantDetected {
				t.Errorf("verdict %+v: crisis %v concern %q detected %v, want %v %q %v", v, v.Crisis, v.Concern, Detected(v), tt.wantCrisis, tt.wantConcern, tt.wantDetected)
			}
			if checks[0].Classifier != BuiltinName || checks[0].NotRun != tt.wantNotRun {
				t.Errorf("screen's check %+v, want ran %q", checks[0], tt.wantNotRun)
			}
			if tt.wantCalls > 0 && (len(checks) != 2 || checks[1].Classifier != "judge") {
				t.Errorf("checks %+v, want the screen's and the judge's", checks)
			}
			if wantOpen := tt.err != nil && tt.failure == FailOpen; wantOpen != slices.Equal(failedOpen, []string{"judge"}) {
				t.Errorf("FailedOpen told of %v, want the judge: %v", failedOpen, wantOpen)
			}
		})
	}
}

// TestGuardUnsupportedLanguageNoJudge: without a judge or classifiers, text the screen cannot
// read passes (nothing could check it) but its check never says it ran.
func TestGuardUnsupportedLanguageNoJudge(t *testing.T) {
	g := &Guard{Mode: ModeEnforce, Screen: newScreen(t), Failure: FailClosed}
	for _, text := range []string{"Mein Vater schlägt mich jeden Abend", "Eu não aguento mais, quero morrer hoje", "我想死"} {
		_, checks := g.Check(context.Background(), Text{Stage: StageInput, Content: text})
		if len(checks) != 1 || checks[0].NotRun != NotRunUnsupportedLanguage || checks[0].Lang == "" {
			t.Errorf("%q: checks %+v, want one unsupported_language check with its language", text, checks)
		}
	}
	_, checks := g.Check(context.Background(), Text{Stage: StageOutput, Content: "Mein Vater schlägt mich jeden Abend"})
	if checks[0].NotRun != "" {
		t.Errorf("model output: check %+v, want the language left alone", checks[0])
	}
}
