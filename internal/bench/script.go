package bench

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/safety"
)

// Shape is the scripted model stream: how many chunks, how many bytes each, and the pause
// fakellm makes before every chunk after the first.
type Shape struct {
	Chunks             int
	ChunkMin, ChunkMax int
	DelayMin, DelayMax time.Duration
}

// DefaultShape mirrors a real model: about 150 chunks of 3 to 8 bytes, 10 to 20 ms apart.
var DefaultShape = Shape{Chunks: 150, ChunkMin: 3, ChunkMax: 8, DelayMin: 10 * time.Millisecond, DelayMax: 20 * time.Millisecond}

// meanTurn is the model's own duration of one turn on average: the pauses between chunks.
func (s Shape) meanTurn() time.Duration {
	return time.Duration(s.Chunks-1) * (s.DelayMin + s.DelayMax) / 2
}

func (s Shape) validate() error {
	switch {
	case s.Chunks < 1:
		return errors.New("the stream needs at least one chunk")
	case s.ChunkMin < 1 || s.ChunkMax < s.ChunkMin:
		return fmt.Errorf("chunk sizes %d..%d: want 1 <= min <= max", s.ChunkMin, s.ChunkMax)
	case s.DelayMin < 0 || s.DelayMax < s.DelayMin:
		return fmt.Errorf("delays %v..%v: want 0 <= min <= max", s.DelayMin, s.DelayMax)
	case s.Chunks*s.ChunkMax < len(scriptHead)+len(scriptTail)+1:
		return fmt.Errorf("%d chunks of at most %d bytes cannot hold a toulmin result (%d bytes at least)",
			s.Chunks, s.ChunkMax, len(scriptHead)+len(scriptTail)+1)
	}
	return nil
}

// script is one scripted model answer: a CoachAIResult with assistantText first, as the replay
// model writes it, cut into the chunks fakellm streams one per SSE event.
type script struct {
	raw    string
	pieces []string
	// ends[k] is the offset in raw just past piece k.
	ends []int
	// text is assistantText decoded: what a toulmin turn's delta lines concatenate to.
	text string
	// chunkOf[i] is the piece that completes byte i of text: the piece holding the last raw byte
	// of the escape sequence or UTF-8 character that byte belongs to. The gateway cannot emit a
	// byte before that piece arrived, and emits it as soon as it has.
	chunkOf []uint16
	// first is the piece that completes the first byte of assistantText: the earliest moment
	// any client, whatever path it takes, can show text.
	first int
	// released is the piece after which the gateway's output window (learner safety enforced,
	// the default holdback) has released text: its first clause end, or the holdback's worth
	// of text, whichever comes first; len(pieces) when it releases nothing before the text
	// ends. A gateway turn's first delta cannot come before it.
	released int
}

// Fixed parts of every scripted answer. The tail keeps the session where it is (shouldAdvance
// false) so that a session can take any number of turns, and still makes the guards work: the
// result has every member, and question_appending fires.
const (
	scriptHead     = `{"assistantText":"`
	scriptQuestion = "Which single fact would most convince a skeptic?"
	scriptTail     = `","step":"claim","confidence":0.55,"nextQuestion":"` + scriptQuestion + `","shouldAdvance":false}`
	// questionDelta is the last delta of a gateway turn (wire contract v1.2): the question the
	// guards append to assistantText, streamed after the model's text.
	questionDelta = "\n\n" + scriptQuestion
)

// prose is the text assistantText is made of: mostly ASCII, with the newlines and quotes that a
// model's JSON escapes and the multi-byte characters it writes raw.
const prose = "Good start. Your claim takes a clear position: cities should close their centres to private cars by 2030. " +
	"That is specific and debatable, which is exactly what a claim needs.\n\nBefore we move on, think about who " +
	"would disagree with you — shop owners? commuters? — and why. You wrote \"cars make streets unsafe\"; " +
	"that reads more like grounds than a claim, so keep it for the next step. Café owners in Zürich said " +
	"much the same. A strong claim names who should act, what they should do and by when — yours does all three. " +
	"Try saying it in one sentence without \"and\": if it still holds, it is focused enough.\n\n"

// newScript builds the answer for shape with randomness from seed. Piece sizes are drawn
// first; assistantText is then filled so that the answer is exactly as long as the pieces.
// screen is the gateway's built-in screen, through which the script is run once to find where
// the output window first releases text.
func newScript(shape Shape, seed uint64, screen *safety.Screen) (*script, error) {
	if err := shape.validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(seed, 0x5c719))
	sizes := make([]int, shape.Chunks)
	total := 0
	for i := range sizes {
		sizes[i] = shape.ChunkMin + rng.IntN(shape.ChunkMax-shape.ChunkMin+1)
		total += sizes[i]
	}
	// Start at a random place in the prose so scripts differ in where escapes fall.
	textLen := total - len(scriptHead) - len(scriptTail)
	body := fillText(prose, rng.IntN(len(prose)), textLen)
	raw := scriptHead + body + scriptTail

	s := &script{raw: raw, pieces: cut(raw, sizes)}
	end := 0
	for _, p := range s.pieces {
		end += len(p)
		s.ends = append(s.ends, end)
	}
	if err := s.index(); err != nil {
		return nil, err
	}
	s.released = s.windowRelease(screen, safety.DefaultHoldback)
	return s, nil
}

// cut cuts raw into len(sizes) pieces of about those sizes. A cut never splits a UTF-8
// character: it moves back to the character's start, or past its end when moving back would
// leave the piece empty; pieces lost that way are made up by splitting the longest pieces.
func cut(raw string, sizes []int) []string {
	var pieces []string
	at, want := 0, 0
	for _, n := range sizes {
		want += n
		end := min(want, len(raw))
		for end > at && end < len(raw) && !utf8.RuneStart(raw[end]) {
			end--
		}
		if end == at {
			for end = min(want, len(raw)); end < len(raw) && !utf8.RuneStart(raw[end]); end++ {
			}
		}
		if end > at {
			pieces = append(pieces, raw[at:end])
			at = end
		}
	}
	if at < len(raw) {
		pieces = append(pieces, raw[at:])
	}
	for len(pieces) < len(sizes) {
		best, mid := -1, 0
		for i, p := range pieces {
			if best >= 0 && len(p) <= len(pieces[best]) {
				continue
			}
			m := len(p) / 2
			for m > 0 && !utf8.RuneStart(p[m]) {
				m--
			}
			if m > 0 {
				best, mid = i, m
			}
		}
		if best < 0 {
			break
		}
		p := pieces[best]
		pieces = append(pieces[:best], append([]string{p[:mid], p[mid:]}, pieces[best+1:]...)...)
	}
	return pieces
}

// fillText returns exactly n bytes of JSON-encoded text taken from the encoded prose, starting
// at rune offset start (wrapping around): whole escapes and characters only, topped up with
// spaces when the next one would not fit.
func fillText(text string, start, n int) string {
	for start > 0 && start < len(text) && !utf8.RuneStart(text[start]) {
		start++
	}
	enc := encodeJSON(text[start:] + text[:start])
	var b strings.Builder
	for b.Len() < n {
		for i := 0; i < len(enc) && b.Len() < n; {
			unit := jsonUnit(enc[i:])
			if b.Len()+len(unit) > n {
				break
			}
			b.WriteString(unit)
			i += len(unit)
		}
		if b.Len()+utf8.UTFMax > n {
			break
		}
	}
	for b.Len() < n {
		b.WriteByte(' ')
	}
	return b.String()
}

// encodeJSON escapes quotes, backslashes and newlines, leaving other characters raw.
func encodeJSON(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// jsonUnit returns the first escape sequence or character of JSON string content s.
func jsonUnit(s string) string {
	if s[0] == '\\' {
		if len(s) >= 6 && s[1] == 'u' {
			return s[:6]
		}
		return s[:min(2, len(s))]
	}
	_, n := utf8.DecodeRuneInString(s)
	return s[:n]
}

// index decodes assistantText and works out which piece completes each of its bytes.
func (s *script) index() error {
	start := len(scriptHead)
	var text strings.Builder
	var rawEnd []int // raw offset just past the unit holding each decoded byte
	i := start
	for i < len(s.raw) && s.raw[i] != '"' {
		unit := jsonUnit(s.raw[i:])
		dec, err := decodeUnit(unit)
		if err != nil {
			return err
		}
		i += len(unit)
		for range len(dec) {
			rawEnd = append(rawEnd, i)
		}
		text.WriteString(dec)
	}
	if i >= len(s.raw) {
		return errors.New("assistantText does not end")
	}
	s.text = text.String()
	s.chunkOf = make([]uint16, len(rawEnd))
	for j, end := range rawEnd {
		s.chunkOf[j] = uint16(s.pieceOf(end - 1))
	}
	if len(s.chunkOf) == 0 {
		return errors.New("assistantText is empty")
	}
	s.first = int(s.chunkOf[0])
	return nil
}

// holdPause is how many pieces of text, at least, a held stream gets before its pause.
const holdPause = 8

// holdAfter returns how many events fakellm flushes before it pauses a held stream: at least
// holdPause pieces from the first text on, and every piece up to the one that lets the
// gateway's output window release its first text, so that a stream is held with text out
// whichever path it takes (the proxy's client has text from piece first on, the gateway's from
// piece released on). The last piece is never flushed, so the stream stays open; -1 when the
// window releases nothing before it.
func (s *script) holdAfter() int {
	if s.released >= len(s.pieces)-1 {
		return -1
	}
	return min(max(s.first+holdPause, s.released+1), len(s.pieces)-1)
}

// windowRelease returns the piece after which an output window over screen with holdback
// releases its first text, when assistantText is pushed into it as the pieces complete it (the
// gateway may push the same text in fewer, larger deltas; the window's first release depends
// only on the text pushed so far, so the piece is the same). It returns len(pieces) when the
// window releases nothing before the text ends. The bench runs the gateway's own window rather
// than a copy of its rules, so that a change to where it releases moves the hold point with it.
func (s *script) windowRelease(screen *safety.Screen, holdback int) int {
	w := safety.NewWindow(screen, holdback)
	at := 0
	for k := range s.pieces {
		end := at
		for end < len(s.chunkOf) && int(s.chunkOf[end]) <= k {
			end++
		}
		if end == at {
			continue
		}
		if out, _ := w.Push(s.text[at:end]); out != "" {
			return k
		}
		at = end
	}
	return len(s.pieces)
}

// pieceOf returns the piece that holds raw byte off.
func (s *script) pieceOf(off int) int {
	return sort.SearchInts(s.ends, off+1)
}

// decodeUnit decodes one escape sequence or character of JSON string content.
func decodeUnit(u string) (string, error) {
	if u[0] != '\\' {
		return u, nil
	}
	if len(u) < 2 {
		return "", errors.New("a truncated escape")
	}
	switch u[1] {
	case 'n':
		return "\n", nil
	case '"', '\\', '/':
		return u[1:2], nil
	case 't':
		return "\t", nil
	case 'r':
		return "\r", nil
	}
	return "", fmt.Errorf("escape %q is not used by the scripts", u)
}

// chunkOfDelta returns the piece that completed a delta whose text ends at decoded offset end
// (exclusive) of assistantText, or -1 when end is out of range.
func (s *script) chunkOfDelta(end int) int {
	if end <= 0 || end > len(s.chunkOf) {
		return -1
	}
	return int(s.chunkOf[end-1])
}
