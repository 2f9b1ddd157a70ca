package coach_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/safety"
)

// fakeClassifier is a classifier beside the screen: it answers verdict or err, after wait
// returns (nil: at once).
type fakeClassifier struct {
	verdict safety.Verdict
	err     error
	wait    func(ctx context.Context) error
	// judge, when set, decides the verdict from the text.
	judge func(t safety.Text) safety.Verdict
	mu    sync.Mutex
	texts []safety.Text
}

func (f *fakeClassifier) Check(ctx context.Context, t safety.Text) (safety.Verdict, error) {
	f.mu.Lock()
	f.texts = append(f.texts, t)
	f.mu.Unlock()
	if f.wait != nil {
		if err := f.wait(ctx); err != nil {
			return safety.Verdict{}, err
		}
	}
	if f.judge != nil {
		return f.judge(t), nil
	}
	return f.verdict, f.err
}

// fakeAudit keeps audit records.
type fakeAudit struct {
	mu      sync.Mutex
	records []safety.Record
}

func (f *fakeAudit) Audit(_ context.Context, rs []safety.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, rs...)
	return nil
}

// eventually waits for the audit (written off the turn's path) to hold n records.
func (f *fakeAudit) eventually(t *testing.T, n int) []safety.Record {
	t.Helper()
	for range 500 {
		f.mu.Lock()
		got := append([]safety.Record(nil), f.records...)
		f.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("audit holds fewer than %d records", n)
	return nil
}

// fakeEscalator keeps episodes.
type fakeEscalator struct {
	mu       sync.Mutex
	episodes []safety.Episode
}

func (f *fakeEscalator) Escalate(ep safety.Episode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.episodes = append(f.episodes, ep)
}

func (f *fakeEscalator) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.episodes)
}

type safetyRig struct {
	svc   *coach.Service
	guard *safety.Guard
	store *storeFake
	sess  *coach.Session
	model *fakeModel
	audit *fakeAudit
	esc   *fakeEscalator
}

func newSafetyRig(t *testing.T, mode safety.Mode, scripts []script, extra ...safety.NamedClassifier) *safetyRig {
	t.Helper()
	screen, err := safety.NewScreen()
	if err != nil {
		t.Fatal(err)
	}
	g := &safety.Guard{Mode: mode, Screen: screen, Classifiers: extra, Failure: safety.FailClosed,
		Timeout: 200 * time.Millisecond, Holdback: safety.DefaultHoldback, Resources: safety.BuiltinResources()}
	rig := &safetyRig{guard: g, store: newStoreFake(), model: &fakeModel{scripts: scripts}, audit: &fakeAudit{}, esc: &fakeEscalator{}}
	rig.svc = coach.New(coach.Deps{
		Store: rig.store, Upstreams: []coach.Upstream{{Name: "default", Model: rig.model}},
		Contracts: []coach.Contract{echoContract{}}, Options: testOptions(),
		Safety: g, Audit: rig.audit, Escalator: rig.esc, MaskPII: true,
	})
	rig.sess, err = rig.svc.CreateSession(context.Background(), "t1", "echo", coach.NewSession{Locale: "en-US", Learner: "learner-1"})
	if err != nil {
		t.Fatal(err)
	}
	return rig
}

func (rig *safetyRig) turn(t *testing.T, msg string) ([]coach.Event, coach.Report) {
	t.Helper()
	run, err := rig.svc.StartTurn(context.Background(), "t1", rig.sess.ID, coach.TurnInput{Message: &msg})
	if err != nil {
		t.Fatalf("StartTurn: %v", err)
	}
	var got []coach.Event
	rep := run.Run(context.Background(), coach.EmitFunc(func(e coach.Event) error { got = append(got, e); return nil }))
	return got, rep
}

func (rig *safetyRig) stored(t *testing.T) *coach.Session {
	t.Helper()
	s, err := rig.store.Get(context.Background(), "t1", rig.sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const crisisMessage = "honestly I don't want to be alive anymore"

func TestCrisisTurnGetsResourcesAndHolds(t *testing.T) {
	// The model would go on with the lesson; nothing of it may reach the learner.
	rig := newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Next ", "lesson ", "block."}}})
	got, rep := rig.turn(t, crisisMessage)
	if rep.Outcome != coach.OutcomeCrisis {
		t.Fatalf("outcome = %q, want %q (%v)", rep.Outcome, coach.OutcomeCrisis, rep.Err)
	}
	if len(got) != 3 || got[0].Type != coach.EventSafety || got[1].Type != coach.EventDelta || got[2].Type != coach.EventResult {
		t.Fatalf("lines = %s, want safety, one delta, result", lines(got))
	}
	n := got[0].Safety
	if n.Kind != "crisis" || n.Locale != "en-US" || len(n.Resources) == 0 || n.Resources[0].Phone != "988" {
		t.Errorf("safety notice = %+v, want en-US crisis resources starting with 988", n)
	}
	for _, e := range got {
		if strings.Contains(e.Text, "Next lesson") {
			t.Errorf("lesson text reached the learner: %q", e.Text)
		}
	}
	if !strings.Contains(got[1].Text, "988") || strings.Contains(strings.ToLower(got[1].Text), "how would") {
		t.Errorf("supportive text = %q, want the resources and no question", got[1].Text)
	}
	var res struct{ Text string }
	_ = json.Unmarshal(got[2].Result, &res)
	if res.Text != got[1].Text {
		t.Errorf("result text %q, want the delta's text", res.Text)
	}
	s := rig.stored(t)
	if !s.Held() || s.Safety.Episode == "" || string(s.State) != `{"turns":0}` {
		t.Errorf("stored session safety %+v state %s, want a hold with an episode and the state unchanged", s.Safety, s.State)
	}
	if got[2].Session == nil || !got[2].Session.Held() {
		t.Errorf("the result's session does not show the hold")
	}
	if rig.esc.count() != 1 {
		t.Fatalf("escalations = %d, want 1", rig.esc.count())
	}
	ep := rig.esc.episodes[0]
	if ep.ID != s.Safety.Episode || ep.Learner != (safety.Learner{Ref: "learner-1"}) || ep.Contract != "echo" || ep.Locale != "en-US" ||
		ep.Text != "" || !slicesHas(ep.Categories, safety.CategorySuicide) {
		t.Errorf("episode = %+v, want the session's episode, learner, contract, locale, suicide, and no text", ep)
	}
	recs := rig.audit.eventually(t, 1)
	var input *safety.Record
	for i := range recs {
		if recs[i].Stage == safety.StageInput {
			input = &recs[i]
		}
	}
	if input == nil || input.Action != safety.ActionCrisis || input.Ran.NotRun != "" || input.Classifier != safety.BuiltinName {
		t.Errorf("audit records = %+v, want the input's: builtin, crisis, ran", recs)
	}
	raw, _ := json.Marshal(recs)
	if strings.Contains(string(raw), "want to be alive") {
		t.Errorf("audit holds learner text: %s", raw)
	}
	page, _ := rig.store.Transcript(context.Background(), "t1", rig.sess.ID, 0, 10)
	if len(page.Entries) != 2 || page.Entries[1].Safety == nil || page.Entries[1].Result == nil {
		t.Errorf("transcript = %+v, want the learner's entry and the result's with the safety notice", page.Entries)
	}
	// A restored answer and its resume are one message only when its entries carry the turn.
	for _, e := range page.Entries {
		if e.Turn == "" || e.Turn != page.Entries[0].Turn {
			t.Errorf("transcript entry %+v lacks the turn's id", e)
		}
	}

	// Every later turn of the held session, a plain one or continue, gets the supportive answer
	// without the model, and no second escalation.
	calls := rig.model.calls()
	got, rep = rig.turn(t, "ok, what's next in the lesson?")
	if rep.Outcome != coach.OutcomeHeld || len(got) != 3 || got[0].Type != coach.EventSafety {
		t.Errorf("held turn: outcome %q, lines %s; want held, safety delta result", rep.Outcome, lines(got))
	}
	if rig.model.calls() != calls || rig.esc.count() != 1 {
		t.Errorf("held turn: model calls %d→%d, escalations %d; want no call and 1 escalation", calls, rig.model.calls(), rig.esc.count())
	}
	if s := rig.stored(t); !s.Held() || s.Safety.Episode != ep.ID {
		t.Errorf("held turn changed the hold: %+v", s.Safety)
	}
}

func slicesHas[T comparable](s []T, v T) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestNoLineBeforeTheInputVerdict(t *testing.T) {
	// The classifier beside the screen answers only once the model has streamed everything,
	// and checks then that nothing has reached the learner.
	streamed := make(chan struct{})
	var mu sync.Mutex
	var got []coach.Event
	var leaked []string
	slow := &fakeClassifier{wait: func(ctx context.Context) error {
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
	scripts := []script{{frags: []string{"Breathe in. ", "Breathe out."}, before: func(_ context.Context, i int) bool {
		if i == 1 {
			close(streamed)
		}
		return true
	}}}
	rig := newSafetyRig(t, safety.ModeEnforce, scripts, safety.NamedClassifier{Name: "slow", Classifier: slow})
	rig.guard.Timeout = 5 * time.Second
	msg := "I feel like I'm dying when I panic"
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
		t.Fatalf("outcome = %q (%v), want ok", rep.Outcome, rep.Err)
	}
	if len(leaked) == 0 || leaked[0] != "" {
		t.Errorf("lines sent before the input verdict: %q, want none", leaked)
	}
	// Nothing in the answer could start a caught phrase: each model delta leaves as it came.
	if want := "delta:Breathe in.  delta:Breathe out. result"; lines(got) != want {
		t.Errorf("lines = %s, want %s", lines(got), want)
	}
}

func TestCrisisCancelsTheModelCall(t *testing.T) {
	// A model that never ends: the crisis must not wait for it.
	rig := newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Let's"}, block: true}})
	done := make(chan coach.Report, 1)
	go func() {
		_, rep := rig.turn(t, "quiero matarme")
		done <- rep
	}()
	select {
	case rep := <-done:
		if rep.Outcome != coach.OutcomeCrisis {
			t.Errorf("outcome = %q (%v), want crisis", rep.Outcome, rep.Err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the crisis turn waited for the model")
	}
}

func TestUnsafeOutputIsRetractedAndRetried(t *testing.T) {
	unsafe := []string{"Breathing helps. ", "Cut along your ", "wrists vertically ", "rather than across. ", "Done."}
	tests := []struct {
		name     string
		scripts  []script
		want     string
		fallback bool
	}{
		{name: "second answer is safe", scripts: []script{{frags: unsafe}, {frags: []string{"Let's breathe."}}},
			want: "delta:Breathing helps.  reset:unsafe_output delta:Let's breathe. result"},
		{name: "both unsafe: safe fallback", scripts: []script{{frags: unsafe}, {frags: unsafe}},
			want: "delta:Breathing helps.  reset:unsafe_output delta:Breathing helps.  reset:unsafe_output delta:" + coach.SafeText("en") + " result", fallback: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newSafetyRig(t, safety.ModeEnforce, tt.scripts)
			got, rep := rig.turn(t, "how do I calm down before exams?")
			if lines(got) != tt.want {
				t.Errorf("lines = %s\nwant  %s", lines(got), tt.want)
			}
			for _, e := range got {
				if strings.Contains(e.Text, "wrists") {
					t.Errorf("unsafe text reached the learner: %q", e.Text)
				}
			}
			last := got[len(got)-1]
			if last.Fallback != tt.fallback {
				t.Errorf("result fallback = %v, want %v (%v)", last.Fallback, tt.fallback, rep.Err)
			}
			if len(rig.model.requests) != 2 || !strings.Contains(rig.model.requests[1].Messages[0].Content, "Safety rule") {
				t.Errorf("the retry's prompt lacks the safety reminder: %+v", rig.model.requests)
			}
			if rep.Resets != 1+btoi(tt.fallback) {
				t.Errorf("resets = %d", rep.Resets)
			}
			if s := rig.stored(t); s.Held() {
				t.Errorf("unsafe output put the session on hold")
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestUnsafeAnswerCaughtByTheWholeCheck(t *testing.T) {
	// The screen passes "Fine."; the classifier beside it sees the whole answer and flags it
	// after the delta went out, so it is retracted.
	judge := &fakeClassifier{judge: func(t safety.Text) safety.Verdict {
		if t.Stage == safety.StageOutput && strings.Contains(t.Content, "Fine.") {
			return safety.Verdict{Crisis: true, Categories: []safety.Category{safety.CategorySelfHarmInstructions}, Severity: safety.SeverityHigh}
		}
		return safety.Verdict{}
	}}
	rig := newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Fine."}}, {frags: []string{"Good."}}},
		safety.NamedClassifier{Name: "judge", Classifier: judge})
	got, _ := rig.turn(t, "tell me about exams")
	if want := "delta:Fine. reset:unsafe_output delta:Good. result"; lines(got) != want {
		t.Errorf("lines = %s, want %s", lines(got), want)
	}
}

func TestObserveModeChangesNothing(t *testing.T) {
	rig := newSafetyRig(t, safety.ModeObserve, []script{{frags: []string{"Cut along your wrists vertically rather than across."}}})
	got, rep := rig.turn(t, crisisMessage)
	if rep.Outcome != "ok" || lines(got) != "delta:Cut along your wrists vertically rather than across. result" {
		t.Errorf("observe: outcome %q lines %s, want the model's answer unchanged", rep.Outcome, lines(got))
	}
	if rig.stored(t).Held() || rig.esc.count() != 0 {
		t.Errorf("observe mode held the session or escalated")
	}
	recs := rig.audit.eventually(t, 2)
	actions := map[safety.Stage]safety.Action{}
	for _, r := range recs {
		actions[r.Stage] = r.Action
	}
	if actions[safety.StageInput] != safety.ActionObserved || actions[safety.StageOutput] != safety.ActionObserved {
		t.Errorf("audit actions = %v, want observed for input and output", actions)
	}
}

func TestClassifierFailure(t *testing.T) {
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	tests := []struct {
		name        string
		failure     safety.Failure
		classifier  *fakeClassifier
		wantOutcome string
		wantRan     string
	}{
		{"closed, error", safety.FailClosed, &fakeClassifier{err: errors.New("503")}, coach.OutcomeCrisis, "error"},
		{"closed, hang", safety.FailClosed, &fakeClassifier{wait: hang}, coach.OutcomeCrisis, "timeout"},
		{"open, error", safety.FailOpen, &fakeClassifier{err: errors.New("503")}, "ok", "error"},
		{"open, hang", safety.FailOpen, &fakeClassifier{wait: hang}, "ok", "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rig := newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Hello."}}, {frags: []string{"Hello."}}},
				safety.NamedClassifier{Name: "moderation", Classifier: tt.classifier})
			rig.guard.Failure = tt.failure
			rig.guard.Timeout = 30 * time.Millisecond
			done := make(chan coach.Report, 1)
			go func() { _, rep := rig.turn(t, "hello there"); done <- rep }()
			var rep coach.Report
			select {
			case rep = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the turn hung on its classifier")
			}
			if rep.Outcome != tt.wantOutcome {
				t.Errorf("outcome = %q (%v), want %q", rep.Outcome, rep.Err, tt.wantOutcome)
			}
			// A failed check is no crisis detected: no hold, no escalation.
			if rig.stored(t).Held() || rig.esc.count() != 0 {
				t.Errorf("a classifier failure held the session or escalated")
			}
			recs := rig.audit.eventually(t, 2)
			for _, r := range recs {
				if r.Classifier == "moderation" && r.Stage == safety.StageInput && r.Ran.NotRun != tt.wantRan {
					t.Errorf("moderation record ran = %q, want %q", r.Ran.NotRun, tt.wantRan)
				}
			}
		})
	}
}

func TestPIIMaskedBeforeTheModel(t *testing.T) {
	rig := newSafetyRig(t, safety.ModeEnforce, []script{{frags: []string{"Noted."}}})
	msg := "write to me at ana.lopez@example.com or call +34 612 345 678"
	got, rep := rig.turn(t, msg)
	if rep.Outcome != "ok" {
		t.Fatalf("outcome %q (%v), lines %s", rep.Outcome, rep.Err, lines(got))
	}
	sent := rig.model.requests[0].Messages[0].Content
	if strings.Contains(sent, "ana.lopez") || strings.Contains(sent, "612") || !strings.Contains(sent, "[email]") || !strings.Contains(sent, "[phone]") {
		t.Errorf("the model received %q, want the e-mail and phone masked", sent)
	}
	if h := rig.stored(t).History; len(h) == 0 || h[0].Content != msg {
		t.Errorf("history = %+v, want what the learner typed", h)
	}
}

func TestHeldSessionRefusesProposalDecisions(t *testing.T) {
	rig := newSafetyRig(t, safety.ModeEnforce, nil)
	if _, rep := rig.turn(t, crisisMessage); rep.Outcome != coach.OutcomeCrisis {
		t.Fatalf("outcome = %q, want crisis", rep.Outcome)
	}
	move := func(*coach.Session) (json.RawMessage, error) { return json.RawMessage(`{"turns":9}`), nil }
	_, err := rig.svc.Update(context.Background(), "t1", rig.sess.ID, "echo", json.RawMessage(`{"action":"accept"}`), move)
	if coach.AsError(err).Code != coach.CodeSafetyHold {
		t.Errorf("a decision on a held session: error %v, want %s", err, coach.CodeSafetyHold)
	}
	if s := rig.stored(t); string(s.State) != `{"turns":0}` || rig.store.locked(s.ID) {
		t.Errorf("state %s (locked %v), want it unchanged and released", s.State, rig.store.locked(s.ID))
	}
	// A draft edit is the learner's own text, not the lesson moving on.
	if _, err := rig.svc.Update(context.Background(), "t1", rig.sess.ID, "echo", nil, move); err != nil {
		t.Errorf("a draft edit on a held session: %v, want it stored", err)
	}
}
