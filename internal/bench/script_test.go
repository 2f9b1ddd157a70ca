package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/extract"
	"github.com/coachgw/coachgw/internal/safety"
)

// textCollector streams the root assistantText, as the toulmin contract does.
type textCollector struct{ text []byte }

func (c *textCollector) Match(p extract.Path) (int, extract.Action) {
	if len(p) == 1 && p[0].Is("assistantText") {
		return 0, extract.Stream
	}
	return 0, extract.Skip
}

func (c *textCollector) Text(_ int, _ extract.Path, text []byte) { c.text = append(c.text, text...) }

func (c *textCollector) End(int, extract.Path, []byte) {}

// newScreen returns the gateway's built-in screen.
func newScreen(t *testing.T) *safety.Screen {
	t.Helper()
	s, err := safety.NewScreen()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScript checks the scripted answers: the pieces are the answer, the answer is a valid
// CoachAIResult whose assistantText is the script's text, the piece the script says completes
// each byte of the text is the one after which the gateway's own extractor has emitted that
// byte, and the piece the script says lets the output window release text is the one after
// which a window fed by that extractor first does.
func TestScript(t *testing.T) {
	screen := newScreen(t)
	shapes := []struct {
		name  string
		shape Shape
	}{
		{"default", DefaultShape},
		{"one-byte chunks", Shape{Chunks: 700, ChunkMin: 1, ChunkMax: 1}},
		{"large chunks", Shape{Chunks: 20, ChunkMin: 40, ChunkMax: 64}},
		{"few chunks", Shape{Chunks: 3, ChunkMin: 50, ChunkMax: 60}},
	}
	for _, tt := range shapes {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(40) {
				sc, err := newScript(tt.shape, seed, screen)
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				checkScript(t, tt.shape, sc, screen)
			}
		})
	}
}

func checkScript(t *testing.T, shape Shape, sc *script, screen *safety.Screen) {
	t.Helper()
	if got := strings.Join(sc.pieces, ""); got != sc.raw {
		t.Fatalf("the pieces join to %q, want the answer %q", got, sc.raw)
	}
	// Pieces never split a character, so an answer has at most as many pieces as characters.
	if want := min(shape.Chunks, utf8.RuneCountInString(sc.raw)); len(sc.pieces) != want {
		t.Errorf("%d pieces, want %d", len(sc.pieces), want)
	}
	for i, p := range sc.pieces {
		if !utf8.ValidString(p) {
			t.Errorf("piece %d %q is not valid UTF-8", i, p)
		}
	}
	var doc struct {
		AssistantText string `json:"assistantText"`
		Step          string `json:"step"`
	}
	if err := json.Unmarshal([]byte(sc.raw), &doc); err != nil {
		t.Fatalf("the answer is not JSON: %v\n%s", err, sc.raw)
	}
	if doc.AssistantText != sc.text || doc.Step != "claim" {
		t.Fatalf("assistantText %q, step %q; want %q, claim", doc.AssistantText, doc.Step, sc.text)
	}
	// Feed the pieces to the extractor and note, for every byte of text, the piece after which
	// it had been emitted, and the piece after which a window fed with what it emitted first
	// released text.
	var c textCollector
	ex := extract.New(&c)
	want := make([]int, 0, len(sc.text))
	win := safety.NewWindow(screen, safety.DefaultHoldback)
	released := len(sc.pieces)
	for k, p := range sc.pieces {
		if err := ex.Write([]byte(p)); err != nil {
			t.Fatalf("extractor: %v", err)
		}
		if emitted := string(c.text[len(want):]); emitted != "" && released == len(sc.pieces) {
			if out, v := win.Push(emitted); v.Crisis {
				t.Fatalf("the output window flags the scripted text: %+v", v)
			} else if out != "" {
				released = k
			}
		}
		for len(want) < len(c.text) {
			want = append(want, k)
		}
	}
	if string(c.text) != sc.text {
		t.Fatalf("the extractor streamed %q, want %q", c.text, sc.text)
	}
	for i, k := range want {
		if got := int(sc.chunkOf[i]); got != k {
			t.Fatalf("byte %d (%q) completes with piece %d, the extractor emitted it after piece %d", i, sc.text[i], got, k)
		}
	}
	if sc.first != want[0] {
		t.Errorf("first = %d, want %d", sc.first, want[0])
	}
	if sc.released != released {
		t.Errorf("released = %d, want %d (first text at piece %d)", sc.released, released, sc.first)
	}
	// A held stream is paused after the gateway's first text has been flushed, and before the
	// answer's last piece, so that it stays open.
	if h := sc.holdAfter(); h >= 0 && (h <= sc.released || h >= len(sc.pieces)) {
		t.Errorf("holdAfter() = %d with the first release at piece %d of %d, want between them", h, sc.released, len(sc.pieces))
	} else if h < 0 && shape == DefaultShape {
		t.Errorf("holdAfter() = -1: the default answer releases no text before its last piece (piece %d of %d)", sc.released, len(sc.pieces))
	}
	for end := 1; end <= len(sc.text); end++ {
		if got := sc.chunkOfDelta(end); got != want[end-1] {
			t.Fatalf("chunkOfDelta(%d) = %d, want %d", end, got, want[end-1])
		}
	}
	if got := sc.chunkOfDelta(0); got != -1 {
		t.Errorf("chunkOfDelta(0) = %d, want -1", got)
	}
}

func TestScriptHasEscapesAndUnicode(t *testing.T) {
	screen := newScreen(t)
	sc, err := newScript(DefaultShape, 1, screen)
	if err != nil {
		t.Fatal(err)
	}
	long, err := newScript(Shape{Chunks: 400, ChunkMin: 3, ChunkMax: 8}, 1, screen)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`\n`, `\"`, "—"} {
		if !strings.Contains(long.raw, want) {
			t.Errorf("a long answer lacks %q: %s", want, long.raw)
		}
	}
	if !strings.HasPrefix(sc.raw, scriptHead) || !strings.HasSuffix(sc.raw, scriptTail) {
		t.Errorf("the answer %q does not start with assistantText and end with the fixed members", sc.raw)
	}
}

func TestShapeValidate(t *testing.T) {
	tests := []struct {
		name  string
		shape Shape
		ok    bool
	}{
		{"default", DefaultShape, true},
		{"no chunks", Shape{ChunkMin: 3, ChunkMax: 8}, false},
		{"min above max", Shape{Chunks: 150, ChunkMin: 9, ChunkMax: 8}, false},
		{"negative delay", Shape{Chunks: 150, ChunkMin: 3, ChunkMax: 8, DelayMin: -time.Millisecond}, false},
		{"too short for a result", Shape{Chunks: 10, ChunkMin: 3, ChunkMax: 8}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.shape.validate(); (err == nil) != tt.ok {
				t.Errorf("validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
