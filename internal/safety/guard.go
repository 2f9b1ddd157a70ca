package safety

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Mode is COACH_SAFETY_MODE: whether checks run, and whether their hits change a turn.
type Mode string

const (
	// ModeOff runs no check.
	ModeOff Mode = "off"
	// ModeObserve runs every check and audits it, and changes nothing: an operator measures
	// false positives on real traffic before enforcing.
	ModeObserve Mode = "observe"
	// ModeEnforce acts on hits: the crisis protocol for input, the retraction for output.
	ModeEnforce Mode = "enforce"
)

// Failure is COACH_SAFETY_FAILURE: what a classifier that fails or times out counts as.
type Failure string

const (
	// FailClosed treats a failed check as a hit.
	FailClosed Failure = "closed"
	// FailOpen treats a failed check as a pass; the failure is reported (logged at error level).
	FailOpen Failure = "open"
)

// CategoryUnchecked is the category of a hit that is no finding but a failed check under
// FailClosed: the text was not checked, so it is not let through. It is never a crisis
// detected: it starts no hold and no escalation.
const CategoryUnchecked Category = "unchecked"

// NamedClassifier is a classifier beside the built-in screen, with the name its audit records
// carry ("moderation", "llamaguard3").
type NamedClassifier struct {
	Name       string
	Classifier Classifier
}

// BuiltinName is the name of the built-in screen in audit records.
const BuiltinName = "builtin"

// Guard runs the checks of one gateway: the built-in screen, which never fails, and the
// classifiers configured beside it, each bounded by Timeout. It is safe for concurrent use.
type Guard struct {
	Mode Mode
	// Screen is the built-in screen; a guard whose mode is off, and so runs no check, may have
	// none.
	Screen *Screen
	// Classifiers run beside the screen, concurrently with it and with each other.
	Classifiers []NamedClassifier
	// Judge, when its Classifier is set, gives the second opinion on learner input that the
	// screen's broad net caught or could not read (COACH_SAFETY_JUDGE): its verdict says whom
	// the text concerns, and replaces the screen's decision (see Review).
	Judge   NamedClassifier
	Failure Failure
	// Timeout bounds each classifier's check; 0 leaves it to the caller's context.
	Timeout time.Duration
	// Holdback is COACH_SAFETY_HOLDBACK_CHARS, for the output windows.
	Holdback int
	// Resources are the crisis resources shown to a learner.
	Resources *Resources
	// FailedOpen, when set, is told of each check that failed and was let pass under FailOpen,
	// so the wiring logs it at error level.
	FailedOpen func(classifier string, stage Stage, err error)
}

// Check is what one classifier found on one text: the stuff of one audit record.
type Check struct {
	Classifier string
	// NotRun is empty when the classifier checked the text, and otherwise says why it did not
	// ("timeout", "error", "unavailable"): an audit never says a text was checked when it was not.
	NotRun  string
	Verdict Verdict
	Latency time.Duration
	// Lang is the language of a text the screen could not read (NotRun is
	// NotRunUnsupportedLanguage).
	Lang string
	// Err is the failure behind NotRun, for logs; it never holds the checked text.
	Err error
}

// Enabled reports whether the guard runs checks at all.
func (g *Guard) Enabled() bool { return g != nil && g.Mode != ModeOff && g.Mode != "" }

// Enforcing reports whether hits change turns.
func (g *Guard) Enforcing() bool { return g != nil && g.Mode == ModeEnforce }

// Check runs the screen, then every classifier and, when the screen calls for it, the judge
// (see Review), and returns their final verdict and one Check per classifier, the screen's
// first. A classifier that fails or times out counts as FailClosed or FailOpen says; either way
// its Check says it did not run.
func (g *Guard) Check(ctx context.Context, t Text) (Verdict, []Check) {
	v, c := g.CheckScreen(t)
	if review := g.Review(t, c); review != nil {
		return review(ctx, t)
	}
	return v, []Check{c}
}

// CheckScreen runs the built-in screen alone, which takes microseconds and never fails: a turn
// runs it before anything else. On learner input it also identifies the language (Language):
// text the screen cannot read gets a Check whose NotRun is NotRunUnsupportedLanguage, with its
// Lang, whatever the rules found in it.
func (g *Guard) CheckScreen(t Text) (Verdict, Check) {
	start := time.Now()
	v := g.Screen.check(t.Stage, t.Content)
	c := Check{Classifier: BuiltinName, Verdict: v}
	if t.Stage == StageInput {
		if lang, ok := Language(t.Content); !ok {
			c.NotRun, c.Lang = NotRunUnsupportedLanguage, lang
		}
	}
	c.Latency = time.Since(start)
	return v, c
}

// Review returns what must still run on t after the screen's check screen: the classifiers
// beside the screen, and the judge when one is configured and the text is learner input that
// the screen caught (a crisis or any concern) or could not read. It returns nil when nothing
// must run, so that the caller acts on the screen's verdict at once. The function it returns
// runs them concurrently and returns the final verdict and every Check, the screen's first.
//
// The final verdict is the judge's decision on the screen's (judged), merged with the
// classifiers' verdicts: the judge rules on the broad net, and never clears a classifier's hit.
// A judge that fails or times out never clears anything either: the screen's verdict stands.
// COACH_SAFETY_FAILURE then decides only what its failure means for text the screen passed
// (text it could not read, or a concern that was no crisis): FailClosed makes it a hit of
// CategoryUnchecked (a supportive answer, no hold), FailOpen lets it pass, reported through
// FailedOpen.
func (g *Guard) Review(t Text, screen Check) func(context.Context, Text) (Verdict, []Check) {
	judge := g.Judge.Classifier != nil && t.Stage == StageInput &&
		(screen.Verdict.Crisis || screen.Verdict.Concern != ConcernNone || screen.NotRun == NotRunUnsupportedLanguage)
	if !judge && len(g.Classifiers) == 0 {
		return nil
	}
	return func(ctx context.Context, t Text) (Verdict, []Check) {
		checks := g.remote(ctx, t, judge)
		v := screen.Verdict
		n := len(checks)
		if judge {
			n--
			v = judged(v, checks[n])
		}
		for _, c := range checks[:n] {
			v = v.Merge(c.Verdict)
		}
		return v, append([]Check{screen}, checks...)
	}
}

// judged applies the judge's check j to the screen's verdict v.
func judged(v Verdict, j Check) Verdict {
	if j.NotRun != "" {
		// Failed: the screen's verdict stands, with the hit that FailClosed made of the failure.
		return v.Merge(j.Verdict)
	}
	out := j.Verdict
	switch out.Concern {
	case ConcernSelf:
		var cats []Category
		for _, c := range v.Categories {
			if c != CategoryConcernOther {
				cats = append(cats, c)
			}
		}
		out.Categories = union(cats, out.Categories)
		out.Severity = max(out.Severity, v.Severity)
		out.Rules = union(v.Rules, out.Rules)
	case ConcernOther:
		out.Rules = union(v.Rules, out.Rules)
	}
	return out
}

// CheckRemote runs only the classifiers beside the screen (the output windows are checked by
// the screen as they stream; the whole answer then goes to the classifiers once). With none
// configured it returns a clean verdict and no Check.
func (g *Guard) CheckRemote(ctx context.Context, t Text) (Verdict, []Check) {
	checks := g.remote(ctx, t, false)
	var v Verdict
	for _, c := range checks {
		v = v.Merge(c.Verdict)
	}
	return v, checks
}

// remote runs the classifiers, and the judge last when judge is set, concurrently, and returns
// their checks in that order.
func (g *Guard) remote(ctx context.Context, t Text, judge bool) []Check {
	cs := g.Classifiers
	if judge {
		cs = append(slices.Clip(cs), g.Judge)
	}
	if len(cs) == 0 {
		return nil
	}
	checks := make([]Check, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			checks[i] = g.run(ctx, c, t)
		}()
	}
	wg.Wait()
	return checks
}

// run runs one classifier with the guard's timeout and applies the failure mode.
func (g *Guard) run(ctx context.Context, c NamedClassifier, t Text) Check {
	start := time.Now()
	if g.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.Timeout)
		defer cancel()
	}
	v, err := c.Classifier.Check(ctx, t)
	ch := Check{Classifier: c.Name, Latency: time.Since(start)}
	if err == nil {
		ch.Verdict = v
		return ch
	}
	ch.Err = err
	ch.NotRun = "error"
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
		ch.NotRun = "timeout"
	} else if errors.Is(err, ErrUnavailable) {
		ch.NotRun = "unavailable"
	}
	if g.Failure == FailOpen {
		if g.FailedOpen != nil {
			g.FailedOpen(c.Name, t.Stage, err)
		}
		return ch
	}
	ch.Verdict = Verdict{Crisis: true, Categories: []Category{CategoryUnchecked}, Severity: SeverityHigh}
	return ch
}

// ErrUnavailable is returned (wrapped) by a classifier that did not try, because its endpoint's
// circuit is open.
var ErrUnavailable = errors.New("classifier unavailable")

// NewWindow returns an output window over the guard's screen with its holdback.
func (g *Guard) NewWindow() *Window { return NewWindow(g.Screen, g.Holdback) }

// Detected reports whether v is a crisis found in the text rather than only a failed check
// counted as a hit: only a detected crisis starts a hold and an escalation.
func Detected(v Verdict) bool {
	for _, c := range v.Categories {
		if c != CategoryUnchecked {
			return v.Crisis
		}
	}
	return false
}

// Action is what a check led to, as its audit record says.
type Action string

const (
	// ActionNone is a clean check.
	ActionNone Action = "none"
	// ActionObserved is a hit in observe mode: audited, nothing changed.
	ActionObserved Action = "observed"
	// ActionCrisis is a learner input hit: safety line and supportive answer, and a hold when
	// it concerns the learner (not someone the learner knows).
	ActionCrisis Action = "crisis"
	// ActionHeld is a turn of a held session, answered supportively without a check.
	ActionHeld Action = "held"
	// ActionRetracted is an output hit: the text was withheld (and reset where some had gone out).
	ActionRetracted Action = "retracted"
	// ActionFailedOpen is a check that failed and was let pass.
	ActionFailedOpen Action = "failed_open"
)

// Ran is the "ran" member of an audit record: true, or why the check did not run.
type Ran struct{ NotRun string }

// MarshalJSON writes true, or the reason as a string.
func (r Ran) MarshalJSON() ([]byte, error) {
	if r.NotRun == "" {
		return []byte("true"), nil
	}
	return json.Marshal(r.NotRun)
}

// UnmarshalJSON reads true or a reason.
func (r *Ran) UnmarshalJSON(b []byte) error {
	if string(b) == "true" {
		r.NotRun = ""
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil || s == "" {
		return fmt.Errorf("ran: want true or a reason, got %s", b)
	}
	r.NotRun = s
	return nil
}

// Record is one audit record: one check of one text by one classifier. It never holds the text.
type Record struct {
	// ID is the record's place in its tenant's audit, set by the store (the cursor of ?after=).
	ID      string    `json:"id,omitempty"`
	Time    time.Time `json:"time"`
	Tenant  string    `json:"-"`
	Session string    `json:"session"`
	Learner Learner   `json:"learner,omitzero"`
	Turn    string    `json:"turn,omitempty"`
	Stage   Stage     `json:"stage"`
	// Classifier is BuiltinName or a NamedClassifier's name.
	Classifier string     `json:"classifier"`
	Ran        Ran        `json:"ran"`
	Categories []Category `json:"categories,omitempty"`
	Severity   Severity   `json:"severity"`
	Rules      []string   `json:"rules,omitempty"`
	// Lang is the language of text the screen could not read (Ran is "unsupported_language").
	Lang      string  `json:"lang,omitempty"`
	Action    Action  `json:"action"`
	Mode      Mode    `json:"mode"`
	LatencyMS float64 `json:"latencyMs"`
}

// Episode is what the escalation webhook says of one crisis episode: everything an operator
// needs to route it, and the learner's text only when the operator asked for it.
type Episode struct {
	// ID identifies the episode: the webhook is idempotent on it.
	ID         string     `json:"episode"`
	Time       time.Time  `json:"time"`
	Tenant     string     `json:"tenant"`
	Session    string     `json:"session"`
	Learner    Learner    `json:"learner,omitzero"`
	Contract   string     `json:"contract"`
	Module     string     `json:"module,omitempty"`
	Locale     string     `json:"locale"`
	Severity   Severity   `json:"severity"`
	Categories []Category `json:"categories"`
	// Text is the learner's text, only with COACH_ESCALATION_INCLUDE_TEXT=true.
	Text string `json:"text,omitempty"`
}

// Learner is the learner a record or an episode names: the session's opaque reference, and,
// when a learner's key (not an operator's) gave it, the id of that key. A reference asserted by
// a learner key is only what that client said: it may name someone else (a classmate), and a
// receiver should weigh it so. It encodes as {"ref":"…","asserted_by":"<key id>"}; a record
// stored as the bare reference (as records were before the key was kept) decodes too.
type Learner struct {
	Ref        string `json:"ref"`
	AssertedBy string `json:"asserted_by,omitempty"`
}

// UnmarshalJSON reads a Learner object, or a bare reference string.
func (l *Learner) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		*l = Learner{}
		return json.Unmarshal(b, &l.Ref)
	}
	type plain Learner
	return json.Unmarshal(b, (*plain)(l))
}
