package replay

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// anxietyTopics are the topics of the gateway's anxiety-basics module, in order, with their
// English and Spanish names.
var anxietyTopics = [][3]string{
	{"introduction_to_anxiety", "Introduction to Anxiety", "Introducción a la ansiedad"},
	{"normal_fear_vs_anxiety", "Normal Fear vs Anxiety", "Miedo normal frente a ansiedad"},
	{"when_anxiety_is_a_problem", "When Anxiety Becomes a Problem", "Cuándo la ansiedad se vuelve un problema"},
	{"three_levels_overview", "Three Levels Overview", "Los tres niveles de la ansiedad"},
	{"physical_level", "Physical Level", "Nivel físico"},
	{"mental_level", "Mental Level", "Nivel mental"},
	{"behavioral_level", "Behavioral Level", "Nivel conductual"},
	{"fight_flight_response", "Fight-Flight Response", "Respuesta de lucha o huida"},
	{"sympathetic_nervous_system", "Sympathetic Nervous System", "Sistema nervioso simpático"},
	{"parasympathetic_nervous_system", "Parasympathetic Nervous System", "Sistema nervioso parasimpático"},
	{"adrenaline_and_cortisol", "Adrenaline and Cortisol", "Adrenalina y cortisol"},
	{"genetics", "Genetics", "Genética"},
	{"environment", "Environment", "Entorno"},
	{"learning_conditioning", "Learning and Conditioning", "Aprendizaje y condicionamiento"},
	{"stress", "Stress", "Estrés"},
	{"avoidance", "Avoidance", "Evitación"},
	{"safety_behaviors", "Safety Behaviors", "Conductas de seguridad"},
	{"reassurance_seeking", "Reassurance Seeking", "Búsqueda de reaseguro"},
	{"cognitive_distortions", "Catastrophizing and Cognitive Distortions", "Catastrofismo y distorsiones cognitivas"},
	{"vicious_cycle", "The Vicious Cycle", "El círculo vicioso"},
	{"breathing", "Breathing Techniques", "Técnicas de respiración"},
	{"grounding", "Grounding", "Anclaje al presente"},
	{"cognitive_restructuring", "Cognitive Restructuring", "Reestructuración cognitiva"},
	{"gradual_exposure", "Gradual Exposure", "Exposición gradual"},
	{"self_compassion", "Self-Compassion", "Autocompasión"},
}

// moduleAnswer asks the model and validates the answer against the structured-response schema.
func moduleAnswer(t *testing.T, msgs []Message) (map[string]any, string) {
	t.Helper()
	a := Respond(msgs, "")
	if !strings.HasPrefix(a.Content, `{"content":{"text_blocks":[{"type":"`) {
		t.Fatalf("answer does not start with content.text_blocks[0].type: %.200s", a.Content)
	}
	if strings.Contains(a.Content, `{"content":"`) {
		t.Fatalf("a text block has content before type: %s", a.Content)
	}
	return validate(t, "structured-response.json", "structured-response.json", a.Content), a.Content
}

func TestModuleWalk(t *testing.T) {
	for _, loc := range []string{"en", "es"} {
		t.Run(loc, func(t *testing.T) {
			name := 1
			if loc == "es" {
				name = 2
			}
			var covered, reached []string
			var history []Message
			pending, forms, celebrations := "none", 0, 0
			var lastForm map[string]any
			for turn := 0; turn <= len(anxietyTopics); turn++ {
				var remaining []string
				for _, tp := range anxietyTopics[len(covered):] {
					remaining = append(remaining, tp[0]+"="+tp[name])
				}
				user := "Continue"
				switch {
				case lastForm != nil:
					user = fmt.Sprintf("Form %q:\n- %s something", lastForm["title"], "answer")
				case turn%4 == 1:
					user = "How does this relate to sleep?"
				}
				msgs := append([]Message{system("contract", "module", "locale", loc, "module", "anxiety-basics",
					"percentage", fmt.Sprint(percent(len(covered))), "covered_topics", strings.Join(covered, ","),
					"remaining_topics", strings.Join(remaining, "; "), "milestones_reached", strings.Join(reached, ","),
					"pending_milestone", pending)}, history...)
				msgs = append(msgs, Message{Role: "user", Content: user})
				got, raw := moduleAnswer(t, msgs)
				history = append(history, Message{Role: "user", Content: user}, Message{Role: "assistant", Content: raw})

				content := got["content"].(map[string]any)
				meta := got["meta"].(map[string]any)
				prog := meta["progress"].(map[string]any)
				blocks := content["text_blocks"].([]any)
				next := content["next_step"].(map[string]any)
				if sug, _ := next["suggestions"].([]any); str(next["prompt"]) == "" || len(sug) != 3 {
					t.Errorf("turn %d: got next_step %v, want a prompt and 3 suggestions", turn, next)
				}

				if pending != "none" {
					celebrations++
					first, second := blocks[0].(map[string]any), blocks[1].(map[string]any)
					if !strings.HasPrefix(str(first["content"]), "🎉") || first["type"] != "heading" || second["type"] != "success" {
						t.Errorf("turn %d: milestone %s: got first blocks %v, %v, want a 🎉 heading and a success block", turn, pending, first, second)
					}
					if meta["emotion"] != "celebratory" || prog["milestone"] != pending {
						t.Errorf("turn %d: got emotion %v milestone %v, want celebratory %s", turn, meta["emotion"], prog["milestone"], pending)
					}
				} else if _, ok := prog["milestone"]; ok {
					t.Errorf("turn %d: got milestone %v with none pending", turn, prog["milestone"])
				}

				if len(remaining) == 0 {
					if meta["response_type"] != "summary" || len(prog["newly_covered"].([]any)) != 0 || prog["percentage"] != 100.0 {
						t.Errorf("final turn: got type %v newly %v percentage %v, want summary, none, 100", meta["response_type"], prog["newly_covered"], prog["percentage"])
					}
					break
				}

				tp := anxietyTopics[len(covered)]
				lesson := findLesson(topic{tp[0], tp[name]})
				if lesson == nil {
					t.Fatalf("turn %d: no lesson for topic %s", turn, tp[0])
				}
				heading := lesson.en.heading
				if loc == "es" {
					heading = lesson.es.heading
				}
				if !hasBlock(blocks, "heading", heading) {
					t.Errorf("turn %d: no heading %q for topic %s in %v", turn, heading, tp[0], blocks)
				}
				newly, _ := prog["newly_covered"].([]any)
				if len(newly) != 1 || newly[0] != tp[0] {
					t.Errorf("turn %d: got newly_covered %v, want [%s]", turn, newly, tp[0])
				}
				all, _ := prog["covered_topics"].([]any)
				if len(all) != len(covered)+1 || all[len(all)-1] != tp[0] || prog["remaining_topics"] != float64(len(remaining)-1) {
					t.Errorf("turn %d: got covered %v remaining %v, want %d topics ending in %s and %d remaining", turn, all, prog["remaining_topics"], len(covered)+1, tp[0], len(remaining)-1)
				}
				if strings.HasSuffix(user, "?") && meta["response_type"] != "conversational" {
					t.Errorf("turn %d: a question got response_type %v, want conversational", turn, meta["response_type"])
				}

				lastForm = nil
				if fs, ok := content["forms"].([]any); ok {
					forms++
					lastForm = fs[0].(map[string]any)
					if lastForm["optional"] != true {
						t.Errorf("turn %d: form %v is not optional", turn, lastForm["id"])
					}
				}

				before := percent(len(covered))
				covered = append(covered, tp[0])
				pending = "none"
				for _, m := range []int{25, 50, 75, 100} {
					if before < m && percent(len(covered)) >= m {
						pending = fmt.Sprintf("%d%%", m)
						reached = append(reached, pending)
					}
				}
			}
			if forms < len(anxietyTopics)/3-1 {
				t.Errorf("got %d forms over %d topics, want one about every third turn", forms, len(anxietyTopics))
			}
			if celebrations != 4 {
				t.Errorf("got %d milestone celebrations, want 4", celebrations)
			}
		})
	}
}

func percent(covered int) int {
	return int(math.Round(100 * float64(covered) / float64(len(anxietyTopics))))
}

func hasBlock(blocks []any, kind, text string) bool {
	for _, b := range blocks {
		m := b.(map[string]any)
		if m["type"] == kind && m["content"] == text {
			return true
		}
	}
	return false
}

func TestModuleLessons(t *testing.T) {
	for _, tp := range anxietyTopics {
		t.Run(tp[0], func(t *testing.T) {
			en := findLesson(topic{tp[0], tp[1]})
			es := findLesson(topic{tp[0], tp[2]})
			if en == nil || en != es {
				t.Fatalf("got lessons %v (en) and %v (es), want the same lesson", en, es)
			}
			if l := findLesson(topic{"x", tp[2]}); l != nil && l != en {
				t.Errorf("the Spanish name alone finds %q, want %q", l.en.heading, en.en.heading)
			}
		})
	}
	seen := map[*lesson]string{}
	for _, tp := range anxietyTopics {
		l := findLesson(topic{tp[0], tp[1]})
		if other, ok := seen[l]; ok && tp[0] != "vicious_cycle" {
			t.Errorf("topics %s and %s share the lesson %q", other, tp[0], l.en.heading)
		}
		seen[l] = tp[0]
	}
	for _, l := range anxietyLessons {
		for loc, text := range map[string]lessonText{"en": l.en, "es": l.es} {
			if text.heading == "" || len(text.paragraphs) == 0 || len(text.extras) == 0 {
				t.Errorf("lesson %q (%s) lacks a heading, a paragraph or a list/info/tip block", l.en.heading, loc)
			}
		}
	}
}

func TestModuleCases(t *testing.T) {
	user := func(s string) Message { return Message{Role: "user", Content: s} }
	tests := []struct {
		name        string
		msgs        []Message
		wantType    string
		wantHeading string
		wantEmotion string
	}{
		{
			name:        "a module of another subject gets generic lessons",
			msgs:        []Message{system("contract", "module", "module", "budgeting", "covered_topics", "", "remaining_topics", "intro=Introduction to Budgets; savings=Saving Money", "pending_milestone", "none"), user("hi")},
			wantType:    "educational",
			wantHeading: "Introduction to Budgets",
			wantEmotion: "informative",
		},
		{
			name:        "a form answer is acknowledged",
			msgs:        []Message{system("contract", "module", "module", "anxiety-basics", "covered_topics", "introduction_to_anxiety", "remaining_topics", "physical_level=Physical Level", "pending_milestone", "none"), user("Form \"Quick Reflection\":\n- Which level? Physical")},
			wantType:    "educational",
			wantHeading: "The Physical Level",
			wantEmotion: "supportive",
		},
		{
			name:        "a milestone without remaining topics celebrates and summarises",
			msgs:        []Message{system("contract", "module", "locale", "es", "module", "anxiety-basics", "covered_topics", "genetics,stress", "remaining_topics", "", "pending_milestone", "100%"), user("sigamos")},
			wantType:    "summary",
			wantHeading: "🎉 ¡Lo has conseguido!",
			wantEmotion: "celebratory",
		},
		{
			name:        "an unknown milestone is ignored",
			msgs:        []Message{system("contract", "module", "module", "anxiety-basics", "covered_topics", "", "remaining_topics", "stress=Stress", "pending_milestone", "33%"), user("go on")},
			wantType:    "educational",
			wantHeading: "Stress",
			wantEmotion: "informative",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := moduleAnswer(t, tt.msgs)
			meta := got["meta"].(map[string]any)
			blocks := got["content"].(map[string]any)["text_blocks"].([]any)
			if meta["response_type"] != tt.wantType || meta["emotion"] != tt.wantEmotion || !hasBlock(blocks, "heading", tt.wantHeading) {
				t.Errorf("got type %v emotion %v blocks %v, want %s %s with heading %q", meta["response_type"], meta["emotion"], blocks, tt.wantType, tt.wantEmotion, tt.wantHeading)
			}
		})
	}
}
