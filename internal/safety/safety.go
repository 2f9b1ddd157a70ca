// Package safety owns the learner-safety screen: the built-in offline rule engine that finds
// crisis signals in learner input (suicide and self-harm intent, abuse, immediate danger, concern
// for someone else) and clearly harmful model output (self-harm instructions or encouragement) in
// English and Spanish; the Verdict type every screen returns and the audit record is built from;
// the Classifier interface that moderation endpoints and guard models implement beside it; the
// streaming output window that releases model text only once it has been checked; and the crisis
// resources shown to a learner per locale. It is plain Go: no HTTP, Redis or provider types.
package safety

import (
	"context"
	"fmt"
	"slices"
)

// Stage says which side of a turn a text comes from, because input and output are screened for
// different things: a learner's words for crisis signals, the model's words for harmful content.
type Stage string

const (
	// StageInput is a learner's turn.
	StageInput Stage = "input"
	// StageOutput is model text on its way to the learner.
	StageOutput Stage = "output"
)

// Text is what a Classifier checks.
type Text struct {
	// Stage decides which rules apply.
	Stage Stage
	// Locale is the session's locale (for example "es-MX"); the built-in screen runs its English
	// and Spanish rules whatever the locale, because learners switch language mid-sentence and
	// a session's locale is only a hint, but a remote classifier may use it.
	Locale string
	// Content is the text itself. It is never copied into a Verdict.
	Content string
	// Tenant is the tenant whose learner wrote the text. A classifier that caches verdicts
	// keys them by it, so that one tenant's traffic can neither read nor evict another's.
	Tenant string
}

// Category names one kind of signal. The values are stable: they appear in the audit record,
// the escalation webhook and the metrics, so a new kind gets a new value rather than a renamed one.
type Category string

const (
	// CategorySuicide is suicidal intent or ideation of the learner: direct ("I want to kill
	// myself"), passive ("I don't want to be alive anymore") or indirect ("everyone would be
	// better off without me").
	CategorySuicide Category = "suicide"
	// CategorySelfHarm is self-injury of the learner without stated suicidal intent.
	CategorySelfHarm Category = "self_harm"
	// CategoryAbuse is the learner being hurt, threatened or abused by someone, at home or elsewhere.
	CategoryAbuse Category = "abuse"
	// CategoryDanger is the learner in immediate danger now (an overdose taken, someone about to hurt them).
	CategoryDanger Category = "danger"
	// CategoryConcernOther is the learner worried that someone else (a friend, a sibling) means
	// to harm themselves or is being hurt: the learner needs resources for helping, not a
	// response that treats them as the person at risk.
	CategoryConcernOther Category = "concern_other"
	// CategoryTopic is no signal about anyone but the words of one, on a topic of study: a
	// character's or a historical person's death, a debate motion, biology, a game, an idiom.
	// A verdict that carries it alone is no crisis: it is audited, and the lesson goes on.
	CategoryTopic Category = "topic"
	// CategorySelfHarmInstructions is output that explains how to self-harm or end one's life.
	CategorySelfHarmInstructions Category = "self_harm_instructions"
	// CategorySelfHarmEncouragement is output that urges or approves self-harm or suicide.
	CategorySelfHarmEncouragement Category = "self_harm_encouragement"
)

// Severity orders how urgent a verdict is. The zero value is SeverityNone, so an empty Verdict
// is a clean one.
type Severity int

const (
	// SeverityNone is no signal.
	SeverityNone Severity = iota
	// SeverityConcern is a signal about someone other than the learner (CategoryConcernOther).
	SeverityConcern
	// SeverityHigh is a signal about the learner: passive or indirect ideation, self-harm, abuse,
	// and every harmful-output hit.
	SeverityHigh
	// SeverityImminent is direct intent, a plan or means, or danger happening now.
	SeverityImminent
)

// String returns the severity's stable name, as written in the audit record and the webhook.
func (s Severity) String() string {
	switch s {
	case SeverityConcern:
		return "concern"
	case SeverityHigh:
		return "high"
	case SeverityImminent:
		return "imminent"
	default:
		return "none"
	}
}

// MarshalText writes the severity's name, so JSON carries "high" rather than a number that
// would change meaning if the levels were ever reordered.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity's name, so that stored audit records read back as written.
func (s *Severity) UnmarshalText(b []byte) error {
	for _, v := range []Severity{SeverityNone, SeverityConcern, SeverityHigh, SeverityImminent} {
		if v.String() == string(b) {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("severity: unknown name %q", b)
}

// Verdict is the outcome of one check, the shape shared by every Classifier so the wiring and
// the audit record do not care which one ran. It never holds the checked text.
type Verdict struct {
	// Crisis is true when the text is a hit for its stage: for input, the turn gets the crisis
	// protocol (safety line, supportive result, hold); for output, the text must not reach the
	// learner (reset unsafe_output). Categories is then non-empty.
	Crisis bool `json:"crisis"`
	// Categories lists each kind of signal found, sorted and without repeats.
	Categories []Category `json:"categories,omitempty"`
	// Severity is the highest severity among the signals found.
	Severity Severity `json:"severity"`
	// Rules names the rules that matched (for the built-in screen, rule ids such as
	// "en.passive.not_alive"), so an operator in observe mode can see which rule a false
	// positive came from without the audit ever holding learner text.
	Rules []string `json:"rules,omitempty"`
	// Concern says whom the text is about (the learner, someone they know, a topic of study);
	// empty when nothing was found or the classifier does not tell.
	Concern Concern `json:"concern,omitempty"`
}

// Has reports whether the verdict carries category c.
func (v Verdict) Has(c Category) bool { return slices.Contains(v.Categories, c) }

// Merge combines two verdicts, as when the built-in screen and a classifier beside it both
// ran: a hit in either is a hit, categories and rules are united, the higher severity wins.
func (v Verdict) Merge(o Verdict) Verdict {
	out := Verdict{Crisis: v.Crisis || o.Crisis, Severity: max(v.Severity, o.Severity), Concern: maxConcern(v.Concern, o.Concern)}
	out.Categories = union(v.Categories, o.Categories)
	out.Rules = union(v.Rules, o.Rules)
	if out.Crisis {
		// One check's reading that the text is only a topic does not survive another's crisis.
		out.Categories = slices.DeleteFunc(out.Categories, func(c Category) bool { return c == CategoryTopic })
		if out.Concern == ConcernTopic {
			out.Concern = ConcernNone
		}
	}
	return out
}

func union[T ~string](a, b []T) []T {
	if len(a)+len(b) == 0 {
		return nil
	}
	out := make([]T, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Classifier checks one text. The built-in Screen implements it; a moderation endpoint or a
// guard model served as a chat model implement it beside the screen. An error means the text
// was not checked (an outage, a timeout): the caller applies COACH_SAFETY_FAILURE and records
// that the check did not run; a Classifier never returns a clean Verdict for text it did not see.
type Classifier interface {
	Check(ctx context.Context, t Text) (Verdict, error)
}
