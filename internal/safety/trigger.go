package safety

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// maxPhrases bounds the word sequences enumerated from one rule. A rule whose language is
// larger (or unbounded) is not spelled out: every word may start one of its matches, and the
// window then holds each clause whole, as it would without trigger words.
const maxPhrases = 20000

// anyWord is the token standing for one arbitrary word (the "~" gap of the rule table).
const anyWord = "*"

// phrases is the output rules' matches spelled out as sequences of words, indexed by their first
// word, so the window can tell whether a clause's tail could still become a match. It is derived
// from the compiled rule table when the screen is built, so it cannot drift from the rules.
type phrases struct {
	// byFirst maps a first word to the sequences starting with it.
	byFirst map[string][][]string
	// anyFirst holds sequences whose first token is anyWord.
	anyFirst [][]string
	// all is set when some rule could not be spelled out: every word may start a match.
	all bool
}

// newPhrases spells out the matches of the given rule patterns (in the table's notation).
func newPhrases(patterns []string) *phrases {
	p := &phrases{byFirst: map[string][][]string{}}
	for _, pat := range patterns {
		re, err := syntax.Parse(expand(pat), syntax.Perl)
		if err != nil {
			p.all = true
			continue
		}
		seqs, ok := spellOut(re, []string{""})
		if !ok {
			p.all = true
			continue
		}
		for _, s := range seqs {
			words := strings.Fields(s)
			if len(words) == 0 {
				p.all = true
				continue
			}
			if words[0] == anyWord {
				p.anyFirst = append(p.anyFirst, words)
			} else {
				p.byFirst[words[0]] = append(p.byFirst[words[0]], words)
			}
		}
	}
	return p
}

// spellOut extends each prefix in in by every string re matches, with "*" for a run of letters or
// digits (a whole word). It reports false when the result would be unbounded or too large.
func spellOut(re *syntax.Regexp, in []string) ([]string, bool) {
	if len(in) > maxPhrases {
		return nil, false
	}
	switch re.Op {
	case syntax.OpEmptyMatch:
		return in, true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = s + string(re.Rune)
		}
		return out, true
	case syntax.OpCharClass:
		var runes []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(runes) > 8 {
					return nil, false
				}
				runes = append(runes, r)
			}
		}
		var out []string
		for _, s := range in {
			for _, r := range runes {
				out = append(out, s+string(r))
			}
		}
		return out, len(out) <= maxPhrases
	case syntax.OpPlus:
		// A run of word characters is one arbitrary word; anything else is not spelled out.
		if sub := re.Sub[0]; sub.Op == syntax.OpCharClass && !classHas(sub, ' ') && !classHas(sub, '|') {
			out := make([]string, len(in))
			for i, s := range in {
				out[i] = s + anyWord
			}
			return out, true
		}
		return nil, false
	case syntax.OpCapture:
		return spellOut(re.Sub[0], in)
	case syntax.OpQuest:
		with, ok := spellOut(re.Sub[0], in)
		if !ok {
			return nil, false
		}
		return append(append([]string{}, in...), with...), true
	case syntax.OpRepeat:
		if re.Max < 0 {
			return nil, false
		}
		var out []string
		cur := in
		for k := 0; k <= re.Max; k++ {
			if k >= re.Min {
				out = append(out, cur...)
			}
			if k == re.Max {
				break
			}
			var ok bool
			if cur, ok = spellOut(re.Sub[0], cur); !ok {
				return nil, false
			}
		}
		return out, len(out) <= maxPhrases
	case syntax.OpConcat:
		cur := in
		for _, sub := range re.Sub {
			var ok bool
			if cur, ok = spellOut(sub, cur); !ok {
				return nil, false
			}
		}
		return cur, true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			s, ok := spellOut(sub, in)
			if !ok {
				return nil, false
			}
			out = append(out, s...)
		}
		return out, len(out) <= maxPhrases
	}
	return nil, false
}

// classHas reports whether the character class re contains r.
func classHas(re *syntax.Regexp, r rune) bool {
	for i := 0; i+1 < len(re.Rune); i += 2 {
		if re.Rune[i] <= r && r <= re.Rune[i+1] {
			return true
		}
	}
	return false
}

// open reports whether the words of a clause, starting at words[0], could still be the start of
// a match: they follow one of the sequences so far, and partial (the clause's unfinished last
// word, "" when there is none) could still become its next word. A sequence the words already
// complete counts too: whether it is a hit (or a denial) is for the check of the whole clause.
func (p *phrases) open(words []string, partial string) bool {
	if p.all {
		return true
	}
	if len(words) == 0 {
		if partial == "" {
			return false
		}
		if len(p.anyFirst) > 0 {
			return true
		}
		for w := range p.byFirst {
			if strings.HasPrefix(w, partial) {
				return true
			}
		}
		return false
	}
	for _, s := range p.byFirst[words[0]] {
		if follows(s, words, partial) {
			return true
		}
	}
	for _, s := range p.anyFirst {
		if follows(s, words, partial) {
			return true
		}
	}
	return false
}

// follows reports whether words (then partial) agree with the sequence seq as far as both go.
func follows(seq, words []string, partial string) bool {
	for i, w := range words {
		if i == len(seq) {
			return true // seq is complete within the words
		}
		if seq[i] != anyWord && seq[i] != w {
			return false
		}
	}
	if len(words) == len(seq) || partial == "" {
		return true
	}
	next := seq[len(words)]
	return next == anyWord || strings.HasPrefix(next, partial) && isWord(next)
}

// isWord reports whether t is a word token rather than a clause mark ("|" or ",").
func isWord(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	return r != '|' && r != ','
}

// whole reports whether partial could become a match by itself: a one-word sequence whose word
// starts with it.
func (p *phrases) whole(partial string) bool {
	if p.all {
		return true
	}
	for _, s := range p.anyFirst {
		if len(s) == 1 {
			return true
		}
	}
	for w, seqs := range p.byFirst {
		if !strings.HasPrefix(w, partial) {
			continue
		}
		for _, s := range seqs {
			if len(s) == 1 {
				return true
			}
		}
	}
	return false
}
