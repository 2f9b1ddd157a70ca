package replay

import (
	"regexp"
	"strings"
)

var contractions = strings.NewReplacer(" a el ", " al ", " de el ", " del ")

// steps is the Toulmin sequence.
var steps = []string{"claim", "grounds", "warrant", "groundsBacking", "warrantBacking", "qualifier", "rebuttal"}

// nextStep returns the step after step, or "" after rebuttal.
func nextStep(step string) string {
	for i, s := range steps {
		if s == step && i+1 < len(steps) {
			return steps[i+1]
		}
	}
	return ""
}

func validStep(step string) bool {
	for _, s := range steps {
		if s == step {
			return true
		}
	}
	return false
}

// element is what the coach says about one Toulmin element in one language.
type element struct {
	// name is the element with a definite article ("the claim", "los fundamentos") and yours
	// with a possessive ("your claim", "tus fundamentos"), so Spanish frames need no agreement.
	name, yours string
	// definition and tip are full sentences.
	definition, tip string
	questions       []string
	rationale       string
}

var elements = map[string]map[string]element{
	"en": {
		"claim": {
			name: "the claim", yours: "your claim",
			definition: "The claim is the position you want your audience to accept.",
			tip:        "A strong claim is specific and debatable, so a reasonable person could disagree with it.",
			questions: []string{
				"What exactly do you want your audience to accept, in one sentence?",
				"Who might reasonably disagree with your position, and why?",
				"Can you make your position more specific: who, what, and by when?",
			},
			rationale: "States your position in one clear, debatable sentence.",
		},
		"grounds": {
			name: "the grounds", yours: "your grounds",
			definition: "The grounds are the evidence or facts that support your claim.",
			tip:        "The most persuasive grounds are concrete: data, examples or observations that others can check.",
			questions: []string{
				"What specific evidence, numbers or examples support your claim?",
				"Where does that evidence come from, and could someone else check it?",
				"Which single fact would most convince a skeptic?",
			},
			rationale: "Presents concrete evidence that others can check.",
		},
		"warrant": {
			name: "the warrant", yours: "your warrant",
			definition: "The warrant is the reasoning that explains why your grounds support your claim.",
			tip:        "A good warrant links evidence to position, often with words like because, since or therefore.",
			questions: []string{
				"Why does your evidence actually prove your claim?",
				"What general rule connects your evidence to your position?",
				"If someone accepts your evidence, what makes them accept your claim too?",
			},
			rationale: "Makes explicit why the evidence leads to the claim.",
		},
		"groundsBacking": {
			name: "the backing for the grounds", yours: "your backing for the grounds",
			definition: "The backing for the grounds shows why your evidence is reliable.",
			tip:        "Think about sources, methods or track records that make your evidence trustworthy.",
			questions: []string{
				"Who collected your evidence, and why should we trust them?",
				"How was the evidence gathered, and is the method sound?",
				"Has anyone confirmed the same evidence independently?",
			},
			rationale: "Shows where the evidence comes from and why it is trustworthy.",
		},
		"warrantBacking": {
			name: "the backing for the warrant", yours: "your backing for the warrant",
			definition: "The backing for the warrant supports the reasoning itself, not the evidence.",
			tip:        "Principles, research, laws or expert consensus can show that the link between evidence and claim holds.",
			questions: []string{
				"What principle, research or precedent makes your reasoning hold?",
				"Would experts in the field accept your reasoning, and on what basis?",
				"Where has the same reasoning worked before?",
			},
			rationale: "Grounds the reasoning in an accepted principle or source.",
		},
		"qualifier": {
			name: "the qualifier", yours: "your qualifier",
			definition: "The qualifier states how strong your claim is and where its limits are.",
			tip:        "Words like usually, most or probably show honest limits and make an argument more credible.",
			questions: []string{
				"In which cases does your claim hold, and how certain are you?",
				"Is your claim always true, or true in most cases?",
				"What word best describes your confidence: certainly, probably, usually?",
			},
			rationale: "Sets an honest limit on how far the claim reaches.",
		},
		"rebuttal": {
			name: "the rebuttal", yours: "your rebuttal",
			definition: "The rebuttal names the exceptions or counter-arguments to your claim.",
			tip:        "Naming the strongest objection, and when it would apply, shows you have thought the argument through.",
			questions: []string{
				"What would a thoughtful critic say, and when would they be right?",
				"Under what circumstances would your claim not hold?",
				"What is the strongest objection to your argument?",
			},
			rationale: "Acknowledges when the claim would not hold.",
		},
	},
	"es": {
		"claim": {
			name: "la afirmación", yours: "tu afirmación",
			definition: "La afirmación es la postura que quieres que tu público acepte.",
			tip:        "Una buena afirmación es concreta y discutible, de modo que una persona razonable podría no estar de acuerdo.",
			questions: []string{
				"¿Qué quieres exactamente que tu público acepte, en una sola frase?",
				"¿Quién podría no estar de acuerdo con tu postura, y por qué?",
				"¿Puedes concretar más tu postura: quién, qué y para cuándo?",
			},
			rationale: "Expresa tu postura en una frase clara y discutible.",
		},
		"grounds": {
			name: "los fundamentos", yours: "tus fundamentos",
			definition: "Los fundamentos son las pruebas o los hechos que sostienen tu afirmación.",
			tip:        "Los fundamentos más convincentes son concretos: datos, ejemplos u observaciones que otros pueden comprobar.",
			questions: []string{
				"¿Qué pruebas, cifras o ejemplos concretos sostienen tu afirmación?",
				"¿De dónde salen esas pruebas, y podría comprobarlas otra persona?",
				"¿Qué dato convencería más a un escéptico?",
			},
			rationale: "Aporta pruebas concretas que otros pueden comprobar.",
		},
		"warrant": {
			name: "la garantía", yours: "tu garantía",
			definition: "La garantía es el razonamiento que explica por qué los fundamentos apoyan la afirmación.",
			tip:        "Una buena garantía une las pruebas con la postura, a menudo con palabras como porque, ya que o por lo tanto.",
			questions: []string{
				"¿Por qué tus pruebas demuestran de verdad tu afirmación?",
				"¿Qué regla general conecta tus pruebas con tu postura?",
				"Si alguien acepta tus pruebas, ¿qué le lleva a aceptar también tu afirmación?",
			},
			rationale: "Hace explícito por qué las pruebas llevan a la afirmación.",
		},
		"groundsBacking": {
			name: "el respaldo de los fundamentos", yours: "tu respaldo de los fundamentos",
			definition: "El respaldo de los fundamentos muestra por qué tus pruebas son fiables.",
			tip:        "Piensa en fuentes, métodos o trayectorias que hagan creíbles tus pruebas.",
			questions: []string{
				"¿Quién reunió tus pruebas, y por qué deberíamos confiar en esa fuente?",
				"¿Cómo se obtuvieron las pruebas, y es sólido el método?",
				"¿Alguien ha confirmado esas pruebas de forma independiente?",
			},
			rationale: "Muestra de dónde vienen las pruebas y por qué son fiables.",
		},
		"warrantBacking": {
			name: "el respaldo de la garantía", yours: "tu respaldo de la garantía",
			definition: "El respaldo de la garantía sostiene el razonamiento en sí, no las pruebas.",
			tip:        "Principios, investigaciones, leyes o el consenso de expertos pueden mostrar que el vínculo entre pruebas y afirmación se sostiene.",
			questions: []string{
				"¿Qué principio, investigación o precedente sostiene tu razonamiento?",
				"¿Aceptarían tu razonamiento los expertos del área, y por qué?",
				"¿Dónde ha funcionado antes ese mismo razonamiento?",
			},
			rationale: "Apoya el razonamiento en un principio o una fuente aceptados.",
		},
		"qualifier": {
			name: "el calificador", yours: "tu calificador",
			definition: "El calificador indica cuán fuerte es tu afirmación y dónde están sus límites.",
			tip:        "Palabras como generalmente, la mayoría o probablemente muestran límites honestos y dan credibilidad al argumento.",
			questions: []string{
				"¿En qué casos se cumple tu afirmación, y con cuánta seguridad?",
				"¿Tu afirmación es siempre cierta, o lo es en la mayoría de los casos?",
				"¿Qué palabra describe mejor tu seguridad: seguramente, probablemente, normalmente?",
			},
			rationale: "Pone un límite honesto al alcance de la afirmación.",
		},
		"rebuttal": {
			name: "la refutación", yours: "tu refutación",
			definition: "La refutación recoge las excepciones o los contraargumentos a tu afirmación.",
			tip:        "Nombrar la objeción más fuerte, y cuándo se aplicaría, demuestra que has pensado bien el argumento.",
			questions: []string{
				"¿Qué diría un crítico atento, y cuándo tendría razón?",
				"¿En qué circunstancias no se cumpliría tu afirmación?",
				"¿Cuál es la objeción más fuerte a tu argumento?",
			},
			rationale: "Reconoce cuándo la afirmación no se cumpliría.",
		},
	},
}

// frames holds the sentence frames of the coach's replies. Placeholders: {yours} (the current
// element with a possessive), {next} (the next element with its article), {quote}.
var frames = map[string]struct {
	quoteOpen, quoteClose                            string
	feedback                                         []string
	empty                                            []string
	nudge                                            []string
	question                                         []string
	propose, confirm, rewrite                        []string
	advance, finish                                  []string
	complete                                         []string
	defaultQualifier, defaultRebuttal, warrantSuffix string
}{
	"en": {
		quoteOpen: "\u201c", quoteClose: "\u201d",
		feedback: []string{
			"Good start on {yours}: {quote}.",
			"Thanks, this gives us something to work with for {yours}: {quote}.",
			"I can see where you're going with {yours}: {quote}.",
			"Nice, you've put a first version of {yours} on the table: {quote}.",
		},
		empty: []string{
			"Let's work on {yours} now.",
			"Time to build {yours}.",
			"Let's turn to {yours}.",
		},
		nudge: []string{
			"Let's keep developing {yours}; a full sentence in your own words works best.",
			"We're close, but {yours} needs a little more substance before I can propose it.",
			"Tell me a bit more so we can shape {yours} together.",
		},
		question: []string{
			"Good question.",
			"Happy to clarify.",
			"That's worth pausing on.",
		},
		propose: []string{
			"That works well as {yours}.",
			"This reads clearly as {yours}.",
			"You've got a solid version of {yours}.",
		},
		confirm: []string{
			"Great, let's lock that in as {yours}.",
			"Perfect, we'll use that for {yours}.",
			"Agreed, that's a good fit for {yours}.",
		},
		rewrite: []string{
			"Here's a tightened version of {yours}, in your own words.",
			"I've reworded {yours} so it reads more clearly.",
			"Here's a cleaner way to phrase {yours}.",
		},
		advance: []string{
			"I've polished it lightly so you can accept or edit it, and then we'll move on to {next}.",
			"Accept the proposal or adjust it, and we'll continue with {next}.",
			"Once you accept it, we'll work on {next}.",
		},
		finish: []string{
			"Accept it or adjust it, and your argument will be complete.",
			"Once you accept it, all seven parts of your argument are in place.",
		},
		complete: []string{
			"Congratulations, your argument is complete: all seven Toulmin elements are in place. Take a moment to read it from claim to rebuttal and check that each part supports the next.",
			"Well done, you've built a complete Toulmin argument. Reading it aloud from claim to rebuttal is a great way to spot any gap before you share it.",
		},
		defaultQualifier: "In most cases, ",
		defaultRebuttal:  "Unless ",
		warrantSuffix:    " \u2014 which is why the grounds support the claim",
	},
	"es": {
		quoteOpen: "«", quoteClose: "»",
		feedback: []string{
			"Buen comienzo con {yours}: {quote}.",
			"Gracias, esto nos da una base para {yours}: {quote}.",
			"Veo hacia dónde vas con {yours}: {quote}.",
			"Bien, ya tienes una primera versión de {yours}: {quote}.",
		},
		empty: []string{
			"Trabajemos ahora en {yours}.",
			"Es momento de construir {yours}.",
			"Pasemos a {yours}.",
		},
		nudge: []string{
			"Sigamos desarrollando {yours}; una frase completa con tus propias palabras funciona mejor.",
			"Vamos bien, pero {yours} necesita un poco más de contenido antes de que pueda proponerlo.",
			"Cuéntame un poco más para que demos forma a {yours} juntos.",
		},
		question: []string{
			"Buena pregunta.",
			"Con gusto lo aclaro.",
			"Vale la pena detenerse en eso.",
		},
		propose: []string{
			"Esto funciona bien para {yours}.",
			"Se entiende con claridad como {yours}.",
			"Tienes una versión sólida de {yours}.",
		},
		confirm: []string{
			"Perfecto, fijemos eso para {yours}.",
			"De acuerdo, usaremos eso para {yours}.",
			"Muy bien, eso encaja para {yours}.",
		},
		rewrite: []string{
			"Aquí tienes una versión más precisa de {yours}, con tus propias palabras.",
			"He reformulado {yours} para que se lea con más claridad.",
			"Esta es una forma más limpia de expresar {yours}.",
		},
		advance: []string{
			"He pulido un poco la propuesta para que puedas aceptarla o editarla, y después pasaremos a {next}.",
			"Acepta la propuesta o ajústala, y seguiremos con {next}.",
			"Cuando aceptes la propuesta, trabajaremos en {next}.",
		},
		finish: []string{
			"Acepta la propuesta o ajústala, y tu argumento estará completo.",
			"Cuando aceptes la propuesta, las siete partes de tu argumento estarán en su sitio.",
		},
		complete: []string{
			"Enhorabuena, tu argumento está completo: los siete elementos de Toulmin están en su sitio. Tómate un momento para leerlo de la afirmación a la refutación y comprobar que cada parte apoya a la siguiente.",
			"Muy bien hecho, has construido un argumento de Toulmin completo. Leerlo en voz alta de la afirmación a la refutación es una gran forma de detectar huecos antes de compartirlo.",
		},
		defaultQualifier: "En la mayoría de los casos, ",
		// "A menos que" would need the subjunctive, which the learner's sentence does not have;
		// "excepto cuando" takes it as written and is itself an exception marker.
		defaultRebuttal: "Excepto cuando ",
		warrantSuffix:   " \u2014 por eso los fundamentos apoyan la afirmación",
	},
}

// Markers the gateway's step heuristics look for; a proposal lacking them gets one added.
var (
	hedges = map[string][]string{
		"en": {"most", "usually", "probably", "likely", "often", "generally", "typically", "in most cases"},
		"es": {"la mayoría", "generalmente", "probablemente", "normalmente", "a menudo", "en la mayoría"},
	}
	exceptions = map[string][]string{
		"en": {"unless", "except", "however", "but", "although", "if"},
		"es": {"a menos que", "excepto", "sin embargo", "pero", "aunque", "salvo", "si"},
	}
	links = map[string][]string{
		"en": {"because", "since", "therefore", "means", "so"},
		"es": {"porque", "ya que", "por lo tanto", "significa", "así que"},
	}
)

// toulmin answers a Toulmin coaching turn with a CoachAIResult.
func toulmin(c *conv) object {
	loc := c.locale()
	fr := frames[loc]
	step := c.fact("step")
	if !validStep(step) {
		step = "claim"
	}
	el := elements[loc][step]
	seed := c.seed(step)
	fill := func(s string) string {
		next := ""
		if n := nextStep(step); n != "" {
			next = elements[loc][n].name
		}
		s = strings.NewReplacer("{yours}", el.yours, "{next}", next).Replace(s)
		// Spanish contracts "a el" and "de el" ("pasaremos al respaldo").
		return contractions.Replace(s)
	}

	if c.flag("is_complete", false) {
		return object{
			{"assistantText", pick(seed, fr.complete...)},
			{"step", step},
			{"confidence", 0.95},
			{"isComplete", true},
		}
	}

	msg := strings.TrimSpace(c.last())
	first := c.flag("first_turn_for_step", len(c.users) <= 1)
	rewrite := c.flag("rewrite_request", false)
	confirm := c.flag("confirmation", false)
	// A question gets an explanation, unless the contract read it as a request or a "yes".
	asking := strings.HasSuffix(msg, "?") && !rewrite && !confirm

	coach := func(opener string) object {
		text := fill(opener) + " " + el.definition + " " + el.tip
		return object{
			{"assistantText", text},
			{"step", step},
			{"confidence", 0.5},
			{"nextQuestion", pick(seed>>8, el.questions...)},
		}
	}
	if c.flag("opening_turn", false) {
		// The gateway opens the step without a learner message: introduce it.
		return coach(pick(seed, fr.empty...))
	}
	if asking {
		return coach(pick(seed, fr.question...))
	}

	var value, lead string
	switch {
	case first && !rewrite:
	case confirm:
		value, lead = c.confirmed(), pick(seed, fr.confirm...)
	case rewrite:
		value, lead = c.toRewrite(), pick(seed, fr.rewrite...)
	case substantive(msg):
		value, lead = msg, pick(seed, fr.propose...)
	}
	if value == "" {
		switch {
		case first && substantive(msg) && !rewrite:
			quote := fr.quoteOpen + snippet(msg, 10) + fr.quoteClose
			return coach(strings.ReplaceAll(pick(seed, fr.feedback...), "{quote}", quote))
		case first:
			return coach(pick(seed, fr.empty...))
		}
		return coach(pick(seed, fr.nudge...))
	}

	text := lead + " " + pick(seed>>16, fr.finish...)
	next := nextStep(step)
	if next != "" {
		text = lead + " " + pick(seed>>16, fr.advance...)
	}
	result := object{
		{"assistantText", fill(text)},
		{"step", step},
		{"confidence", []float64{0.85, 0.86, 0.87, 0.88, 0.89, 0.9}[seed%6]},
		{"proposedUpdate", object{
			{"field", step},
			{"value", polish(step, loc, value)},
			{"rationale", el.rationale},
		}},
	}
	if next == "" {
		return append(result, field{"isComplete", true})
	}
	return append(result, field{"shouldAdvance", true}, field{"nextStep", next})
}

// substantive reports whether msg says enough to become an element's text.
func substantive(msg string) bool { return len(words(msg)) >= 4 && !strings.HasSuffix(msg, "?") }

// confirmed returns the text a confirmation accepts: the step's draft, else the learner's
// previous substantive message.
func (c *conv) confirmed() string {
	if d := c.fact("draft_for_step"); strings.TrimSpace(d) != "" {
		return d
	}
	if p := c.before(1); substantive(p) {
		return p
	}
	return ""
}

// toRewrite returns the text a rewrite request is about: the draft, else the previous
// substantive message, else the request itself when it carries the text ("Improve: …").
func (c *conv) toRewrite() string {
	if v := c.confirmed(); v != "" {
		return v
	}
	msg := c.last()
	if _, rest, ok := strings.Cut(msg, ":"); ok && substantive(rest) {
		return rest
	}
	return ""
}

// leadIns are openings learners put before the element itself ("My claim is that …").
var leadIns = regexp.MustCompile(`(?i)^(?:(?:ok|okay|yes|sure|vale|sí)[,.!]\s+)?(?:(?:my|the|mi|mis|la|el|los|las)\s+` +
	`(?:claim|grounds|evidence|warrant|reasoning|backing|qualifier|rebuttal|afirmación|fundamentos|pruebas|garantía|razonamiento|respaldo|calificador|refutación)` +
	`(?:\s+(?:for|of|de|del)(?:\s+(?:the|la|los|el))?\s+\p{L}+)?\s+(?:is|are|es|son|would be|sería)\s+(?:that\s+|que\s+)?)?`)

// polish turns the learner's text into a proposal: tidy, capitalised, ending in a period, and
// carrying the marker the step's heuristics expect, so a learner who writes a decent sentence for
// each element gets through.
func polish(step, loc, text string) string {
	fr := frames[loc]
	text = strings.Join(words(text), " ")
	text = strings.Trim(text, "\"'«»“”")
	if m := leadIns.FindString(text); m != "" && len(words(text[len(m):])) >= 3 {
		text = text[len(m):]
	}
	text = strings.TrimRight(text, " .,;:!")
	switch step {
	case "qualifier":
		if !hasWord(text, hedges[loc]...) {
			text = fr.defaultQualifier + uncapitalize(text)
		}
	case "rebuttal":
		if !hasWord(text, exceptions[loc]...) {
			text = fr.defaultRebuttal + uncapitalize(text)
		}
	case "warrant":
		if !hasWord(text, links[loc]...) {
			text += fr.warrantSuffix
		}
	}
	return capitalize(text) + "."
}
