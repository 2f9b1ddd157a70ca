package toulmin

import (
	"embed"
	"strconv"
	"strings"
	"text/template"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/coach"
)

// HistoryWindow is how many of the session's latest messages a turn shows the model.
const HistoryWindow = 20

//go:embed prompts/*.tmpl
var promptFiles embed.FS

// prompts holds system.tmpl and the cue paragraphs it includes.
var prompts = template.Must(template.New("").ParseFS(promptFiles, "prompts/*.tmpl"))

// outputSchema is CoachAIResult's schema as the model request asks for it, and schemaText
// as the system prompt quotes it. Both are read once; every turn only refers to them.
var (
	outputSchema = &coach.OutputSchema{Name: "coach_ai_result", Schema: api.Schema("coach-ai-result.json")}
	schemaText   = strings.TrimSpace(string(outputSchema.Schema))
)

// promptData is what the system prompt template is rendered from.
type promptData struct {
	Step       string
	StepNumber int
	NextStep   string
	Draft      string
	Steps      []stepView
	Pending    *Proposal
	Language   string
	Schema     string

	FirstTurn    bool
	Rewrite      bool
	Confirmation bool

	Facts []fact
}

type stepView struct {
	Name    string
	Draft   string
	Current bool
}

type fact struct{ Key, Value string }

// languages names the session locales for the instruction to answer in them.
var languages = map[string]string{"en": "English", "es": "Spanish (español)"}

// cues is what a turn learned from the learner's message.
type cues struct {
	firstTurn, rewrite, confirmation bool
}

// systemPrompt renders the system prompt of a turn at st. It ends with the "## Session facts"
// block the design note fixes for toulmin, one line per fact.
func systemPrompt(locale string, st *State, c cues) (string, error) {
	lang, ok := languages[locale]
	if !ok {
		locale, lang = "en", languages["en"]
	}
	d := promptData{
		Step:         st.Step,
		NextStep:     Next(st.Step),
		Draft:        oneLine(st.Draft[st.Step]),
		Pending:      st.PendingProposal,
		Language:     lang,
		Schema:       schemaText,
		FirstTurn:    c.firstTurn,
		Rewrite:      c.rewrite,
		Confirmation: c.confirmation,
	}
	if p := d.Pending; p != nil {
		d.Pending = &Proposal{Field: p.Field, Value: oneLine(p.Value), Rationale: oneLine(p.Rationale)}
	}
	for i, s := range steps {
		if s == st.Step {
			d.StepNumber = i + 1
		}
		d.Steps = append(d.Steps, stepView{Name: s, Draft: oneLine(st.Draft[s]), Current: s == st.Step})
	}
	d.Facts = []fact{
		{"contract", Name},
		{"locale", locale},
		{"step", st.Step},
		{"first_turn_for_step", strconv.FormatBool(c.firstTurn)},
		{"draft_for_step", d.Draft},
		{"rewrite_request", strconv.FormatBool(c.rewrite)},
		{"confirmation", strconv.FormatBool(c.confirmation)},
		{"is_complete", strconv.FormatBool(st.IsComplete)},
	}
	var b strings.Builder
	if err := prompts.ExecuteTemplate(&b, "system.tmpl", d); err != nil {
		return "", err
	}
	// The cue paragraphs are separate files; whether or not they end with a newline, the
	// prompt has one blank line between sections and none at its end.
	out := b.String()
	for strings.Contains(out, "\n\n\n") {
		out = strings.ReplaceAll(out, "\n\n\n", "\n\n")
	}
	return strings.TrimRight(out, "\n"), nil
}

var lineBreaks = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\u2028", " ", "\u2029", " ")

// factsHeading starts the block of session facts.
const factsHeading = "## Session facts"

// oneLine returns learner text as the prompt quotes it: trimmed, line breaks turned into
// spaces, and without the facts heading, so that a draft can neither break the prompt's layout
// nor start a forged block of session facts (readers look for the heading's last occurrence).
func oneLine(s string) string {
	s = strings.TrimSpace(lineBreaks.Replace(s))
	for strings.Contains(s, factsHeading) {
		s = strings.ReplaceAll(s, factsHeading, factsHeading[1:])
	}
	return s
}

// window returns the latest messages of history the model should see: at most HistoryWindow
// user and assistant messages, starting at a user message so that no answer appears without
// its question.
func window(history []coach.Message) []coach.Message {
	var out []coach.Message
	for _, m := range history {
		if (m.Role == coach.RoleUser || m.Role == coach.RoleAssistant) && m.Content != "" {
			out = append(out, coach.Message{Role: m.Role, Content: m.Content})
		}
	}
	if len(out) > HistoryWindow {
		out = out[len(out)-HistoryWindow:]
	}
	for len(out) > 0 && out[0].Role != coach.RoleUser {
		out = out[1:]
	}
	return out
}
