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
	// langMinLetters is the fewest letters of Latin script a text needs before its language is
	// told from English and Spanish: trigram identification is unreliable below about twenty
	// characters ("ok", "lol" and "tengo miedo" all come out as other languages).
	langMinLetters = 20
	// langMinConfidence is the confidence whatlanggo must give a language other than English
	// or Spanish. Below it the text is read as the session's language: colloquial Spanish
	// ("kiero matarme xq nadie me kiere") scores under 0.1 for its best guess, while plain
	// French, German or Portuguese sentences of learner length score 0.3 and more.
	langMinConfidence = 0.25
	// langMaxBytes bounds the text identified, and so the cost: a learner's language shows in
	// its first kilobyte.
	langMaxBytes = 1024
)

// latinCandidates are the languages a text in Latin script is told among. Without a list,
// whatlanggo weighs 84 languages and scatters short learner sentences among close ones (French
// read as Haitian Creole, Portuguese as French) with low confidence each; with it, the
// languages learners most write besides English and Spanish are told apart reliably.
var latinCandidates = whatlanggo.Options{Whitelist: map[whatlanggo.Lang]bool{
	whatlanggo.Eng: true, whatlanggo.Spa: true, whatlanggo.Fra: true, whatlanggo.Deu: true,
	whatlanggo.Por: true, whatlanggo.Ita: true, whatlanggo.Nld: true, whatlanggo.Pol: true,
	whatlanggo.Tur: true, whatlanggo.Vie: true, whatlanggo.Ind: true, whatlanggo.Ron: true,
	whatlanggo.Tgl: true, whatlanggo.Swe: true,
}}

// Language reports the language of a learner's text, as an ISO 639-1 code where there is one
// (else ISO 639-3), and whether the built-in screen reads it: English and Spanish. The rule:
//
//   - Text in a script other than Latin (Cyrillic, Han, Arabic …) is unreadable whatever its
//     length: the rules match Latin letters only, so "我想死" must not pass as clean.
//   - Latin text with fewer than 20 letters is read: "ok", "lol" or "tengo miedo" in a
//     session are too short for any identifier, and the screen's rules run on them anyway.
//   - Longer Latin text is unreadable when whatlanggo names another language than English or
//     Spanish with a confidence of at least 0.25 and the text holds none of the English or
//     Spanish marker words (markers); otherwise it is read.
//
// On the corpus (testdata/safety, about 200 learner sentences in English and Spanish) the rule
// calls one sentence unreadable. Its known blind spot is short text of a language trigrams
// confuse with another unlisted one (an Italian sentence of 40 letters may score as Romanian
// under the threshold): it is read, as before, and the screen's rules still run on it.
//
// Identification uses github.com/abadojack/whatlanggo (trigram profiles, pure Go, no
// dependencies; small and stable, though no longer actively developed). Its cost, measured by
// BenchmarkLanguage (go test -bench Language ./internal/safety, AMD EPYC, one core): about
// 0.1 ms and 23 KB for a 70-character sentence, bounded by reading the first kilobyte only; it
// adds about 0.45 MB to a stripped binary (its trigram tables). It runs once per learner turn,
// never on the model's stream.
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
		return code(whatlanggo.DetectLang(text)), false
	}
	if latin < langMinLetters {
		return "", true
	}
	info := whatlanggo.DetectWithOptions(text, latinCandidates)
	switch {
	case info.Lang == whatlanggo.Eng:
		return "en", true
	case info.Lang == whatlanggo.Spa:
		return "es", true
	case info.Confidence < langMinConfidence, hasMarker(text):
		return "", true
	}
	return code(info.Lang), false
}

// markers are words of English or Spanish that the languages learners most write besides them
// (French, German, Portuguese, Italian, Dutch) do not use as words: a sentence holding one is
// read, whatever trigrams say. Trigram identification of a 30-letter sentence is a guess among
// close languages ("No tengo razones para vivir" comes out Portuguese, "I keep thinking about
// suicide" Swedish), and reading a text the screen can read costs nothing, while calling it
// unreadable sends it to the judge and mislabels its audit record. Shared words ("me", "no",
// "con", "is", "was", "am", "mi") are left out on purpose.
var markers = map[string]bool{
	"i": true, "im": true, "my": true, "the": true, "and": true, "you": true, "your": true,
	"to": true, "it": true, "what": true, "with": true, "can": true, "this": true, "that": true,
	"just": true, "feel": true, "want": true, "dont": true, "been": true, "keep": true,
	"y": true, "yo": true, "el": true, "los": true, "las": true, "pero": true, "muy": true,
	"quiero": true, "tengo": true, "estoy": true, "puedo": true, "cuando": true, "ya": true,
	"mas": true, "hay": true, "nadie": true, "hoy": true, "ahora": true, "siempre": true,
	"aguanto": true, "soy": true,
}

// hasMarker reports whether text holds one of markers as a word.
func hasMarker(text string) bool {
	for _, w := range strings.Fields(normalize(text)) {
		if markers[w] {
			return true
		}
	}
	return false
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
