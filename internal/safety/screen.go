package safety

import (
	"context"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// ruleSpec is one row of the rule table, before compilation.
type ruleSpec struct {
	id  string
	cat Category
	sev Severity
	// stage is the stage the rule screens; the zero value means StageInput.
	stage Stage
	// re is the pattern, in the notation described at the top of rules.go.
	re string
	// negatable drops a match preceded, within three words of its clause, by a negation
	// ("I would never hurt myself", "no me voy a matar").
	negatable bool
	// negInside drops a match whose own words hold a negation, for patterns with a gap
	// ("my dad never hits me").
	negInside bool
	// unless drops a match followed, in its clause, by this pattern: the hyperbole of "I want
	// to die of embarrassment" or "me quiero morir de la vergüenza".
	unless string
	// whom says how an input match decides whom the text concerns; the zero value takes it
	// from the category (CategoryConcernOther is someone else, any other the learner).
	whom whom
}

// whom is how a rule tells whom its match concerns.
type whom int

const (
	// whomCategory: the rule's category says it (the learner, or someone the learner names).
	whomCategory whom = iota
	// whomThird: a third person ("killed herself", "se suicidó") is someone the learner knows
	// when the text names one of the learner's own (relationMarkers) or the sentence names
	// one otherwise (personalMarkers), else a topic when the text is about one (topicMarkers),
	// else, to be safe, someone the learner knows.
	whomThird
)

// rule is a compiled ruleSpec.
type rule struct {
	ruleSpec
	// branches are the pattern's top-level alternatives, each compiled with its own
	// prefilter, so that one branch written around a common word ("my", "will") does not make
	// the whole rule's regular expression run on every turn.
	branches []branch
	unless   *regexp.Regexp
	// lits are literals one of which every match contains (nil: unknown): the union of the
	// branches' literals.
	lits []string
}

// branch is one top-level alternative of a rule's pattern.
type branch struct {
	re *regexp.Regexp
	// lits are literals one of which every match contains (nil: unknown), a cheap prefilter.
	lits []string
}

// negations are the words that, just before a negatable match, turn it into a denial.
var negations = map[string]bool{
	"not": true, "never": true, "no": true, "dont": true, "didnt": true, "wont": true,
	"wouldnt": true, "doesnt": true, "isnt": true, "cant": true, "nunca": true, "jamas": true,
	"ni": true, "tampoco": true, "nadie": true,
}

// Screen is the built-in offline classifier. It is safe for concurrent use, allocates little,
// and does no I/O, so it never fails and never times out: it is the screen that always runs.
type Screen struct {
	rules map[Stage][]rule
	// output is the output rules' matches spelled out as words, which tells the window what
	// model text a rule could still need.
	output *phrases
}

// NewScreen compiles the built-in rule table.
func NewScreen() (*Screen, error) {
	return compile(ruleTable)
}

// compile checks and compiles a rule table.
func compile(specs []ruleSpec) (*Screen, error) {
	s := &Screen{rules: map[Stage][]rule{}}
	seen := map[string]bool{}
	var outputs []string
	for _, sp := range specs {
		if seen[sp.id] {
			return nil, fmt.Errorf("safety: rule %s defined twice", sp.id)
		}
		seen[sp.id] = true
		if sp.stage == "" {
			sp.stage = StageInput
		}
		r := rule{ruleSpec: sp}
		alts, err := alternatives(expand(sp.re))
		if err != nil {
			return nil, fmt.Errorf("safety: rule %s: %w", sp.id, err)
		}
		for _, alt := range alts {
			re, err := regexp.Compile(` (?:` + alt + `) `)
			if err != nil {
				return nil, fmt.Errorf("safety: rule %s: %w", sp.id, err)
			}
			b := branch{re: re, lits: requiredLiterals(re.String())}
			r.branches = append(r.branches, b)
			if b.lits == nil || (len(r.branches) > 1 && r.lits == nil) {
				r.lits = nil
			} else {
				r.lits = append(r.lits, b.lits...)
			}
		}
		if sp.unless != "" {
			// What follows a match starts after its closing space.
			if r.unless, err = regexp.Compile(`^(?:` + expand(sp.unless) + `) `); err != nil {
				return nil, fmt.Errorf("safety: rule %s unless: %w", sp.id, err)
			}
		}
		s.rules[sp.stage] = append(s.rules[sp.stage], r)
		if sp.stage == StageOutput {
			outputs = append(outputs, sp.re)
		}
	}
	s.output = newPhrases(outputs)
	return s, nil
}

// expand replaces the table's shorthands: "~" with a gap of up to three words and "$" with the
// end of a clause (the space before it belongs to the pattern's previous word).
func expand(p string) string {
	p = strings.ReplaceAll(p, "~", `(?:[a-z0-9]+ ){0,3}`)
	p = strings.ReplaceAll(p, " $", ` (?:\||,)`)
	return p
}

// Check screens t with the rules of its stage. It never returns an error; it has the
// signature of a Classifier so the wiring treats it as one.
func (s *Screen) Check(_ context.Context, t Text) (Verdict, error) {
	return s.check(t.Stage, t.Content), nil
}

// check screens content with the rules of stage; the window calls it directly. On learner
// input it also says whom each match concerns (see concern): a match about a topic of study
// is no crisis, and a verdict with nothing but such matches carries CategoryTopic, so the
// audit shows what the screen saw and let go.
func (s *Screen) check(stage Stage, content string) Verdict {
	norm := normalize(content)
	var grams gramSet
	grams.add(norm)
	var v Verdict
	topic := false
	for i := range s.rules[stage] {
		r := &s.rules[stage][i]
		m := r.hit(norm, &grams)
		if m == nil {
			continue
		}
		v.Rules = append(v.Rules, r.id)
		c := ConcernSelf
		if stage == StageInput {
			c = r.concern(norm, m)
		}
		if c == ConcernTopic {
			topic = true
			continue
		}
		v.Crisis = true
		v.Concern = maxConcern(v.Concern, c)
		if !slices.Contains(v.Categories, r.cat) {
			v.Categories = append(v.Categories, r.cat)
		}
		v.Severity = max(v.Severity, r.sev)
	}
	if stage == StageOutput {
		v.Concern = ConcernNone
	}
	if topic && !v.Crisis {
		v.Categories, v.Concern = []Category{CategoryTopic}, ConcernTopic
	}
	slices.Sort(v.Categories)
	return v
}

// concern says whom r's match m in norm concerns.
func (r *rule) concern(norm string, m []int) Concern {
	sentence := sentenceAt(norm, m)
	switch {
	case r.cat == CategoryConcernOther && classFrames.MatchString(norm) && !ownMarkers.MatchString(sentence):
		// A class exercise about helping "a friend", with no one of the learner's own named.
		return ConcernTopic
	case r.whom == whomThird:
		switch {
		case relationMarkers.MatchString(norm) || personalMarkers.MatchString(sentence):
			return ConcernOther
		case topicMarkers.MatchString(norm):
			return ConcernTopic
		}
		return ConcernOther
	case r.cat == CategoryConcernOther:
		return ConcernOther
	case topicFramesAfter.MatchString(norm[m[1]:]) || topicFramesBefore.MatchString(norm[:m[0]+1]):
		return ConcernTopic
	}
	return ConcernSelf
}

// sentenceAt returns the sentence of norm around the match m, with its boundary marks.
func sentenceAt(norm string, m []int) string {
	start := strings.LastIndex(norm[:m[0]+1], " | ")
	end := strings.Index(norm[m[1]-1:], " | ")
	if start < 0 {
		start = 0
	}
	if end < 0 {
		return norm[start:]
	}
	return norm[start : m[1]-1+end+3]
}

// hit returns the first match of r in norm that survives its negation and hyperbole checks,
// or nil; grams is norm's gramSet.
func (r *rule) hit(norm string, grams *gramSet) []int {
	for i := range r.branches {
		b := &r.branches[i]
		if !mayMatch(norm, grams, b.lits) {
			continue
		}
		for _, m := range b.re.FindAllStringIndex(norm, -1) {
			if r.negatable && negatedBefore(norm[:m[0]+1]) {
				continue
			}
			if r.negInside && hasNegation(norm[m[0]:m[1]]) {
				continue
			}
			if r.unless != nil && r.unless.MatchString(norm[m[1]:]) {
				continue
			}
			return m
		}
	}
	return nil
}

// alternatives splits a pattern into its top-level alternatives, as written (a "|" inside a
// group or a character class, or escaped, does not split).
func alternatives(p string) ([]string, error) {
	if _, err := syntax.Parse(p, syntax.Perl); err != nil {
		return nil, err
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case '|':
			if depth == 0 {
				out = append(out, p[start:i])
				start = i + 1
			}
		}
	}
	return append(out, p[start:]), nil
}

// negatedBefore reports whether one of the last three words of before, within its clause,
// is a negation.
func negatedBefore(before string) bool {
	words := strings.Fields(before)
	for i, n := len(words)-1, 0; i >= 0 && n < 3; i, n = i-1, n+1 {
		w := words[i]
		if w == "|" || w == "," {
			return false
		}
		if negations[w] {
			return true
		}
	}
	return false
}

// hasNegation reports whether any word of span is a negation.
func hasNegation(span string) bool {
	for _, w := range strings.Fields(span) {
		if negations[w] {
			return true
		}
	}
	return false
}
