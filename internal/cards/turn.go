package cards

import (
	"bytes"
	"slices"
	"strings"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/extract"
	"github.com/coachgw/coachgw/internal/schema"
)

// ToolAck is the tool message that answers every display_card call in the history.
const ToolAck = "displayed"

// Turn is one cards turn; it implements coach.Turn and coach.Fallback. Besides those it offers
// LastRaw, the model response the last Finish judged.
type Turn struct {
	stored  []byte // the session's state as stored, which SafeReply keeps
	st      state  // the state the turn starts from, level-up applied
	prev    *Card  // the card the learner's input answers; nil on the first turn
	levelUp *Card
	user    coach.Message
	req     coach.ModelRequest

	ext     *extract.Extractor
	emit    func(coach.Event) // set only while ext.Write runs
	seen    bool              // the root content has begun; a duplicate key is not streamed again
	stopped bool              // the extractor failed; Finish judges the full output instead
	calls   []*toolCall
	content strings.Builder
	lastRaw string   // the response the last Finish judged
	failed  *failure // why that response yielded no card; nil when it did
}

// The engine finds Fallback and SafeReply by type assertions; this keeps the methods from
// drifting off them.
var (
	_ coach.Fallback    = (*Turn)(nil)
	_ coach.SafeReplier = (*Turn)(nil)
)

// toolCall is one tool call as the model streamed it.
type toolCall struct {
	index    int
	id, name string
	args     bytes.Buffer
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
	cur := t.call(f.ToolIndex)
	if cur == nil {
		cur = &toolCall{index: f.ToolIndex, id: f.ToolCallID, name: f.ToolName}
		t.calls = append(t.calls, cur)
	}
	if cur.id == "" {
		cur.id = f.ToolCallID
	}
	if cur.name == "" {
		cur.name = f.ToolName
	}
	cur.args.WriteString(f.ToolArgs)
	if cur != t.calls[0] || t.stopped || f.ToolArgs == "" {
		return nil
	}
	t.emit = emit
	// The fragment is the tail of the arguments just written: feed that, without a copy.
	err := t.ext.Write(cur.args.Bytes()[cur.args.Len()-len(f.ToolArgs):])
	t.emit = nil
	if err != nil {
		t.stopped = true
	}
	return nil
}

// call returns the call with the given index (coach.Fragment.ToolIndex), or nil before it
// opens. Only the index tells calls apart: endpoints repeat a call's id or name on every piece
// of it (vLLM with a named tool_choice), send them empty (LM Studio, DashScope) or not at all.
func (t *Turn) call(index int) *toolCall {
	for _, c := range t.calls {
		if c.index == index {
			return c
		}
	}
	return nil
}

// Reset discards the output fed so far, and with it the last verdict: the fallback always
// describes the attempt that ran last.
func (t *Turn) Reset() {
	t.ext.Reset()
	t.seen, t.stopped = false, false
	t.calls = nil
	t.content.Reset()
	t.lastRaw = ""
	t.failed = nil
}

// failure is why an attempt's output yielded no usable card.
type failure struct {
	rule    string   // the fallback rule to report
	problem string   // what is wrong, as the model is told
	rules   []string // rules that fired while judging the output
}

// Finish turns the output into the turn's outcome. Output that yields no valid card is a
// coach_validation_failed error whose message tells the model what to fix: the engine feeds it
// back for one corrective retry, and calls Fallback when that attempt fails as well.
func (t *Turn) Finish() (*coach.Outcome, error) {
	t.lastRaw = t.raw()
	t.failed = nil
	if len(t.calls) == 0 {
		problem := "your reply was empty; call " + ToolName + " exactly once, with the card as its arguments"
		if strings.TrimSpace(t.content.String()) != "" {
			problem = "you replied with plain text instead of calling " + ToolName + "; call it exactly once, with the card as its arguments"
		}
		t.failed = &failure{rule: RuleFallbackNoToolCall, problem: problem}
		return nil, coach.Errorf(coach.KindStream, coach.CodeValidationFailed, "%s", problem)
	}
	card, rules, cause, problem := parseArguments(t.calls[0].args.String())
	if len(t.calls) > 1 {
		rules = append(rules, RuleExtraToolCalls)
	}
	if cause != "" {
		t.failed = &failure{rule: cause, problem: problem, rules: rules}
		return nil, coach.Errorf(coach.KindStream, coach.CodeValidationFailed, "%s", problem)
	}
	next := t.st
	if card.Type == TypeInsight && t.prev != nil && (t.prev.Type == TypePrompt || t.prev.Type == TypeReflection) {
		next.Cycles++
		next.CompletedCycles++
	}
	return t.outcome(card, next, rules), nil
}

// Fallback returns the seed's fallback insight card in place of output that stayed unusable
// after the corrective retry: the session goes on, the card counts as no feedback (no cycle
// completes), and Diagnostic carries the cause and the last attempt's full response for the
// error log. It implements coach.Fallback.
func (t *Turn) Fallback(cause error) (*coach.Outcome, error) {
	f := t.failed
	if f == nil {
		// The engine calls Fallback right after a failed Finish; judge the output for any other
		// caller, so that the log still says what was wrong with it.
		if _, err := t.Finish(); err != nil {
			f = t.failed
		} else {
			f = &failure{rule: RuleFallbackInvalid, problem: "a fallback was asked for in place of a valid card"}
		}
	}
	why := f.problem
	if cause != nil {
		why = cause.Error()
	}
	out := t.outcome(fallbackCard(), t.st, append(slices.Clip(f.rules), f.rule))
	out.Fallback = true
	out.Diagnostic = "cards: " + f.rule + ": " + why + "\n" + t.lastRaw
	return out, nil
}

// SafeReply answers with text the gateway wrote (a crisis's supportive answer, or the safe
// answer in place of model output that failed the safety check) as an insight card: the card
// the seed's own fallback uses, text to read with a Continue button and no input, which every
// cards client renders. The state is the session's, byte for byte: no level change (the turn's
// level-up, if it had one, is not stored, and the next turn not on hold levels up again), no
// cycle counted, and lastCard still the card before, which the learner's next input answers
// once the hold ends. History is empty, so the model never sees the exchange. Tail is text,
// the card's content. It implements coach.SafeReplier; blank text is an internal error, since
// the gateway wrote it.
func (t *Turn) SafeReply(text string) (*coach.Outcome, error) {
	if strings.TrimSpace(text) == "" {
		return nil, coach.Errorf(coach.KindInternal, coach.CodeInternal, "cards: the safe reply is blank")
	}
	result := mustJSON(Card{Type: TypeInsight, Content: text})
	doc, err := schema.Decode(result)
	if err == nil {
		err = frontendCard.Validate(doc)
	}
	if err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "cards: the safe reply is no valid card")
	}
	return &coach.Outcome{Result: result, Tail: text, State: bytes.Clone(t.stored)}, nil
}

// outcome stores card as the session's last card in state next and pairs it in the history
// with the learner's message: the model's own call id when it gave one, so the assistant call
// and its tool message always match.
func (t *Turn) outcome(card Card, next state, rules []string) *coach.Outcome {
	next.LastCard = &card
	id := ""
	if len(t.calls) > 0 {
		id = t.calls[0].id
	}
	if id == "" {
		id = "call_" + coach.NewID()[:24]
	}
	return &coach.Outcome{
		Result: mustJSON(card),
		State:  mustJSON(next),
		Rules:  rules,
		History: []coach.Message{
			t.user,
			{Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: id, Name: ToolName, Arguments: card.toolArguments()}}},
			{Role: coach.RoleTool, ToolCallID: id, Content: ToolAck},
		},
	}
}

// LastRaw returns the full model response that the last Finish judged: every tool call with its
// raw arguments, then any plain content; "" after Reset. It is what an error log of a fallback
// should show.
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
