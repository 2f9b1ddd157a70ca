package toulmin

import "testing"

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Rewrite it, PLEASE!", "rewrite it please"},
		{"¿Puedes MEJÓRALO?", "puedes mejoralo"},
		{"  don't   re-write\tthis ", "dont re write this"},
		{"Sí, está bien.", "si esta bien"},
		{"Ñandú, pingüino; façade", "nandu pinguino facade"},
		{"…", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := normalize(tt.in); got != tt.want {
				t.Errorf("normalize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTokenizeMarks(t *testing.T) {
	toks := tokenize("Sí, si tuviera")
	want := []token{{word: "si", accent: true, punct: true}, {word: "si"}, {word: "tuviera"}}
	if len(toks) != len(want) {
		t.Fatalf("got %d tokens %+v, want %d", len(toks), toks, len(want))
	}
	for i := range want {
		if toks[i] != want[i] {
			t.Errorf("token %d = %+v, want %+v", i, toks[i], want[i])
		}
	}
}

func TestIsRewriteRequest(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"rewrite", true},
		{"Can you REWRITE my claim?", true},
		{"rewrite it", true},
		{"I'd like you rewriting this part", true},
		{"please re-write it", true},
		{"reword this please", true},
		{"Could you improve it?", true},
		{"improve my warrant", true},
		{"rephrase that", true},
		{"fix it", true},
		{"can you fix the grammar", true},
		{"Help me word this better", true},
		{"help me phrase my grounds", true},
		{"make it better", true},
		{"reescribe mi afirmación", true},
		{"Reescríbelo, por favor", true},
		{"¿puedes reescribirlo?", true},
		{"mejora mi garantía", true},
		{"Mejóralo", true},
		{"¿Me ayudas a mejorar esto?", true},
		{"arregla esto", true},
		{"Arréglalo por favor", true},
		{"corrígelo", true},
		{"ayúdame a redactar la refutación", true},
		{"no, rewrite it", true},

		{"", false},
		{"My claim is that cities should ban cars.", false},
		{"This is a prefix of my idea", false},
		{"the suffix fixes nothing", false},
		{"that was a quick fix", false},
		{"don't rewrite it, I like it", false},
		{"please do not rewrite it", false},
		{"Es una mejora clara", false},
		{"esta mejora me gusta", false},
		{"the improvement is clear", false},
		{"I rewrote it myself", false},
		{"Mi argumento es sólido", false},
		{"prefixed rewriter", false},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			if got := isRewriteRequest(tt.msg); got != tt.want {
				t.Errorf("isRewriteRequest(%q) = %v, want %v", tt.msg, got, tt.want)
			}
		})
	}
}

func TestIsConfirmation(t *testing.T) {
	tests := []struct {
		msg  string
		want bool
	}{
		{"yes", true},
		{"Yes!", true},
		{"YES, use that", true},
		{"ok", true},
		{"OK.", true},
		{"okay", true},
		{"yep", true},
		{"sure, go ahead", true},
		{"That works", true},
		{"that works for me", true},
		{"Use that.", true},
		{"use that one please", true},
		{"Sounds good!", true},
		{"perfect", true},
		{"Perfect, thanks", true},
		{"looks good to me", true},
		{"yes, no problem", true},
		{"let's use that", true},
		{"sí", true},
		{"Sí", true},
		{"SÍ, ME SIRVE", true},
		{"si", true},
		{"si, me sirve", true},
		{"Si!", true},
		{"si claro", true},
		{"si si", true},
		{"sí me sirve", true},
		{"me sirve", true},
		{"Me sirve así", true},
		{"definitivamente está bien", true},
		{"Definitivamente esta bien", true},
		{"claro", true},
		{"¡Claro!", true},
		{"vale", true},
		{"de acuerdo", true},
		{"está bien", true},
		{"perfecto", true},
		{"úsalo", true},
		{"sí, no hay problema", true},

		{"", false},
		{"no", false},
		{"no, that doesn't work", false},
		{"yes but not yet", false},
		{"ok, but make it shorter", false},
		{"yes, I don't like the ending", false},
		{"not yet", false},
		{"use that?", false},
		{"ok?", false},
		{"¿sí?", false},
		{"si tuviera más datos lo haría", false},
		{"si tuviera", false},
		{"si el gobierno invierte", false},
		{"sí, pero todavía no", false},
		{"todavía no", false},
		{"vale, pero cámbialo", false},
		{"yes I think that the claim should mention the number of cars", false},
		{"I think so", false},
		{"my claim is yes", false},
		{"okra is tasty", false},
		{"yesterday I wrote it", false},
		{"perfectly reasonable claim here", false},
	}
	for _, tt := range tests {
		t.Run(tt.msg, func(t *testing.T) {
			if got := isConfirmation(tt.msg); got != tt.want {
				t.Errorf("isConfirmation(%q) = %v, want %v", tt.msg, got, tt.want)
			}
		})
	}
}
