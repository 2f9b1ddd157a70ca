package safety

import (
	"context"
	"fmt"
	"regexp"
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
}

// rule is a compiled ruleSpec.
type rule struct {
	ruleSpec
	re     *regexp.Regexp
	unless *regexp.Regexp
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
		re, err := regexp.Compile(` (?:` + expand(sp.re) + `) `)
		if err != nil {
			return nil, fmt.Errorf("safety: rule %s: %w", sp.id, err)
		}
		r := rule{ruleSpec: sp, re: re, lits: requiredLiterals(re.String())}
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

// check screens content with the rules of stage; the window calls it directly.
func (s *Screen) check(stage Stage, content string) Verdict {
	norm := normalize(content)
	var v Verdict
	for i := range s.rules[stage] {
		r := &s.rules[stage][i]
		if !r.hit(norm) {
			continue
		}
		v.Crisis = true
		v.Rules = append(v.Rules, r.id)
		if !slices.Contains(v.Categories, r.cat) {
			v.Categories = append(v.Categories, r.cat)
		}
		v.Severity = max(v.Severity, r.sev)
	}
	slices.Sort(v.Categories)
	return v
}

// hit reports whether any match of r in norm survives its negation and hyperbole checks.
func (r *rule) hit(norm string) bool {
	if !mayMatch(norm, r.lits) {
		return false
	}
	for _, m := range r.re.FindAllStringIndex(norm, -1) {
		if r.negatable && negatedBefore(norm[:m[0]+1]) {
			continue
		}
		if r.negInside && hasNegation(norm[m[0]:m[1]]) {
			continue
		}
		if r.unless != nil && r.unless.MatchString(norm[m[1]:]) {
			continue
		}
		return true
	}
	return false
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
