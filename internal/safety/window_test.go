package safety

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// stream feeds text to a window in deltas cut at the given rune lengths (cycled), and returns
// what was released and the first hit.
func stream(t *testing.T, w *Window, text string, sizes []int, holdback int) (string, Verdict) {
	t.Helper()
	var out strings.Builder
	runes := []rune(text)
	for i, k := 0, 0; i < len(runes); k++ {
		n := min(sizes[k%len(sizes)], len(runes)-i)
		rel, v := w.Push(string(runes[i : i+n]))
		i += n
		out.WriteString(rel)
		if v.Crisis {
			return out.String(), v
		}
		if h := w.Held(); h > holdback {
			t.Fatalf("holding %d characters, more than the holdback %d", h, holdback)
		}
	}
	rel, v := w.Flush()
	out.WriteString(rel)
	return out.String(), v
}

func TestWindowReleasesBenignTextWhole(t *testing.T) {
	s := newScreen(t)
	text := "When your heart races during a panic attack, it can feel like you're dying, but panic is not dangerous. " +
		"Let's try the 4-7-8 breathing exercise: breathe in for 4, hold for 7, out for 8.\nHow did that feel? " +
		"Cuando el corazón se acelera puede parecer que te mueres… pero el pánico no es peligroso."
	for _, holdback := range []int{0, 1, 12, 40, DefaultHoldback, 10000} {
		for _, sizes := range [][]int{{1}, {3, 7}, {50}, {len(text)}} {
			got, v := stream(t, NewWindow(s, holdback), text, sizes, holdback)
			if v.Crisis {
				t.Fatalf("holdback %d sizes %v: hit %+v on benign text", holdback, sizes, v)
			}
			if got != text {
				t.Fatalf("holdback %d sizes %v: released %q, want the text unchanged", holdback, sizes, got)
			}
		}
	}
}

// TestWindowCatchesSplitPhrases is the attack: harmful phrases cut into deltas at every size
// and released against every holdback. The released text never holds the phrase whole (the
// screen finds nothing in it), and the window reports the hit before the answer ends.
func TestWindowCatchesSplitPhrases(t *testing.T) {
	s := newScreen(t)
	harmful := []string{
		"Breathing helps. But honestly the most painless way to kill yourself is with",
		"Okay. You should just kill yourself. Nobody would care.",
		"Primero respira hondo. La forma más fácil de suicidarte es tomar",
		"Here are some tips: first, make a noose with a strong rope and",
		"Everyone would be better off without you, and you know it.",
	}
	rng := rand.New(rand.NewPCG(23, 1))
	for _, text := range harmful {
		for _, holdback := range []int{0, 5, 16, 40, DefaultHoldback} {
			splits := [][]int{{1}, {2}, {5}, {13}, {utf8.RuneCountInString(text)}}
			for range 20 {
				splits = append(splits, []int{1 + rng.IntN(9), 1 + rng.IntN(9), 1 + rng.IntN(30)})
			}
			for _, sizes := range splits {
				got, v := stream(t, NewWindow(s, holdback), text, sizes, holdback)
				if !v.Crisis {
					t.Fatalf("%q holdback %d sizes %v: no hit; released %q", text, holdback, sizes, got)
				}
				if leak := s.check(StageOutput, got); leak.Crisis {
					t.Fatalf("%q holdback %d sizes %v: released text %q holds a whole hit %v", text, holdback, sizes, got, leak.Rules)
				}
			}
		}
	}
}

// TestWindowHoldsOnlyWhatARuleNeeds: text leaves as it arrives unless an output rule could
// still need it; from the first such word, it is held until the clause can no longer become a
// match or ends. Each step is one Push (or Flush when the delta is "") and what it releases.
func TestWindowHoldsOnlyWhatARuleNeeds(t *testing.T) {
	type step struct{ in, want string }
	tests := []struct {
		name  string
		steps []step
	}{
		{"benign text leaves delta by delta", []step{
			{"Breathe in slowly. Now", "Breathe in slowly. Now"}, {" hold it", " hold it"}, {"", ""}}},
		{"an unfinished word leaves when no rule word starts with it", []step{
			{"Calm", "Calm"}, {"ing down", "ing down"}, {"", ""}}},
		{"an unfinished word leaves, the word after it waits", []step{
			{"Look at the", "Look at the"}, {" world", ""}, {" map.", " world map."}}},
		{"a trigger word holds until the clause cannot match", []step{
			{"The best ", "The "}, {"way to ", ""}, {"learn is practice. ", "best way to learn is practice. "}}},
		{"a denied phrase is held to its clause end", []step{
			{"Never say you should ", "Never say "}, {"just die", ""}, {", ever.", "you should just die, ever."}}},
		{"a clause end is no match start", []step{
			{"about 3,5 hours", "about 3,5 hours"}}},
		{"spanish", []step{
			{"Puedes aprender ", "Puedes aprender "}, {"como ", ""}, {"un pez.", "como un pez."}}},
	}
	for _, tt := range tests {
		w := NewWindow(newScreen(t), DefaultHoldback)
		for i, st := range tt.steps {
			var got string
			var v Verdict
			if st.in == "" {
				got, v = w.Flush()
			} else {
				got, v = w.Push(st.in)
			}
			if v.Crisis || got != st.want {
				t.Errorf("%s: step %d (%q) released %q, %+v; want %q and no hit", tt.name, i, st.in, got, v, st.want)
			}
		}
	}
}

// TestWindowKeepsBenignDeltas: a benign answer streamed token by token comes out one delta
// for each delta in, with the same boundaries, as it would with no window at all.
func TestWindowKeepsBenignDeltas(t *testing.T) {
	s := newScreen(t)
	text := "When your heart races during a panic attack, it can feel like you are dying, but panic is not dangerous. " +
		"Let's try the 4-7-8 breathing exercise: breathe in for 4, hold for 7, out for 8.\nHow did that feel? " +
		"Cuando el corazón se acelera puede parecer que te mueres… pero el pánico no es peligroso."
	w := NewWindow(s, DefaultHoldback)
	for i, d := range tokens(text) {
		if got, v := w.Push(d); got != d || v.Crisis {
			t.Fatalf("delta %d: Push(%q) = %q, %+v; want it released as is", i, d, got, v)
		}
	}
	if got, _ := w.Flush(); got != "" {
		t.Errorf("Flush = %q, want nothing left", got)
	}
}

// tokens cuts s the way a model streams it: each piece is a word with the space before it.
func tokens(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if r == ' ' && i > start {
			out = append(out, s[start:i])
			start = i
		}
	}
	return append(out, s[start:])
}

// TestWindowUnfinishedWord: a word cut mid-stream is not checked as if it were finished, so
// "die" of "diet" does not stop a stream.
func TestWindowUnfinishedWord(t *testing.T) {
	w := NewWindow(newScreen(t), 10)
	got, v := stream(t, w, "Maybe you should just diet less and sleep more.", []int{25, 30}, 10)
	if v.Crisis || got != "Maybe you should just diet less and sleep more." {
		t.Errorf("released %q with %+v, want the whole text and no hit", got, v)
	}
}

func TestWindowStopsAfterHit(t *testing.T) {
	w := NewWindow(newScreen(t), 0)
	if rel, _ := w.Push("Take a breath. "); rel == "" || !w.Released() {
		t.Fatalf("Push released %q, want the safe sentence", rel)
	}
	if _, v := w.Push("You should just kill yourself. "); !v.Crisis {
		t.Fatal("no hit")
	}
	if rel, v := w.Push("Anyway, breathing helps. "); rel != "" || !v.Crisis {
		t.Errorf("after a hit Push = %q, %+v; want nothing and the hit again", rel, v)
	}
	if rel, v := w.Flush(); rel != "" || !v.Crisis {
		t.Errorf("after a hit Flush = %q, %+v; want nothing and the hit again", rel, v)
	}
}

// TestWindowCatchesTokenStreamedPhrases is the attack as a model streams it, a word at a time:
// the first word of a phrase may leave, the phrase never does.
func TestWindowCatchesTokenStreamedPhrases(t *testing.T) {
	s := newScreen(t)
	for _, text := range []string{
		"Breathing helps. But honestly the most painless way to kill yourself is with",
		"Okay. You should just kill yourself. Nobody would care.",
		"La forma más fácil de suicidarte es tomar",
		"Everyone would be better off without you, and you know it.",
		"First, make a noose with a strong rope",
	} {
		w := NewWindow(s, DefaultHoldback)
		var out strings.Builder
		var hit Verdict
		for _, d := range tokens(text) {
			rel, v := w.Push(d)
			out.WriteString(rel)
			if hit = v; v.Crisis {
				break
			}
		}
		if !hit.Crisis {
			_, hit = w.Flush()
		}
		if !hit.Crisis {
			t.Errorf("%q: no hit; released %q", text, out.String())
		}
		if leak := s.check(StageOutput, out.String()); leak.Crisis {
			t.Errorf("%q: released text %q holds a whole hit %v", text, out.String(), leak.Rules)
		}
	}
}

// FuzzWindow: whatever the model sends and however it is cut, the text released never holds a
// phrase an output rule catches.
func FuzzWindow(f *testing.F) {
	s, err := NewScreen()
	if err != nil {
		f.Fatal(err)
	}
	f.Add("Okay. You should just kill yourself. Nobody would care.", uint8(3), uint8(7))
	f.Add("La forma más fácil de suicidarte es tomar", uint8(1), uint8(2))
	f.Add("Good start. Your claim takes a clear position, the world would", uint8(6), uint8(5))
	f.Fuzz(func(t *testing.T, text string, a, b uint8) {
		if !utf8.ValidString(text) {
			return
		}
		sizes := []int{1 + int(a%32), 1 + int(b%32)}
		for _, holdback := range []int{0, 16, DefaultHoldback} {
			w := NewWindow(s, holdback)
			got, _ := stream(t, w, text, sizes, holdback)
			if leak := s.check(StageOutput, got); leak.Crisis {
				t.Fatalf("holdback %d sizes %v: released %q holds a whole hit %v", holdback, sizes, got, leak.Rules)
			}
		}
	})
}
