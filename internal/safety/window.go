package safety

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultHoldback is COACH_SAFETY_HOLDBACK_CHARS's default: the most unchecked model text, in
// characters, the window keeps back while it waits for a clause end.
const DefaultHoldback = 160

// carryRunes bounds the released text the window keeps as context for the next check. It is
// longer than any rule's span, so a phrase split across a release edge is still seen whole.
const carryRunes = 240

// Window releases streamed model text only after the output check has passed on it, so no
// harmful sentence reaches the learner whole, and otherwise at the model's own pace. Deltas go
// in with Push; what comes out is safe to send. The window holds only what a rule could still
// need: from the first word of a clause whose words could still become the start of an output
// rule's match (the rules spelled out word by word when the screen is built, see phrases) to the
// point where they no longer can, or to the clause end (". ", "! ", "? ", ", ", ": ", "; ", a
// line break), where the clause is checked whole. Text before that word, and a clause in which
// no such word has appeared, leaves as soon as it arrives, with an unfinished last word only
// when no rule's word starts with it. One delta in gives at most one delta out, so a benign
// answer keeps the model's boundaries. Held text never exceeds the holdback: when it would,
// the oldest part is checked and released at a word boundary. Each check sees the text being
// released together with everything still held and the released text since the last clause
// end, so a phrase split across deltas or across a release edge is checked whole.
//
// A phrase can still start in text released at a holdback edge and end in text that arrives
// later; then the check that sees it whole reports the hit, only its beginning has reached the
// learner, and the caller retracts that with a reset line (reason unsafe_output). Rules never
// span a clause end, so text released at a clause end can never become part of a later hit.
//
// A Window serves one answer and is not safe for concurrent use. After a hit it releases nothing more.
type Window struct {
	screen   *Screen
	holdback int
	// carry is the released text since the last clause end, at most carryRunes runes.
	carry string
	// pending is the text not yet released.
	pending string
	// released counts the bytes released so far.
	released int
	hit      Verdict
}

// NewWindow returns a window over s that holds back at most holdback characters; holdback ≤ 0
// releases each delta as soon as it has been checked.
func NewWindow(s *Screen, holdback int) *Window {
	return &Window{screen: s, holdback: max(holdback, 0)}
}

// Push adds one delta of model text and returns the part now safe to release ("" if none). When
// the check finds harmful text it returns "" and the hit verdict: the caller stops releasing,
// and sends reset unsafe_output if Released reports text already sent.
func (w *Window) Push(delta string) (string, Verdict) {
	if w.hit.Crisis {
		return "", w.hit
	}
	w.pending += delta
	cut := w.releasePoint()
	if cut == 0 {
		return "", Verdict{}
	}
	// The trailing word may be incomplete ("die" of "diet"); leave it out of the check while
	// it is not being released, so a stream is not flagged for a word it has not finished.
	checked := w.pending
	if ws := trailingWordStart(w.pending); cut <= ws {
		checked = w.pending[:ws]
	}
	if v := w.screen.check(StageOutput, w.carry+checked); v.Crisis {
		w.hit = v
		return "", v
	}
	return w.release(cut), Verdict{}
}

// Flush checks and releases everything still held, at the end of the answer.
func (w *Window) Flush() (string, Verdict) {
	if w.hit.Crisis {
		return "", w.hit
	}
	if w.pending == "" {
		return "", Verdict{}
	}
	if v := w.screen.check(StageOutput, w.carry+w.pending); v.Crisis {
		w.hit = v
		return "", v
	}
	return w.release(len(w.pending)), Verdict{}
}

// Released reports whether any text has left the window, which is when a hit needs a reset.
func (w *Window) Released() bool { return w.released > 0 }

// Held returns the number of characters held back, never more than the holdback after Push.
func (w *Window) Held() int { return utf8.RuneCountInString(w.pending) }

// releasePoint returns the byte offset in pending up to which text should be released now:
// after the last clause end, further up to the first word a rule could still need (all of
// pending when there is none), and further still if that would leave more than the holdback held.
func (w *Window) releasePoint() int {
	end := lastSentenceEnd(w.pending)
	cut := end
	if open := w.openStart(end); open > cut {
		cut = open
	}
	rest := w.pending[cut:]
	over := utf8.RuneCountInString(rest) - w.holdback
	if over <= 0 {
		return cut
	}
	// The earliest cut that leaves no more than the holdback held.
	minCut := cut
	for i := 0; i < over; i++ {
		_, n := utf8.DecodeRuneInString(w.pending[minCut:])
		minCut += n
	}
	// Prefer a word boundary at or after it, so no word is split between release and hold.
	if i := strings.IndexFunc(w.pending[minCut:], unicode.IsSpace); i >= 0 {
		return minCut + i
	}
	return minCut
}

// openStart returns the offset in pending of the first word, in the clause that starts at
// pending[end:] (or in the released carry when end is 0), from which the clause could still
// become a match of an output rule; len(pending) when there is none, and end when that word
// was already released.
func (w *Window) openStart(end int) int {
	clause, base := w.pending[end:], end
	if end == 0 {
		clause, base = w.carry+w.pending, -len(w.carry)
	}
	words, starts, ends := clauseWords(clause)
	n, partial := len(words), ""
	if n > 0 && ends[n-1] == len(clause) {
		// The last word may be unfinished: it is matched as the beginning of a rule's word.
		n--
		partial = words[n]
	}
	for i := 0; i < len(words); i++ {
		if i == n && !w.screen.output.whole(partial) {
			// An unfinished word at the end of a delta is released even when a phrase could
			// start with it, unless it could be a phrase by itself: a model streams a word at a
			// time, so holding it would merge every such delta with the next. The words after
			// it are held, so no phrase reaches the learner whole.
			break
		}
		if w.screen.output.open(words[i:n:n], partial) {
			return max(base+starts[i], end)
		}
	}
	return len(w.pending)
}

// clauseWords splits s into words as normalize would: runs of letters and digits, apostrophes
// dropped, lower case, accents folded. It returns the words and the byte offsets in s where
// each starts and ends.
func clauseWords(s string) (words []string, starts, ends []int) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !wordRune(r) {
			i += n
			continue
		}
		raw := rawWord(s[i:])
		for _, f := range strings.Fields(normalize(raw)) {
			if f != "|" && f != "," {
				words = append(words, f)
				starts = append(starts, i)
				ends = append(ends, i+len(raw))
			}
		}
		i += len(raw)
	}
	return words, starts, ends
}

// rawWord returns the word s starts with: its run of letters, digits and apostrophes.
func rawWord(s string) string {
	for i, r := range s {
		if !wordRune(r) {
			return s[:i]
		}
	}
	return s
}

// wordRune reports whether r belongs to a word for normalize: a letter, a digit, or an
// apostrophe it drops to join a contraction.
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’' || r == '‘' || r == '`' || r == '´'
}

// release sends pending[:cut] and keeps the context for the next check.
func (w *Window) release(cut int) string {
	out := w.pending[:cut]
	w.pending = w.pending[cut:]
	w.released += len(out)
	if end := lastSentenceEnd(out); end > 0 {
		w.carry = tailRunes(out[end:], carryRunes)
	} else {
		w.carry = tailRunes(w.carry+out, carryRunes)
	}
	return out
}

// lastSentenceEnd returns the offset just after the last clause end in s (0 if none): a line
// break, or . ! ? … , : ; followed by a space. A full stop not followed by a space ("3.5",
// "e.g" mid-stream) does not count, because the next delta may continue the word.
func lastSentenceEnd(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case '\n':
			return i + 1
		case ' ', '\t':
			if i > 0 {
				if end := sentenceMarkBefore(s[:i]); end {
					return i
				}
			}
		}
	}
	return 0
}

// sentenceMarkBefore reports whether s ends in a mark that ends a clause: a sentence end, or a
// comma, colon or semicolon. No rule spans one (normalize makes each a token of its own, and
// rules are written with plain spaces), so text up to one can be released once checked:
// releasing at clauses rather than whole sentences keeps the learner's first words from
// waiting for the model's first full stop.
func sentenceMarkBefore(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	switch r {
	case '.', '!', '?', '…', ',', ':', ';':
		return true
	}
	return false
}

// trailingWordStart returns the offset where s's last, possibly unfinished, word starts
// (len(s) when s ends in a space or a mark).
func trailingWordStart(s string) int {
	i := len(s)
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’' {
			break
		}
		i -= n
	}
	return i
}

// tailRunes returns the last n runes of s, starting at a word boundary when there is one.
func tailRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := len(s)
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	if j := strings.IndexFunc(s[i:], unicode.IsSpace); j >= 0 {
		return s[i+j:]
	}
	return s[i:]
}
