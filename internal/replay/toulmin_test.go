package replay

import (
	"strconv"
	"strings"
	"testing"
)

// walkTurn is what a learner writes for one Toulmin step: a first, exploratory message and a
// second, substantive one.
type walkTurn struct{ first, second string }

var walks = map[string][]walkTurn{
	"en": {
		{"I want to talk about cars in cities", "cities should ban private cars from their centres"},
		{"there is some pollution data", "air pollution fell by 30 percent in Oslo after its centre went car-free"},
		{"cleaner air is good", "cleaner air directly improves public health"},
		{"the numbers are official", "the figures come from the European Environment Agency annual reports"},
		{"doctors agree on this", "WHO research links lower pollution to fewer hospital admissions"},
		{"it does not hold everywhere", "this holds for dense cities with good public transport"},
		{"some people need cars", "residents with disabilities depend on cars to get around"},
	},
	"es": {
		{"quiero hablar de los coches en la ciudad", "las ciudades deberían prohibir los coches privados en el centro"},
		{"hay datos de contaminación", "la contaminación del aire bajó un 30 por ciento en Oslo tras cerrar el centro"},
		{"el aire limpio es bueno", "el aire más limpio mejora directamente la salud pública"},
		{"los datos son oficiales", "las cifras vienen de los informes anuales de la Agencia Europea de Medio Ambiente"},
		{"los médicos lo dicen", "la investigación de la OMS relaciona menos contaminación con menos ingresos hospitalarios"},
		{"no en todas partes", "esto se cumple en ciudades densas con buen transporte público"},
		{"hay gente que necesita coche", "los vecinos con discapacidad dependen del coche para moverse"},
	},
}

// fitsStep applies the gateway's step heuristics as the brief states them.
func fitsStep(step, loc, value string) bool {
	if len(words(value)) < 4 || !strings.HasSuffix(value, ".") || capitalize(value) != value {
		return false
	}
	switch step {
	case "qualifier":
		return hasWord(value, hedges[loc]...)
	case "rebuttal":
		return hasWord(value, exceptions[loc]...)
	case "warrant":
		// The gateway also counts "which" and "por eso" as linking words.
		return hasWord(value, links[loc]...) || hasWord(value, "which", "por eso")
	}
	return true
}

// toulminAnswer asks the model and validates the answer against the CoachAIResult schema.
func toulminAnswer(t *testing.T, msgs []Message) (map[string]any, string) {
	t.Helper()
	a := Respond(msgs, "")
	if a.ToolName != "" {
		t.Fatalf("got a tool call %q, want JSON content", a.ToolName)
	}
	if !strings.HasPrefix(a.Content, `{"assistantText":`) {
		t.Fatalf("answer does not start with assistantText: %s", a.Content)
	}
	return validate(t, "coach-ai-result.json", "coach-ai-result.json", a.Content), a.Content
}

func TestToulminWalk(t *testing.T) {
	for _, loc := range []string{"en", "es"} {
		t.Run(loc, func(t *testing.T) {
			var history []Message
			for i, step := range steps {
				turn := walks[loc][i]
				for n, text := range []string{turn.first, turn.second} {
					first := n == 0
					msgs := append([]Message{system(
						"contract", "toulmin", "locale", loc, "step", step,
						"first_turn_for_step", strconv.FormatBool(first), "draft_for_step", "",
						"rewrite_request", "false", "confirmation", "false", "is_complete", "false",
					)}, history...)
					msgs = append(msgs, Message{Role: "user", Content: text})
					got, raw := toulminAnswer(t, msgs)
					history = append(history, Message{Role: "user", Content: text},
						Message{Role: "assistant", Content: str(got["assistantText"])})

					if got["step"] != step {
						t.Errorf("%s turn %d: got step %v, want %s", step, n+1, got["step"], step)
					}
					if s := sentences(str(got["assistantText"])); s < 2 || s > 3 {
						t.Errorf("%s turn %d: assistantText has %d sentences, want 2-3: %q", step, n+1, s, got["assistantText"])
					}
					if first {
						if _, ok := got["proposedUpdate"]; ok {
							t.Errorf("%s first turn: got a proposedUpdate, want coaching only: %s", step, raw)
						}
						if got["confidence"] != 0.5 || str(got["nextQuestion"]) == "" {
							t.Errorf("%s first turn: got confidence %v and nextQuestion %q, want 0.5 and a question", step, got["confidence"], got["nextQuestion"])
						}
						if !strings.Contains(str(got["assistantText"]), snippet(text, 10)) {
							t.Errorf("%s first turn: assistantText %q does not mention the learner's text", step, got["assistantText"])
						}
						continue
					}
					p, _ := got["proposedUpdate"].(map[string]any)
					if p == nil {
						t.Fatalf("%s second turn: got no proposedUpdate: %s", step, raw)
					}
					if p["field"] != step || !fitsStep(step, loc, str(p["value"])) {
						t.Errorf("%s second turn: got proposal %v, want field %s and a value that passes the step heuristics", step, p, step)
					}
					if c, _ := got["confidence"].(float64); c < 0.85 || c > 0.9 {
						t.Errorf("%s second turn: got confidence %v, want 0.85-0.9", step, got["confidence"])
					}
					if next := nextStep(step); next != "" {
						if got["shouldAdvance"] != true || got["nextStep"] != next {
							t.Errorf("%s second turn: got shouldAdvance %v nextStep %v, want true %s", step, got["shouldAdvance"], got["nextStep"], next)
						}
					} else if got["isComplete"] != true || got["shouldAdvance"] != nil {
						t.Errorf("rebuttal second turn: got isComplete %v shouldAdvance %v, want true and none", got["isComplete"], got["shouldAdvance"])
					}
				}
			}
		})
	}
}

func TestToulminPolish(t *testing.T) {
	tests := []struct {
		step, loc, in, want string
	}{
		{"claim", "en", "  my claim is that cities should ban cars  ", "Cities should ban cars."},
		{"claim", "en", "\"school should start later\"", "School should start later."},
		{"qualifier", "en", "this holds for dense cities", "In most cases, this holds for dense cities."},
		{"qualifier", "en", "It usually holds for dense cities", "It usually holds for dense cities."},
		{"rebuttal", "en", "Residents depend on cars for work", "Unless residents depend on cars for work."},
		{"rebuttal", "en", "it fails if buses stop running", "It fails if buses stop running."},
		{"rebuttal", "en", "NASA data could be wrong", "Unless NASA data could be wrong."},
		{"warrant", "en", "cleaner air improves health", "Cleaner air improves health \u2014 which is why the grounds support the claim."},
		{"warrant", "en", "cleaner air improves health, so the ban helps", "Cleaner air improves health, so the ban helps."},
		{"qualifier", "es", "esto se cumple en ciudades densas", "En la mayoría de los casos, esto se cumple en ciudades densas."},
		{"rebuttal", "es", "los vecinos dependen del coche", "Excepto cuando los vecinos dependen del coche."},
		{"rebuttal", "es", "pero algunos vecinos dependen del coche", "Pero algunos vecinos dependen del coche."},
		{"warrant", "es", "el aire limpio mejora la salud", "El aire limpio mejora la salud \u2014 por eso los fundamentos apoyan la afirmación."},
		{"claim", "es", "mi afirmación es que las ciudades deben cambiar", "Las ciudades deben cambiar."},
	}
	for _, tt := range tests {
		t.Run(tt.step+"/"+tt.loc+"/"+tt.in, func(t *testing.T) {
			if got := polish(tt.step, tt.loc, tt.in); got != tt.want {
				t.Errorf("polish(%q, %q, %q) = %q, want %q", tt.step, tt.loc, tt.in, got, tt.want)
			}
		})
	}
}

func TestToulminCases(t *testing.T) {
	facts := func(step, first, draft, rewrite, confirm, complete string) Message {
		return system("contract", "toulmin", "locale", "en", "step", step, "first_turn_for_step", first,
			"draft_for_step", draft, "rewrite_request", rewrite, "confirmation", confirm, "is_complete", complete)
	}
	user := func(s string) Message { return Message{Role: "user", Content: s} }
	tests := []struct {
		name      string
		msgs      []Message
		wantValue string // "" means no proposal is wanted
		wantDone  bool
		// notSaid must not appear in assistantText.
		notSaid string
	}{
		{
			name:      "confirmation takes the draft",
			msgs:      []Message{facts("grounds", "false", "sales rose 12% after the change", "false", "true", "false"), user("earlier text here for grounds"), user("yes, use that")},
			wantValue: "Sales rose 12% after the change.",
		},
		{
			name:      "confirmation without a draft takes the previous message",
			msgs:      []Message{facts("claim", "false", "", "false", "true", "false"), user("remote work makes teams more productive"), user("ok")},
			wantValue: "Remote work makes teams more productive.",
		},
		{
			name: "confirmation with nothing to confirm coaches",
			msgs: []Message{facts("claim", "false", "", "false", "true", "false"), user("hm"), user("ok")},
		},
		{
			name:      "rewrite on a first turn rewrites the draft",
			msgs:      []Message{facts("warrant", "true", "healthy air keeps people out of hospital", "true", "false", "false"), user("can you improve it")},
			wantValue: "Healthy air keeps people out of hospital \u2014 which is why the grounds support the claim.",
		},
		{
			name:      "rewrite carrying its own text",
			msgs:      []Message{facts("claim", "false", "", "true", "false", "false"), user("a"), user("please rephrase: school should start at nine")},
			wantValue: "School should start at nine.",
		},
		{
			name:      "a confirmation phrased as a question still proposes",
			msgs:      []Message{facts("claim", "false", "teenagers need more sleep than adults", "false", "true", "false"), user("x"), user("ok, can we use that?")},
			wantValue: "Teenagers need more sleep than adults.",
		},
		{
			name:    "a first-turn rewrite request with nothing to rewrite is not taken for the element",
			msgs:    []Message{facts("claim", "true", "", "true", "false", "false"), user("can you help me word my claim better")},
			notSaid: "help me word",
		},
		{
			name: "a question gets an explanation, not a proposal",
			msgs: []Message{facts("warrant", "false", "", "false", "false", "false"), user("x"), user("what exactly is a warrant in this model?")},
		},
		{
			name: "a short later message gets a nudge",
			msgs: []Message{facts("grounds", "false", "", "false", "false", "false"), user("first try"), user("not sure")},
		},
		{
			name: "a short first message is not quoted back",
			msgs: []Message{facts("grounds", "true", "", "false", "false", "false"), user("next")},
		},
		{
			name:    "an opening turn introduces the step and does not quote the stand-in message",
			msgs:    []Message{system("contract", "toulmin", "locale", "en", "step", "grounds", "first_turn_for_step", "true", "draft_for_step", "", "rewrite_request", "false", "confirmation", "false", "is_complete", "false", "opening_turn", "true"), user("(No message from the learner: they are ready to work on the current step. Open it.)")},
			notSaid: "No message",
		},
		{
			name:     "a complete argument is congratulated",
			msgs:     []Message{facts("rebuttal", "false", "Unless x.", "false", "false", "true"), user("thanks!")},
			wantDone: true,
		},
		{
			name:      "the engine's correction message is not the learner's message",
			msgs:      []Message{facts("claim", "false", "", "false", "false", "false"), user("x"), user("homework should be optional in primary school"), {Role: "assistant", Content: "oops"}, user("Your previous reply could not be used (bad). Reply again, following the required output format exactly.")},
			wantValue: "Homework should be optional in primary school.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, raw := toulminAnswer(t, tt.msgs)
			p, _ := got["proposedUpdate"].(map[string]any)
			switch {
			case tt.wantValue == "" && p != nil:
				t.Errorf("got proposal %v, want none", p)
			case tt.wantValue != "" && (p == nil || p["value"] != tt.wantValue):
				t.Errorf("got proposal %v, want value %q\n%s", p, tt.wantValue, raw)
			}
			if tt.wantDone != (got["isComplete"] == true) && p == nil {
				t.Errorf("got isComplete %v, want %v", got["isComplete"], tt.wantDone)
			}
			if s := sentences(str(got["assistantText"])); s < 2 || s > 3 {
				t.Errorf("assistantText has %d sentences, want 2-3: %q", s, got["assistantText"])
			}
			if tt.notSaid != "" && strings.Contains(str(got["assistantText"]), tt.notSaid) {
				t.Errorf("assistantText %q says %q", got["assistantText"], tt.notSaid)
			}
			if strings.Contains(str(got["assistantText"]), "{") {
				t.Errorf("assistantText %q has an unfilled placeholder", got["assistantText"])
			}
		})
	}
}

func TestToulminVaries(t *testing.T) {
	seen := map[string]bool{}
	for _, msg := range []string{"cities should ban cars", "schools should start later", "taxes on sugar work well", "remote work is better", "libraries need more funding", "homework should be optional"} {
		got, _ := toulminAnswer(t, []Message{
			system("contract", "toulmin", "locale", "en", "step", "claim", "first_turn_for_step", "true"),
			{Role: "user", Content: msg},
		})
		text := strings.Replace(str(got["assistantText"]), msg, "", 1)
		seen[text+str(got["nextQuestion"])] = true
	}
	if len(seen) < 3 {
		t.Errorf("got %d distinct replies to 6 different claims, want at least 3", len(seen))
	}
}
