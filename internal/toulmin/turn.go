package toulmin

import (
	"bytes"
	"maps"
	"strings"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/extract"
	"github.com/coachgw/coachgw/internal/schema"
)

// MaxTokens is the completion cap of toulmin's requests: the longest CoachAIResult its schema
// allows (every string bounded by its maxLength, 24 KB in all), in tokens (see
// schema.CompletionCap). COACH_MAX_COMPLETION_TOKENS replaces it.
var MaxTokens = schema.CompletionCap(api.Schema("coach-ai-result.json"), schema.Open{})

// turn is one toulmin turn: it streams the model's assistantText as it arrives and guards the
// complete CoachAIResult at the end.
type turn struct {
	sess    *coach.Session
	state   *State
	message string
	cues    cues
	ctx     Context

	// raw accumulates the model's output of the current attempt; fed counts the bytes of it
	// already handed to the extractor (or skipped as a leading markdown fence line).
	raw      bytes.Buffer
	fed      int
	fence    fenceState
	ex       *extract.Extractor
	stream   streamer
	stopped  bool
	streamed strings.Builder
}

// fenceState tracks a markdown fence line before the JSON, which some models write even when
// asked not to: it is skipped so that the text still streams (Finish strips it too).
type fenceState uint8

const (
	fenceUnknown fenceState = iota // only white space so far
	fenceLine                      // inside a leading ``` line
	fenceDone                      // past any fence: everything goes to the extractor
)

// openingMessage stands in for the learner's message in an opening turn, in the model's
// request and history: chat models expect the conversation to end with a user message.
const openingMessage = "(No message from the learner: they are ready to work on the current step. Open it.)"

// newTurn returns the turn of msg at st; opening makes it an opening turn, which has no message.
func newTurn(s *coach.Session, st *State, msg string, opening bool) *turn {
	c := cues{firstTurn: st.Turns[st.Step] == 0, opening: opening}
	if opening {
		msg = openingMessage
	} else {
		c.rewrite, c.confirmation = isRewriteRequest(msg), isConfirmation(msg)
	}
	t := &turn{
		sess:    s,
		state:   st,
		message: msg,
		cues:    c,
		ctx:     Context{Step: st.Step, Draft: st.Draft, FirstTurn: c.firstTurn, Rewrite: c.rewrite, Opening: opening},
	}
	t.stream.t = t
	t.ex = extract.New(&t.stream)
	return t
}

// Prelude returns nothing: a toulmin turn sends only the model's text.
func (t *turn) Prelude() []coach.Event { return nil }

// Request returns the model request, rendered anew for every attempt rather than kept: the
// system prompt is several KiB, and an open stream would otherwise hold it for the rare retry.
func (t *turn) Request() coach.ModelRequest {
	hist := window(t.sess.History)
	msgs := make([]coach.Message, 0, len(hist)+2)
	msgs = append(msgs, coach.Message{Role: coach.RoleSystem, Content: systemPrompt(t.sess.Language(), t.state, t.cues)})
	msgs = append(msgs, hist...)
	msgs = append(msgs, coach.Message{Role: coach.RoleUser, Content: t.message})
	return coach.ModelRequest{Messages: msgs, Schema: outputSchema, MaxTokens: MaxTokens}
}

// Feed accumulates the output and emits the root assistantText as it arrives. Tool-call
// arguments are not part of this contract and are ignored. Output the extractor cannot follow
// only stops the streaming: Finish judges the complete output.
func (t *turn) Feed(f coach.Fragment, emit func(coach.Event)) error {
	if f.Content == "" {
		return nil
	}
	t.raw.WriteString(f.Content)
	chunk := t.raw.Bytes()[t.fed:]
	t.fed = t.raw.Len()
	if t.stopped {
		return nil
	}
	chunk = t.skipFence(chunk)
	if len(chunk) == 0 {
		return nil
	}
	t.stream.emit = emit
	err := t.ex.Write(chunk)
	t.stream.emit = nil
	if err != nil {
		t.stopped = true
	}
	return nil
}

// skipFence returns the part of chunk that belongs to the JSON, dropping a leading fence line.
func (t *turn) skipFence(chunk []byte) []byte {
	for t.fence != fenceDone && len(chunk) > 0 {
		switch t.fence {
		case fenceUnknown:
			rest := bytes.TrimLeft(chunk, " \t\r\n")
			switch {
			case len(rest) == 0:
				return nil
			case rest[0] == '`':
				t.fence, chunk = fenceLine, rest
			default:
				t.fence, chunk = fenceDone, rest
			}
		case fenceLine:
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				return nil
			}
			t.fence, chunk = fenceDone, chunk[i+1:]
		}
	}
	return chunk
}

// Reset forgets the output of a failed attempt, keeping the buffers.
func (t *turn) Reset() {
	t.raw.Reset()
	t.fed = 0
	t.fence = fenceUnknown
	t.ex.Reset()
	t.stream.done = false
	t.stopped = false
	t.streamed.Reset()
}

// Finish parses and guards the complete output and computes the session's next state. The turn
// counter of the step grows by one, the surviving proposal (or none) becomes the pending one,
// and the session moves only without a proposal: shouldAdvance moves it to nextStep and
// isComplete completes it; with a proposal, both wait until the learner accepts it. An opening
// turn changes none of that: it is not the learner's message (so the learner's next message is
// still the step's first turn), and its guard leaves it nothing that could move the session.
func (t *turn) Finish() (*coach.Outcome, error) {
	r, dropped, err := parseResult(t.raw.Bytes())
	if err != nil {
		return nil, err
	}
	if t.streamed.String() != r.AssistantText {
		// The client must have seen exactly assistantText; a retry (after a reset line) is
		// the only way to repair what it saw.
		return nil, invalid("assistantText must appear exactly once, as a member of the one top-level JSON object")
	}
	var fired []string
	if len(dropped) > 0 {
		fired = append(fired, RuleUnknownFieldsDropped)
	}
	ctx := t.ctx
	got, err := guard(r, &ctx)
	if err != nil {
		return nil, err
	}
	fired = append(fired, got...)

	st := *t.state
	if !t.cues.opening {
		st.Turns = maps.Clone(t.state.Turns)
		st.Turns[st.Step]++
		st.PendingProposal = nil
		if p := r.ProposedUpdate; p != nil {
			pp := *p
			st.PendingProposal = &pp
		} else {
			if r.ShouldAdvance != nil && *r.ShouldAdvance {
				st.Step = *r.NextStep
			}
			if r.IsComplete != nil && *r.IsComplete {
				st.IsComplete = true
			}
		}
	}
	// The guards may append the question to what was streamed; the rest is sent as a delta.
	var tail string
	if streamed := t.streamed.String(); len(r.AssistantText) > len(streamed) && strings.HasPrefix(r.AssistantText, streamed) {
		tail = r.AssistantText[len(streamed):]
	}
	return &coach.Outcome{
		Tail:   tail,
		Result: r.encode(),
		State:  st.encode(),
		History: []coach.Message{
			{Role: coach.RoleUser, Content: t.message},
			{Role: coach.RoleAssistant, Content: r.AssistantText},
		},
		Rules: fired,
	}, nil
}

// streamer is the extractor handler of a turn: it streams the first root assistantText.
type streamer struct {
	t    *turn
	emit func(coach.Event)
	// done is set once the first assistantText ended; a repeated member is not streamed
	// again (and fails Finish).
	done bool
}

// Match selects the root assistantText.
func (s *streamer) Match(p extract.Path) (int, extract.Action) {
	if !s.done && len(p) == 1 && p[0].Is("assistantText") {
		return 0, extract.Stream
	}
	return 0, extract.Skip
}

// Text emits a piece of assistantText.
func (s *streamer) Text(_ int, _ extract.Path, text []byte) {
	s.t.streamed.Write(text)
	s.emit(coach.Delta(string(text)))
}

// End notes that assistantText is complete.
func (s *streamer) End(int, extract.Path, []byte) { s.done = true }

// The engine finds SafeReply by a type assertion; this keeps the method from drifting off it.
var _ coach.SafeReplier = (*turn)(nil)

// SafeReply answers with text the gateway wrote (a crisis's supportive answer, or the safe
// answer in place of model output that failed the safety check): a CoachAIResult with text as
// its assistantText at the session's step and nothing else, so it proposes nothing, advances
// nothing and completes nothing. The state is the session's, byte for byte: the step's turn
// counter does not count the turn (the learner's next message for the step is still its first
// turn, as it was), and a proposal pending from an earlier turn stays pending. History is
// empty, so the model never sees the exchange. Tail is text, the result's whole visible text.
// It implements coach.SafeReplier; text that no CoachAIResult can carry (blank, or longer than
// its schema's maxLength) is an internal error, since the gateway wrote it.
func (t *turn) SafeReply(text string) (*coach.Outcome, error) {
	if strings.TrimSpace(text) == "" {
		return nil, coach.Errorf(coach.KindInternal, coach.CodeInternal, "toulmin: the safe reply is blank")
	}
	r := Result{AssistantText: text, Step: t.state.Step}
	if _, err := schemaValidation(&r, nil); err != nil {
		return nil, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "toulmin: the safe reply is no CoachAIResult")
	}
	return &coach.Outcome{Result: r.encode(), Tail: text, State: bytes.Clone(t.sess.State)}, nil
}
