package replay

import (
	"math"
	"strconv"
	"strings"
)

// topic is one topic of a learning module as the facts list it.
type topic struct{ id, name string }

// moduleText holds the module frames of one language. Placeholders: {name}, {next}, {m}, {n}.
type moduleText struct {
	celebrate, celebrated        string
	milestoneSuccess             []string
	genericPara1, genericPara2   []string
	genericTip                   []string
	question, formThanks         string
	prompt, promptLast           string
	more, example, continueTo    string
	wrapUp                       string
	summaryHeading, summaryDone  string
	summaryTip                   string
	summaryPrompt                string
	summarySuggestions           []string
	welcomeHeading, welcome      string
	welcomePrompt                string
	welcomeSuggestions           []string
	checkTitle, checkDescription string
	checkLabel, checkSubmit      string
	checkOptions                 [][2]string
	pickTitle, pickDescription   string
	pickLabel, pickSubmit        string
	phase, review                string
}

var moduleTexts = map[string]moduleText{
	"en": {
		celebrate:  "🎉 {m} Complete!",
		celebrated: "🎉 You Made It!",
		milestoneSuccess: []string{
			"You've reached **{m}** of this module: {n} topics covered so far. That's real progress, and it comes from showing up and engaging with each idea.",
			"**{m}** done! You've worked through {n} topics, and each one builds on the last. Keep going at your own pace.",
		},
		genericPara1: []string{
			"Let's look at **{name}**. It builds on what we've covered so far and shows how the ideas connect in everyday situations.",
			"Next up is **{name}**. Understanding it gives you one more way to make sense of what you experience and to respond with intention.",
		},
		genericPara2: []string{
			"As we go through it, notice which parts feel familiar from your own life; there are no right or wrong answers here.",
			"Take it one step at a time: you don't need to remember everything, just the parts that feel useful to you.",
		},
		genericTip: []string{
			"A good way to remember **{name}** is to connect it to a recent situation from your own life.",
			"Try explaining **{name}** in your own words to someone you trust; teaching is one of the best ways to learn.",
		},
		question:           "Thanks for your question. Let's explore it together with the next topic, **{name}**.",
		formThanks:         "Thank you for sharing that. It helps me tailor what comes next to your experience.",
		prompt:             "Does this make sense so far? You can ask a question, share your own experience, or continue to {next}.",
		promptLast:         "Does this make sense so far? Ask a question, share your experience, or let's wrap up the module.",
		more:               "Tell me more about {name}",
		example:            "Can you give me an example?",
		continueTo:         "Continue to {next}",
		wrapUp:             "Let's wrap up",
		summaryHeading:     "Module Summary",
		summaryDone:        "You've covered all {n} topics of this module. Here is what you have worked through:",
		summaryTip:         "Revisit any topic whenever you like: practice is what turns understanding into a skill.",
		summaryPrompt:      "What would you like to do now?",
		summarySuggestions: []string{"Review a topic", "Summarize the key ideas", "Give me a practice exercise"},
		welcomeHeading:     "Welcome",
		welcome:            "Welcome! I'm here to guide you through this module at your own pace. You can ask questions at any time, share your experience, or simply tell me what you'd like to explore.",
		welcomePrompt:      "Where would you like to start?",
		welcomeSuggestions: []string{"Start from the beginning", "Give me an overview", "I have a question"},
		checkTitle:         "Quick Check",
		checkDescription:   "Optional: this helps me adjust the pace to you.",
		checkLabel:         "How clear was this topic for you?",
		checkSubmit:        "Send",
		checkOptions:       [][2]string{{"clear", "Clear, let's continue"}, {"mostly", "Mostly clear"}, {"unclear", "I'd like another explanation"}},
		pickTitle:          "What's Next?",
		pickDescription:    "Optional: choose what you'd like to explore.",
		pickLabel:          "Which topics interest you most?",
		pickSubmit:         "Continue",
		phase:              "Structured Learning",
		review:             "Milestone Review",
	},
	"es": {
		celebrate:  "🎉 ¡{m} completado!",
		celebrated: "🎉 ¡Lo has conseguido!",
		milestoneSuccess: []string{
			"Has alcanzado el **{m}** de este módulo: llevas {n} temas. Es un progreso real, y viene de tu constancia y de implicarte con cada idea.",
			"¡**{m}** completado! Has trabajado {n} temas, y cada uno se apoya en el anterior. Sigue a tu ritmo.",
		},
		genericPara1: []string{
			"Veamos **{name}**. Se apoya en lo que hemos visto hasta ahora y muestra cómo se conectan las ideas en situaciones cotidianas.",
			"Ahora toca **{name}**. Entenderlo te da una forma más de dar sentido a lo que vives y de responder con intención.",
		},
		genericPara2: []string{
			"Mientras lo vemos, fíjate en qué partes te resultan familiares por tu propia vida; aquí no hay respuestas correctas ni incorrectas.",
			"Ve paso a paso: no necesitas recordarlo todo, solo lo que te resulte útil.",
		},
		genericTip: []string{
			"Una buena forma de recordar **{name}** es relacionarlo con una situación reciente de tu vida.",
			"Prueba a explicar **{name}** con tus palabras a alguien de confianza; enseñar es una de las mejores formas de aprender.",
		},
		question:           "Gracias por tu pregunta. Vamos a explorarla junto con el siguiente tema, **{name}**.",
		formThanks:         "Gracias por compartirlo. Me ayuda a adaptar lo que viene a tu experiencia.",
		prompt:             "¿Tiene sentido hasta aquí? Puedes hacer una pregunta, compartir tu experiencia o continuar con {next}.",
		promptLast:         "¿Tiene sentido hasta aquí? Haz una pregunta, comparte tu experiencia o cerremos el módulo.",
		more:               "Cuéntame más sobre {name}",
		example:            "¿Me das un ejemplo?",
		continueTo:         "Continuar con {next}",
		wrapUp:             "Cerremos el módulo",
		summaryHeading:     "Resumen del módulo",
		summaryDone:        "Has completado los {n} temas de este módulo. Esto es lo que has trabajado:",
		summaryTip:         "Vuelve a cualquier tema cuando quieras: la práctica es lo que convierte la comprensión en una habilidad.",
		summaryPrompt:      "¿Qué te gustaría hacer ahora?",
		summarySuggestions: []string{"Repasar un tema", "Resumir las ideas clave", "Dame un ejercicio práctico"},
		welcomeHeading:     "Bienvenida",
		welcome:            "¡Hola! Estoy aquí para acompañarte en este módulo a tu ritmo. Puedes hacer preguntas cuando quieras, compartir tu experiencia o decirme qué te gustaría explorar.",
		welcomePrompt:      "¿Por dónde te gustaría empezar?",
		welcomeSuggestions: []string{"Empezar desde el principio", "Dame una visión general", "Tengo una pregunta"},
		checkTitle:         "Comprobación rápida",
		checkDescription:   "Opcional: me ayuda a ajustar el ritmo a ti.",
		checkLabel:         "¿Qué tan claro te ha quedado este tema?",
		checkSubmit:        "Enviar",
		checkOptions:       [][2]string{{"clear", "Claro, sigamos"}, {"mostly", "Bastante claro"}, {"unclear", "Me gustaría otra explicación"}},
		pickTitle:          "¿Qué sigue?",
		pickDescription:    "Opcional: elige lo que te gustaría explorar.",
		pickLabel:          "¿Qué temas te interesan más?",
		pickSubmit:         "Continuar",
		phase:              "Aprendizaje estructurado",
		review:             "Repaso de hito",
	},
}

var milestones = map[string]bool{"25%": true, "50%": true, "75%": true, "100%": true}

// module answers a learning-module turn with a structured response that teaches the next
// remaining topic, celebrating a milestone first when the learner just crossed one.
func module(c *conv) object {
	loc := c.locale()
	tx := moduleTexts[loc]
	covered := splitList(c.fact("covered_topics"), ",")
	var remaining []topic
	for _, item := range splitList(c.fact("remaining_topics"), ";") {
		id, name, ok := strings.Cut(item, "=")
		id, name = strings.TrimSpace(id), strings.TrimSpace(name)
		if !ok || name == "" {
			name = id
		}
		remaining = append(remaining, topic{id, name})
	}
	milestone := c.fact("pending_milestone")
	if !milestones[milestone] {
		milestone = ""
	}
	seed := c.seed("module")

	var blocks []object
	emotion := "informative"
	if milestone != "" {
		heading := strings.ReplaceAll(tx.celebrate, "{m}", milestone)
		if milestone == "100%" {
			heading = tx.celebrated
		}
		blocks = append(blocks, textBlock("heading", heading, 2),
			textBlock("success", strings.NewReplacer("{m}", milestone, "{n}", strconv.Itoa(len(covered))).Replace(pick(seed, tx.milestoneSuccess...)), 0))
		emotion = "celebratory"
	}

	if !c.has("remaining_topics") {
		blocks = append(blocks, textBlock("heading", tx.welcomeHeading, 2), textBlock("paragraph", tx.welcome, 0))
		return structured(blocks, nil, nextStepObj(tx.welcomePrompt, tx.welcomeSuggestions), "conversational",
			progress(c, covered, nil, -1, milestone), nil, pickEmotion(emotion, "encouraging"))
	}
	if len(remaining) == 0 {
		return moduleSummary(c, tx, blocks, covered, milestone, emotion)
	}

	t := remaining[0]
	anxious := isAnxietyModule(c.fact("module"), append(remaining, topicsOf(covered)...))
	text := genericLesson(tx, t.name, seed)
	if anxious {
		if l := findLesson(t); l != nil {
			text = l.en
			if loc == "es" {
				text = l.es
			}
		}
	}

	msg := strings.TrimSpace(c.last())
	responseType := "educational"
	switch {
	case isFormAnswer(msg):
		blocks = append(blocks, textBlock("paragraph", tx.formThanks, 0))
		emotion = pickEmotion(emotion, "supportive")
	case strings.HasSuffix(msg, "?"):
		blocks = append(blocks, textBlock("paragraph", strings.ReplaceAll(tx.question, "{name}", t.name), 0))
		responseType = "conversational"
		emotion = pickEmotion(emotion, "encouraging")
	}
	blocks = append(blocks, textBlock("heading", text.heading, 2))
	for _, p := range text.paragraphs {
		blocks = append(blocks, textBlock("paragraph", p, 0))
	}
	for _, b := range text.extras {
		blocks = append(blocks, textBlock(b.kind, b.text, 0))
	}

	var forms []object
	if len(c.users)%3 == 0 {
		forms = []object{moduleForm(tx, text.form, remaining[1:])}
	}

	prompt := tx.promptLast
	suggestions := []string{strings.ReplaceAll(tx.more, "{name}", t.name), tx.example, tx.wrapUp}
	if len(remaining) > 1 {
		next := remaining[1].name
		prompt = strings.ReplaceAll(tx.prompt, "{next}", next)
		suggestions[2] = strings.ReplaceAll(tx.continueTo, "{next}", next)
	}
	phase := tx.phase
	if milestone != "" {
		phase = tx.review
	}
	state := object{{"current_phase", phase}, {"current_section", t.name}}
	return structured(blocks, forms, nextStepObj(prompt, suggestions), responseType,
		progress(c, append(covered, t.id), []string{t.id}, len(remaining)-1, milestone), state, emotion)
}

// moduleSummary closes a module whose topics are all covered.
func moduleSummary(c *conv, tx moduleText, blocks []object, covered []string, milestone, emotion string) object {
	loc := c.locale()
	anxious := isAnxietyModule(c.fact("module"), topicsOf(covered))
	items := make([]string, 0, len(covered))
	for _, id := range covered {
		label := humanize(id)
		if l := findLesson(topic{id, ""}); anxious && l != nil {
			label = l.en.heading
			if loc == "es" {
				label = l.es.heading
			}
		}
		items = append(items, "- "+label)
	}
	blocks = append(blocks,
		textBlock("heading", tx.summaryHeading, 2),
		textBlock("paragraph", strings.ReplaceAll(tx.summaryDone, "{n}", strconv.Itoa(len(covered))), 0))
	if len(items) > 0 {
		blocks = append(blocks, textBlock("list", strings.Join(items, "\n"), 0))
	}
	blocks = append(blocks, textBlock("tip", tx.summaryTip, 0))
	state := object{{"current_phase", tx.review}, {"current_section", tx.summaryHeading}}
	return structured(blocks, nil, nextStepObj(tx.summaryPrompt, tx.summarySuggestions), "summary",
		progress(c, covered, []string{}, 0, milestone), state, pickEmotion(emotion, "encouraging"))
}

// structured assembles a structured response: content first with text_blocks first, so the
// module contract can stream the blocks while the rest is generated.
func structured(blocks, forms []object, next object, responseType string, prog, state object, emotion string) object {
	content := object{{"text_blocks", blocks}}
	if len(forms) > 0 {
		content = append(content, field{"forms", forms})
	}
	content = append(content, field{"next_step", next})
	meta := object{{"response_type", responseType}, {"progress", prog}}
	if state != nil {
		meta = append(meta, field{"module_state", state})
	}
	meta = append(meta, field{"emotion", emotion})
	return object{{"content", content}, {"meta", meta}}
}

// textBlock returns a text block with its type before its content, which lets a streaming
// reader style the text as it arrives.
func textBlock(kind, text string, level int) object {
	b := object{{"type", kind}, {"content", text}}
	if level > 0 {
		b = append(b, field{"level", level})
	}
	return b
}

func nextStepObj(prompt string, suggestions []string) object {
	return object{{"prompt", prompt}, {"suggestions", suggestions}, {"can_skip", true}}
}

// progress reports coverage after this answer. The percentage counts covered topics against all
// topics the facts list; when the remaining topics are unknown (remaining < 0) it echoes the
// stated percentage.
func progress(c *conv, covered, newly []string, remaining int, milestone string) object {
	pct, _ := strconv.ParseFloat(c.fact("percentage"), 64)
	if total := len(covered) + remaining; remaining >= 0 && total > 0 {
		pct = math.Round(100 * float64(len(covered)) / float64(total))
	}
	p := object{{"percentage", min(max(pct, 0), 100)}, {"covered_topics", nonNil(covered)}}
	if newly != nil {
		p = append(p, field{"newly_covered", newly})
	}
	if remaining >= 0 {
		p = append(p, field{"remaining_topics", remaining})
	}
	if milestone != "" {
		p = append(p, field{"milestone", milestone})
	}
	return p
}

// moduleForm returns the lesson's own form, else a choice among the next topics when at least two
// remain after this one, else a check on how clear the topic was.
func moduleForm(tx moduleText, f *formDef, later []topic) object {
	if f == nil && len(later) >= 2 {
		opts := make([][2]string, 0, 4)
		for _, t := range later[:min(len(later), 4)] {
			opts = append(opts, [2]string{t.id, t.name})
		}
		f = &formDef{id: "next_topics_choice", title: tx.pickTitle, description: tx.pickDescription,
			submit: tx.pickSubmit, fieldID: "interesting_topics", fieldType: "checkbox", label: tx.pickLabel, options: opts}
	}
	if f == nil {
		f = &formDef{id: "understanding_check", title: tx.checkTitle, description: tx.checkDescription,
			submit: tx.checkSubmit, fieldID: "clarity", fieldType: "radio", label: tx.checkLabel, options: tx.checkOptions}
	}
	opts := make([]object, len(f.options))
	for i, o := range f.options {
		opts[i] = object{{"value", o[0]}, {"label", o[1]}}
	}
	return object{
		{"id", f.id},
		{"title", f.title},
		{"description", f.description},
		{"optional", true},
		{"fields", []object{{
			{"id", f.fieldID},
			{"type", f.fieldType},
			{"label", f.label},
			{"required", false},
			{"options", opts},
		}}},
		{"submit_label", f.submit},
	}
}

// genericLesson teaches a topic the replay model has no content for, from its name alone.
func genericLesson(tx moduleText, name string, seed uint64) lessonText {
	r := strings.NewReplacer("{name}", name)
	return lessonText{
		heading: name,
		paragraphs: []string{
			r.Replace(pick(seed, tx.genericPara1...)),
			r.Replace(pick(seed>>8, tx.genericPara2...)),
		},
		extras: []block{{"tip", r.Replace(pick(seed>>16, tx.genericTip...))}},
	}
}

// findLesson returns the anxiety lesson whose keys match the topic's id or name.
func findLesson(t topic) *lesson {
	hay := strings.ToLower(strings.NewReplacer("_", " ", "-", " ").Replace(t.id + " " + t.name))
	for i := range anxietyLessons {
		for _, k := range anxietyLessons[i].keys {
			if strings.Contains(hay, k) {
				return &anxietyLessons[i]
			}
		}
	}
	return nil
}

// isAnxietyModule reports whether the module is about anxiety, so that its topics get the real
// lessons rather than lessons of another module that happen to share a keyword.
func isAnxietyModule(id string, topics []topic) bool {
	if s := strings.ToLower(id); strings.Contains(s, "anx") || strings.Contains(s, "ansie") {
		return true
	}
	for _, t := range topics {
		s := strings.ToLower(t.id + " " + t.name)
		if strings.Contains(s, "anxiety") || strings.Contains(s, "ansiedad") {
			return true
		}
	}
	return false
}

// isFormAnswer reports whether the learner's message is a submitted form rather than free text:
// the module contract shows a submission as `Form "Title":` followed by one line per answer; a
// JSON rendering is recognised too.
func isFormAnswer(msg string) bool {
	l := strings.ToLower(msg)
	return strings.HasPrefix(l, `form "`) || strings.HasPrefix(l, "{") || strings.Contains(l, `"values"`)
}

func topicsOf(ids []string) []topic {
	ts := make([]topic, len(ids))
	for i, id := range ids {
		ts[i] = topic{id: id}
	}
	return ts
}

// humanize turns a topic id into a readable label: "fight_flight" → "Fight flight".
func humanize(id string) string {
	return capitalize(strings.Join(strings.FieldsFunc(id, func(r rune) bool { return r == '_' || r == '-' }), " "))
}

func splitList(s, sep string) []string {
	var out []string
	for _, item := range strings.Split(s, sep) {
		if item = strings.TrimSpace(item); item != "" && item != "none" {
			out = append(out, item)
		}
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// pickEmotion keeps a celebration when there is one.
func pickEmotion(current, want string) string {
	if current == "celebratory" {
		return current
	}
	return want
}
