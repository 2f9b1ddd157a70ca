package cards

import (
	"slices"
	"strings"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/extract"
)

// ToolAck is the tool message that answers every display_card call in the history.
const ToolAck = "displayed"

// Turn is one cards turn; it implements coach.Turn. Besides that interface it offers LastRaw for
// logging the model response a fallback replaced.
type Turn struct {
	st      state // the state the turn starts from, level-up applied
	prev    *Card // the card the learner's input answers; nil on the first turn
	levelUp *Card
	user    coach.Message
	req     coach.ModelRequest

	ext     *extract.Extractor
	emit    func(coach.Event) // set only while ext.Write runs
	seen    bool              // the root content has begun; a duplicate key is not streamed again
	stopped bool              // the extractor failed; Finish judges the full output instead
	calls   []*toolCall
	content strings.Builder
	lastRaw string
}

// toolCall is one tool call as the model streamed it.
type toolCall struct {
	id, name string
	args     strings.Builder
}

// Prelude returns the level_up card event when this turn levels up, and nothing otherwise.
func (t *Turn) Prelude() []coach.Event {
	if t.levelUp == nil {
		return nil
	}
	return []coach.Event{{Type: coach.EventCard, Card: mustJSON(t.levelUp), Block: -1}}
}

// Request returns the model request: system prompt, bounded history and the learner's message,
// with the display_card tool to be forced.
func (t *Turn) Request() coach.ModelRequest {
	req := t.req
	// The engine appends a correction to the slice it gets; it must not reach into ours.
	req.Messages = slices.Clip(req.Messages)
	return req
}

// Feed relays the root content of the first tool call's arguments as delta events while it is
// generated. Plain assistant content is only kept for the log: the fallback card will carry the
// visible text. Feed never fails a turn: when the arguments stop being valid JSON it stops
// streaming and leaves the verdict to Finish.
func (t *Turn) Feed(f coach.Fragment, emit func(coach.Event)) error {
	t.content.WriteString(f.Content)
	if f.ToolArgs == "" && f.ToolCallID == "" && f.ToolName == "" {
		return nil
	}
	if t.opensCall(f) {
		t.calls = append(t.calls, &toolCall{id: f.ToolCallID, name: f.ToolName})
	}
	cur := t.calls[len(t.calls)-1]
	if cur.id == "" {
		cur.id = f.ToolCallID
	}
	if cur.name == "" {
		cur.name = f.ToolName
	}
	cur.args.WriteString(f.ToolArgs)
	if len(t.calls) > 1 || t.stopped || f.ToolArgs == "" {
		return nil
	}
	t.emit = emit
	err := t.ext.Write([]byte(f.ToolArgs))
	t.emit = nil
	if err != nil {
		t.stopped = true
	}
	return nil
}

// opensCall reports whether f starts a tool call. Fragments carry no call index, so a second
// call shows itself by a new id, or by a name (without the current id) once the current call has
// arguments; endpoints that repeat the id or name on every fragment of one call stay one call.
func (t *Turn) opensCall(f coach.Fragment) bool {
	if len(t.calls) == 0 {
		return true
	}
	cur := t.calls[len(t.calls)-1]
	if f.ToolCallID != "" && cur.id != "" && f.ToolCallID != cur.id {
		return true
	}
	sameID := f.ToolCallID != "" && f.ToolCallID == cur.id
	return f.ToolName != "" && cur.args.Len() > 0 && !sameID
}

// Reset discards the output fed so far.
func (t *Turn) Reset() {
	t.ext.Reset()
	t.seen, t.stopped = false, false
	t.calls = nil
	t.content.Reset()
}

// Finish turns the output into the turn's outcome. It never fails: output that yields no valid
// card becomes the seed's fallback insight card, with the cause in Rules and the full response
// in Diagnostic (and LastRaw), and the session goes on.
func (t *Turn) Finish() (*coach.Outcome, error) {
	t.lastRaw = t.raw()
	var (
		card          Card
		rules         []string
		cause, detail string
	)
	if len(t.calls) == 0 {
		cause, detail = RuleFallbackNoToolCall, "the model answered without calling "+ToolName
	} else {
		card, rules, cause, detail = parseArguments(t.calls[0].args.String())
		if len(t.calls) > 1 {
			rules = append(rules, RuleExtraToolCalls)
		}
	}
	out := &coach.Outcome{}
	if cause != "" {
		card = fallbackCard()
		rules = append(rules, cause)
		out.Fallback = true
		out.Diagnostic = "cards: " + cause + ": " + detail + "\n" + t.lastRaw
	}

	next := t.st
	if !out.Fallback && card.Type == TypeInsight && t.prev != nil &&
		(t.prev.Type == TypePrompt || t.prev.Type == TypeReflection) {
		next.Cycles++
		next.CompletedCycles++
	}
	next.LastCard = &card

	id := ""
	if len(t.calls) > 0 {
		id = t.calls[0].id
	}
	if id == "" {
		id = "call_" + coach.NewID()[:24]
	}
	out.Result = mustJSON(card)
	out.State = mustJSON(next)
	out.Rules = rules
	out.History = []coach.Message{
		t.user,
		{Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: id, Name: ToolName, Arguments: card.toolArguments()}}},
		{Role: coach.RoleTool, ToolCallID: id, Content: ToolAck},
	}
	return out, nil
}

// LastRaw returns the full model response that the last Finish judged: every tool call with its
// raw arguments, then any plain content. It is what an error log of a fallback should show.
func (t *Turn) LastRaw() string { return t.lastRaw }

func (t *Turn) raw() string {
	var b strings.Builder
	for _, c := range t.calls {
		b.WriteString("tool_call id=" + c.id + " name=" + c.name + " arguments=" + c.args.String() + "\n")
	}
	if t.content.Len() > 0 {
		b.WriteString("content=" + t.content.String() + "\n")
	}
	if b.Len() == 0 {
		return "(empty response)"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// streamer is the extractor's handler: it streams the root content member of the arguments.
type streamer struct{ t *Turn }

func (s streamer) Match(p extract.Path) (int, extract.Action) {
	if len(p) == 1 && p[0].Is("content") && !s.t.seen {
		s.t.seen = true
		return 0, extract.Stream
	}
	return 0, extract.Skip
}

func (s streamer) Text(_ int, _ extract.Path, text []byte) {
	s.t.emit(coach.Delta(string(text)))
}

func (s streamer) End(int, extract.Path, []byte) {}
