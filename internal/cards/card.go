package cards

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

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

// fallbackCard returns the seed's fallback insight card.
func fallbackCard() Card { return Card{Type: TypeInsight, Content: FallbackContent} }

// parseArguments turns display_card's raw arguments into a frontend card. The cause it returns
// on failure is the fallback rule to report, with a detail for the log.
func parseArguments(raw string) (card Card, rules []string, cause string, detail string) {
	doc, err := schema.Decode([]byte(raw))
	if err != nil {
		return Card{}, nil, RuleFallbackUnparsable, err.Error()
	}
	// Strict tool modes write null for every optional field left out; null means absent here.
	doc = schema.StripNulls(doc)
	if err := displayCard.Validate(doc); err != nil {
		return Card{}, nil, RuleFallbackSchema, err.Error()
	}
	clean, err := json.Marshal(doc)
	if err != nil {
		return Card{}, nil, RuleFallbackUnparsable, err.Error()
	}
	var tc toolCard
	if err := json.Unmarshal(clean, &tc); err != nil {
		return Card{}, nil, RuleFallbackSchema, err.Error()
	}
	card, rules = normalize(tc)
	if !validCard(card) {
		return Card{}, rules, RuleFallbackInvalid, "the normalized card fails the frontend validator: " + string(mustJSON(card))
	}
	return card, rules, "", ""
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
// exactly the cards it rejects. Go's types already guarantee the typeof checks except for
// max_length, which is a number whenever input is present; o.id && o.label are truthy strings,
// that is, non-empty.
func validCard(c Card) bool {
	hasContent := len(c.Content) > 0
	switch c.Type {
	case TypeScenario, TypeInsight:
		return hasContent
	case TypePrompt, TypeReflection:
		return hasContent && c.Input != nil
	case TypeMultipleChoice:
		if !hasContent || len(c.Options) == 0 {
			return false
		}
		for _, o := range c.Options {
			if o.ID == "" || o.Label == "" {
				return false
			}
		}
		return true
	case TypeLevelUp:
		return c.NewLevel > 0
	default:
		return false
	}
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
