package cards

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/coachgw/coachgw/api"
)

func boolPtr(b bool) *bool { return &b }

// TestSchemaFileIsTheSeeds pins display-card.json to the seed's PHP input_schema, key for key,
// but for the maxLength bounds the gateway adds to its strings (see docs/security.md, Bounds).
func TestSchemaFileIsTheSeeds(t *testing.T) {
	const seed = `{
	  "type": "object",
	  "required": ["card_type", "content"],
	  "properties": {
	    "card_type": {"type": "string", "enum": ["scenario", "prompt", "insight", "reflection", "multiple_choice"]},
	    "content": {"type": "string"},
	    "input_config": {"type": "object", "properties": {
	      "max_length": {"type": "integer"},
	      "placeholder": {"type": "string"}}},
	    "options": {"type": "array", "items": {"type": "object", "required": ["id", "label"], "properties": {
	      "id": {"type": "string"},
	      "label": {"type": "string"}}}},
	    "drill_phase": {"type": "string"},
	    "is_iteration": {"type": "boolean"}
	  }
	}`
	var got, want any
	if err := json.Unmarshal(api.Schema(SchemaFile), &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(seed), &want); err != nil {
		t.Fatal(err)
	}
	bounds := map[string]float64{}
	var strip func(path string, v any)
	strip = func(path string, v any) {
		if m, ok := v.(map[string]any); ok {
			if n, ok := m["maxLength"].(float64); ok {
				bounds[path] = n
				delete(m, "maxLength")
			}
			for k, e := range m {
				strip(path+"/"+k, e)
			}
		}
	}
	strip("", got)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("display-card.json = %v, want the seed's schema %v", got, want)
	}
	if n := bounds["/properties/content"]; n != 8000 {
		t.Errorf("content maxLength = %v, want 8000", n)
	}
	if len(bounds) != 5 {
		t.Errorf("maxLength on %v, want content, placeholder, option id and label, drill_phase", bounds)
	}
}

func TestParseArgumentsNormalizes(t *testing.T) {
	tests := []struct {
		name      string
		args      string
		want      string
		wantRules []string
	}{
		{
			name: "scenario keeps drill_phase",
			args: `{"card_type":"scenario","content":"You're two weeks into a new VP role.","drill_phase":"Problem-Solving"}`,
			want: `{"type":"scenario","content":"You're two weeks into a new VP role.","drill_phase":"Problem-Solving"}`,
		},
		{
			name: "prompt maps input_config to input",
			args: `{"card_type":"prompt","content":"What do you type?","input_config":{"max_length":500,"placeholder":"Type your response..."},"drill_phase":"Executive Communication","is_iteration":false}`,
			want: `{"type":"prompt","content":"What do you type?","input":{"type":"text","max_length":500,"placeholder":"Type your response..."},"drill_phase":"Executive Communication","is_iteration":false}`,
		},
		{
			name: "prompt defaults placeholder and is_iteration",
			args: `{"card_type":"prompt","content":"What do you type?","input_config":{"max_length":300}}`,
			want: `{"type":"prompt","content":"What do you type?","input":{"type":"text","max_length":300,"placeholder":""},"is_iteration":false}`,
		},
		{
			name: "prompt keeps is_iteration true",
			args: `{"card_type":"prompt","content":"Try again.","input_config":{"max_length":500},"is_iteration":true}`,
			want: `{"type":"prompt","content":"Try again.","input":{"type":"text","max_length":500,"placeholder":""},"is_iteration":true}`,
		},
		{
			name:      "prompt without input_config gets max_length 500",
			args:      `{"card_type":"prompt","content":"What do you type?"}`,
			want:      `{"type":"prompt","content":"What do you type?","input":{"type":"text","max_length":500,"placeholder":""},"is_iteration":false}`,
			wantRules: []string{RuleDefaultMaxLength},
		},
		{
			name:      "prompt with input_config but no max_length",
			args:      `{"card_type":"prompt","content":"Q","input_config":{"placeholder":"p"}}`,
			want:      `{"type":"prompt","content":"Q","input":{"type":"text","max_length":500,"placeholder":"p"},"is_iteration":false}`,
			wantRules: []string{RuleDefaultMaxLength},
		},
		{
			name:      "prompt with max_length 0 cannot be answered",
			args:      `{"card_type":"prompt","content":"Q","input_config":{"max_length":0}}`,
			want:      `{"type":"prompt","content":"Q","input":{"type":"text","max_length":500,"placeholder":""},"is_iteration":false}`,
			wantRules: []string{RuleDefaultMaxLength},
		},
		{
			name: "integral max_length written as a float",
			args: `{"card_type":"prompt","content":"Q","input_config":{"max_length":250.0}}`,
			want: `{"type":"prompt","content":"Q","input":{"type":"text","max_length":250,"placeholder":""},"is_iteration":false}`,
		},
		{
			name: "reflection maps input_config to input",
			args: `{"card_type":"reflection","content":"Why?","input_config":{"max_length":200,"placeholder":"Be honest with yourself..."}}`,
			want: `{"type":"reflection","content":"Why?","input":{"type":"text","max_length":200,"placeholder":"Be honest with yourself..."},"is_iteration":false}`,
		},
		{
			name:      "reflection without max_length gets 200",
			args:      `{"card_type":"reflection","content":"Why?"}`,
			want:      `{"type":"reflection","content":"Why?","input":{"type":"text","max_length":200,"placeholder":""},"is_iteration":false}`,
			wantRules: []string{RuleDefaultMaxLength},
		},
		{
			name: "multiple_choice keeps options",
			args: `{"card_type":"multiple_choice","content":"What's your primary concern?","options":[{"id":"a","label":"Look"},{"id":"b","label":"Protect"}]}`,
			want: `{"type":"multiple_choice","content":"What's your primary concern?","options":[{"id":"a","label":"Look"},{"id":"b","label":"Protect"}]}`,
		},
		{
			name: "insight",
			args: `{"card_type":"insight","content":"Notice what you just did.","drill_phase":"Problem-Solving"}`,
			want: `{"type":"insight","content":"Notice what you just did.","drill_phase":"Problem-Solving"}`,
		},
		{
			name: "fields a type does not show are dropped",
			args: `{"card_type":"insight","content":"Notice.","input_config":{"max_length":5},"options":[{"id":"a","label":"A"}],"is_iteration":true}`,
			want: `{"type":"insight","content":"Notice."}`,
		},
		{
			name: "nulls of strict tool mode mean absent",
			args: `{"card_type":"scenario","content":"Scene.","input_config":null,"options":null,"drill_phase":null,"is_iteration":null}`,
			want: `{"type":"scenario","content":"Scene."}`,
		},
		{
			name: "markup stays unescaped",
			args: `{"card_type":"insight","content":"a < b & \"c\" — é"}`,
			want: `{"type":"insight","content":"a < b & \"c\" — é"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card, rules, cause, detail := parseArguments(tt.args)
			if cause != "" {
				t.Fatalf("parseArguments cause = %s (%s), want none", cause, detail)
			}
			if got := string(mustJSON(card)); got != tt.want {
				t.Errorf("card = %s\nwant   %s", got, tt.want)
			}
			wantFrontendCard(t, mustJSON(card))
			if !slices.Equal(rules, tt.wantRules) {
				t.Errorf("rules = %v, want %v", rules, tt.wantRules)
			}
		})
	}
}

func TestParseArgumentsRejects(t *testing.T) {
	tests := []struct {
		name, args, want string
	}{
		{"empty", ``, RuleFallbackUnparsable},
		{"truncated", `{"card_type":"insight","content":"Noti`, RuleFallbackUnparsable},
		{"trailing data", `{"card_type":"insight","content":"x"}{}`, RuleFallbackUnparsable},
		{"not an object", `"insight"`, RuleFallbackSchema},
		{"missing card_type", `{"content":"x"}`, RuleFallbackSchema},
		{"missing content", `{"card_type":"insight"}`, RuleFallbackSchema},
		{"level_up is not the model's", `{"card_type":"level_up","content":"x"}`, RuleFallbackSchema},
		{"unknown card_type", `{"card_type":"quiz","content":"x"}`, RuleFallbackSchema},
		{"content not a string", `{"card_type":"insight","content":42}`, RuleFallbackSchema},
		{"fractional max_length", `{"card_type":"prompt","content":"x","input_config":{"max_length":2.5}}`, RuleFallbackSchema},
		{"option without label", `{"card_type":"multiple_choice","content":"x","options":[{"id":"a"}]}`, RuleFallbackSchema},
		{"option id not a string", `{"card_type":"multiple_choice","content":"x","options":[{"id":1,"label":"A"}]}`, RuleFallbackSchema},
		{"empty content", `{"card_type":"scenario","content":""}`, RuleFallbackInvalid},
		{"empty prompt content", `{"card_type":"prompt","content":"","input_config":{"max_length":500}}`, RuleFallbackInvalid},
		{"multiple_choice without options", `{"card_type":"multiple_choice","content":"x"}`, RuleFallbackInvalid},
		{"multiple_choice with empty options", `{"card_type":"multiple_choice","content":"x","options":[]}`, RuleFallbackInvalid},
		{"option with empty id", `{"card_type":"multiple_choice","content":"x","options":[{"id":"","label":"A"}]}`, RuleFallbackInvalid},
		{"option with empty label", `{"card_type":"multiple_choice","content":"x","options":[{"id":"a","label":"A"},{"id":"b","label":""}]}`, RuleFallbackInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			card, _, cause, detail := parseArguments(tt.args)
			if cause != tt.want {
				t.Errorf("parseArguments(%s) cause = %q, want %q (card %+v)", tt.args, cause, tt.want, card)
			}
			if cause != "" && detail == "" {
				t.Errorf("cause %s comes without a detail", cause)
			}
		})
	}
}

// TestValidCard exercises the port of the seed's JS validators on frontend cards directly.
func TestValidCard(t *testing.T) {
	in := &Input{Type: "text", MaxLength: 500}
	opts := []Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}
	tests := []struct {
		name string
		card Card
		want bool
	}{
		{"scenario", Card{Type: TypeScenario, Content: "x"}, true},
		{"scenario empty content", Card{Type: TypeScenario}, false},
		{"scenario white space counts as content", Card{Type: TypeScenario, Content: " "}, true},
		{"prompt", Card{Type: TypePrompt, Content: "x", Input: in}, true},
		{"prompt empty content", Card{Type: TypePrompt, Input: in}, false},
		{"prompt missing max_length", Card{Type: TypePrompt, Content: "x"}, false},
		{"multiple_choice", Card{Type: TypeMultipleChoice, Content: "x", Options: opts}, true},
		{"multiple_choice empty content", Card{Type: TypeMultipleChoice, Options: opts}, false},
		{"multiple_choice no options", Card{Type: TypeMultipleChoice, Content: "x"}, false},
		{"multiple_choice empty options", Card{Type: TypeMultipleChoice, Content: "x", Options: []Option{}}, false},
		{"multiple_choice option without id", Card{Type: TypeMultipleChoice, Content: "x", Options: []Option{{Label: "A"}}}, false},
		{"multiple_choice option without label", Card{Type: TypeMultipleChoice, Content: "x", Options: []Option{{ID: "a"}}}, false},
		{"insight", Card{Type: TypeInsight, Content: "x"}, true},
		{"insight empty content", Card{Type: TypeInsight}, false},
		{"reflection", Card{Type: TypeReflection, Content: "x", Input: in}, true},
		{"reflection empty content", Card{Type: TypeReflection, Input: in}, false},
		{"reflection missing max_length", Card{Type: TypeReflection, Content: "x"}, false},
		{"level_up", Card{Type: TypeLevelUp, NewLevel: 2, Message: "m"}, true},
		{"level_up without level", Card{Type: TypeLevelUp, Message: "m"}, false},
		{"level_up negative level", Card{Type: TypeLevelUp, NewLevel: -1}, false},
		{"unknown type", Card{Type: "quiz", Content: "x"}, false},
		{"no type", Card{Content: "x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := validCard(tt.card); got != tt.want {
				t.Errorf("validCard(%+v) = %v, want %v", tt.card, got, tt.want)
			}
		})
	}
}

func TestToolArgumentsRoundTrip(t *testing.T) {
	cards := []Card{
		fallbackCard(),
		{Type: TypeScenario, Content: "Scene", DrillPhase: "Problem-Solving"},
		{Type: TypePrompt, Content: "Q", Input: &Input{Type: "text", MaxLength: 500, Placeholder: "p"}, IsIteration: boolPtr(true)},
		{Type: TypeReflection, Content: "Why?", Input: &Input{Type: "text", MaxLength: 200}, IsIteration: boolPtr(false)},
		{Type: TypeMultipleChoice, Content: "Pick", Options: []Option{{ID: "a", Label: "A"}}},
	}
	for _, c := range cards {
		t.Run(c.Type, func(t *testing.T) {
			args := c.toolArguments()
			back, rules, cause, _ := parseArguments(args)
			if cause != "" || len(rules) != 0 {
				t.Fatalf("parseArguments(%s): cause %q rules %v", args, cause, rules)
			}
			if !reflect.DeepEqual(back, c) {
				t.Errorf("round trip of %s = %+v, want %+v", args, back, c)
			}
		})
	}
	if got, want := fallbackCard().toolArguments(), `{"card_type":"insight","content":"Let's continue. What's on your mind?"}`; got != want {
		t.Errorf("fallback arguments = %s, want %s", got, want)
	}
}
