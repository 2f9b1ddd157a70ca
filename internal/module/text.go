package module

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Keyword detection works on words: a text is lowercased, stripped of accents and split into runs
// of letters and digits; everything else (spaces, punctuation, hyphens, underscores, apostrophes)
// separates words. A keyword is split the same way and matches a run of consecutive words of the
// text. So matching is case- and accent-insensitive ("Pánico" = "panico"), "fight-or-flight"
// matches the keyword "fight or flight", and a keyword never hits inside another word: "ira"
// (anger) does not match "mira", and "panic" does not match "panicky". Whole-word matching is the
// default because short keywords hide inside longer words too often, in both languages, for
// substring matching to be safe. Authors who want a word's inflections opt in per keyword with a
// trailing "*": "panic*" matches panic, panics and panicky; "avoid*" matches avoidance. The part
// before the "*" must have at least minPrefix letters or digits, so "a*" cannot match everything.

// minPrefix is the shortest word a trailing "*" may extend.
const minPrefix = 3

// fold maps the accented Latin letters of English and Spanish text (after lowercasing) to their
// base letter. ñ folds to n because learners often type without the tilde. Decomposed accents
// (a combining mark after the letter) are dropped by words instead.
var fold = map[rune]rune{
	'à': 'a', 'á': 'a', 'â': 'a', 'ã': 'a', 'ä': 'a', 'å': 'a',
	'ç': 'c',
	'è': 'e', 'é': 'e', 'ê': 'e', 'ë': 'e',
	'ì': 'i', 'í': 'i', 'î': 'i', 'ï': 'i',
	'ñ': 'n',
	'ò': 'o', 'ó': 'o', 'ô': 'o', 'õ': 'o', 'ö': 'o',
	'ù': 'u', 'ú': 'u', 'û': 'u', 'ü': 'u',
	'ý': 'y', 'ÿ': 'y',
}

// words returns the normalised words of s: lowercased, accents removed, split at every rune
// that is not a letter or digit. Combining marks continue the current word, so a decomposed
// "é" (e + U+0301) reads as "e".
func words(s string) []string {
	var out []string
	var b strings.Builder
	end := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Mn, r):
			// A combining accent belongs to the letter before it; dropping it folds the accent.
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			r = unicode.ToLower(r)
			if f, ok := fold[r]; ok {
				r = f
			}
			b.WriteRune(r)
		default:
			end()
		}
	}
	end()
	return out
}

// normal returns the normalised form of a topic id or name used to resolve the model's topic
// references: its words joined by single spaces, so "Fight-Flight Response",
// "fight_flight_response" and "fight flight response" are the same.
func normal(s string) string { return strings.Join(words(s), " ") }

// keyword is one compiled keyword of a topic.
type keyword struct {
	words []string
	// prefix makes the last word match any word it begins.
	prefix bool
	topic  int
}

// matches reports whether k matches the text words ws starting at i.
func (k *keyword) matches(ws []string, i int) bool {
	if len(ws)-i < len(k.words) {
		return false
	}
	last := len(k.words) - 1
	for j, w := range k.words {
		if j == last && k.prefix {
			return strings.HasPrefix(ws[i+j], w)
		}
		if ws[i+j] != w {
			return false
		}
	}
	return true
}

// matcher finds the topics whose keywords occur in a text.
type matcher struct {
	// exact holds the keywords whose first word must match exactly, by that word.
	exact map[string][]keyword
	// prefixed holds the one-word keywords ending in "*", which are tried at every word.
	prefixed []keyword
	topics   int
}

// compileKeyword parses one keyword as written in a module file.
func compileKeyword(raw string, topic int) (keyword, error) {
	text, prefix := strings.CutSuffix(strings.TrimSpace(raw), "*")
	if strings.Contains(text, "*") {
		return keyword{}, fmt.Errorf("keyword %q: \"*\" is only allowed at the end", raw)
	}
	ws := words(text)
	if len(ws) == 0 {
		return keyword{}, fmt.Errorf("keyword %q has no letters or digits", raw)
	}
	if prefix {
		last := ws[len(ws)-1]
		if !endsInWord(text) || utf8.RuneCountInString(last) < minPrefix {
			return keyword{}, fmt.Errorf("keyword %q: \"*\" must directly follow a word of at least %d letters", raw, minPrefix)
		}
	}
	return keyword{words: ws, prefix: prefix, topic: topic}, nil
}

// endsInWord reports whether s ends with a letter, digit or combining mark, i.e. a trailing "*"
// after it extends a word rather than standing after punctuation or a space.
func endsInWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
}

// add registers k, dropping a keyword the same topic already has in the same normalised form
// (e.g. "fight-or-flight" next to "fight or flight").
func (m *matcher) add(k keyword) {
	if k.prefix && len(k.words) == 1 {
		if !containsKeyword(m.prefixed, k) {
			m.prefixed = append(m.prefixed, k)
		}
		return
	}
	if m.exact == nil {
		m.exact = make(map[string][]keyword)
	}
	if l := m.exact[k.words[0]]; !containsKeyword(l, k) {
		m.exact[k.words[0]] = append(l, k)
	}
}

func containsKeyword(l []keyword, k keyword) bool {
	for _, o := range l {
		if o.topic == k.topic && o.prefix == k.prefix && slices.Equal(o.words, k.words) {
			return true
		}
	}
	return false
}

// match returns, for every topic, whether one of its keywords occurs in text.
func (m *matcher) match(text string) []bool {
	hit := make([]bool, m.topics)
	ws := words(text)
	for i, w := range ws {
		for j := range m.exact[w] {
			if k := &m.exact[w][j]; !hit[k.topic] && k.matches(ws, i) {
				hit[k.topic] = true
			}
		}
		for j := range m.prefixed {
			if k := &m.prefixed[j]; !hit[k.topic] && k.matches(ws, i) {
				hit[k.topic] = true
			}
		}
	}
	return hit
}
