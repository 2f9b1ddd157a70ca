package module

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"text/template"
)

// outputRule is the seed's "CRITICAL OUTPUT RULE" system context, verbatim; every module prompt
// starts with it.
//
//go:embed prompts/output-rule.md
var outputRule string

//go:embed prompts/module.md.tmpl
var moduleTemplate string

var promptTemplate = template.Must(template.New("module").Parse(moduleTemplate))

// compactSchema is the response schema as the prompt shows it: compact, to spend fewer tokens.
var compactSchema = sync.OnceValue(func() string {
	var b bytes.Buffer
	if err := json.Compact(&b, responseSchemaJSON()); err != nil {
		panic(err) // the embedded schema is checked by tests
	}
	return b.String()
})

type promptTopic struct {
	ID, Name string
	Covered  bool
}

type promptSection struct {
	Title  string
	Topics []promptTopic
}

// systemPrompt returns the turn's one system message: the output rule, the schema, the module
// outline and instructions, and the session facts the turn's progress implies.
func (t *turn) systemPrompt() string {
	locale := t.sess.Language()
	language := "English"
	if locale == "es" {
		language = "Spanish (español)"
	}
	data := struct {
		Schema, Title, Description, Language string
		Sections                             []promptSection
	}{Schema: compactSchema(), Title: t.mod.Title, Description: t.mod.Description, Language: language}
	for _, s := range t.mod.Sections {
		ps := promptSection{Title: s.Title}
		for _, tp := range s.Topics {
			ps.Topics = append(ps.Topics, promptTopic{ID: tp.ID, Name: tp.Name.In(locale), Covered: t.learner.covered[t.mod.byID[tp.ID]]})
		}
		data.Sections = append(data.Sections, ps)
	}

	var b strings.Builder
	b.WriteString(strings.TrimRight(outputRule, "\n"))
	b.WriteString("\n\n")
	if err := promptTemplate.Execute(&b, data); err != nil {
		panic(err) // the template only reads fields that exist; tests execute it
	}

	remaining := t.learner.remaining()
	items := make([]string, len(remaining))
	for i, tp := range remaining {
		items[i] = tp.ID + "=" + tp.Name.In(locale)
	}
	pending := t.pending
	if pending == "" {
		pending = "none"
	}
	b.WriteString("\n## Session facts\n")
	facts(&b,
		"contract", Name,
		"locale", locale,
		"module", t.mod.ID,
		"percentage", strconv.Itoa(t.learner.percentage()),
		"covered_topics", strings.Join(t.learner.ids(), ","),
		"remaining_topics", strings.Join(items, "; "),
		"milestones_reached", strings.Join(t.st.Milestones, ","),
		"pending_milestone", pending,
	)
	return b.String()
}

// facts writes key/value pairs as "key: value" lines, each value on one line.
func facts(b *strings.Builder, kv ...string) {
	oneLine := strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")
	for i := 0; i+1 < len(kv); i += 2 {
		b.WriteString(kv[i] + ": " + oneLine.Replace(kv[i+1]) + "\n")
	}
}
