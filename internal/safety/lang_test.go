package safety

import (
	"strings"
	"testing"
)

func TestLanguage(t *testing.T) {
	tests := []struct {
		text string
		// wantLang is checked for unreadable text, whose language the audit names.
		wantLang     string
		wantReadable bool
	}{
		// Short texts are read whatever an identifier would guess.
		{"ok", "", true},
		{"lol", "", true},
		{"kms lol", "", true},
		{"tengo miedo", "", true},
		{"thanks, got it", "", true},
		// English and Spanish, including colloquial Spanish an identifier scores low.
		{"why does Juliet kill herself in the end?", "", true},
		{"ill kms if i fail this test lol", "", true},
		{"Ya no aguanto más, no quiero seguir viviendo", "", true},
		{"kiero matarme xq nadie me kiere", "", true},
		// Sentences trigrams alone take for a close language; an English or Spanish word reads them.
		{"I keep thinking about suicide", "", true},
		{"I wrote a suicide note yesterday", "", true},
		{"My mom slaps me when I get bad grades", "", true},
		{"No tengo razones para vivir", "", true},
		{"Le doy vueltas a todo y no puedo dormir", "", true},
		{"Mi padre me pega cuando bebe", "", true},
		{"Mi padre me amenaza con matarme", "", true},
		{"At work, before meetings.", "", true},
		{"¿Me puedes dar un ejemplo?", "", true},
		// A short quotation in another language inside an English sentence.
		{"My teacher says 'je ne sais pas' all the time", "", true},
		// Other languages, crises included, are unreadable.
		{"Personne ne m'aime, je vais me tuer ce soir", "fr", false},
		{"Mein Vater schlägt mich jeden Abend", "de", false},
		{"Ich will nicht mehr leben, ich bringe mich um", "de", false},
		{"Não aguento mais, quero morrer", "pt", false},
		{"Eu quero me matar hoje à noite, ninguém se importa", "pt", false},
		{"Mio padre mi picchia ogni sera quando beve", "it", false},
		{"Je veux mourir, je n'en peux plus, personne ne m'aime", "fr", false},
		// Short sentences whose words name their language.
		{"je suis triste", "fr", false},
		{"Je vais me suicider", "fr", false},
		{"Meu pai me bate todo dia", "pt", false},
		{"Ich habe Angst vor morgen", "de", false},
		{"Non ce la faccio più, voglio morire", "it", false},
		// Other scripts are unreadable however short.
		{"我想死", "zh", false},
		{"Я хочу умереть", "uk", false}, // whatlanggo does not tell Russian from Ukrainian this short
	}
	for _, tt := range tests {
		lang, readable := Language(tt.text)
		if readable != tt.wantReadable || (!readable && lang != tt.wantLang) {
			t.Errorf("Language(%q) = %q, %v; want %q, %v", tt.text, lang, readable, tt.wantLang, tt.wantReadable)
		}
	}
}

// BenchmarkLanguage measures identifying one learner sentence, the cost Language's comment
// names: one whose words name its language, and one left to trigrams.
func BenchmarkLanguage(b *testing.B) {
	for name, s := range map[string]string{
		"markers":  "Je veux mourir, je n'en peux plus, personne ne m'aime et je suis seule",
		"trigrams": "Ik wil niet meer leven, niemand houdt van mij en alles is zinloos geworden",
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Language(s)
			}
		})
	}
}

// FuzzLanguage: whatever a learner types, Language does not panic, names a language for every
// text it cannot read, and decides the same way twice.
func FuzzLanguage(f *testing.F) {
	for _, s := range []string{"ok", "je suis triste", "我想死", "I want to die", strings.Repeat("é", 2000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lang, readable := Language(s)
		if !readable && lang == "" {
			t.Fatalf("Language(%q) is unreadable without a language", s)
		}
		if l2, r2 := Language(s); l2 != lang || r2 != readable {
			t.Fatalf("Language(%q) = %q, %v, then %q, %v", s, lang, readable, l2, r2)
		}
	})
}
