package app_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/schema"
)

// seedOutputRule is the "System Context Instructions" block of the structured-response seed, word
// for word: every module prompt must start with it.
const seedOutputRule = `## CRITICAL OUTPUT RULE

You MUST ALWAYS return a SINGLE valid JSON object that strictly follows the RESPONSE_SCHEMA.
- No plain text outside the JSON
- No markdown code blocks wrapping the JSON
- No explanations outside the JSON structure
- Every response must be parseable JSON

## INTERACTION MODEL

- Users may always enter free text
- Forms are OPTIONAL guidance tools, not mandatory gates
- Never block user progress behind a form
- Always allow topic changes and free exploration

## STRUCTURE RULES

- Educational explanations go into content.text_blocks
- Forms go ONLY into content.forms (always optional)
- Guidance on what to do next goes into content.next_step
- Progress updates go into meta.progress

## FORM RULES

- Forms must be optional unless explicitly marked required
- Forms must be fully machine-parseable
- Never assume the user will fill out a form
- Provide text_blocks as alternative to forms

## PROGRESS TRACKING

- Detect topic coverage from free text OR form responses
- Update covered_topics and percentage accordingly
- Celebrate milestones in text_blocks with emotion: "celebratory"
- Track newly_covered topics for each response

## TONE

- Empathetic, calm, non-judgmental
- Simple, clear language
- Support user autonomy in navigation

## FAILURE CONDITIONS (NEVER DO)

- Do not output raw text without JSON wrapper
- Do not ask the user to "switch modes"
- Do not depend on forms for continuation
- Do not break the schema structure`

// moduleFile is the shipped module the tests teach.
const moduleFile = "../module/modules/anxiety-basics.json"

// textBlock is one content.text_blocks item.
type textBlock struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// moduleResult is the part of a module result the tests read.
type moduleResult struct {
	Content struct {
		TextBlocks []textBlock       `json:"text_blocks"`
		Forms      []json.RawMessage `json:"forms"`
		NextStep   map[string]any    `json:"next_step"`
	} `json:"content"`
	Meta struct {
		ResponseType string          `json:"response_type"`
		Progress     json.RawMessage `json:"progress"`
		ModuleState  map[string]any  `json:"module_state"`
		Emotion      string          `json:"emotion"`
	} `json:"meta"`
}

func decodeModuleResult(t *testing.T, l apptest.Line) moduleResult {
	t.Helper()
	var r moduleResult
	if l.Type != "result" {
		t.Fatalf("last line = %s, want a result", l.Raw)
	}
	if err := json.Unmarshal(l.Result, &r); err != nil {
		t.Fatalf("result %s: %v", l.Result, err)
	}
	return r
}

// moduleState is a module session's state.
type moduleState struct {
	Module        string          `json:"module"`
	CoveredTopics []string        `json:"coveredTopics"`
	Percentage    int             `json:"percentage"`
	Milestones    []string        `json:"milestones"`
	Forms         json.RawMessage `json:"forms"`
}

func decodeModuleState(t *testing.T, s apptest.Session) moduleState {
	t.Helper()
	var st moduleState
	if err := json.Unmarshal(s.State, &st); err != nil {
		t.Fatalf("module state %s: %v", s.State, err)
	}
	return st
}

// block is a text block with its members in the given order.
func block(kv ...any) json.RawMessage { return raw(apptest.Obj(kv...)) }

// structured builds a structured response: content (text_blocks, then extra content members)
// and meta.
func structured(blocks []json.RawMessage, meta string, extra ...any) string {
	content := apptest.Obj(append([]any{"text_blocks", blocks}, extra...)...)
	return apptest.Obj("content", raw(content), "meta", raw(meta))
}

// reporting is a meta object whose progress reports topics.
func reporting(newly ...string) string {
	if newly == nil {
		newly = []string{}
	}
	return apptest.Obj("response_type", "educational", "progress", raw(apptest.Obj("percentage", 90, "covered_topics", newly, "newly_covered", newly, "remaining_topics", 1)))
}

// moduleReply streams out in 5-byte pieces of message content.
func moduleReply(out string) fakellm.Reply { return fakellm.Reply{Content: out, Chunks: chop(out, 5)} }

// simpleResponse is a valid structured response with one paragraph.
var simpleResponse = structured([]json.RawMessage{block("type", "paragraph", "content", "Let's keep going.")}, reporting())

// validResult fails unless result follows api/schemas/structured-response.json.
func validResult(t *testing.T, result []byte) {
	t.Helper()
	doc, err := schema.Decode(result)
	if err == nil {
		err = schema.Load("structured-response.json").Validate(doc)
	}
	if err != nil {
		t.Errorf("result %s does not follow the response schema: %v", result, err)
	}
}

// checkBlockDeltas fails unless every line before the result (and after the last reset) is a
// delta placed in a block, the blocks come in order, and each block's deltas carry its type and
// concatenate to its content.
func checkBlockDeltas(t *testing.T, tr apptest.TurnResponse, want []textBlock) {
	t.Helper()
	tr.CheckEnding(t)
	got := make([]textBlock, len(want))
	last := 0
	lines := tr.Lines[:len(tr.Lines)-1]
	for i, l := range lines {
		if l.Type == "reset" {
			lines = lines[i+1:] // the client discards what came before
		}
	}
	for _, l := range lines {
		if l.Type != "delta" || l.Block == nil || *l.Block < 0 || *l.Block >= len(want) {
			t.Fatalf("line %s, want a delta of one of the %d blocks", l.Raw, len(want))
		}
		i := *l.Block
		if i < last {
			t.Errorf("delta of block %d after one of block %d", i, last)
		}
		last = i
		if l.BlockType != want[i].Type {
			t.Errorf("delta %s: blockType %q, want %q", l.Raw, l.BlockType, want[i].Type)
		}
		got[i].Type = want[i].Type
		got[i].Content += l.Text
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("blocks from the deltas = %+v\nwant %+v", got, want)
	}
}

func TestModuleCatalog(t *testing.T) {
	file, err := os.ReadFile(moduleFile)
	if err != nil {
		t.Fatal(err)
	}
	var def struct {
		Sections []struct {
			Topics []any `json:"topics"`
		} `json:"sections"`
	}
	if err := json.Unmarshal(file, &def); err != nil {
		t.Fatal(err)
	}
	topics := 0
	for _, s := range def.Sections {
		topics += len(s.Topics)
	}
	g := apptest.Start(t, nil)

	t.Run("list", func(t *testing.T) {
		type summary struct {
			ID, Title        string
			Sections, Topics int
		}
		var list []summary
		if code := g.Call("GET", "/v1/modules", nil, &list); code != http.StatusOK {
			t.Fatalf("status %d, want 200", code)
		}
		want := summary{"anxiety-basics", "Anxiety Basics", len(def.Sections), topics}
		if !slices.Contains(list, want) {
			t.Errorf("GET /v1/modules = %+v, want it to list %+v", list, want)
		}
	})
	t.Run("definition", func(t *testing.T) {
		var got json.RawMessage
		if code := g.Call("GET", "/v1/modules/anxiety-basics", nil, &got); code != http.StatusOK {
			t.Fatalf("status %d, want 200", code)
		}
		if !sameJSON(got, file) {
			t.Errorf("GET /v1/modules/anxiety-basics differs from %s:\n%s", moduleFile, got)
		}
	})
	notFound := []struct {
		name   string
		method string
		path   string
		body   any
	}{
		{"unknown module", "GET", "/v1/modules/no-such-module", nil},
		{"session of an unknown module", "POST", "/v1/sessions", map[string]string{"contract": "module", "module": "no-such-module"}},
		{"session without a module", "POST", "/v1/sessions", map[string]string{"contract": "module"}},
	}
	for _, tt := range notFound {
		t.Run(tt.name, func(t *testing.T) {
			var body struct{ Error string }
			if code := g.Call(tt.method, tt.path, tt.body, &body); code != http.StatusNotFound || body.Error != "module_not_found" {
				t.Errorf("%s %s: status %d error %q, want 404 module_not_found", tt.method, tt.path, code, body.Error)
			}
		})
	}
}

// TestModuleRequest checks the upstream request of a module turn: the seed's output rule first,
// structured output asked for, and the module session facts last.
func TestModuleRequest(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	g.LLM.Enqueue(moduleReply(simpleResponse))
	if tr := g.Turn(s.ID, apptest.Msg("Hello")); tr.Last().Type != "result" {
		t.Fatalf("turn: %s", tr.Body)
	}
	req := g.LLM.Requests()[0]
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Content != "Hello" {
		t.Fatalf("messages %+v, want the system prompt and the learner's message", req.Messages)
	}
	system := req.Messages[0].Content
	if !strings.HasPrefix(system, seedOutputRule) {
		t.Errorf("system prompt starts\n%s\nwant the seed's CRITICAL OUTPUT RULE block", system[:min(len(system), 300)])
	}
	if req.ResponseFormat != "json_schema" || len(req.Tools) != 0 {
		t.Errorf("response_format %q, tools %d; want json_schema and no tools", req.ResponseFormat, len(req.Tools))
	}
	facts := "\n## Session facts\ncontract: module\nlocale: en\nmodule: anxiety-basics\npercentage: 0\ncovered_topics: \nremaining_topics: introduction_to_anxiety=Introduction to Anxiety; "
	if !strings.Contains(system, facts) || !strings.HasSuffix(system, "\nmilestones_reached: \npending_milestone: none\n") {
		t.Errorf("system prompt ends\n%s\nwant the module session facts", tail(system, 600))
	}
}

// TestModuleBlockDeltas streams a structured response in 5-byte pieces: every delta names its
// block and the block's type, also for blocks whose content comes before their type.
func TestModuleBlockDeltas(t *testing.T) {
	want := []textBlock{
		{"heading", "Understanding the Three Levels"},
		{"paragraph", "Anxiety shows up in your **body** — and in your \"thoughts\".\nIt always passes & you can learn to ride it."},
		{"list", "1. **Physical**: heart racing\n2. **Mental**: worry\n3. **Behavioral**: avoidance"},
		{"tip", "Breathe out slower than you breathe in."},
		{"success", "You're doing well."},
	}
	out := structured([]json.RawMessage{
		block("type", want[0].Type, "content", want[0].Content, "level", 2),
		block("type", want[1].Type, "content", want[1].Content),
		block("content", want[2].Content, "type", want[2].Type), // content before type
		block("type", want[3].Type, "content", want[3].Content),
		block("content", want[4].Content, "type", want[4].Type), // content before type, last block
	}, apptest.Obj("response_type", "educational", "emotion", "informative"),
		"next_step", raw(apptest.Obj("prompt", "Which level do you notice most?", "suggestions", []string{"Physical", "Mental"})))

	g := apptest.Start(t, nil)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	g.LLM.Enqueue(moduleReply(out))
	tr := g.Turn(s.ID, apptest.Msg("Tell me about the levels."))
	if tr.Status != http.StatusOK {
		t.Fatalf("status %d body %s", tr.Status, tr.Body)
	}
	checkBlockDeltas(t, tr, want)
	perBlock := map[int]int{}
	for _, l := range tr.Lines {
		if l.Type == "delta" {
			perBlock[*l.Block]++
		}
	}
	for _, i := range []int{1, 3} {
		if perBlock[i] < 2 {
			t.Errorf("block %d came in %d delta lines, want it relayed piece by piece as it streams", i, perBlock[i])
		}
	}
	r := decodeModuleResult(t, tr.Last())
	if !reflect.DeepEqual(r.Content.TextBlocks, want) || r.Meta.ResponseType != "educational" || r.Content.NextStep["prompt"] != "Which level do you notice most?" {
		t.Errorf("result = %s, want the response's blocks and next_step", tr.Last().Result)
	}
	validResult(t, tr.Last().Result)
	if v := tr.Last().Session.Version; v != 2 {
		t.Errorf("stored version %d, want 2", v)
	}
}

// TestModuleServerSideProgress checks that meta.progress is the server's: topics detected in the
// learner's words (English and Spanish sessions), the model's bogus figures and topics ignored.
func TestModuleServerSideProgress(t *testing.T) {
	covered := `["physical_level","mental_level","genetics"]`
	tests := []struct {
		locale  string
		message string
	}{
		{"en", "My heart racing at night, so many what if thoughts. It runs in the family."},
		{"es", "Tengo el corazon acelerado por la noche y muchas preocupaciones. Viene de familia."},
	}
	bogus := apptest.Obj("response_type", "conversational", "progress", raw(apptest.Obj(
		"percentage", 88, "covered_topics", []string{"Quantum Anxiety", "time_travel"},
		"newly_covered", []string{"time_travel"}, "remaining_topics", 1, "milestone", "75%")))
	out := structured([]json.RawMessage{block("type", "paragraph", "content", "Thank you for sharing.")}, bogus)
	g := apptest.Start(t, nil)
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			s := g.Create("module", map[string]string{"module": "anxiety-basics", "locale": tt.locale})
			turns := []struct {
				message string
				want    string
			}{
				{tt.message, `{"percentage":12,"covered_topics":` + covered + `,"newly_covered":` + covered + `,"remaining_topics":22}`},
				{"Tell me more, please.", `{"percentage":12,"covered_topics":` + covered + `,"newly_covered":[],"remaining_topics":22}`},
			}
			for i, turn := range turns {
				calls := len(g.LLM.Requests())
				g.LLM.Enqueue(moduleReply(out))
				tr := g.Turn(s.ID, apptest.Msg(turn.message))
				r := decodeModuleResult(t, tr.Last())
				if string(r.Meta.Progress) != turn.want {
					t.Errorf("turn %d: meta.progress = %s\nwant %s", i+1, r.Meta.Progress, turn.want)
				}
				validResult(t, tr.Last().Result)
				st := decodeModuleState(t, tr.Last().Session)
				if st.Percentage != 12 || !reflect.DeepEqual(st.CoveredTopics, []string{"physical_level", "mental_level", "genetics"}) {
					t.Errorf("turn %d: state %s, want the three detected topics at 12%%", i+1, tr.Last().Session.State)
				}
				system := g.LLM.Requests()[calls].Messages[0].Content
				if !strings.Contains(system, "\nlocale: "+tt.locale+"\n") || !strings.Contains(system, "\npercentage: 12\ncovered_topics: physical_level,mental_level,genetics\n") {
					t.Errorf("turn %d: session facts do not show the detected topics:\n%s", i+1, tail(system, 900))
				}
				// Ignored topics are worth a warning, not an error: the turn went fine.
				var levels []any
				var notice string
				for _, l := range logLines(t, g, tr.Header.Get("X-Request-Id")) {
					levels = append(levels, l["level"])
					if n, ok := l["notice"].(string); ok {
						notice = n
					}
				}
				for _, lv := range levels {
					if lv == "error" {
						t.Errorf("turn %d: an error-level log line for a turn whose bogus topics were ignored", i+1)
					}
				}
				if !strings.Contains(notice, `"Quantum Anxiety"`) {
					t.Errorf("turn %d: warning notice %q, want the ignored topics named", i+1, notice)
				}
			}
		})
	}
}

// TestModuleMilestones reaches 25% once through topics the model reports and the learner's own
// words, then 50%, and checks every milestone is announced on exactly one turn.
func TestModuleMilestones(t *testing.T) {
	steps := []struct {
		name          string
		message       string
		reported      []string
		wantPct       int
		wantNewly     []string
		wantMilestone string
		wantPending   string // the session facts' pending_milestone for the turn
	}{
		{"four topics reported", "Hello", []string{"introduction_to_anxiety", "normal_fear_vs_anxiety", "when_anxiety_is_a_problem", "three_levels_overview"},
			16, []string{"introduction_to_anxiety", "normal_fear_vs_anxiety", "when_anxiety_is_a_problem", "three_levels_overview"}, "", "none"},
		{"the learner's words cross 25%", "I notice sweating, worrying, and I avoid crowds.", nil,
			28, []string{"physical_level", "mental_level", "avoidance"}, "25%", "25%"},
		{"a topic named by its name", "Go on.", []string{"Fight-Flight Response"},
			32, []string{"fight_flight_response"}, "", "none"},
		{"crossing 50%", "Go on.", []string{"sympathetic_nervous_system", "parasympathetic_nervous_system", "adrenaline_and_cortisol", "genetics", "environment"},
			52, []string{"sympathetic_nervous_system", "parasympathetic_nervous_system", "adrenaline_and_cortisol", "genetics", "environment"}, "50%", "none"},
		{"topics already covered", "Go on.", []string{"genetics", "physical_level"},
			52, []string{}, "", "none"},
	}
	g := apptest.Start(t, nil)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	var reached []string
	for _, step := range steps {
		ok := t.Run(step.name, func(t *testing.T) {
			calls := len(g.LLM.Requests())
			g.LLM.Enqueue(moduleReply(structured([]json.RawMessage{block("type", "paragraph", "content", "Good.")}, reporting(step.reported...))))
			tr := g.Turn(s.ID, apptest.Msg(step.message))
			r := decodeModuleResult(t, tr.Last())
			var p struct {
				Percentage   int      `json:"percentage"`
				NewlyCovered []string `json:"newly_covered"`
				Milestone    *string  `json:"milestone"`
			}
			if err := json.Unmarshal(r.Meta.Progress, &p); err != nil {
				t.Fatal(err)
			}
			milestone := ""
			if p.Milestone != nil {
				milestone = *p.Milestone
			}
			if p.Percentage != step.wantPct || !reflect.DeepEqual(p.NewlyCovered, step.wantNewly) || milestone != step.wantMilestone {
				t.Errorf("progress = %s\nwant percentage %d, newly_covered %v, milestone %q", r.Meta.Progress, step.wantPct, step.wantNewly, step.wantMilestone)
			}
			if step.wantMilestone != "" {
				reached = append(reached, step.wantMilestone)
			}
			st := decodeModuleState(t, tr.Last().Session)
			if !reflect.DeepEqual(st.Milestones, append([]string{}, reached...)) {
				t.Errorf("state milestones = %v, want %v", st.Milestones, reached)
			}
			system := g.LLM.Requests()[calls].Messages[0].Content
			if !strings.HasSuffix(system, "\npending_milestone: "+step.wantPending+"\n") {
				t.Errorf("session facts end\n%s\nwant pending_milestone: %s", tail(system, 120), step.wantPending)
			}
		})
		if !ok {
			t.FailNow()
		}
	}
}

// formOffer is a response offering the seed's reflection form, with more field types.
var formOffer = structured([]json.RawMessage{block("type", "paragraph", "content", "Which level resonates with you?")},
	apptest.Obj("response_type", "assessment"),
	"forms", raw(`[{"id":"anxiety_levels_check","title":"Quick Reflection","optional":true,"fields":[`+
		`{"id":"primary_level","type":"radio","label":"Which level of anxiety do you notice most in yourself?","options":[{"value":"physical","label":"Physical (body sensations)"},{"value":"mental","label":"Mental (thoughts and worries)"}]},`+
		`{"id":"symptoms","type":"checkbox","label":"Symptoms I experience:","options":[{"value":"sweating","label":"Sweating"},{"value":"worry","label":"Excessive worry"}]},`+
		`{"id":"intensity","type":"number","label":"How intense is it (1-10)","min":1,"max":10},`+
		`{"id":"situation","type":"text","label":"Where does it happen?","required":true}]}]`))

func formTurn(id string, values string) map[string]any {
	return map[string]any{"form": map[string]any{"id": id, "values": raw(values)}}
}

func TestModuleForms(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	g.LLM.Enqueue(moduleReply(formOffer))
	first := g.Turn(s.ID, apptest.Msg("Hi"))
	if r := decodeModuleResult(t, first.Last()); len(r.Content.Forms) != 1 {
		t.Fatalf("result %s, want the form", first.Last().Result)
	}

	invalid := []struct {
		name      string
		body      any
		wantField string
	}{
		{"unknown form id", formTurn("other_form", `{"situation":"work"}`), "form.id"},
		{"unknown field", formTurn("anxiety_levels_check", `{"situation":"work","mood":"calm"}`), "form.values.mood"},
		{"radio value not offered", formTurn("anxiety_levels_check", `{"situation":"work","primary_level":"spiritual"}`), "form.values.primary_level"},
		{"checkbox value not offered", formTurn("anxiety_levels_check", `{"situation":"work","symptoms":["flying"]}`), "form.values.symptoms"},
		{"number out of range", formTurn("anxiety_levels_check", `{"situation":"work","intensity":11}`), "form.values.intensity"},
		{"number as a string", formTurn("anxiety_levels_check", `{"situation":"work","intensity":"7"}`), "form.values.intensity"},
		{"missing required field", formTurn("anxiety_levels_check", `{"primary_level":"physical"}`), "form.values.situation"},
		{"blank required field", formTurn("anxiety_levels_check", `{"situation":"  "}`), "form.values.situation"},
		{"form and message together", map[string]any{"message": "hi", "form": map[string]any{"id": "anxiety_levels_check", "values": map[string]string{"situation": "work"}}}, "form"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			before := g.Get(s.ID)
			calls := len(g.LLM.Requests())
			tr := g.Turn(s.ID, tt.body)
			var body struct{ Error, Field string }
			_ = json.Unmarshal([]byte(tr.Body), &body)
			if tr.Status != http.StatusUnprocessableEntity || body.Error != "invalid_input" || body.Field != tt.wantField {
				t.Errorf("status %d body %s, want 422 invalid_input on field %q", tr.Status, tr.Body, tt.wantField)
			}
			if n := len(g.LLM.Requests()) - calls; n != 0 {
				t.Errorf("model calls = %d, want none", n)
			}
			if after := g.Get(s.ID); after.Version != before.Version || !bytes.Equal(after.State, before.State) {
				t.Errorf("session changed: version %d→%d", before.Version, after.Version)
			}
		})
	}

	t.Run("valid submission", func(t *testing.T) {
		readable := "Form \"Quick Reflection\":\n" +
			"- Which level of anxiety do you notice most in yourself? Physical (body sensations)\n" +
			"- Symptoms I experience: Excessive worry\n" +
			"- How intense is it (1-10): 7\n" +
			"- Where does it happen? \"At work meetings\""
		calls := len(g.LLM.Requests())
		g.LLM.Enqueue(moduleReply(simpleResponse))
		tr := g.Turn(s.ID, formTurn("anxiety_levels_check", `{"primary_level":"physical","symptoms":["worry"],"intensity":7,"situation":"At work meetings"}`))
		if tr.Status != http.StatusOK {
			t.Fatalf("status %d body %s, want 200", tr.Status, tr.Body)
		}
		if got := lastUser(t, g.LLM.Requests()[calls]); got != readable {
			t.Errorf("user message sent upstream =\n%s\nwant\n%s", got, readable)
		}
		r := decodeModuleResult(t, tr.Last())
		covered := `["when_anxiety_is_a_problem","physical_level"]`
		if want := `{"percentage":8,"covered_topics":` + covered + `,"newly_covered":` + covered + `,"remaining_topics":23}`; string(r.Meta.Progress) != want {
			t.Errorf("progress = %s\nwant %s (topics from the chosen options)", r.Meta.Progress, want)
		}

		g.LLM.Enqueue(moduleReply(simpleResponse))
		if tr := g.Turn(s.ID, apptest.Msg("Thanks")); tr.Last().Type != "result" {
			t.Fatalf("next turn: %s", tr.Body)
		}
		msgs := g.LLM.Requests()[calls+1].Messages
		found := false
		for i, m := range msgs {
			if m.Role == "user" && m.Content == readable {
				found = i+1 < len(msgs) && msgs[i+1].Role == "assistant"
			}
		}
		if !found {
			t.Errorf("the next request's history %+v lacks the readable form message followed by the answer", msgs)
		}
	})
}

// TestModuleMarkdownFallback sends plain markdown: it streams as block 0 and becomes one
// paragraph, flagged as a fallback, after one model call.
func TestModuleMarkdownFallback(t *testing.T) {
	tests := []struct{ name, text string }{
		{"plain markdown", "Anxiety is a normal response — it *prepares* you for danger.\n\n- It passes\n- It's common"},
		{"markdown starting with a link", "[Box breathing](https://example.com/box) helps: breathe in for 4, hold for 4."},
		{"markdown starting with a bracketed number", "[1] Anxiety is common; most people feel it."},
	}
	g := apptest.Start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := g.Create("module", map[string]string{"module": "anxiety-basics"})
			calls := len(g.LLM.Requests())
			g.LLM.Enqueue(fakellm.Reply{Content: tt.text, Chunks: chop(tt.text, 5)})
			tr := g.Turn(s.ID, apptest.Msg("What is this?"))
			if tr.Status != http.StatusOK || tr.Last().Type != "result" {
				t.Fatalf("status %d lines %q, want a result", tr.Status, tr.Kinds())
			}
			checkBlockDeltas(t, tr, []textBlock{{"paragraph", tt.text}})
			want := `{"content":{"text_blocks":[{"type":"paragraph","content":` + jsonText(tt.text) + `}]},"meta":{"response_type":"conversational","progress":{"percentage":0,"covered_topics":[],"newly_covered":[],"remaining_topics":25}}}`
			if res := tr.Last(); string(res.Result) != want || !res.Fallback {
				t.Errorf("last line = %s\nwant result %s with \"fallback\":true", res.Raw, want)
			}
			validResult(t, tr.Last().Result)
			if n := len(g.LLM.Requests()) - calls; n != 1 {
				t.Errorf("model calls = %d, want 1", n)
			}
			if got := g.Get(s.ID); got.Version != 2 {
				t.Errorf("stored version %d, want 2", got.Version)
			}
			logged := false
			apptest.Eventually(t, "the fallback is logged", func() bool {
				for _, l := range logLines(t, g, tr.Header.Get("X-Request-Id")) {
					resp, _ := l["model_response"].(string)
					logged = logged || l["level"] == "error" && strings.Contains(resp, tt.text)
				}
				return logged
			})
		})
	}
}

// TestModuleLegacyForm sends the legacy {"type":"form"} format: it is migrated to a valid
// structured response whose form is optional and answerable.
func TestModuleLegacyForm(t *testing.T) {
	fields := `[{"id":"mood","type":"radio","label":"How do you feel today?","options":[{"value":"calm","label":"Calm"},{"value":"tense","label":"Tense"}]}]`
	legacy := apptest.Obj("type", "form", "title", "Quick Check", "fields", raw(fields))
	g := apptest.Start(t, nil)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	g.LLM.Enqueue(moduleReply(legacy))
	tr := g.Turn(s.ID, apptest.Msg("Check in with me."))
	tr.CheckEnding(t)
	res := tr.Last()
	want := `{"content":{"text_blocks":[{"type":"paragraph","content":"Quick Check"}],` +
		`"forms":[{"id":"quick_check","title":"Quick Check","fields":` + fields + `,"optional":true}]},` +
		`"meta":{"response_type":"assessment","progress":{"percentage":0,"covered_topics":[],"newly_covered":[],"remaining_topics":25}}}`
	if res.Type != "result" || !sameJSON(res.Result, []byte(want)) || res.Fallback {
		t.Errorf("last line = %s\nwant the migrated result %s", res.Raw, want)
	}
	validResult(t, res.Result)

	g.LLM.Enqueue(moduleReply(simpleResponse))
	if tr := g.Turn(s.ID, formTurn("quick_check", `{"mood":"tense"}`)); tr.Status != http.StatusOK || tr.Last().Type != "result" {
		t.Errorf("answering the migrated form: status %d body %s", tr.Status, tr.Body)
	}
}

// TestModuleSchemaInvalidTwice sends schema-invalid JSON twice: each streamed attempt is reset,
// and the turn ends with the markdown fallback, stored with the progress as it was, never with
// the correction written for the model.
func TestModuleSchemaInvalidTwice(t *testing.T) {
	bad := structured([]json.RawMessage{block("type", "banner", "content", "Hello there, friend.")}, apptest.Obj("response_type", "educational"))
	g := apptest.Start(t, nil)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	g.LLM.Enqueue(moduleReply(bad), moduleReply(bad))
	tr := g.Turn(s.ID, apptest.Msg("Hi"))
	tr.CheckEnding(t)
	resets := strings.Count(" "+tr.Kinds()+" ", " reset ")
	res := tr.Last()
	if tr.Status != http.StatusOK || resets != 2 || res.Type != "result" || !res.Fallback || tr.Lines[0].Type != "delta" {
		t.Errorf("status %d lines %q, want deltas, a reset, deltas, a reset and the fallback result", tr.Status, tr.Kinds())
	}
	if strings.Contains(tr.Body, "could not be used") || strings.Contains(tr.Body, "must be one of") {
		t.Errorf("body %s carries the correction meant for the model", tr.Body)
	}
	validResult(t, res.Result)
	reqs := g.LLM.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(reqs))
	}
	if c := lastUser(t, reqs[1]); !strings.Contains(c, "could not be used") {
		t.Errorf("retry's last message = %q, want the correction", c)
	}
	if got := g.Get(s.ID); got.Version != 2 {
		t.Errorf("stored version %d, want 2 (the fallback is stored)", got.Version)
	}
}

// TestModuleFixtureReplay replays the recorded structured response of a first module turn.
func TestModuleFixtureReplay(t *testing.T) {
	g := fixtureGateway(t)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	g.LLM.Enqueue(fakellm.Reply{Fixture: "module-intro"})
	tr := g.Turn(s.ID, apptest.Msg("Hi, I'd like to start."))
	want := []textBlock{
		{"heading", "Understanding Anxiety"},
		{"paragraph", "Welcome! In this module we'll explore what anxiety is, how it shows up in your **body**, your **thoughts** and your **behaviour**, and why it can linger even when there's no real danger."},
		{"paragraph", "There's no rush — ask questions at any point, or tell me what brought you here. You can always type freely."},
	}
	checkBlockDeltas(t, tr, want)
	r := decodeModuleResult(t, tr.Last())
	if !reflect.DeepEqual(r.Content.TextBlocks, want) || r.Meta.ResponseType != "educational" || r.Meta.Emotion != "encouraging" ||
		r.Meta.ModuleState["current_section"] != "Welcome" || r.Content.NextStep["can_skip"] != true {
		t.Errorf("result = %s, want the recorded response", tr.Last().Result)
	}
	// The recording claims 12 topics remain; the module has 25 and none is covered.
	if want := `{"percentage":0,"covered_topics":[],"newly_covered":[],"remaining_topics":25}`; string(r.Meta.Progress) != want {
		t.Errorf("progress = %s, want the server's %s", r.Meta.Progress, want)
	}
	validResult(t, tr.Last().Result)
}

// TestModuleToleratedOutput checks structured responses that are odd but usable: each streams
// its blocks and yields a valid result without a fallback or a retry.
func TestModuleToleratedOutput(t *testing.T) {
	blocks := []textBlock{{"heading", "Breathing"}, {"paragraph", "Breathe out slowly."}}
	plain := structured([]json.RawMessage{block("type", "heading", "content", "Breathing", "level", 2), block("type", "paragraph", "content", "Breathe out slowly.")},
		apptest.Obj("response_type", "educational"))
	tests := []struct {
		name string
		out  string
	}{
		{"fenced JSON", "```json\n" + plain + "\n```"},
		{"strict-mode nulls", structured([]json.RawMessage{
			block("type", "heading", "content", "Breathing", "level", 2),
			block("type", "paragraph", "content", "Breathe out slowly.", "level", nil),
		}, apptest.Obj("response_type", "educational", "progress", nil, "module_state", nil, "emotion", nil),
			"forms", nil, "media", nil, "next_step", nil)},
		{"malformed progress", structured([]json.RawMessage{block("type", "heading", "content", "Breathing", "level", 2), block("type", "paragraph", "content", "Breathe out slowly.")},
			apptest.Obj("response_type", "educational", "progress", raw(`{"percentage":"lots","covered_topics":"breathing","milestone":"10%"}`)))},
	}
	g := apptest.Start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := g.Create("module", map[string]string{"module": "anxiety-basics"})
			calls := len(g.LLM.Requests())
			g.LLM.Enqueue(moduleReply(tt.out))
			tr := g.Turn(s.ID, apptest.Msg("How do I calm down?"))
			checkBlockDeltas(t, tr, blocks)
			res := tr.Last()
			r := decodeModuleResult(t, res)
			if !reflect.DeepEqual(r.Content.TextBlocks, blocks) || res.Fallback || strings.Contains(string(res.Result), "null") {
				t.Errorf("last line = %s, want the blocks, no nulls and no fallback", res.Raw)
			}
			validResult(t, res.Result)
			if n := len(g.LLM.Requests()) - calls; n != 1 {
				t.Errorf("model calls = %d, want 1", n)
			}
			// "calm down" in the learner's words covers the parasympathetic topic.
			if want := `{"percentage":4,"covered_topics":["parasympathetic_nervous_system"],"newly_covered":["parasympathetic_nervous_system"],"remaining_topics":24}`; string(r.Meta.Progress) != want {
				t.Errorf("progress = %s, want %s", r.Meta.Progress, want)
			}
		})
	}
}

// TestModuleRecoversFromACutStream cuts the stream in the middle of a block: the turn resets and
// the second call's blocks stream again from the start.
func TestModuleRecoversFromACutStream(t *testing.T) {
	want := []textBlock{{"heading", "Grounding"}, {"paragraph", "Name five things you can see, four you can touch, three you can hear."}}
	out := structured([]json.RawMessage{block("type", "heading", "content", want[0].Content, "level", 2), block("type", "paragraph", "content", want[1].Content)},
		apptest.Obj("response_type", "educational"))
	cut := moduleReply(out)
	cut.Fault = fakellm.Fault{Cut: true, CutAfter: 30}
	g := apptest.Start(t, nil)
	s := g.Create("module", map[string]string{"module": "anxiety-basics"})
	g.LLM.Enqueue(cut, moduleReply(out))
	tr := g.Turn(s.ID, apptest.Msg("Help me ground myself."))
	if k := tr.Kinds(); !strings.HasPrefix(k, "delta") || strings.Count(k, "reset") != 1 {
		t.Errorf("lines %q, want deltas, one reset, deltas and the result", k)
	}
	checkBlockDeltas(t, tr, want)
	if r := decodeModuleResult(t, tr.Last()); !reflect.DeepEqual(r.Content.TextBlocks, want) || tr.Last().Session.Version != 2 {
		t.Errorf("last line = %s, want the blocks stored as version 2", tr.Last().Raw)
	}
}

// TestModuleEmptyAnswer sends answers that show no text (no text block, or only blank ones)
// while their progress claims four topics: the turn gets the corrective retry, with the failed
// answer shown to the model before the correction, and when the retry shows nothing either, the
// markdown fallback; the learner's progress does not move on a turn that showed nothing.
func TestModuleEmptyAnswer(t *testing.T) {
	claims := reporting("physical_level", "mental_level", "genetics", "avoidance")
	empty := structured([]json.RawMessage{}, claims)
	blank := structured([]json.RawMessage{block("type", "paragraph", "content", " \n ")}, claims)
	tests := []struct {
		name     string
		replies  []fakellm.Reply
		fallback bool
	}{
		{name: "empty twice: fallback", replies: []fakellm.Reply{moduleReply(empty), moduleReply(empty)}, fallback: true},
		{name: "blank twice: fallback", replies: []fakellm.Reply{moduleReply(blank), moduleReply(blank)}, fallback: true},
		{name: "empty, then an answer", replies: []fakellm.Reply{moduleReply(empty), moduleReply(simpleResponse)}},
	}
	g := apptest.Start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := g.Create("module", map[string]string{"module": "anxiety-basics"})
			// A first turn covers one topic through the learner's own words.
			g.LLM.Enqueue(moduleReply(simpleResponse))
			before := decodeModuleState(t, g.Turn(s.ID, apptest.Msg("My heart racing at night")).Last().Session)
			if before.Percentage == 0 {
				t.Fatalf("state after the first turn %+v, want some progress", before)
			}
			first := len(g.LLM.Requests())
			g.LLM.Enqueue(tt.replies...)
			// The learner's message names topics too; a turn that showed nothing covers none.
			tr := g.Turn(s.ID, apptest.Msg("so many what if thoughts, it runs in the family"))
			tr.CheckEnding(t)
			reqs := g.LLM.Requests()[first:]
			if len(reqs) != 2 {
				t.Fatalf("model calls = %d, want 2 (one corrective retry)", len(reqs))
			}
			msgs := reqs[1].Messages
			n := len(msgs)
			if n < 2 || msgs[n-2].Role != "assistant" || !strings.Contains(msgs[n-2].Content, `"text_blocks":[`) {
				t.Errorf("retry's message before the correction = %+v, want the failed answer as the assistant's", msgs[max(n-2, 0)])
			}
			if c := lastUser(t, reqs[1]); !strings.Contains(c, "could not be used") || !strings.Contains(c, "shows no text") {
				t.Errorf("correction = %q, want it to say the reply showed no text", c)
			}
			res := tr.Last()
			r := decodeModuleResult(t, res)
			validResult(t, res.Result)
			after := decodeModuleState(t, res.Session)
			if !tt.fallback {
				if res.Fallback || len(r.Content.TextBlocks) != 1 || r.Content.TextBlocks[0].Content != "Let's keep going." {
					t.Errorf("last line = %s, want the retry's answer", res.Raw)
				}
				return
			}
			if !res.Fallback || len(r.Content.TextBlocks) != 1 || r.Content.TextBlocks[0].Type != "paragraph" ||
				strings.TrimSpace(r.Content.TextBlocks[0].Content) == "" || r.Meta.ResponseType != "conversational" {
				t.Errorf("last line = %s, want the markdown fallback", res.Raw)
			}
			// Blank blocks stream their white space as deltas (the client shows nothing), and
			// get the reset line every streamed attempt that is replaced gets.
			if got, want := strings.Contains(tr.Kinds(), "reset"), strings.Contains(tt.name, "blank"); got != want {
				t.Errorf("lines %q: reset line %v, want %v", tr.Kinds(), got, want)
			}
			want := apptest.Obj("percentage", before.Percentage, "covered_topics", before.CoveredTopics,
				"newly_covered", []string{}, "remaining_topics", 25-len(before.CoveredTopics))
			if !sameJSON(r.Meta.Progress, []byte(want)) {
				t.Errorf("meta.progress = %s, want it unchanged: %s", r.Meta.Progress, want)
			}
			if after.Percentage != before.Percentage || !reflect.DeepEqual(after.CoveredTopics, before.CoveredTopics) ||
				!reflect.DeepEqual(after.Milestones, before.Milestones) {
				t.Errorf("stored state %+v, want the progress of before the turn %+v", after, before)
			}
			if got := g.Get(s.ID); got.Version != 3 {
				t.Errorf("stored version %d, want 3 (the fallback is stored)", got.Version)
			}
		})
	}
}
