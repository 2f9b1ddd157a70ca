package safety

import (
	"strings"
	"unicode"

	"github.com/abadojack/whatlanggo"
)

// NotRunUnsupportedLanguage is the "ran" of the built-in screen's audit record for learner text
// in a language its rules do not cover: the screen still looked (a learner who switches
// language mid-sentence may write the words it knows), but the text is never recorded as checked
// and clean. The record's Lang names the language.
const NotRunUnsupportedLanguage = "unsupported_language"

// Thresholds of the language rule (see Language).
const (
	// langMinLetters is the fewest letters of Latin script a text needs before trigrams alone
	// may call it another language: trigram identification is unreliable below about twenty
	// characters ("ok", "lol" and "tengo miedo" all come out as other languages).
	langMinLetters = 20
	// langMinConfidence is the confidence whatlanggo must give another language when no word
	// of the text names one. Measured on learner sentences of 20 to 50 letters, its confidence
	// does not tell languages apart ("I keep thinking about suicide" scores 0.35 Swedish,
	// "Ich will nicht mehr leben" 0.42 German), so trigrams alone decide only when they are sure.
	langMinConfidence = 0.5
	// langMaxBytes bounds the text identified, and so the cost: a learner's language shows in
	// its first kilobyte.
	langMaxBytes = 1024
)

// latinCandidates are the languages a text in Latin script is told among. Without a list,
// whatlanggo weighs 84 languages and scatters short learner sentences among close ones (French
// read as Haitian Creole, Portuguese as French) with low confidence each.
var latinCandidates = whatlanggo.Options{Whitelist: map[whatlanggo.Lang]bool{
	whatlanggo.Eng: true, whatlanggo.Spa: true, whatlanggo.Fra: true, whatlanggo.Deu: true,
	whatlanggo.Por: true, whatlanggo.Ita: true, whatlanggo.Nld: true, whatlanggo.Pol: true,
	whatlanggo.Tur: true, whatlanggo.Vie: true, whatlanggo.Ind: true, whatlanggo.Ron: true,
	whatlanggo.Tgl: true, whatlanggo.Swe: true,
}}

// Language reports the language of a learner's text, as an ISO 639-1 code where there is one
// (else ISO 639-3), and whether the built-in screen reads it: English and Spanish. The rule, in
// order:
//
//  1. Text mostly in a script other than Latin (Cyrillic, Han, Arabic …) is unreadable whatever
//     its length: the rules match Latin letters only, so "我想死" must not pass as clean.
//  2. Text holding more marker words of French, German, Portuguese or Italian (foreign), the
//     languages learners most write besides English and Spanish, than of English and Spanish
//     (markers) is unreadable, in the language with the most: "je suis triste" is French
//     however short. Text holding at least as many English or Spanish marker words is read:
//     a learner writing the screen's languages uses them within a few words, and a short
//     quotation in another language inside an English sentence leaves a sentence the screen
//     reads.
//  3. Other Latin text of at least 20 letters is unreadable when whatlanggo names another
//     language with a confidence of at least 0.5; anything else is read ("ok", "lol").
//
// Trigrams alone are not enough on learner sentences: on the corpus (testdata/safety, about
// 200 English and Spanish sentences) they named another language for one sentence in ten
// ("No tengo razones para vivir" as Portuguese, "At work, before meetings." as Dutch); with the
// marker words the rule calls none of them unreadable. Its blind spot: a language without
// marker words (Dutch, Polish …) in a text trigrams are unsure of is read, as before, and the
// screen's rules still run on it.
//
// Identification uses github.com/abadojack/whatlanggo (script detection and trigram profiles,
// pure Go, no dependencies; small and stable, though no longer actively developed). Its cost,
// measured by BenchmarkLanguage (go test -bench Language ./internal/safety, AMD EPYC, one
// core): about 1.3 µs for a 70-character sentence whose words name its language, and 0.1 ms
// and 23 KB for one left to trigrams, bounded by reading the first kilobyte only; it adds about
// 0.45 MB to a stripped binary (its trigram tables). It runs once per learner turn, never on
// the model's stream.
func Language(text string) (lang string, readable bool) {
	if len(text) > langMaxBytes {
		text = text[:langMaxBytes]
	}
	latin, other := 0, 0
	for _, r := range text {
		switch {
		case !unicode.IsLetter(r):
		case unicode.Is(unicode.Latin, r):
			latin++
		default:
			other++
		}
	}
	if other > latin {
		// A tie between languages (confidence 0) would be broken by map order: "und" instead,
		// so that the same text is always audited the same way.
		if info := whatlanggo.Detect(text); info.Confidence > 0 {
			return code(info.Lang), false
		}
		return "und", false
	}
	counts := map[string]int{}
	for _, w := range strings.Fields(normalize(text)) {
		if markers[w] {
			counts["en/es"]++
		} else if l := foreign[w]; l != "" {
			counts[l]++
		}
	}
	best := "en/es"
	for _, l := range []string{"fr", "de", "pt", "it"} {
		if counts[l] > counts[best] {
			best = l
		}
	}
	switch {
	case best != "en/es":
		return best, false
	case counts[best] > 0:
		return "", true
	}
	if latin < langMinLetters {
		return "", true
	}
	info := whatlanggo.DetectWithOptions(text, latinCandidates)
	if info.Lang == whatlanggo.Eng || info.Lang == whatlanggo.Spa || info.Confidence < langMinConfidence {
		return "", true
	}
	return code(info.Lang), false
}

// markers are words of English or Spanish, normalized as the screen reads them, that the
// languages learners most write besides them (French, German, Portuguese, Italian, Dutch)
// seldom use as words. Shared words ("me", "no", "con", "de", "un", "mas", "is", "was", "am",
// "die", "mi") are left out on purpose; "i" (an Italian article) is kept, outweighed in Italian
// text by the words of foreign.
var markers = map[string]bool{
	"i": true, "im": true, "ive": true, "my": true, "the": true, "and": true, "you": true,
	"your": true, "to": true, "it": true, "what": true, "with": true, "can": true, "this": true,
	"that": true, "just": true, "feel": true, "want": true, "dont": true, "been": true,
	"keep": true, "at": true, "please": true, "how": true, "why": true, "are": true,
	"y": true, "yo": true, "el": true, "los": true, "las": true, "pero": true, "muy": true,
	"quiero": true, "tengo": true, "estoy": true, "puedo": true, "puedes": true, "cuando": true,
	"ya": true, "hay": true, "nadie": true, "hoy": true, "ahora": true,
	"siempre": true, "aguanto": true, "soy": true, "eres": true,
}

// foreign are marker words of the languages the screen does not read, normalized (accents
// folded), each naming its language: words that English and Spanish do not use as words
// (Spanish "les", "des", "tres", "mío" are why those are missing).
var foreign = map[string]string{
	"je": "fr", "suis": "fr", "pas": "fr", "est": "fr", "veux": "fr", "mon": "fr", "moi": "fr",
	"nous": "fr", "vous": "fr", "cest": "fr", "jai": "fr",
	"personne": "fr", "aime": "fr", "peux": "fr", "avec": "fr",
	"ich": "de", "nicht": "de", "und": "de", "ist": "de", "bin": "de", "mich": "de", "mein": "de",
	"meine": "de", "habe": "de", "nur": "de", "mehr": "de", "auch": "de", "sehr": "de",
	"eu": "pt", "nao": "pt", "meu": "pt", "minha": "pt", "voce": "pt", "estou": "pt",
	"quero": "pt", "hoje": "pt", "muito": "pt", "tambem": "pt", "aguento": "pt", "ninguem": "pt",
	"io": "it", "sono": "it", "voglio": "it", "perche": "it",
	"della": "it", "non": "it", "ogni": "it", "sempre": "it", "il": "it", "anche": "it",
}

// code is the ISO 639-1 code of l, or its ISO 639-3 code when it has none, or "und".
func code(l whatlanggo.Lang) string {
	if c := l.Iso6391(); c != "" {
		return c
	}
	if c := l.Iso6393(); c != "" {
		return c
	}
	return "und"
}
