package toulmin

import (
	"strings"
	"unicode"
)

// token is one word of a learner's message after normalisation: lowercased, accents folded,
// apostrophes dropped (so "don't" is "dont"), every other non-letter a separator.
type token struct {
	word string
	// accent records that the word lost an accent when folded, which tells "sí" (yes) from
	// "si" (if) when the learner bothered to write it.
	accent bool
	// punct records punctuation between this word and the next one (or the end), which tells
	// "si, claro" (yes, of course) from "si tuviera" (if I had).
	punct bool
}

// fold maps the accented Latin letters that English and Spanish learners type to their base
// letter. golang.org/x/text would do this generally, but it is not a direct dependency and the
// cues only need these letters.
var fold = map[rune]rune{
	'á': 'a', 'à': 'a', 'â': 'a', 'ä': 'a', 'ã': 'a', 'å': 'a',
	'é': 'e', 'è': 'e', 'ê': 'e', 'ë': 'e',
	'í': 'i', 'ì': 'i', 'î': 'i', 'ï': 'i',
	'ó': 'o', 'ò': 'o', 'ô': 'o', 'ö': 'o', 'õ': 'o',
	'ú': 'u', 'ù': 'u', 'û': 'u', 'ü': 'u',
	'ñ': 'n', 'ç': 'c', 'ý': 'y', 'ÿ': 'y',
}

// isApostrophe reports whether r joins the parts of a contraction.
func isApostrophe(r rune) bool {
	return r == '\'' || r == '’' || r == 'ʼ' || r == '`'
}

// tokenize splits s into normalised words.
func tokenize(s string) []token {
	var toks []token
	var cur strings.Builder
	accent := false
	flush := func() {
		if cur.Len() > 0 {
			toks = append(toks, token{word: cur.String(), accent: accent})
			cur.Reset()
			accent = false
		}
	}
	for _, r := range s {
		r = unicode.ToLower(r)
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if f, ok := fold[r]; ok {
				r, accent = f, true
			}
			cur.WriteRune(r)
		case isApostrophe(r) && cur.Len() > 0:
			// Joined: the contraction stays one word.
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			if len(toks) > 0 {
				toks[len(toks)-1].punct = true
			}
		}
	}
	flush()
	return toks
}

// normalize returns s lowercased, accent-folded, with punctuation turned into spaces and runs
// of spaces collapsed: the form the cue and heuristic phrase lists are written in.
func normalize(s string) string {
	toks := tokenize(s)
	words := make([]string, len(toks))
	for i, t := range toks {
		words[i] = t.word
	}
	return strings.Join(words, " ")
}

// phraseList is a set of normalised phrases, each split into words.
type phraseList [][]string

func phrases(ps ...string) phraseList {
	l := make(phraseList, len(ps))
	for i, p := range ps {
		l[i] = strings.Fields(normalize(p))
	}
	return l
}

// at returns the length in words of the longest phrase of l that starts at toks[i], or 0.
func (l phraseList) at(toks []token, i int) int {
	best := 0
	for _, p := range l {
		if len(p) <= best || i+len(p) > len(toks) {
			continue
		}
		ok := true
		for j, w := range p {
			if toks[i+j].word != w {
				ok = false
				break
			}
		}
		if ok {
			best = len(p)
		}
	}
	return best
}

// in reports whether any phrase of l occurs in toks as whole words.
func (l phraseList) in(toks []token) bool {
	for i := range toks {
		if l.at(toks, i) > 0 {
			return true
		}
	}
	return false
}

// rewriteCue is a set of verbs asking for better wording, in one language, with the words that
// make a verb directly after them no request: a negation ("don't rewrite it") or a determiner
// that makes the verb a noun ("a quick fix", "una mejora").
type rewriteCue struct {
	verbs    phraseList
	blockers map[string]bool
}

// rewriteCues are the seed's rewrite requests with their inflections and spelling variants,
// matched as whole words anywhere in the message. The blockers are per language because
// English "a" is an article but Spanish "a" a preposition ("ayúdame a mejorar").
var rewriteCues = []rewriteCue{
	{
		verbs: phrases(
			"rewrite", "rewriting", "re-write", "re-writing", "reword", "rewording", "re-word",
			"rephrase", "rephrasing", "improve", "improving", "fix", "fixing",
			"help me word", "help me phrase", "help me reword", "help me rephrase",
			"word it better", "phrase it better", "make it better", "make it stronger",
		),
		blockers: set("dont", "not", "never", "no", "a", "an", "the", "quick", "this", "that"),
	},
	{
		verbs: phrases(
			"reescribe", "reescríbelo", "reescríbela", "reescríbeme", "reescribir", "reescribirlo",
			"reescribirla", "re-escribe", "re-escribir",
			"mejora", "mejóralo", "mejórala", "mejorar", "mejorarlo", "mejorarla", "mejóramelo",
			"arregla", "arréglalo", "arréglala", "arreglar", "arreglarlo", "arreglarla",
			"corrige", "corrígelo", "corrígela", "corregir", "corregirlo",
			"reformula", "reformúlalo", "reformular", "reformularlo", "redáctalo", "redáctala",
			"ayúdame a redactar", "ayúdame a redactarlo", "ayúdame a escribir", "ayúdame a expresar",
			"ayúdame a formular", "ayúdame a formularlo", "hazlo mejor", "dilo mejor",
		),
		blockers: set("no", "nunca", "un", "una", "el", "la", "esta", "este", "otra", "otro", "gran",
			"mi", "tu", "su", "cada"),
	},
}

func set(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// isRewriteRequest reports whether msg asks the coach to write or improve the wording itself
// ("rewrite it", "can you fix this?", "mejóralo"), in English or Spanish.
func isRewriteRequest(msg string) bool {
	toks := tokenize(msg)
	for _, c := range rewriteCues {
		for i := range toks {
			if c.verbs.at(toks, i) == 0 {
				continue
			}
			if i > 0 && !toks[i-1].punct && c.blockers[toks[i-1].word] {
				continue
			}
			return true
		}
	}
	return false
}

// maxConfirmationWords bounds a confirmation: longer messages say more than "yes".
const maxConfirmationWords = 8

// confirmations are the phrases a confirming message starts with or consists of. Spanish "si"
// is handled apart because it also means "if".
var confirmations = phrases(
	"yes", "yeah", "yep", "yup", "ok", "okay", "okey", "sure", "yes please",
	"that works", "this works", "it works", "works for me", "that works for me",
	"use that", "use it", "use this", "use that one", "lets use that", "lets use it",
	"go with that", "lets go with that", "sounds good", "sounds great", "looks good", "looks great",
	"perfect", "great", "agreed", "i agree", "correct", "exactly", "absolutely", "definitely",
	"thats it", "thats good", "thats great", "thats perfect", "thats fine", "love it", "i like it",
	"accept", "accepted", "confirm", "confirmed",
	"claro", "claro que sí", "vale", "de acuerdo", "totalmente de acuerdo", "está bien",
	"así está bien", "me sirve", "definitivamente", "definitivamente está bien", "perfecto",
	"perfecta", "genial", "excelente", "me gusta", "me encanta", "úsalo", "úsala", "usa eso",
	"usa esa", "usemos eso", "eso funciona", "funciona", "me funciona", "dale", "listo", "exacto",
	"correcto", "acepto", "confirmo",
)

// negations make a short message no confirmation ("ok but not yet", "sí, pero todavía no").
// Contrast words count: "ok, but shorter" asks for a change rather than accepting.
var negations = phrases(
	"no", "not", "nope", "nah", "dont", "doesnt", "isnt", "wont", "cant", "never", "not yet",
	"but", "however", "although",
	"nunca", "tampoco", "todavía no", "aún no", "pero", "sin embargo", "aunque",
)

// harmlessNo are phrases with "no" that still agree ("no problem", "no hay problema").
var harmlessNo = phrases("no problem", "no worries", "no hay problema", "no hay problemas", "no pasa nada")

// isConfirmation reports whether msg accepts what the coach suggested: a short message (at most
// eight words) that starts with or consists of a confirmation phrase, is not a question and is
// not negated. Spanish "si" counts when written "sí", when it is the whole message or followed
// by punctuation ("si, me sirve"), or when a confirmation follows it ("si claro"); "si
// tuviera…" (if I had…) does not.
func isConfirmation(msg string) bool {
	if strings.ContainsAny(msg, "?¿") {
		return false
	}
	toks := tokenize(msg)
	if len(toks) == 0 || len(toks) > maxConfirmationWords || negated(toks) {
		return false
	}
	return startsConfirmed(toks)
}

func startsConfirmed(toks []token) bool {
	if len(toks) == 0 {
		return false
	}
	if toks[0].word == "si" {
		return toks[0].accent || toks[0].punct || len(toks) == 1 || startsConfirmed(toks[1:])
	}
	return confirmations.at(toks, 0) > 0
}

func negated(toks []token) bool {
	for i := 0; i < len(toks); i++ {
		if n := harmlessNo.at(toks, i); n > 0 {
			i += n - 1
			continue
		}
		if negations.at(toks, i) > 0 {
			return true
		}
	}
	return false
}
