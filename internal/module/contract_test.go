package module

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/coach"
)

func TestNewState(t *testing.T) {
	c := newContract(t)
	st, err := c.NewState(coach.NewSession{Locale: "en", Module: "quarters"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"module":"quarters","coveredTopics":[],"percentage":0,"milestones":[],"forms":{}}`; string(st) != want {
		t.Errorf("state = %s, want %s", st, want)
	}
	for _, id := range []string{"", "nope", "Quarters"} {
		_, err := c.NewState(coach.NewSession{Module: id})
		if e := asError(t, err); e.Kind != coach.KindNotFound || e.Code != coach.CodeModuleNotFound {
			t.Errorf("NewState(%q) = %v, want a module_not_found error", id, err)
		}
	}
	if c.Name() != "module" {
		t.Errorf("Name = %q", c.Name())
	}
}

// offerForms stores a turn whose response offers the seed's reflection form and a check-in form
// with every other field type.
func offerForms(t *testing.T, c *Contract, s *coach.Session) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(examples(t)["educational-with-form.json"], &doc); err != nil {
		t.Fatal(err)
	}
	var checkin any
	if err := json.Unmarshal([]byte(`{"id":"checkin","title":"Check-in","fields":[
		{"id":"intensity","type":"number","label":"How intense is it (0-10)?","min":0,"max":10,"required":true},
		{"id":"notes","type":"textarea","label":"Anything else"},
		{"id":"feelings","type":"checkbox","label":"I feel:","options":[{"value":"tense","label":"Tense"},{"value":"calm","label":"Calm"}]},
		{"id":"when","type":"select","label":"When does it happen?","required":true,
		 "options":[{"value":"morning","label":"In the morning"},{"value":"night","label":"At night"}]},
		{"id":"name","type":"text","label":"Name"}]}`), &checkin); err != nil {
		t.Fatal(err)
	}
	delete(doc["meta"].(map[string]any), "progress") // cover nothing, so answers show what they cover
	content := doc["content"].(map[string]any)
	content["forms"] = append(content["forms"].([]any), checkin)
	out, _ := json.Marshal(doc)
	r := runTurn(t, c, s, message("hello"), string(out))
	if r.err != nil {
		t.Fatalf("offering forms: %v", r.err)
	}
	commit(s, r.out)
	if st := decodeState(t, s.State); len(st.Forms) != 2 {
		t.Fatalf("state forms = %v, want anxiety_levels_check and checkin", st.Forms)
	}
}

func formInput(id, values string) coach.TurnInput {
	var v map[string]json.RawMessage
	if err := json.Unmarshal([]byte(values), &v); err != nil {
		panic(err)
	}
	return coach.TurnInput{Form: &coach.FormAnswer{ID: id, Values: v}}
}

func TestBeginRejects(t *testing.T) {
	c := newContract(t)
	s := newSession(t, c, "anxiety-basics", "en")
	offerForms(t, c, s)
	msg, sel, blank := "hi", "b", "   "
	valid := `{"intensity":5,"when":"night"}`
	tests := []struct {
		name  string
		in    coach.TurnInput
		field string
	}{
		{"message and form", coach.TurnInput{Message: &msg, Form: formInput("checkin", valid).Form}, "form"},
		{"neither message nor form", coach.TurnInput{}, "message"},
		{"selected", coach.TurnInput{Message: &msg, Selected: &sel}, "selected"},
		{"step", coach.TurnInput{Message: &msg, Step: "claim"}, "step"},
		{"continue", coach.TurnInput{Continue: true}, "continue"},
		{"continue with a message", coach.TurnInput{Message: &msg, Continue: true}, "continue"},
		{"blank message", coach.TurnInput{Message: &blank}, "message"},
		{"unknown form id", formInput("nope", valid), "form.id"},
		{"form id of an older offer", formInput("self_assessment_symptoms", `{}`), "form.id"},
		{"unknown field", formInput("checkin", `{"intensity":5,"when":"night","colour":"red"}`), "form.values.colour"},
		{"radio value not an option", formInput("anxiety_levels_check", `{"primary_level":"spiritual"}`), "form.values.primary_level"},
		{"radio value not a string", formInput("anxiety_levels_check", `{"primary_level":1}`), "form.values.primary_level"},
		{"radio value an array", formInput("anxiety_levels_check", `{"primary_level":["physical"]}`), "form.values.primary_level"},
		{"select value not an option", formInput("checkin", `{"intensity":5,"when":"noon"}`), "form.values.when"},
		{"checkbox not an array", formInput("checkin", `{"intensity":5,"when":"night","feelings":"tense"}`), "form.values.feelings"},
		{"checkbox value not an option", formInput("checkin", `{"intensity":5,"when":"night","feelings":["tense","sad"]}`), "form.values.feelings"},
		{"checkbox value twice", formInput("checkin", `{"intensity":5,"when":"night","feelings":["tense","tense"]}`), "form.values.feelings"},
		{"number as a string", formInput("checkin", `{"intensity":"5","when":"night"}`), "form.values.intensity"},
		{"number below min", formInput("checkin", `{"intensity":-1,"when":"night"}`), "form.values.intensity"},
		{"number above max", formInput("checkin", `{"intensity":10.5,"when":"night"}`), "form.values.intensity"},
		{"number out of float range", formInput("checkin", `{"intensity":1e999,"when":"night"}`), "form.values.intensity"},
		{"text not a string", formInput("checkin", `{"intensity":5,"when":"night","name":42}`), "form.values.name"},
		{"textarea not a string", formInput("checkin", `{"intensity":5,"when":"night","notes":{"a":1}}`), "form.values.notes"},
		{"required number missing", formInput("checkin", `{"when":"night"}`), "form.values.intensity"},
		{"required number null", formInput("checkin", `{"intensity":null,"when":"night"}`), "form.values.intensity"},
		{"required select empty", formInput("checkin", `{"intensity":5,"when":""}`), "form.values.when"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(s.State)
			_, err := c.Begin(s, tt.in)
			if err == nil {
				t.Fatalf("Begin = nil error, want one naming %s", tt.field)
			}
			e := asError(t, err)
			if e.Kind != coach.KindUnprocessable || e.Code != coach.CodeInvalidInput || e.Field != tt.field {
				t.Errorf("error = kind %d code %s field %q (%s); want unprocessable invalid_input field %q", e.Kind, e.Code, e.Field, e.Message, tt.field)
			}
			if !bytes.Equal(s.State, before) {
				t.Error("Begin changed the session state")
			}
		})
	}
}

func TestBeginModuleGone(t *testing.T) {
	c := newContract(t)
	s := newSession(t, c, "quarters", "en")
	s.State = json.RawMessage(`{"module":"removed","coveredTopics":[],"percentage":0,"milestones":[],"forms":{}}`)
	_, err := c.Begin(s, message("hi"))
	if e := asError(t, err); e.Code != coach.CodeModuleNotFound {
		t.Errorf("Begin = %v, want module_not_found", err)
	}
}

func TestFormSubmission(t *testing.T) {
	c := newContract(t)
	tests := []struct {
		name   string
		in     coach.TurnInput
		want   string
		topics []string
	}{
		{
			name: "the seed's reflection form",
			in:   formInput("anxiety_levels_check", `{"primary_level":"physical"}`),
			want: "Form \"Quick Reflection\":\n- Which level of anxiety do you notice most in yourself? Physical (body sensations)",
			// "Physical (body sensations)" names the physical level.
			topics: []string{"physical_level"},
		},
		{
			name: "option values count too",
			in:   formInput("anxiety_levels_check", `{"primary_level":"all"}`),
			want: "Form \"Quick Reflection\":\n- Which level of anxiety do you notice most in yourself? All three equally",
			// "All three equally" is a keyword of the three-levels overview.
			topics: []string{"three_levels_overview"},
		},
		{
			name: "every field type, in form order",
			in:   formInput("checkin", `{"when":"night","feelings":["tense","calm"],"intensity":7,"notes":"I avoid parties.\nAlso stress at work","name":"  "}`),
			want: "Form \"Check-in\":\n- How intense is it (0-10)? 7\n- Anything else: \"I avoid parties.\\nAlso stress at work\"\n- I feel: Tense, Calm\n- When does it happen? At night",
			// Typed text is read too; the field label never is.
			topics: []string{"stress", "avoidance"},
		},
		{
			name:   "optional form without answers",
			in:     formInput("anxiety_levels_check", `{}`),
			want:   "Form \"Quick Reflection\": (submitted without answers)",
			topics: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, c, "anxiety-basics", "en")
			offerForms(t, c, s)
			before := decodeState(t, s.State).CoveredTopics
			r := runTurn(t, c, s, tt.in, response("Thanks for sharing."))
			if r.err != nil {
				t.Fatalf("Finish: %v", r.err)
			}
			if r.turn.user != tt.want {
				t.Errorf("user message = %q, want %q", r.turn.user, tt.want)
			}
			if h := r.out.History[0]; h.Role != coach.RoleUser || h.Content != tt.want {
				t.Errorf("history[0] = %+v", r.out.History[0])
			}
			got := newCoverage(r.turn.mod, decodeState(t, r.out.State).CoveredTopics)
			if added := got.since(newCoverage(r.turn.mod, before)); !slices.Equal(added, append([]string{}, tt.topics...)) {
				// since() lists module order; topics are given in module order too.
				t.Errorf("newly covered = %v, want %v", added, tt.topics)
			}
		})
	}
}

func TestRequest(t *testing.T) {
	c := newContract(t)
	s := newSession(t, c, "quarters", "es")
	tn, err := c.Begin(s, message("hola"))
	if err != nil {
		t.Fatal(err)
	}
	req := tn.Request()
	if req.Schema == nil || req.Schema.Name != "structured_response" || !bytes.Equal(req.Schema.Schema, api.Schema("structured-response.json")) {
		t.Errorf("Schema = %+v, want structured_response with the embedded schema", req.Schema)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != coach.RoleSystem || req.Messages[1].Role != coach.RoleUser || req.Messages[1].Content != "hola" {
		t.Fatalf("messages = %+v", req.Messages)
	}
	sys := req.Messages[0].Content
	if !strings.HasPrefix(sys, strings.TrimRight(outputRule, "\n")+"\n\n## RESPONSE_SCHEMA\n") {
		t.Errorf("system prompt does not start with the output rule, then the schema:\n%.300s", sys)
	}
	contains(t, "system prompt", sys, "Spanish")
	contains(t, "system prompt", sys, "- fight_or_flight: Lucha o huida\n")
	wantFacts := "## Session facts\n" +
		"contract: module\n" +
		"locale: es\n" +
		"module: quarters\n" +
		"percentage: 0\n" +
		"covered_topics: \n" +
		"remaining_topics: panic=Pánico; anger=Ira; fight_or_flight=Lucha o huida; avoidance=Evitación\n" +
		"milestones_reached: \n" +
		"pending_milestone: none\n"
	if !strings.HasSuffix(sys, "\n"+wantFacts) {
		t.Errorf("system prompt ends with\n%s\nwant\n%s", sys[max(0, len(sys)-len(wantFacts)):], wantFacts)
	}

	// A request is built afresh each time, so the engine may append a correction to one.
	again := tn.Request()
	req.Messages = append(req.Messages, coach.Message{Role: coach.RoleUser, Content: "correction"})
	if len(again.Messages) != 2 {
		t.Errorf("second request has %d messages, want 2", len(again.Messages))
	}
}

func TestRequestHistoryWindow(t *testing.T) {
	c := newContract(t)
	s := newSession(t, c, "quarters", "en")
	for i := range 31 {
		role := coach.RoleUser
		if i%2 == 1 {
			role = coach.RoleAssistant
		}
		s.History = append(s.History, coach.Message{Role: role, Content: strings.Repeat("x", i)})
	}
	tn, err := c.Begin(s, message("latest"))
	if err != nil {
		t.Fatal(err)
	}
	msgs := tn.Request().Messages
	hist := msgs[1 : len(msgs)-1]
	if len(hist) > PromptHistory || len(hist) == 0 || hist[0].Role != coach.RoleUser {
		t.Fatalf("history window has %d messages starting with %q; want at most %d starting with a user message", len(hist), hist[0].Role, PromptHistory)
	}
	if last := hist[len(hist)-1]; last.Content != s.History[len(s.History)-1].Content {
		t.Errorf("window does not end with the latest history message")
	}
}

func TestMilestones(t *testing.T) {
	c := newContract(t)
	s := newSession(t, c, "quarters", "en")
	type step struct {
		name        string
		message     string
		reported    []string
		pending     string // pending_milestone in the prompt
		milestone   string // meta.progress.milestone, "" for none
		percentage  float64
		newly       []any
		reached     []string
		wantRemains float64
	}
	steps := []step{
		{"learner crosses 25%", "I panic a lot", nil, "25%", "25%", 25, []any{"panic"}, []string{"25%"}, 3},
		{"learner crosses 50% and 75% at once", "ira y lucha o huida", nil, "75%", "75%", 75, []any{"anger", "fight_or_flight"}, []string{"25%", "50%", "75%"}, 1},
		{"nothing new", "panic again", nil, "none", "", 75, []any{}, []string{"25%", "50%", "75%"}, 1},
		{"the model's report crosses 100%", "tell me more", []string{"Evitación"}, "none", "100%", 100, []any{"avoidance"}, []string{"25%", "50%", "75%", "100%"}, 0},
		{"each milestone once", "avoid it", []string{"avoidance", "panic"}, "none", "", 100, []any{}, []string{"25%", "50%", "75%", "100%"}, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			tn, err := c.Begin(s, message(st.message))
			if err != nil {
				t.Fatal(err)
			}
			sys := tn.Request().Messages[0].Content
			contains(t, "prompt", sys, "\npending_milestone: "+st.pending+"\n")
			r := runTurn(t, c, s, message(st.message), response("ok", st.reported...))
			if r.err != nil {
				t.Fatal(r.err)
			}
			p := progressOf(t, r.out.Result)
			if got, _ := p["milestone"].(string); got != st.milestone {
				t.Errorf("milestone = %q, want %q", got, st.milestone)
			}
			if p["percentage"] != st.percentage || p["remaining_topics"] != st.wantRemains {
				t.Errorf("percentage, remaining = %v, %v; want %v, %v", p["percentage"], p["remaining_topics"], st.percentage, st.wantRemains)
			}
			if got := p["newly_covered"].([]any); !slices.Equal(got, st.newly) {
				t.Errorf("newly_covered = %v, want %v", got, st.newly)
			}
			state := decodeState(t, r.out.State)
			if !slices.Equal(state.Milestones, st.reached) || state.Percentage != int(st.percentage) {
				t.Errorf("state milestones %v, percentage %d; want %v, %v", state.Milestones, state.Percentage, st.reached, st.percentage)
			}
			commit(s, r.out)
		})
	}
}

func TestPercentage(t *testing.T) {
	tests := []struct {
		n, total int
		want     int
		reached  []string
	}{
		{0, 3, 0, nil},
		{1, 3, 33, []string{"25%"}},
		{2, 3, 67, []string{"25%", "50%"}},
		{1, 8, 13, nil}, // 12.5 rounds half up; the 25% milestone needs the exact fraction
		{2, 8, 25, []string{"25%"}},
		{199, 200, 99, []string{"25%", "50%", "75%"}}, // 99.5 would round to 100 with a topic left
		{25, 25, 100, []string{"25%", "50%", "75%", "100%"}},
	}
	for _, tt := range tests {
		c := &coverage{covered: make([]bool, tt.total), n: tt.n}
		if got := c.percentage(); got != tt.want {
			t.Errorf("percentage(%d/%d) = %d, want %d", tt.n, tt.total, got, tt.want)
		}
		if got := c.newMilestones(nil); !slices.Equal(got, tt.reached) {
			t.Errorf("newMilestones(%d/%d) = %v, want %v", tt.n, tt.total, got, tt.reached)
		}
	}
}

func TestFinishProgressIsTheServers(t *testing.T) {
	c := newContract(t)
	s := newSession(t, c, "quarters", "en")
	out := `{"content":{"text_blocks":[{"type":"paragraph","content":"hi"}]},"meta":{"response_type":"educational",
		"progress":{"percentage":90,"covered_topics":["panic","...12 topics...","Quantum Physics"],"newly_covered":[3],"remaining_topics":-4,"milestone":"33%"}}}`
	r := runTurn(t, c, s, message("hello"), out)
	if r.err != nil {
		t.Fatalf("Finish: %v", r.err)
	}
	want := `"progress":{"percentage":25,"covered_topics":["panic"],"newly_covered":["panic"],"remaining_topics":3,"milestone":"25%"}`
	contains(t, "result", string(r.out.Result), want)
	if !slices.Contains(r.out.Rules, RuleUnknownTopic) {
		t.Errorf("rules = %v, want %s", r.out.Rules, RuleUnknownTopic)
	}
	contains(t, "notice", r.out.Notice, `"...12 topics...", "Quantum Physics"`)
	if err := responseSchema().Validate(resultDoc(t, r.out.Result)); err != nil {
		t.Errorf("result does not validate: %v", err)
	}
}

func TestFinishSeedExamples(t *testing.T) {
	c := newContract(t)
	for name, raw := range examples(t) {
		t.Run(name, func(t *testing.T) {
			s := newSession(t, c, "anxiety-basics", "en")
			r := runTurn(t, c, s, message("hi"), string(raw))
			if r.err != nil {
				t.Fatalf("Finish: %v", r.err)
			}
			if r.out.Fallback {
				t.Error("Fallback = true")
			}
			if err := responseSchema().Validate(resultDoc(t, r.out.Result)); err != nil {
				t.Errorf("result does not validate: %v", err)
			}
			if a := r.out.History[1]; a.Role != coach.RoleAssistant || a.Content != string(r.out.Result) {
				t.Errorf("history[1] = %+v, want the result", a)
			}
		})
	}
	// The educational example names its topics by name; they count.
	s := newSession(t, c, "anxiety-basics", "en")
	r := runTurn(t, c, s, message("hi"), string(examples(t)["educational-with-form.json"]))
	st := decodeState(t, r.out.State)
	if !slices.Equal(st.CoveredTopics, []string{"introduction_to_anxiety", "three_levels_overview"}) {
		t.Errorf("covered = %v", st.CoveredTopics)
	}
	if st.Forms["anxiety_levels_check"] == nil {
		t.Errorf("the offered form was not kept: %v", st.Forms)
	}
}

func TestFinishResultFormat(t *testing.T) {
	c := newContract(t)
	s := newSession(t, c, "quarters", "en")
	// Members out of order, HTML characters and a null: the result puts a block's type before its
	// content (the model sees it as its own format), escapes no HTML and drops the null.
	out := `{"meta":{"emotion":null,"response_type":"conversational"},"content":{"text_blocks":[{"content":"a <b> & c","level":null,"type":"tip"}]}}`
	r := runTurn(t, c, s, message("hello"), out)
	if r.err != nil {
		t.Fatal(r.err)
	}
	want := `{"content":{"text_blocks":[{"type":"tip","content":"a <b> & c"}]},"meta":{"response_type":"conversational","progress":{"percentage":0,"covered_topics":[],"newly_covered":[],"remaining_topics":4}}}`
	if string(r.out.Result) != want {
		t.Errorf("result =\n%s\nwant\n%s", r.out.Result, want)
	}
}

func TestFinishFallbackAndMigration(t *testing.T) {
	c := newContract(t)
	legacy := `{"type":"form","title":"Quick Check-in","fields":[{"id":"mood","type":"radio","label":"Mood?","options":[{"value":"calm","label":"Calm"},{"value":"panic","label":"Panicking"}]}]}`
	tests := []struct {
		name      string
		output    string
		fallback  bool
		rule      string
		blockType string
		content   string
		respType  string
		formID    string
	}{
		{"plain markdown", "  # Hi\n\nI **panic** sometimes.  ", true, RuleFallback, "paragraph", "# Hi\n\nI **panic** sometimes.", "conversational", ""},
		{"fenced JSON is accepted", "```json\n" + response("fenced") + "\n```", false, "", "paragraph", "fenced", "conversational", ""},
		{"fenced JSON without a language", "```\n" + response("fenced") + "\n```\n", false, "", "paragraph", "fenced", "conversational", ""},
		{"fenced non-JSON", "```\nJust text\n```", true, RuleFallback, "paragraph", "```\nJust text\n```", "conversational", ""},
		{"markdown starting with a link", "[Box breathing](https://example.com) helps.", true, RuleFallback, "paragraph", "[Box breathing](https://example.com) helps.", "conversational", ""},
		{"markdown starting with a bracketed number", "[1] Anxiety is common.", true, RuleFallback, "paragraph", "[1] Anxiety is common.", "conversational", ""},
		{"legacy form", legacy, false, RuleLegacyForm, "paragraph", "Quick Check-in", "assessment", "quick_check_in"},
		{"legacy form with description only", `{"type":"form","description":"Tell me more","fields":[]}`, false, RuleLegacyForm, "paragraph", "Tell me more", "assessment", "form"},
		{"legacy form with neither", `{"type":"form","fields":[]}`, false, RuleLegacyForm, "paragraph", defaultIntro["en"], "assessment", "form"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, c, "quarters", "en")
			r := runTurn(t, c, s, message("hello"), tt.output)
			if r.err != nil {
				t.Fatalf("Finish: %v", r.err)
			}
			if r.out.Fallback != tt.fallback {
				t.Errorf("Fallback = %v, want %v", r.out.Fallback, tt.fallback)
			}
			if tt.rule != "" && !slices.Contains(r.out.Rules, tt.rule) {
				t.Errorf("rules = %v, want %s", r.out.Rules, tt.rule)
			}
			doc := resultDoc(t, r.out.Result)
			if err := responseSchema().Validate(doc); err != nil {
				t.Errorf("result does not validate: %v", err)
			}
			b := blockAt(doc, 0)
			if b["type"] != tt.blockType || b["content"] != tt.content {
				t.Errorf("block 0 = %v, want %s %q", b, tt.blockType, tt.content)
			}
			if got := doc["meta"].(map[string]any)["response_type"]; got != tt.respType {
				t.Errorf("response_type = %v, want %s", got, tt.respType)
			}
			progressOf(t, r.out.Result) // the server's progress is there even in a fallback
			if tt.formID != "" {
				form := doc["content"].(map[string]any)["forms"].([]any)[0].(map[string]any)
				if form["id"] != tt.formID || form["optional"] != true {
					t.Errorf("migrated form = %v, want id %s, optional", form, tt.formID)
				}
				if decodeState(t, r.out.State).Forms[tt.formID] == nil {
					t.Errorf("migrated form %s not kept in the state", tt.formID)
				}
			}
			if tt.fallback {
				contains(t, "diagnostic", r.out.Diagnostic, "not JSON")
			}
		})
	}

	t.Run("a migrated form can be answered", func(t *testing.T) {
		s := newSession(t, c, "quarters", "en")
		r := runTurn(t, c, s, message("hello"), legacy)
		commit(s, r.out)
		r = runTurn(t, c, s, formInput("quick_check_in", `{"mood":"panic"}`), response("ok"))
		if r.err != nil || r.turn.user != "Form \"Quick Check-in\":\n- Mood? Panicking" {
			t.Fatalf("answer: %v, user message %q", r.err, r.turn.user)
		}
		if got := decodeState(t, r.out.State).CoveredTopics; !slices.Equal(got, []string{"panic"}) {
			t.Errorf("covered = %v, want [panic] (the option value)", got)
		}
	})
	t.Run("a fallback keeps the forms offered before", func(t *testing.T) {
		s := newSession(t, c, "quarters", "en")
		commit(s, runTurn(t, c, s, message("hello"), legacy).out)
		r := runTurn(t, c, s, message("more"), "plain text")
		if decodeState(t, r.out.State).Forms["quick_check_in"] == nil {
			t.Error("the fallback dropped the offered form")
		}
	})
}

// TestFinishBrokenJSONIsRetried covers output that starts like JSON but does not parse: a
// corrective retry beats showing the learner raw JSON as markdown.
func TestFinishBrokenJSONIsRetried(t *testing.T) {
	c := newContract(t)
	for _, tt := range []struct{ name, output string }{
		{"JSON followed by text", response("x") + " and more"},
		{"truncated JSON", response("x")[:30]},
		{"fenced truncated JSON", "```json\n" + response("x")[:30]},
		{"truncated array of objects", `[ {"content":`},
		{"a lone bracket", "["},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := runTurn(t, c, newSession(t, c, "quarters", "en"), message("hello"), tt.output)
			if got := coach.AsError(r.err).Code; got != coach.CodeValidationFailed {
				t.Errorf("Finish error = %v, want %s", r.err, coach.CodeValidationFailed)
			}
		})
	}
}

func TestFinishErrors(t *testing.T) {
	c := newContract(t)
	tests := []struct {
		name   string
		output string
		code   string
		want   string
	}{
		{"empty", "", coach.CodeEmptyResponse, "empty"},
		{"white space", " \n\t ", coach.CodeEmptyResponse, "empty"},
		{"empty fence", "```json\n```", coach.CodeEmptyResponse, "empty"},
		{"wrong block type", `{"content":{"text_blocks":[{"type":"bullet","content":"x"}]},"meta":{"response_type":"educational"}}`, coach.CodeValidationFailed, "type"},
		{"heading level 7", `{"content":{"text_blocks":[{"type":"heading","level":7,"content":"x"}]},"meta":{"response_type":"educational"}}`, coach.CodeValidationFailed, "level"},
		{"missing response_type", `{"content":{"text_blocks":[]},"meta":{}}`, coach.CodeValidationFailed, "response_type"},
		{"a JSON string", `"hello"`, coach.CodeValidationFailed, "object"},
		{"a legacy form with a bad field id", `{"type":"form","title":"T","fields":[{"id":"Bad","type":"text","label":"L"}]}`, coach.CodeValidationFailed, "id"},
		{"choice field without options", `{"content":{"text_blocks":[],"forms":[{"id":"f","fields":[{"id":"a","type":"radio","label":"A"}]}]},"meta":{"response_type":"assessment"}}`, coach.CodeValidationFailed, `radio field "a" needs options`},
		{"duplicate field ids", `{"content":{"text_blocks":[],"forms":[{"id":"f","fields":[{"id":"a","type":"text","label":"A"},{"id":"a","type":"text","label":"B"}]}]},"meta":{"response_type":"assessment"}}`, coach.CodeValidationFailed, `duplicate field id "a"`},
		{"duplicate form ids", `{"content":{"text_blocks":[],"forms":[{"id":"f","fields":[]},{"id":"f","fields":[]}]},"meta":{"response_type":"assessment"}}`, coach.CodeValidationFailed, `duplicate form id "f"`},
		{"no text blocks", `{"content":{"text_blocks":[]},"meta":{"response_type":"conversational","progress":{"covered_topics":["panic","anger"]}}}`, coach.CodeEmptyResponse, "shows no text"},
		{"blank text blocks", `{"content":{"text_blocks":[{"type":"paragraph","content":" \n"},{"type":"heading","level":2,"content":"\t"}]},"meta":{"response_type":"conversational"}}`, coach.CodeEmptyResponse, "shows no text"},
		{"a form without text", `{"content":{"text_blocks":[],"forms":[{"id":"f","fields":[{"id":"a","type":"text","label":"A"}]}]},"meta":{"response_type":"assessment"}}`, coach.CodeEmptyResponse, "shows no text"},
		{"min above max", `{"content":{"text_blocks":[],"forms":[{"id":"f","fields":[{"id":"n","type":"number","label":"N","min":5,"max":1}]}]},"meta":{"response_type":"assessment"}}`, coach.CodeValidationFailed, "min greater than max"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, c, "quarters", "en")
			r := runTurn(t, c, s, message("hello"), tt.output)
			if r.err == nil {
				t.Fatalf("Finish = %s, want a %s error", r.out.Result, tt.code)
			}
			e := asError(t, r.err)
			if e.Kind != coach.KindStream || e.Code != tt.code {
				t.Errorf("error = kind %d code %s, want stream %s", e.Kind, e.Code, tt.code)
			}
			contains(t, "message", e.Message, tt.want)
		})
	}
}

// TestEmptyAnswerFallback checks the markdown fallback for answers that showed no text even after
// the corrective retry: one paragraph saying so, in the session's language, and the session's
// progress, milestones and open forms exactly as before the turn, even when the learner's message
// names a topic.
func TestEmptyAnswerFallback(t *testing.T) {
	c := newContract(t)
	empty := `{"content":{"text_blocks":[{"type":"paragraph","content":"  "}]},"meta":{"response_type":"educational","progress":{"covered_topics":["panic","anger","avoidance"]}}}`
	for _, locale := range []string{"en", "es"} {
		t.Run(locale, func(t *testing.T) {
			s := newSession(t, c, "quarters", locale)
			legacy := `{"type":"form","title":"Quick Check-in","fields":[{"id":"mood","type":"text","label":"Mood?"}]}`
			commit(s, runTurn(t, c, s, message("I often panic"), legacy).out)
			before := decodeState(t, s.State)
			if before.Percentage != 25 || before.Forms["quick_check_in"] == nil {
				t.Fatalf("state before = %+v, want 25%% and the form offered", before)
			}
			r := runTurn(t, c, s, message("I get angry and avoid people"), empty)
			if got := coach.AsError(r.err).Code; got != coach.CodeEmptyResponse {
				t.Fatalf("Finish error = %v, want %s", r.err, coach.CodeEmptyResponse)
			}
			out, err := r.turn.Fallback(r.err)
			if err != nil {
				t.Fatalf("Fallback: %v", err)
			}
			if !out.Fallback || !slices.Equal(out.Rules, []string{RuleFallback, RuleEmptyAnswer}) {
				t.Errorf("fallback %v rules %v, want a fallback with %s, %s", out.Fallback, out.Rules, RuleFallback, RuleEmptyAnswer)
			}
			doc := resultDoc(t, out.Result)
			blocks := doc["content"].(map[string]any)["text_blocks"].([]any)
			if len(blocks) != 1 || blocks[0].(map[string]any)["content"] != emptyFallbackText[locale] {
				t.Errorf("text blocks = %v, want the %s fallback paragraph", blocks, locale)
			}
			p := progressOf(t, out.Result)
			if p["percentage"] != float64(before.Percentage) || len(p["newly_covered"].([]any)) != 0 {
				t.Errorf("progress = %v, want %d%% and nothing newly covered", p, before.Percentage)
			}
			after := decodeState(t, out.State)
			if !slices.Equal(after.CoveredTopics, before.CoveredTopics) || after.Percentage != before.Percentage ||
				!slices.Equal(after.Milestones, before.Milestones) || len(after.Forms) != len(before.Forms) || after.Forms["quick_check_in"] == nil {
				t.Errorf("state after the fallback = %+v, want it as before: %+v", after, before)
			}
			if !strings.Contains(out.Diagnostic, `"covered_topics":["panic","anger"`) {
				t.Errorf("diagnostic = %q, want the model's answer in it", out.Diagnostic)
			}
		})
	}
}

// TestUnusableAnswerFallback checks that every answer still unusable after the corrective retry
// gets the markdown fallback, not only an empty one: an answer cut at the token cap after an
// empty one (the engine's cut-off error wraps the contract's), broken JSON, a schema violation.
// The fallback's text is the learner's and never the correction meant for the model, and the
// learner's progress does not move; an error that is not about the output keeps its error.
func TestUnusableAnswerFallback(t *testing.T) {
	c := newContract(t)
	cutOff := "your answer was cut off: be shorter"
	tests := []struct {
		name   string
		output string
		wrap   bool // the engine saw finish_reason "length" and wrapped the error as a cut
	}{
		{name: "cut at the cap", output: `{"content":{"text_blocks":[{"type":"paragraph","content":"A long`, wrap: true},
		{name: "broken JSON", output: `{"content":`},
		{name: "schema violation", output: `{"content":{"text_blocks":[{"type":"paragraph","content":"Hi."}]},"meta":{"response_type":"lecture"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, c, "quarters", "en")
			before := decodeState(t, s.State)
			r := runTurn(t, c, s, message("I often panic"), tt.output)
			if got := coach.AsError(r.err).Code; got != coach.CodeValidationFailed {
				t.Fatalf("Finish error = %v, want %s", r.err, coach.CodeValidationFailed)
			}
			cause := r.err
			if tt.wrap {
				cause = coach.Wrap(r.err, coach.KindStream, coach.CodeValidationFailed, cutOff)
			}
			out, err := r.turn.Fallback(cause)
			if err != nil {
				t.Fatalf("Fallback: %v", err)
			}
			if !out.Fallback || !slices.Equal(out.Rules, []string{RuleFallback, RuleUnusableAnswer}) {
				t.Errorf("fallback %v rules %v, want a fallback with %s, %s", out.Fallback, out.Rules, RuleFallback, RuleUnusableAnswer)
			}
			doc := resultDoc(t, out.Result)
			blocks := doc["content"].(map[string]any)["text_blocks"].([]any)
			if len(blocks) != 1 || blocks[0].(map[string]any)["content"] != emptyFallbackText["en"] {
				t.Errorf("text blocks = %v, want the fallback paragraph", blocks)
			}
			if strings.Contains(string(out.Result), "be shorter") || strings.Contains(string(out.Result), "could not be used") {
				t.Errorf("result %s carries the model's correction", out.Result)
			}
			if after := decodeState(t, out.State); after.Percentage != before.Percentage || len(after.CoveredTopics) != len(before.CoveredTopics) {
				t.Errorf("state after the fallback = %+v, want it as before: %+v", after, before)
			}
			if !strings.Contains(out.Diagnostic, coach.AsError(cause).Message) {
				t.Errorf("diagnostic = %q, want the cause in it", out.Diagnostic)
			}
		})
	}
	t.Run("a failed call keeps its error", func(t *testing.T) {
		s := newSession(t, c, "quarters", "en")
		r := runTurn(t, c, s, message("hello"), `{"content":`)
		failed := coach.Errorf(coach.KindStream, coach.CodeStreamFailed, "the model stream failed")
		if out, err := r.turn.Fallback(failed); out != nil || err != failed {
			t.Errorf("Fallback = %v, %v; want no outcome and the cause %v", out, err, failed)
		}
	})
}

// TestNoNegativeZero checks that a -0 the model writes (a form field's bounds) or a learner
// answers (a number field) comes out as 0: in the result, the stored form and the history.
func TestNoNegativeZero(t *testing.T) {
	c := newContract(t)
	s := newSession(t, c, "quarters", "en")
	out := `{"content":{"text_blocks":[{"type":"paragraph","content":"Rate it."}],"forms":[{"id":"f","fields":[` +
		`{"id":"n","type":"number","label":"How much?","min":-0,"max":-0.0e1}]}]},"meta":{"response_type":"assessment"}}`
	r := runTurn(t, c, s, message("hello"), out)
	if r.err != nil {
		t.Fatalf("Finish: %v", r.err)
	}
	if strings.Contains(string(r.out.Result), "-0") || !strings.Contains(string(r.out.Result), `"min":0`) {
		t.Errorf("result %s, want its -0 bounds written as 0", r.out.Result)
	}
	commit(s, r.out)
	if strings.Contains(string(s.State), "-0") {
		t.Errorf("state %s holds a -0", s.State)
	}
	a := runTurn(t, c, s, formInput("f", `{"n":-0}`), response("Noted."))
	if a.err != nil {
		t.Fatalf("answer: %v", a.err)
	}
	if got := a.out.History[0].Content; strings.Contains(got, "-0") || !strings.Contains(got, "How much? 0") {
		t.Errorf("history shows the answer as %q, want 0", got)
	}
}
