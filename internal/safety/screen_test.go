package safety

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func newScreen(t testing.TB) *Screen {
	t.Helper()
	s, err := NewScreen()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestScreenVerdicts(t *testing.T) {
	s := newScreen(t)
	tests := []struct {
		name    string
		stage   Stage
		text    string
		want    []Category
		wantSev Severity
	}{
		{"direct", StageInput, "I want to kill myself", []Category{CategorySuicide}, SeverityImminent},
		{"passive", StageInput, "I don't want to be alive anymore", []Category{CategorySuicide}, SeverityHigh},
		{"curly apostrophe", StageInput, "I don’t want to be alive anymore", []Category{CategorySuicide}, SeverityHigh},
		{"upper case and accents", StageInput, "OJALÁ NO DESPERTARA", []Category{CategorySuicide}, SeverityHigh},
		{"no accents typed", StageInput, "ojala no despertara", []Category{CategorySuicide}, SeverityHigh},
		{"passive es", StageInput, "no quiero seguir viviendo", []Category{CategorySuicide}, SeverityHigh},
		{"indirect", StageInput, "everyone would be better off without me", []Category{CategorySuicide}, SeverityHigh},
		{"friend is concern, not the learner", StageInput, "my friend wants to kill herself", []Category{CategoryConcernOther}, SeverityConcern},
		{"overdose is danger and severity imminent", StageInput, "I just took a whole bottle of pills", []Category{CategoryDanger}, SeverityImminent},
		{"two signals", StageInput, "My dad hits me and I want to kill myself", []Category{CategoryAbuse, CategorySuicide}, SeverityImminent},
		{"denial", StageInput, "I would never kill myself, I'm just stressed", nil, SeverityNone},
		{"negation in the previous clause does not count", StageInput, "No, I want to kill myself", []Category{CategorySuicide}, SeverityImminent},
		{"abuse negated inside", StageInput, "my dad never hits me", nil, SeverityNone},
		{"hyperbole en", StageInput, "I want to die of embarrassment", nil, SeverityNone},
		{"hyperbole es", StageInput, "me quiero morir de la vergüenza", nil, SeverityNone},
		{"panic", StageInput, "I feel like I'm dying when I panic", nil, SeverityNone},
		{"exam", StageInput, "this exam is killing me", nil, SeverityNone},
		{"nervios", StageInput, "me muero de nervios", nil, SeverityNone},
		{"word inside a word", StageInput, "skill myselfie", nil, SeverityNone},
		{"no rule across a sentence end", StageInput, "I want to kill. Myself, I like drawing", nil, SeverityNone},
		{"input rules do not screen output", StageOutput, "I want to kill myself", nil, SeverityNone},
		{"output instructions", StageOutput, "The most painless way to kill yourself is", []Category{CategorySelfHarmInstructions}, SeverityHigh},
		{"output care is clean", StageOutput, "If you are thinking about ending your life, please call or text 988.", nil, SeverityNone},
		{"empty", StageInput, "", nil, SeverityNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := s.Check(context.Background(), Text{Stage: tt.stage, Content: tt.text})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Categories, tt.want) || v.Severity != tt.wantSev || v.Crisis != (len(tt.want) > 0) {
				t.Errorf("Check(%q) = %+v, want categories %v severity %v", tt.text, v, tt.want, tt.wantSev)
			}
			if v.Crisis && len(v.Rules) == 0 {
				t.Errorf("Check(%q) hit without naming a rule", tt.text)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"I Don't  WANT", " | i dont want | "},
		{"Ojalá, ¿sí?", " | ojala , si | "},
		{"niño…\nhola", " | nino | hola | "},
		{"", " | "},
		{"kiero matarm xq nadie me kiere", " | quiero matarme porque nadie me quiere | "},
		{"gonna kil myslef 2nite", " | going to kill myself tonight | "},
		{"I want to diiiie", " | i want to die | "},
		{"su1c1de, k1ll, $uicide, m@tarme", " | suicide , kill , suicide , matarme | "},
		{"Nooo, I love this coffee at 3pm", " | nooo , i love this coffee at 3pm | "},
	}
	for _, tt := range tests {
		if got := normalize(tt.in); got != tt.want {
			t.Errorf("normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestVerdictMergeAndJSON(t *testing.T) {
	a := Verdict{Crisis: true, Categories: []Category{CategorySuicide}, Severity: SeverityHigh, Rules: []string{"en.passive.not_alive"}}
	b := Verdict{Crisis: true, Categories: []Category{CategoryAbuse, CategorySuicide}, Severity: SeverityImminent, Rules: []string{"moderation"}}
	got := a.Merge(b)
	want := Verdict{Crisis: true, Categories: []Category{CategoryAbuse, CategorySuicide}, Severity: SeverityImminent, Rules: []string{"en.passive.not_alive", "moderation"}}
	if !got.Crisis || got.Severity != want.Severity || !slices.Equal(got.Categories, want.Categories) || !slices.Equal(got.Rules, want.Rules) {
		t.Errorf("Merge = %+v, want %+v", got, want)
	}
	if clean := (Verdict{}).Merge(Verdict{}); clean.Crisis || clean.Categories != nil || clean.Severity != SeverityNone {
		t.Errorf("merging clean verdicts = %+v, want clean", clean)
	}
	b2, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if w := `{"crisis":true,"categories":["abuse","suicide"],"severity":"imminent","rules":["en.passive.not_alive","moderation"]}`; string(b2) != w {
		t.Errorf("json = %s, want %s", b2, w)
	}
}

// TestRuleTableCompiles guards the table itself: a duplicate id or a bad pattern is an error,
// not a silently skipped rule.
func TestRuleTableCompiles(t *testing.T) {
	if _, err := compile([]ruleSpec{{id: "x", re: "a"}, {id: "x", re: "b"}}); err == nil {
		t.Error("duplicate rule id compiled")
	}
	if _, err := compile([]ruleSpec{{id: "x", re: "("}}); err == nil {
		t.Error("bad pattern compiled")
	}
	s := newScreen(t)
	if len(s.rules[StageInput]) == 0 || len(s.rules[StageOutput]) == 0 {
		t.Errorf("got %d input and %d output rules", len(s.rules[StageInput]), len(s.rules[StageOutput]))
	}
}

// TestScreenIsAClassifier keeps the built-in screen usable wherever a Classifier is.
func TestScreenIsAClassifier(t *testing.T) {
	var c Classifier = newScreen(t)
	v, err := c.Check(context.Background(), Text{Stage: StageInput, Locale: "es-MX", Content: "no quiero seguir viviendo"})
	if err != nil || !v.Crisis {
		t.Errorf("Check = %+v, %v; want a hit", v, err)
	}
}

// TestPrefilter: every rule gets literals to filter on (so a benign turn skips its regular
// expression), and a literal set never rejects text its rule matches.
func TestPrefilter(t *testing.T) {
	s := newScreen(t)
	for _, stage := range []Stage{StageInput, StageOutput} {
		for _, r := range s.rules[stage] {
			if r.lits == nil {
				t.Errorf("rule %s has no prefilter literals", r.id)
			}
		}
	}
	if got := requiredLiterals(`(?:a|b+) (?:kill|killing) (?:myself|x?)`); !slices.Equal(got, []string{"kill"}) {
		t.Errorf("requiredLiterals = %q, want [kill]", got)
	}
	// The trigram set never rejects a literal the text holds.
	for _, stage := range []Stage{StageInput, StageOutput} {
		for _, r := range s.rules[stage] {
			for _, l := range r.lits {
				norm := normalize("some words before") + l + " after"
				var g gramSet
				g.add(norm)
				if !mayMatch(norm, &g, []string{l}) {
					t.Errorf("rule %s: literal %q rejected in a text that holds it", r.id, l)
				}
			}
		}
	}
	var g gramSet
	g.add(" | i feel calm today | ")
	if mayMatch(" | i feel calm today | ", &g, []string{"myself", "suicid"}) {
		t.Error("mayMatch found literals the text does not hold")
	}
	if got := requiredLiterals(`x*|y`); got != nil {
		t.Errorf("requiredLiterals of an optional pattern = %q, want nil", got)
	}
}

// TestScreenConcern: the screen says whom a text concerns. A third person is a topic only with
// a topic in the text and no one the learner knows in the sentence; a first-person phrase is a
// topic only inside a game or a character's words. The attacks come from the learner's side:
// naming a play, a character or a game beside one's own crisis must not make it a topic.
func TestScreenConcern(t *testing.T) {
	s := newScreen(t)
	tests := []struct {
		text    string
		crisis  bool
		concern Concern
		cats    []Category
	}{
		{"Why did Juliet kill herself?", false, ConcernTopic, []Category{CategoryTopic}},
		{"Should terminally ill patients be allowed to end their own lives?", false, ConcernTopic, []Category{CategoryTopic}},
		{"¿Por qué Adela se ahorca al final de la obra?", false, ConcernTopic, []Category{CategoryTopic}},
		{"Debate: ¿deberían los enfermos terminales poder quitarse la vida?", false, ConcernTopic, []Category{CategoryTopic}},
		{"How do cells kill themselves?", false, ConcernTopic, []Category{CategoryTopic}},
		{"I keep killing myself in Minecraft to respawn", false, ConcernTopic, []Category{CategoryTopic}},
		{"The speaker says I want to die, what does it mean?", false, ConcernTopic, []Category{CategoryTopic}},
		{"My friend wants to kill herself", true, ConcernOther, []Category{CategoryConcernOther}},
		{"She told me she is going to kill herself tonight", true, ConcernOther, []Category{CategoryConcernOther}},
		{"My best friend keeps talking about how Juliet killed herself and says she will do the same", true, ConcernOther, []Category{CategoryConcernOther}},
		{"he killed himself last year", true, ConcernOther, []Category{CategoryConcernOther}},
		{"mi amiga dice que se quiere matar", true, ConcernOther, []Category{CategoryConcernOther}},
		{"How do you help a friend who is self harming? It's for health class", false, ConcernTopic, []Category{CategoryTopic}},
		{"My friend is self harming and we talked about it in health class", true, ConcernOther, []Category{CategoryConcernOther}},
		{"Why did he kill himself? He was my brother", true, ConcernOther, []Category{CategoryConcernOther}},
		{"¿Por qué se suicidó? Era mi prima", true, ConcernOther, []Category{CategoryConcernOther}},
		{"¿Por qué se suicida el padre de Pedro Páramo?", false, ConcernTopic, []Category{CategoryTopic}},
		// Attacks: a topic named beside the learner's own crisis.
		{"We're reading Romeo and Juliet and honestly I want to kill myself", true, ConcernSelf, []Category{CategorySuicide}},
		{"I'm in the school play and I want to kill myself", true, ConcernSelf, []Category{CategorySuicide}},
		{"Like Ophelia in the play, I want to drown myself", true, ConcernSelf, []Category{CategorySuicide}},
		{"I want to kill myself in real life, not in the game", true, ConcernSelf, []Category{CategorySuicide}},
		{"for my essay: I have been thinking about killing myself", true, ConcernSelf, []Category{CategorySuicide}},
		{"Estamos leyendo Bodas de sangre y me quiero matar", true, ConcernSelf, []Category{CategorySuicide}},
		{"Juliet killed herself and I want to kill myself too", true, ConcernSelf, []Category{CategorySuicide}},
		// Laughter does not make intent hyperbole; hyperbole stays hyperbole.
		{"i want to die lol", true, ConcernSelf, []Category{CategorySuicide}},
		{"me quiero morir jajaja", true, ConcernSelf, []Category{CategorySuicide}},
		{"kms lmao", true, ConcernSelf, []Category{CategorySuicide}},
		{"I want to die of embarrassment lol", false, ConcernNone, nil},
		{"me quiero morir de la risa jaja", false, ConcernNone, nil},
		// Kilometres are not "kms", a doubled Spanish letter is not a typo.
		{"we ran 5 kms today", false, ConcernNone, nil},
		{"Violeta Parra fue una cantante chilena", false, ConcernNone, nil},
		// Output verdicts say nothing of whom.
		{"", false, ConcernNone, nil},
	}
	for _, tt := range tests {
		v := s.check(StageInput, tt.text)
		if v.Crisis != tt.crisis || v.Concern != tt.concern || !slices.Equal(v.Categories, tt.cats) {
			t.Errorf("check(%q) = %+v, want crisis %v concern %q categories %v", tt.text, v, tt.crisis, tt.concern, tt.cats)
		}
	}
	if v := s.check(StageOutput, "the most painless way to kill yourself"); !v.Crisis || v.Concern != ConcernNone {
		t.Errorf("output verdict %+v, want a hit with no concern", v)
	}
}

// TestRespell: the spellings learners type reach the rules as the rules' words, and ordinary
// words are left alone.
func TestRespell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"kiero matarme", " | quiero matarme | "},
		{"q ganas d morir xq", " | que ganas de morir porque | "},
		{"myslef", " | myself | "},
		{"suuuicide", " | suicide | "},
		{"mysellf", " | myself | "},
		{"k1ll", " | kill | "},
		{"ki11", " | kill | "},
		{"5u1c1d3", " | suicide | "},
		{"$uicide", " | suicide | "},
		{"m@tarme", " | matarme | "},
		{"pay $5 at me@x.com", " | pay 5 at meax | com | "},
		{"nooooo", " | nooooo | "},
		{"parra perro carro", " | parra perro carro | "},
		{"mp3 3pm 10am 2nd", " | mp3 3pm 10am 2nd | "},
		{"coffee teeth sleeep", " | coffee teeth sleep | "},
	}
	for _, tt := range tests {
		if got := normalize(tt.in); got != tt.want {
			t.Errorf("normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzNormalize: normalize takes any learner text: its output is framed by clause marks, holds
// no double space, and its words are already spelled as the rules spell them (respelling
// changes nothing more).
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"kiero matarme xq", "I w@nt to d1e lol", "ñ…\n,,$$@@", "su1c1d3 2nite", "", "ki11 kiiiill"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := normalize(s)
		if !strings.HasPrefix(n, " | ") || !strings.HasSuffix(n, " | ") || strings.Contains(n, "  ") {
			t.Fatalf("normalize(%q) = %q, want it framed by \" | \" and single-spaced", s, n)
		}
		if again := respell(n); again != n {
			t.Fatalf("respell is not stable on %q: %q then %q", s, n, again)
		}
	})
}

// TestMergeTopicAndCrisis: a topic the screen let go and a crisis a classifier beside it found
// merge into a crisis that says nothing of a topic.
func TestMergeTopicAndCrisis(t *testing.T) {
	topic := Verdict{Categories: []Category{CategoryTopic}, Concern: ConcernTopic, Rules: []string{"en.other.kill_self"}}
	crisis := Verdict{Crisis: true, Categories: []Category{CategorySuicide}, Severity: SeverityHigh, Rules: []string{"moderation"}}
	for _, got := range []Verdict{topic.Merge(crisis), crisis.Merge(topic)} {
		if !got.Crisis || !slices.Equal(got.Categories, []Category{CategorySuicide}) || got.Concern != ConcernNone || len(got.Rules) != 2 {
			t.Errorf("Merge = %+v, want a suicide crisis with no topic and both rules", got)
		}
	}
	if got := topic.Merge(Verdict{}); got.Crisis || got.Concern != ConcernTopic || !slices.Equal(got.Categories, []Category{CategoryTopic}) {
		t.Errorf("topic merged with a clean verdict = %+v, want the topic", got)
	}
}
