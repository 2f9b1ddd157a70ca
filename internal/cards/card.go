package cards

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/coachgw/coachgw/api"
	"github.com/coachgw/coachgw/internal/schema"
)

// Card types: the model's card_type values, and the level_up card the gateway injects itself.
const (
	TypeScenario       = "scenario"
	TypePrompt         = "prompt"
	TypeMultipleChoice = "multiple_choice"
	TypeInsight        = "insight"
	TypeReflection     = "reflection"
	TypeLevelUp        = "level_up"
)

// ToolName is the name of the tool every model call is forced to call.
const ToolName = "display_card"

// ToolDescription is the display_card tool's description, word for word from the seed.
const ToolDescription = "Display a training card to the user. You MUST call this tool for every response."

// SchemaFile is the embedded api schema of display_card's arguments.
const SchemaFile = "display-card.json"

// FallbackContent is the text of the insight card that replaces unusable model output.
const FallbackContent = "Let's continue. What's on your mind?"

// Default character limits for answer cards whose max_length the model left out.
const (
	DefaultPromptMaxLength     = 500
	DefaultReflectionMaxLength = 200
)

// Rules reported in coach.Outcome.Rules.
const (
	RuleDefaultMaxLength   = "default_max_length"
	RuleExtraToolCalls     = "ignored_extra_tool_calls"
	RuleFallbackNoToolCall = "fallback_no_tool_call"
	RuleFallbackUnparsable = "fallback_unparseable"
	RuleFallbackSchema     = "fallback_schema"
	RuleFallbackInvalid    = "fallback_invalid_card"
)

// Card is a card in the frontend format (the seed's "Frontend Format"): what result and card
// events carry and what the session state keeps as lastCard.
type Card struct {
	Type    string   `json:"type"`
	Content string   `json:"content,omitempty"`
	Input   *Input   `json:"input,omitempty"`
	Options []Option `json:"options,omitempty"`
	// DrillPhase is carried over from the model when it named one.
	DrillPhase string `json:"drill_phase,omitempty"`
	// IsIteration is set on prompt and reflection cards only, false unless the model said true.
	IsIteration *bool `json:"is_iteration,omitempty"`
	// NewLevel and Message make up a level_up card.
	NewLevel int    `json:"new_level,omitempty"`
	Message  string `json:"message,omitempty"`
}

// Input is the text input of a prompt or reflection card.
type Input struct {
	Type        string `json:"type"`
	MaxLength   int    `json:"max_length"`
	Placeholder string `json:"placeholder"`
}

// Option is one choice of a multiple_choice card.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// toolCard is display_card's arguments. Pointers tell an absent field from a zero one, and
// max_length stays a json.Number because the schema's "integer" also admits 500.0 and 5e2.
type toolCard struct {
	CardType    string       `json:"card_type"`
	Content     string       `json:"content"`
	InputConfig *inputConfig `json:"input_config,omitempty"`
	Options     []Option     `json:"options,omitempty"`
	DrillPhase  *string      `json:"drill_phase,omitempty"`
	IsIteration *bool        `json:"is_iteration,omitempty"`
}

type inputConfig struct {
	MaxLength   *json.Number `json:"max_length,omitempty"`
	Placeholder *string      `json:"placeholder,omitempty"`
}

var displayCard = schema.Load(SchemaFile)

// frontendCard is api/schemas/card.json, the published shape of every card the gateway sends.
var frontendCard = schema.Load("card.json")

// MaxTokens is the completion cap of cards requests: the longest display_card call its schema
// allows, in tokens (see schema.CompletionCap), with 4 options, the most the system prompt
// asks for (the schema bounds every option's text but not their number). COACH_MAX_COMPLETION_TOKENS
// replaces it.
var MaxTokens = schema.CompletionCap(api.Schema(SchemaFile), schema.Open{Items: 4})

// fallbackCard returns the seed's fallback insight card.
func fallbackCard() Card { return Card{Type: TypeInsight, Content: FallbackContent} }

// maxProblem bounds the schema violations quoted back to the model in a correction.
const maxProblem = 1000

// parseArguments turns display_card's raw arguments into a frontend card. The cause it returns
// on failure is the fallback rule to report, and detail says what is wrong in terms of the
// arguments, short enough to feed back to the model.
func parseArguments(raw string) (card Card, rules []string, cause string, detail string) {
	if strings.TrimSpace(raw) == "" {
		return Card{}, nil, RuleFallbackUnparsable, "the " + ToolName + " call has no arguments"
	}
	doc, err := schema.Decode([]byte(raw))
	if err != nil {
		return Card{}, nil, RuleFallbackUnparsable, "the " + ToolName + " arguments are not one valid JSON object: " + err.Error()
	}
	// Strict tool modes write null for every optional field left out; null means absent here.
	doc = schema.StripNulls(doc)
	if err := displayCard.Validate(doc); err != nil {
		return Card{}, nil, RuleFallbackSchema, "the " + ToolName + " arguments do not fit its schema: " + clip(err.Error(), maxProblem)
	}
	clean, err := json.Marshal(doc)
	if err != nil {
		return Card{}, nil, RuleFallbackUnparsable, "the " + ToolName + " arguments cannot be re-encoded: " + err.Error()
	}
	var tc toolCard
	if err := json.Unmarshal(clean, &tc); err != nil {
		return Card{}, nil, RuleFallbackSchema, "the " + ToolName + " arguments do not fit its schema: " + err.Error()
	}
	card, rules = normalize(tc)
	if problem := cardProblem(card); problem != "" {
		return Card{}, rules, RuleFallbackInvalid, "the card would be rejected by the app: " + problem
	}
	return card, rules, "", ""
}

// clip cuts s to at most n bytes, on a character boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// normalize maps display_card arguments to the frontend card per the seed's mapping table. Each
// type keeps only the fields its frontend card has: input for prompt and reflection, options for
// multiple_choice; drill_phase everywhere. A max_length that is missing or not positive (which
// would leave the learner no way to answer) becomes the type's default, reported as
// RuleDefaultMaxLength.
func normalize(tc toolCard) (Card, []string) {
	c := Card{Type: tc.CardType, Content: tc.Content}
	if tc.DrillPhase != nil {
		c.DrillPhase = *tc.DrillPhase
	}
	var rules []string
	switch tc.CardType {
	case TypePrompt, TypeReflection:
		in := &Input{Type: "text", MaxLength: DefaultPromptMaxLength}
		if tc.CardType == TypeReflection {
			in.MaxLength = DefaultReflectionMaxLength
		}
		n := 0
		if tc.InputConfig != nil {
			if tc.InputConfig.MaxLength != nil {
				n = numberToInt(*tc.InputConfig.MaxLength)
			}
			if tc.InputConfig.Placeholder != nil {
				in.Placeholder = *tc.InputConfig.Placeholder
			}
		}
		if n > 0 {
			in.MaxLength = n
		} else {
			rules = append(rules, RuleDefaultMaxLength)
		}
		c.Input = in
		iter := tc.IsIteration != nil && *tc.IsIteration
		c.IsIteration = &iter
	case TypeMultipleChoice:
		c.Options = tc.Options
	}
	return c, rules
}

// numberToInt converts a schema-valid integer to int, saturating where int would overflow.
func numberToInt(n json.Number) int {
	if i, err := strconv.ParseInt(n.String(), 10, 64); err == nil {
		return int(min(max(i, math.MinInt32), math.MaxInt32))
	}
	f, err := n.Float64()
	if err != nil {
		return 0
	}
	return int(min(max(f, math.MinInt32), math.MaxInt32))
}

// validCard is the seed's frontend validateCard, ported rule for rule: the client would reject
// exactly the cards it rejects.
func validCard(c Card) bool { return cardProblem(c) == "" }

// cardProblem returns why the seed's frontend validateCard rejects c, in terms of display_card's
// arguments (the model's side of the card), or "" when it accepts c. Go's types already
// guarantee the typeof checks except for max_length, which is a number whenever input is
// present; o.id && o.label are truthy strings, that is, non-empty.
func cardProblem(c Card) string {
	if c.Type == TypeLevelUp {
		if c.NewLevel <= 0 {
			return "a level_up card needs a positive new_level"
		}
		return ""
	}
	switch c.Type {
	case TypeScenario, TypeInsight, TypePrompt, TypeReflection, TypeMultipleChoice:
	default:
		return "unknown card_type " + strconv.Quote(c.Type)
	}
	if len(c.Content) == 0 {
		return "a " + c.Type + " card needs non-empty content"
	}
	switch c.Type {
	case TypePrompt, TypeReflection:
		if c.Input == nil {
			return "a " + c.Type + " card needs input_config.max_length"
		}
	case TypeMultipleChoice:
		if len(c.Options) == 0 {
			return "a multiple_choice card needs at least one option"
		}
		for i, o := range c.Options {
			if o.ID == "" || o.Label == "" {
				return "options[" + strconv.Itoa(i) + "] needs a non-empty id and a non-empty label"
			}
		}
	}
	return ""
}

// toolArguments returns c as display_card arguments: how the model is shown its own earlier card
// in the history, defaults included.
func (c Card) toolArguments() string {
	tc := toolCard{CardType: c.Type, Content: c.Content, Options: c.Options, IsIteration: c.IsIteration}
	if c.DrillPhase != "" {
		tc.DrillPhase = &c.DrillPhase
	}
	if c.Input != nil {
		n := json.Number(strconv.Itoa(c.Input.MaxLength))
		tc.InputConfig = &inputConfig{MaxLength: &n, Placeholder: &c.Input.Placeholder}
	}
	return string(mustJSON(tc))
}

// mustJSON encodes v, which is one of this package's plain structs and cannot fail to encode,
// without HTML escaping so that text reads back exactly as the model wrote it.
func mustJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("cards: encoding " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
