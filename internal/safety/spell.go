package safety

import (
	"regexp"
	"strings"
)

// respell rewrites the words of a normalized text into the spelling the rules are written in:
// the shorthand and misspellings in spellings ("kiero" → "quiero", "q" → "que", "myslef" →
// "myself", "2nite" → "tonight"), leetspeak in a word that mixes letters and digits ("k1ll",
// "su1c1de"), and letters repeated for emphasis ("kiiill", "dieee", "matarmeee"). The last two
// only ever turn a word into one the rules use, so they cannot turn ordinary words into
// unrelated ones. It returns norm itself when no word changes, which is the common case.
func respell(norm string) string {
	var b *strings.Builder
	last := 0 // norm[:last] is in b, or unchanged when b is nil
	for i := 0; i < len(norm); {
		if norm[i] == ' ' {
			i++
			continue
		}
		j := i + strings.IndexByte(norm[i:], ' ')
		if w, ok := spell(norm[i:j]); ok {
			if b == nil {
				b = &strings.Builder{}
				b.Grow(len(norm) + 16)
			}
			b.WriteString(norm[last:i])
			b.WriteString(w)
			last = j
		}
		i = j
	}
	if b != nil {
		b.WriteString(norm[last:])
		norm = b.String()
	}
	// "my self" is "myself" split in two, which no word-by-word rewrite can join.
	if strings.Contains(norm, " my self ") {
		norm = strings.ReplaceAll(norm, " my self ", " myself ")
	}
	return norm
}

// spell returns the rules' spelling of word, and whether it differs.
func spell(word string) (string, bool) {
	if w, ok := spellings[word]; ok {
		return w, true
	}
	if ruleWords[word] {
		return "", false
	}
	digits, letters := false, false
	for k := 0; k < len(word); k++ {
		c := word[k]
		digits = digits || ('0' <= c && c <= '9')
		letters = letters || ('a' <= c && c <= 'z')
	}
	if digits && letters {
		for _, one := range []string{"i", "l"} {
			w := strings.NewReplacer("0", "o", "1", one, "3", "e", "4", "a", "5", "s", "7", "t").Replace(word)
			if ruleWords[w] {
				return w, true
			}
			if s, ok := spellings[w]; ok {
				return s, true
			}
			if s, ok := bySkeleton[skeleton(w)]; ok && len(w) >= 4 {
				return s, true
			}
		}
		return "", false
	}
	// Emphasis: a letter repeated three times or more; or a doubled letter in a long key
	// word ("mysellf"), but not into a short one: Spanish doubles letters ("parra", "perro").
	if sk := skeleton(word); sk != word {
		if s, ok := bySkeleton[sk]; ok && (hasRun(word, 3) || len(s) >= 5) {
			return s, true
		}
	}
	return "", false
}

// skeleton collapses every run of one letter to a single letter: "kiiilll" → "kil".
func skeleton(w string) string {
	var b []byte
	for k := 0; k < len(w); k++ {
		if k > 0 && w[k] == w[k-1] {
			if b == nil {
				b = append(make([]byte, 0, len(w)), w[:k]...)
			}
			continue
		}
		if b != nil {
			b = append(b, w[k])
		}
	}
	if b == nil {
		return w
	}
	return string(b)
}

// hasRun reports whether w repeats one letter n times in a row.
func hasRun(w string, n int) bool {
	run := 1
	for k := 1; k < len(w); k++ {
		if w[k] == w[k-1] {
			run++
			if run >= n {
				return true
			}
		} else {
			run = 1
		}
	}
	return false
}

// spellings maps chat shorthand ("u", "q", "xq", "2nite", "wanna") and common misspellings of
// the words crisis talk depends on ("myslef", "sucide", "kiero") to the words the rules are
// written with, so the rules name each word once. A misspelling goes in only when it is no word
// of its own in English or Spanish; a shorthand letter ("q", "d", "x") changes nothing outside
// the phrases the rules look for.
var spellings = map[string]string{
	// English shorthand.
	"tmrw": "tomorrow", "tmr": "tomorrow", "tmrow": "tomorrow", "tomoro": "tomorrow", "tomorow": "tomorrow",
	"2morrow": "tomorrow", "2moro": "tomorrow", "2nite": "tonight", "2night": "tonight", "tonite": "tonight",
	"ppl": "people", "every1": "everyone", "evry1": "everyone", "no1": "no one", "noone": "no one",
	"bc": "because", "cuz": "because", "coz": "because", "bcs": "because", "bcuz": "because",
	"rn": "right now", "imma": "im going to", "ima": "im going to", "finna": "going to", "tryna": "trying to",
	"wanna": "want to", "wana": "want to", "gonna": "going to", "od": "overdose", "wnt": "want", "wnat": "want", "gona": "going to", "gunna": "going to", "dnt": "dont",
	"ur": "your", "u": "you", "r": "are", "abt": "about", "lyf": "life", "lyfe": "life", "ded": "dead",
	"gud": "good", "bye4ever": "goodbye forever", "gbye": "goodbye", "goodby": "goodbye", "gudbye": "goodbye",
	"kmsl": "laughing",
	// English misspellings of key words.
	"kil": "kill", "kll": "kill", "kilin": "killing", "killin": "killing", "myslef": "myself", "mysef": "myself",
	"myslf": "myself", "myelf": "myself", "mself": "myself", "meself": "myself", "mysel": "myself",
	"suicde": "suicide", "sucide": "suicide", "suicid": "suicide", "suiside": "suicide", "suicied": "suicide",
	"siucide": "suicide", "suecide": "suicide", "sooicide": "suicide", "suwuicide": "suicide", "sewerslide": "suicide",
	"sewercide": "suicide", "suiciide": "suicide", "suacide": "suicide", "sucidal": "suicidal", "suicdal": "suicidal",
	"suisidal": "suicidal", "suicidial": "suicidal", "sucidial": "suicidal", "sewersidal": "suicidal",
	"alvie": "alive", "anymroe": "anymore", "anymor": "anymore", "enymore": "anymore", "livin": "living",
	"pils": "pills", "pillz": "pills", "noos": "noose", "nooze": "noose", "brigde": "bridge", "bridg": "bridge",
	"unalve": "unalive", "unalivee": "unalive",
	// Spanish shorthand and spellings.
	"kiero": "quiero", "qiero": "quiero", "kero": "quiero", "qero": "quiero", "quero": "quiero", "kieroo": "quiero",
	"kiere": "quiere", "qiere": "quiere", "kieres": "quieres", "kisiera": "quisiera", "qisiera": "quisiera",
	"q": "que", "k": "que", "ke": "que", "qe": "que", "xq": "porque", "pq": "porque", "xk": "porque", "pk": "porque",
	"porq": "porque", "porke": "porque", "xke": "porque", "pork": "porque", "xque": "porque", "tmb": "tambien",
	"tb": "tambien", "tmbn": "tambien", "toy": "estoy", "stoy": "estoy", "x": "por", "d": "de", "nd": "nada",
	"nda": "nada", "aki": "aqui", "tng": "tengo", "tngo": "tengo", "mnn": "manana", "mñn": "manana",
	"ntp": "no te preocupes", "nadien": "nadie", "asta": "hasta", "bda": "vida",
	"mtarme": "matarme", "matarm": "matarme", "matrme": "matarme", "mararme": "matarme", "suisidarme": "suicidarme", "suisidar": "suicidar", "sucidar": "suicidar",
	"suicidarm": "suicidarme", "sucidarme": "suicidarme", "suisidio": "suicidio", "sucidio": "suicidio",
	"kitarme": "quitarme", "qitarme": "quitarme", "morirm": "morirme", "morime": "morirme", "tirarm": "tirarme",
	"cortarm": "cortarme", "pastiyas": "pastillas", "pastias": "pastillas", "despedirm": "despedirme",
	"bomitar": "vomitar", "bomito": "vomito",
}

// ruleWords are the words the rule table is written with, and bySkeleton finds one of them
// from the skeleton of a word typed with repeated letters. Negations are left out: "nooo" is
// an exclamation, and a learner who writes "nooo I want to die" negates nothing.
var ruleWords, bySkeleton = wordsOfRules()

func wordsOfRules() (map[string]bool, map[string]string) {
	words := map[string]bool{}
	split := regexp.MustCompile(`[a-z]+`)
	for _, r := range ruleTable {
		for _, w := range split.FindAllString(r.re+" "+r.unless, -1) {
			words[w] = true
		}
	}
	for _, v := range spellings {
		for _, w := range strings.Fields(v) {
			words[w] = true
		}
	}
	skel := map[string]string{}
	for w := range words {
		if len(w) < 3 || negations[w] {
			continue
		}
		sk := skeleton(w)
		if prev, ok := skel[sk]; !ok || len(w) < len(prev) || (len(w) == len(prev) && w < prev) {
			skel[sk] = w
		}
	}
	return words, skel
}
