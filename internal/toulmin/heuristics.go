package toulmin

import "strings"

// check is the validation heuristic of one Toulmin element; see the table in the package
// comment and HEURISTICS.md.
type check struct {
	// minWords is the least number of words the text must have.
	minWords int
	// markers, when set, must occur in the text as whole words.
	markers phraseList
	// noQuestion rejects text that asks instead of asserting.
	noQuestion bool
}

var (
	linkWords = phrases(
		"because", "since", "therefore", "so", "means", "meaning", "mean", "if", "which", "shows",
		"show", "thus", "hence", "implies", "imply", "given", "that is why", "as a result",
		"porque", "ya que", "puesto que", "dado que", "por lo tanto", "así que", "por eso", "entonces",
		"significa", "significan", "si", "demuestra", "demuestran", "muestra", "muestran", "implica",
		"lo que",
	)
	hedgeWords = phrases(
		"most", "mostly", "usually", "probably", "likely", "often", "generally", "typically",
		"in most cases", "some", "many", "rarely", "unless", "possibly", "may", "might", "could",
		"sometimes", "frequently", "almost", "tend", "tends", "presumably", "in general",
		"la mayoría", "mayoría", "generalmente", "probablemente", "normalmente", "a menudo", "en general",
		"algunos", "algunas", "muchos", "muchas", "casi", "suele", "suelen", "posiblemente", "quizás",
		"quizá", "tal vez", "a veces", "frecuentemente", "en la mayoría de los casos", "puede", "pueden",
	)
	counterWords = phrases(
		"unless", "except", "however", "but", "although", "though", "if", "when", "critics",
		"opponents", "others argue", "some argue", "whereas", "despite", "even if", "counterargument",
		"a menos que", "excepto", "sin embargo", "pero", "aunque", "salvo", "si", "cuando", "críticos",
		"opositores", "no obstante", "a pesar", "otros argumentan", "algunos argumentan",
	)
)

// checks holds the heuristic of every step.
var checks = map[string]check{
	StepClaim:          {minWords: 4, noQuestion: true},
	StepGrounds:        {minWords: 5},
	StepWarrant:        {minWords: 5, markers: linkWords},
	StepGroundsBacking: {minWords: 5},
	StepWarrantBacking: {minWords: 5},
	StepQualifier:      {minWords: 1, markers: hedgeWords},
	StepRebuttal:       {minWords: 3, markers: counterWords},
}

// plausible reports whether text passes the validation heuristic of step: whether it could be
// a finished version of that Toulmin element. The heuristics are deliberately lenient; they
// stop the model from advancing past an empty or obviously unfit step, not from judging style.
func plausible(step, text string) bool {
	c, ok := checks[step]
	if !ok {
		return false
	}
	text = strings.TrimSpace(text)
	toks := tokenize(text)
	if len(toks) < c.minWords {
		return false
	}
	if c.noQuestion && (strings.HasSuffix(text, "?") || strings.HasPrefix(text, "¿")) {
		return false
	}
	return c.markers == nil || c.markers.in(toks)
}
