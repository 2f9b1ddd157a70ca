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
		// The part whose shortest literal is longest filters best.
		var best []string
		bestLen := 0
		for _, sub := range re.Sub {
			lits := literals(sub)
			if lits == nil {
				continue
			}
			shortest := len(lits[0])
			for _, l := range lits {
				shortest = min(shortest, len(l))
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

// mayMatch reports whether norm contains one of lits (always true without literals).
func mayMatch(norm string, lits []string) bool {
	if lits == nil {
		return true
	}
	for _, l := range lits {
		if strings.Contains(norm, l) {
			return true
		}
	}
	return false
}
