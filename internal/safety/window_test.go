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

func TestWindowSentenceEndReleasesEarly(t *testing.T) {
	w := NewWindow(newScreen(t), DefaultHoldback)
	if rel, v := w.Push("Breathe in slowly. Now"); rel != "Breathe in slowly." || v.Crisis {
		t.Errorf("Push = %q, %+v; want the finished sentence released", rel, v)
	}
	if rel, _ := w.Push(" hold it"); rel != "" {
		t.Errorf("Push = %q, want nothing released before a sentence end", rel)
	}
	if rel, _ := w.Flush(); rel != " Now hold it" {
		t.Errorf("Flush = %q, want the rest", rel)
	}
	// A clause end releases too: no rule spans a comma.
	w = NewWindow(newScreen(t), DefaultHoldback)
	if rel, _ := w.Push("Breathe in, then hold"); rel != "Breathe in," {
		t.Errorf("Push = %q, want the clause before the comma released", rel)
	}
	// A comma inside a number is no clause end.
	w = NewWindow(newScreen(t), DefaultHoldback)
	if rel, _ := w.Push("about 3,5 hours"); rel != "" {
		t.Errorf("Push = %q, want nothing released", rel)
	}
	// A full stop inside a number is not a sentence end.
	w = NewWindow(newScreen(t), DefaultHoldback)
	if rel, _ := w.Push("Breathe for 3."); rel != "" {
		t.Errorf("Push = %q, want a trailing full stop held until a space follows", rel)
	}
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
