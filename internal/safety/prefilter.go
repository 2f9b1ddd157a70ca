package safety

import (
	"regexp/syntax"
	"strings"
)

// requiredLiterals returns literals of which every match of pattern contains at least one, or
// nil when it cannot tell. The screen tests them with strings.Contains before running the
// rule's regular expression, which most rules then never need to: a benign turn mentions
// none of "myself", "suicid", "ojala"…
func requiredLiterals(pattern string) []string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	return literals(re)
}

func literals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return literals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return literals(re.Sub[0])
		}
	case syntax.OpConcat:
		// The part whose weakest literal is longest filters best; a literal that is a common
		// word ("me", "my", "to") filters nothing, since nearly every turn has it.
		var best []string
		bestLen := 0
		for _, sub := range re.Sub {
			lits := literals(sub)
			if lits == nil {
				continue
			}
			shortest := len(lits[0])
			for _, l := range lits {
				w := len(l)
				if commonWords[strings.TrimSpace(l)] {
					w = 0
				}
				shortest = min(shortest, w)
			}
			if shortest > bestLen {
				best, bestLen = lits, shortest
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			lits := literals(sub)
			if lits == nil {
				return nil
			}
			all = append(all, lits...)
		}
		return all
	}
	return nil
}

// commonWords are words nearly every turn holds, useless as a prefilter.
var commonWords = map[string]bool{
	"i": true, "im": true, "me": true, "my": true, "to": true, "a": true, "the": true, "it": true,
	"and": true, "when": true, "after": true, "once": true, "you": true, "is": true, "of": true,
	"in": true, "on": true, "de": true, "la": true, "el": true, "que": true, "y": true, "en": true,
	"mi": true, "se": true, "no": true, "a la": true, "lo": true, "le": true, "es": true,
	"have": true, "have to": true, "hand": true, "do": true, "be": true, "at": true, "for": true,
	"with": true, "so": true, "this": true, "that": true, "por": true, "para": true, "con": true,
}

// gramSet records which trigrams (three consecutive bytes) a text holds, hashed to a bit each.
// Testing a literal's trigrams against it costs a few bit tests, where strings.Contains would
// scan the whole turn once per literal: the screen has hundreds of literals, and a benign turn
// holds almost none of them.
type gramSet [1 << 14 / 64]uint64

// gram hashes the trigram at s[i:i+3] to a bit index.
func gram(s string, i int) uint32 {
	return (uint32(s[i])*961 + uint32(s[i+1])*31 + uint32(s[i+2])) & (1<<14 - 1)
}

// add records every trigram of s.
func (g *gramSet) add(s string) {
	for i := 0; i+3 <= len(s); i++ {
		k := gram(s, i)
		g[k/64] |= 1 << (k % 64)
	}
}

// has reports whether s's trigram at i may be in the set.
func (g *gramSet) has(s string, i int) bool {
	k := gram(s, i)
	return g[k/64]&(1<<(k%64)) != 0
}

// mayMatch reports whether norm contains one of lits (always true without literals); grams is
// norm's gramSet, which rejects most literals without scanning norm.
func mayMatch(norm string, grams *gramSet, lits []string) bool {
	if lits == nil {
		return true
	}
	for _, l := range lits {
		if mayContain(grams, l) && strings.Contains(norm, l) {
			return true
		}
	}
	return false
}

// mayContain reports whether every trigram of l may be in grams: false means norm cannot
// contain l.
func mayContain(grams *gramSet, l string) bool {
	for i := 0; i+3 <= len(l); i++ {
		if !grams.has(l, i) {
			return false
		}
	}
	return true
}
