// Package cards owns the "cards" contract: drill training delivered as cards (scenario, prompt,
// multiple_choice, insight, reflection) that the model produces by a forced display_card tool
// call, plus the level_up card the gateway injects. It streams the card's content while the
// arguments arrive, normalises and validates the card the way the frontend will, turns anything
// unusable into a validation error that tells the model what to fix (the engine retries once with
// it) and, when the retry fails too, into the seed's fallback insight card, checks each learner
// input against the card it answers, and tracks levels.
//
// Session state (JSON):
//
//	{"level":1,"lastCard":null,"cycles":0,"completedCycles":0}
//
// level is the learner's level (1..MaxLevel); lastCard is the last frontend card the learner was
// shown by the model (or the fallback card) and decides which input the next turn takes; cycles
// counts the practice cycles completed at the current level and completedCycles those of the
// whole session.
//
// A practice cycle completes when the learner answers a prompt or a reflection card and the
// model's next card is an insight (the fallback insight does not count: it is no feedback).
// When a turn begins with cycles >= CyclesPerLevel and level < MaxLevel, the turn first sends a
// level_up card, the prompt already describes the new level, and the stored state has the new
// level with cycles reset. The level_up card never becomes lastCard: the learner's next input
// answers the model's card of that same turn.
package cards

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"unicode/utf8"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/extract"
)

// Name is the contract's wire name.
const Name = "cards"

// ContinueMessage is the only input a scenario, insight or level_up card takes.
const ContinueMessage = "[Continue]"

// Config tunes the contract. Zero fields take the values of DefaultConfig.
type Config struct {
	// CyclesPerLevel is how many practice cycles at a level earn the next one.
	CyclesPerLevel int
	// MaxLevel is the highest level.
	MaxLevel int
	// Levels describes what changes at each level: the level_up card's message and the
	// difficulty the system prompt asks for. Levels it leaves out take DefaultLevels' text.
	Levels map[int]string
	// HistoryMessages bounds how many messages of the session's history each prompt carries.
	HistoryMessages int
}

// DefaultConfig returns the defaults: two cycles per level (the seed's example flow levels up
// after a prompt→insight and a reflection→insight cycle), five levels, DefaultLevels and 40
// history messages (about a dozen turns).
func DefaultConfig() Config {
	return Config{CyclesPerLevel: 2, MaxLevel: 5, Levels: DefaultLevels(), HistoryMessages: 40}
}

// DefaultLevels returns the default description of each level. Each level keeps what the earlier
// ones added, and the prompt lists them all.
func DefaultLevels() map[int]string {
	return map[int]string{
		1: "Scenarios are realistic workplace situations with one clear problem to solve.",
		2: "Scenarios now include a second stakeholder with competing goals.",
		3: "Scenarios will now include more ambiguity and competing priorities.",
		4: "Scenarios now add time pressure and incomplete information: you must decide before you know everything.",
		5: "Scenarios now carry executive stakes: board-level visibility, and consequences for the whole organisation.",
	}
}

// Contract is the cards contract; it implements coach.Contract and is safe for concurrent use.
type Contract struct {
	cfg  Config
	tool *coach.Tool
}

// New returns the contract with cfg, zero fields taking DefaultConfig's values.
func New(cfg Config) *Contract {
	d := DefaultConfig()
	if cfg.CyclesPerLevel <= 0 {
		cfg.CyclesPerLevel = d.CyclesPerLevel
	}
	if cfg.MaxLevel <= 0 {
		cfg.MaxLevel = d.MaxLevel
	}
	if cfg.HistoryMessages <= 0 {
		cfg.HistoryMessages = d.HistoryMessages
	}
	levels := d.Levels
	maps.Copy(levels, cfg.Levels)
	cfg.Levels = levels
	return &Contract{
		cfg:  cfg,
		tool: &coach.Tool{Name: ToolName, Description: ToolDescription, Parameters: api.Schema(SchemaFile)},
	}
}

// Config returns the effective configuration.
func (c *Contract) Config() Config {
	cfg := c.cfg
	cfg.Levels = maps.Clone(c.cfg.Levels)
	return cfg
}

// Name returns "cards".
func (c *Contract) Name() string { return Name }

// state is the session state; see the package comment.
type state struct {
	Level           int   `json:"level"`
	LastCard        *Card `json:"lastCard"`
	Cycles          int   `json:"cycles"`
	CompletedCycles int   `json:"completedCycles"`
}

// NewState returns the state of a new session: level 1, no card yet. opts.Module has no meaning
// for cards sessions and is ignored.
func (c *Contract) NewState(coach.NewSession) (json.RawMessage, error) {
	return mustJSON(state{Level: 1}), nil
}

func decodeState(raw json.RawMessage) (state, error) {
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, coach.Wrap(err, coach.KindInternal, coach.CodeInternal, "the session's cards state is unreadable")
	}
	st.Level = max(st.Level, 1)
	return st, nil
}

// levelText returns what level n is about.
func (c *Contract) levelText(n int) string {
	if s := c.cfg.Levels[n]; s != "" {
		return s
	}
	return fmt.Sprintf("Level %d: scenarios get harder.", n)
}

// Begin checks the input against the last card, decides whether the turn levels up and builds
// the model request. Nothing has been sent when it fails.
//
// A session on safety hold is answered by the engine with SafeReply, which leaves lastCard as
// it was while the learner sees the safe insight card: its input is therefore not checked
// against lastCard (see checkHeldInput), and the turn does not level up, so that its Prelude
// sends no level_up card.
func (c *Contract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	st, err := decodeState(s.State)
	if err != nil {
		return nil, err
	}
	check := checkInput
	if s.Held() {
		check = checkHeldInput
	}
	user, err := check(st.LastCard, in)
	if err != nil {
		return nil, err
	}
	t := &Turn{prev: st.LastCard, stored: s.State}
	if !s.Held() && st.Cycles >= c.cfg.CyclesPerLevel && st.Level < c.cfg.MaxLevel {
		st.Level++
		st.Cycles = 0
		t.levelUp = &Card{Type: TypeLevelUp, NewLevel: st.Level, Message: c.levelText(st.Level)}
	}
	t.st = st
	t.user = coach.Message{Role: coach.RoleUser, Content: user}
	hist := boundHistory(s.History, c.cfg.HistoryMessages)
	msgs := make([]coach.Message, 0, len(hist)+2)
	msgs = append(msgs, coach.Message{Role: coach.RoleSystem, Content: c.systemPrompt(s.Language(), st, t.levelUp != nil)})
	msgs = append(msgs, hist...)
	msgs = append(msgs, t.user)
	t.req = coach.ModelRequest{Messages: msgs, Tool: c.tool, MaxTokens: MaxTokens}
	t.ext = extract.New(streamer{t})
	return t, nil
}

// boundHistory returns the last n messages of h, starting at a user message so that no tool
// result is separated from the call it answers.
func boundHistory(h []coach.Message, n int) []coach.Message {
	cut := max(len(h)-n, 0)
	for cut < len(h) && h[cut].Role != coach.RoleUser {
		cut++
	}
	return h[cut:]
}

// checkHeldInput checks the input of a turn of a session on safety hold and returns the user
// message it stands for. The learner was last shown a safe insight card (a Continue button)
// while lastCard still names the card before the hold, so whatever a cards client sends is
// taken: any non-blank message ("[Continue]" or the learner's own words) or any non-empty
// selected (a choice card the client still shows). Input no cards client sends (step, continue,
// a form, nothing, or both a message and a selection) is refused as in any other turn.
func checkHeldInput(_ *Card, in coach.TurnInput) (string, error) {
	switch {
	case in.Step != "":
		return "", coach.FieldError("step", "cards sessions take no step")
	case in.Continue:
		return "", coach.FieldError("continue", "continue is for toulmin sessions; a cards session goes on with a message such as %q", ContinueMessage)
	case in.Form != nil:
		return "", coach.FieldError("form", "cards sessions take no form")
	case in.Message != nil && in.Selected != nil:
		return "", coach.FieldError("message", "send either a message or selected, not both")
	case in.Selected != nil:
		if *in.Selected == "" {
			return "", coach.FieldError("selected", "selected is empty")
		}
		return `{"selected": ` + string(mustJSON(*in.Selected)) + `}`, nil
	case in.Message == nil || strings.TrimSpace(*in.Message) == "":
		return "", coach.FieldError("message", "send a message such as %q", ContinueMessage)
	}
	return *in.Message, nil
}

// checkInput checks that in answers last (nil before the first card) and returns the user
// message the model is shown.
func checkInput(last *Card, in coach.TurnInput) (string, error) {
	if in.Step != "" {
		return "", coach.FieldError("step", "cards sessions take no step")
	}
	if in.Continue {
		return "", coach.FieldError("continue", "continue is for toulmin sessions; a cards session goes on with a message such as %q", "[Continue]")
	}
	if in.Form != nil {
		return "", coach.FieldError("form", "cards sessions take no form")
	}
	if last == nil {
		if in.Selected != nil {
			return "", coach.FieldError("selected", "there is no card to choose from yet; start with a message such as %q", "Begin training.")
		}
		if in.Message == nil || strings.TrimSpace(*in.Message) == "" {
			return "", coach.FieldError("message", "start the session with a message such as %q", "Begin training.")
		}
		return *in.Message, nil
	}
	switch last.Type {
	case TypeMultipleChoice:
		ids := make([]string, len(last.Options))
		for i, o := range last.Options {
			ids[i] = o.ID
		}
		choices := strings.Join(ids, ", ")
		if in.Selected == nil {
			return "", coach.FieldError("selected", "the last card is a multiple_choice card: choose one of %s", choices)
		}
		if in.Message != nil {
			return "", coach.FieldError("message", "a multiple_choice card is answered with selected alone")
		}
		for _, id := range ids {
			if id == *in.Selected {
				// The seed's flow shows the selection to the model as this exact JSON text.
				return `{"selected": ` + string(mustJSON(id)) + `}`, nil
			}
		}
		return "", coach.FieldError("selected", "%q is not an option of the last card: choose one of %s", coach.Clip(*in.Selected), choices)
	case TypePrompt, TypeReflection:
		if in.Selected != nil {
			return "", coach.FieldError("selected", "the last card offers no options: answer it with a message")
		}
		if in.Message == nil || strings.TrimSpace(*in.Message) == "" {
			return "", coach.FieldError("message", "the last card is a %s card: answer it with a message", last.Type)
		}
		limit := DefaultPromptMaxLength
		if last.Type == TypeReflection {
			limit = DefaultReflectionMaxLength
		}
		if last.Input != nil {
			limit = last.Input.MaxLength
		}
		if n := utf8.RuneCountInString(*in.Message); n > limit {
			return "", coach.FieldError("message", "the answer has %d characters; the card allows at most %d", n, limit)
		}
		return *in.Message, nil
	default:
		if in.Selected != nil {
			return "", coach.FieldError("selected", "the last card offers no options")
		}
		if in.Message == nil || *in.Message != ContinueMessage {
			return "", coach.FieldError("message", "the last card is a %s card: the only input it takes is the message %q", last.Type, ContinueMessage)
		}
		return ContinueMessage, nil
	}
}
