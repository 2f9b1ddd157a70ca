package cards

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

func strPtr(s string) *string { return &s }

// session returns a cards session in state st with history h.
func session(t *testing.T, st state, h []coach.Message) *coach.Session {
	t.Helper()
	return &coach.Session{ID: coach.NewID(), Contract: Name, Locale: "en", Version: 1, State: mustJSON(st), History: h}
}

func begin(t *testing.T, c *Contract, s *coach.Session, in coach.TurnInput) *Turn {
	t.Helper()
	turn, err := c.Begin(s, in)
	if err != nil {
		t.Fatalf("Begin(%+v): %v", in, err)
	}
	return turn.(*Turn)
}

func decode(t *testing.T, raw json.RawMessage) state {
	t.Helper()
	var st state
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("state %s: %v", raw, err)
	}
	return st
}

var (
	scenarioCard = &Card{Type: TypeScenario, Content: "Scene"}
	insightCard  = &Card{Type: TypeInsight, Content: "Notice"}
	promptCard   = &Card{Type: TypePrompt, Content: "Q", Input: &Input{Type: "text", MaxLength: 10}, IsIteration: boolPtr(false)}
	reflectCard  = &Card{Type: TypeReflection, Content: "Why?", Input: &Input{Type: "text", MaxLength: 5}, IsIteration: boolPtr(false)}
	choiceCard   = &Card{Type: TypeMultipleChoice, Content: "Pick", Options: []Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}}
	levelUpCard  = &Card{Type: TypeLevelUp, NewLevel: 2, Message: "m"}
)

func TestNewState(t *testing.T) {
	c := New(Config{})
	raw, err := c.NewState(coach.NewSession{Locale: "es"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `{"level":1,"lastCard":null,"cycles":0,"completedCycles":0}`; got != want {
		t.Errorf("NewState = %s, want %s", got, want)
	}
	if got := c.Name(); got != "cards" {
		t.Errorf("Name() = %q, want cards", got)
	}
}

func TestNewAppliesDefaults(t *testing.T) {
	got := New(Config{Levels: map[int]string{3: "custom"}}).Config()
	if got.CyclesPerLevel != 2 || got.MaxLevel != 5 || got.HistoryMessages != 40 {
		t.Errorf("Config() = %+v, want CyclesPerLevel 2, MaxLevel 5, HistoryMessages 40", got)
	}
	if got.Levels[3] != "custom" || got.Levels[2] != DefaultLevels()[2] {
		t.Errorf("Levels = %v, want level 3 overridden and the other defaults kept", got.Levels)
	}
}

func TestBeginRejects(t *testing.T) {
	tests := []struct {
		name  string
		last  *Card
		in    coach.TurnInput
		field string
	}{
		{"first turn without message", nil, coach.TurnInput{}, "message"},
		{"first turn blank message", nil, coach.TurnInput{Message: strPtr("  ")}, "message"},
		{"first turn selection", nil, coach.TurnInput{Selected: strPtr("a")}, "selected"},
		{"step is toulmin's", nil, coach.TurnInput{Message: strPtr("Begin training."), Step: "claim"}, "step"},
		{"continue is toulmin's", nil, coach.TurnInput{Continue: true}, "continue"},
		{"continue with a message is toulmin's", nil, coach.TurnInput{Message: strPtr("[Continue]"), Continue: true}, "continue"},
		{"form is module's", nil, coach.TurnInput{Message: strPtr("Begin training."), Form: &coach.FormAnswer{ID: "f"}}, "form"},
		{"choice needs selected", choiceCard, coach.TurnInput{}, "selected"},
		{"free text after choice", choiceCard, coach.TurnInput{Message: strPtr("I pick a")}, "selected"},
		{"choice not offered", choiceCard, coach.TurnInput{Selected: strPtr("c")}, "selected"},
		{"choice ids are exact", choiceCard, coach.TurnInput{Selected: strPtr("A")}, "selected"},
		{"choice with text too", choiceCard, coach.TurnInput{Selected: strPtr("a"), Message: strPtr("because")}, "message"},
		{"prompt without message", promptCard, coach.TurnInput{}, "message"},
		{"prompt blank message", promptCard, coach.TurnInput{Message: strPtr("\n\t")}, "message"},
		{"prompt over max_length", promptCard, coach.TurnInput{Message: strPtr("12345678901")}, "message"},
		{"prompt over max_length in runes", promptCard, coach.TurnInput{Message: strPtr("ééééééééééé")}, "message"},
		{"prompt selection", promptCard, coach.TurnInput{Selected: strPtr("a")}, "selected"},
		{"reflection over max_length", reflectCard, coach.TurnInput{Message: strPtr("123456")}, "message"},
		{"reflection selection", reflectCard, coach.TurnInput{Selected: strPtr("a"), Message: strPtr("ok")}, "selected"},
		{"scenario free text", scenarioCard, coach.TurnInput{Message: strPtr("ok")}, "message"},
		{"scenario continue is exact", scenarioCard, coach.TurnInput{Message: strPtr("[continue]")}, "message"},
		{"scenario without message", scenarioCard, coach.TurnInput{}, "message"},
		{"scenario selection", scenarioCard, coach.TurnInput{Selected: strPtr("a")}, "selected"},
		{"insight free text", insightCard, coach.TurnInput{Message: strPtr("thanks")}, "message"},
		{"insight selection", insightCard, coach.TurnInput{Selected: strPtr("a"), Message: strPtr(ContinueMessage)}, "selected"},
		{"level_up free text", levelUpCard, coach.TurnInput{Message: strPtr("go")}, "message"},
	}
	c := New(Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Begin(session(t, state{Level: 1, LastCard: tt.last}, nil), tt.in)
			var e *coach.Error
			if !errors.As(err, &e) {
				t.Fatalf("Begin error = %v, want a *coach.Error", err)
			}
			if e.Kind != coach.KindUnprocessable || e.Code != coach.CodeInvalidInput || e.Field != tt.field {
				t.Errorf("Begin error = kind %d code %s field %q, want 422 invalid_input on %q (%s)", e.Kind, e.Code, e.Field, tt.field, e.Message)
			}
		})
	}
}

func TestBeginChoiceErrorListsOptions(t *testing.T) {
	_, err := New(Config{}).Begin(session(t, state{Level: 1, LastCard: choiceCard}, nil), coach.TurnInput{Message: strPtr("x")})
	if err == nil || !strings.Contains(err.Error(), "choose one of a, b") {
		t.Errorf("Begin error = %v, want it to say: choose one of a, b", err)
	}
}

func TestBeginAccepts(t *testing.T) {
	tests := []struct {
		name string
		last *Card
		in   coach.TurnInput
		user string
	}{
		{"first turn", nil, coach.TurnInput{Message: strPtr("Begin training.")}, "Begin training."},
		{"first turn any text", nil, coach.TurnInput{Message: strPtr("hello")}, "hello"},
		{"choice", choiceCard, coach.TurnInput{Selected: strPtr("b")}, `{"selected": "b"}`},
		{"prompt at max_length", promptCard, coach.TurnInput{Message: strPtr("1234567890")}, "1234567890"},
		{"prompt multibyte at max_length", promptCard, coach.TurnInput{Message: strPtr("éééééééééé")}, "éééééééééé"},
		{"reflection", reflectCard, coach.TurnInput{Message: strPtr("fear")}, "fear"},
		{"prompt without stored input takes the default", &Card{Type: TypePrompt, Content: "Q"}, coach.TurnInput{Message: strPtr(strings.Repeat("x", 500))}, strings.Repeat("x", 500)},
		{"scenario", scenarioCard, coach.TurnInput{Message: strPtr(ContinueMessage)}, ContinueMessage},
		{"insight", insightCard, coach.TurnInput{Message: strPtr(ContinueMessage)}, ContinueMessage},
		{"level_up", levelUpCard, coach.TurnInput{Message: strPtr(ContinueMessage)}, ContinueMessage},
	}
	c := New(Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn := begin(t, c, session(t, state{Level: 1, LastCard: tt.last}, nil), tt.in)
			msgs := turn.Request().Messages
			if got := msgs[len(msgs)-1]; got.Role != coach.RoleUser || got.Content != tt.user {
				t.Errorf("last message = %+v, want user %q", got, tt.user)
			}
		})
	}
}

func TestBeginUnreadableState(t *testing.T) {
	s := session(t, state{}, nil)
	s.State = json.RawMessage(`[`)
	_, err := New(Config{}).Begin(s, coach.TurnInput{Message: strPtr("Begin training.")})
	if e := coach.AsError(err); err == nil || e.Kind != coach.KindInternal {
		t.Errorf("Begin error = %v, want an internal error", err)
	}
}

func TestRequest(t *testing.T) {
	c := New(Config{HistoryMessages: 4})
	hist := []coach.Message{
		{Role: coach.RoleUser, Content: "Begin training."},
		{Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: "1", Name: ToolName, Arguments: "{}"}}},
		{Role: coach.RoleTool, ToolCallID: "1", Content: ToolAck},
		{Role: coach.RoleUser, Content: ContinueMessage},
		{Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: "2", Name: ToolName, Arguments: "{}"}}},
		{Role: coach.RoleTool, ToolCallID: "2", Content: ToolAck},
	}
	turn := begin(t, c, session(t, state{Level: 1, LastCard: insightCard}, hist), coach.TurnInput{Message: strPtr(ContinueMessage)})
	req := turn.Request()
	if req.Tool == nil || req.Tool.Name != "display_card" || req.Tool.Description != ToolDescription {
		t.Fatalf("Tool = %+v, want display_card with the seed's description", req.Tool)
	}
	if req.Tool.Description != "Display a training card to the user. You MUST call this tool for every response." {
		t.Errorf("Tool.Description = %q", req.Tool.Description)
	}
	if !json.Valid(req.Tool.Parameters) || !strings.Contains(string(req.Tool.Parameters), `"card_type"`) {
		t.Errorf("Tool.Parameters = %s, want display-card.json", req.Tool.Parameters)
	}
	if req.Schema != nil {
		t.Errorf("Schema = %+v, want none: the tool carries the schema", req.Schema)
	}
	// Four history messages would start at a tool message; the bound moves on to the user message.
	roles := make([]string, len(req.Messages))
	for i, m := range req.Messages {
		roles[i] = m.Role
	}
	if got, want := strings.Join(roles, ","), "system,user,assistant,tool,user"; got != want {
		t.Errorf("roles = %s, want %s", got, want)
	}
	// The engine appends a correction to a retried request; that must not leak into the next one.
	req.Messages = append(req.Messages, coach.Message{Role: coach.RoleUser, Content: "fix it"})
	req.Messages[0].Content = "changed"
	if again := turn.Request(); len(again.Messages) != 5 || again.Messages[0].Content == "changed" {
		t.Errorf("second Request() sees the caller's changes: %d messages", len(again.Messages))
	}
}

func TestSystemPromptFacts(t *testing.T) {
	tests := []struct {
		name   string
		locale string
		st     state
		in     coach.TurnInput
		facts  string
		has    []string
	}{
		{
			name: "first turn", locale: "en", st: state{Level: 1}, in: coach.TurnInput{Message: strPtr("Begin training.")},
			facts: "contract: cards\nlocale: en\nlevel: 1\nmax_level: 5\nlast_card: none\ncycles_at_level: 0",
			has:   []string{"You MUST call the display_card tool", "level 1 of 5", "in English", DefaultLevels()[1]},
		},
		{
			name: "mid level", locale: "es", st: state{Level: 3, Cycles: 1, LastCard: promptCard}, in: coach.TurnInput{Message: strPtr("ok")},
			facts: "contract: cards\nlocale: es\nlevel: 3\nmax_level: 5\nlast_card: prompt\ncycles_at_level: 1",
			has:   []string{"level 3 of 5", "in Spanish", DefaultLevels()[2], DefaultLevels()[3]},
		},
		{
			name: "level up", locale: "en", st: state{Level: 1, Cycles: 2, LastCard: insightCard}, in: coach.TurnInput{Message: strPtr(ContinueMessage)},
			facts: "contract: cards\nlocale: en\nlevel: 2\nmax_level: 5\nlast_card: insight\ncycles_at_level: 0",
			has:   []string{"level 2 of 5", "just reached level 2", DefaultLevels()[2]},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := session(t, tt.st, nil)
			s.Locale = tt.locale
			sys := begin(t, New(Config{}), s, tt.in).Request().Messages[0]
			if sys.Role != coach.RoleSystem {
				t.Fatalf("first message role = %s, want system", sys.Role)
			}
			if want := "\n\n## Session facts\n" + tt.facts; !strings.HasSuffix(sys.Content, want) {
				t.Errorf("system prompt ends\n%s\nwant it to end\n%s", sys.Content[max(0, len(sys.Content)-200):], want)
			}
			for _, h := range tt.has {
				if !strings.Contains(sys.Content, h) {
					t.Errorf("system prompt lacks %q", h)
				}
			}
		})
	}
	if got := oneLine("a\nb\r\nc"); got != "a b c" {
		t.Errorf("oneLine = %q, want %q", got, "a b c")
	}
}

func TestLevelUp(t *testing.T) {
	insight := `{"card_type":"insight","content":"Good."}`
	scenario := `{"card_type":"scenario","content":"New scene."}`
	tests := []struct {
		name      string
		cfg       Config
		st        state
		in        string
		args      string
		wantCard  string // the prelude card, empty for none
		wantState state
	}{
		{
			name: "below the threshold", st: state{Level: 1, Cycles: 1, CompletedCycles: 1, LastCard: insightCard},
			in: ContinueMessage, args: scenario,
			wantState: state{Level: 1, Cycles: 1, CompletedCycles: 1},
		},
		{
			name: "threshold reached", st: state{Level: 1, Cycles: 2, CompletedCycles: 2, LastCard: insightCard},
			in: ContinueMessage, args: scenario,
			wantCard:  `{"type":"level_up","new_level":2,"message":"Scenarios now include a second stakeholder with competing goals."}`,
			wantState: state{Level: 2, Cycles: 0, CompletedCycles: 2},
		},
		{
			name: "level 3 message", st: state{Level: 2, Cycles: 2, CompletedCycles: 4, LastCard: insightCard},
			in: ContinueMessage, args: scenario,
			wantCard:  `{"type":"level_up","new_level":3,"message":"Scenarios will now include more ambiguity and competing priorities."}`,
			wantState: state{Level: 3, Cycles: 0, CompletedCycles: 4},
		},
		{
			name: "at max level", st: state{Level: 5, Cycles: 7, CompletedCycles: 15, LastCard: insightCard},
			in: ContinueMessage, args: scenario,
			wantState: state{Level: 5, Cycles: 7, CompletedCycles: 15},
		},
		{
			name: "configured", cfg: Config{CyclesPerLevel: 1, MaxLevel: 9, Levels: map[int]string{2: "Two."}},
			st: state{Level: 1, Cycles: 1, CompletedCycles: 1, LastCard: insightCard}, in: ContinueMessage, args: scenario,
			wantCard:  `{"type":"level_up","new_level":2,"message":"Two."}`,
			wantState: state{Level: 2, Cycles: 0, CompletedCycles: 1},
		},
		{
			name: "level without a description", cfg: Config{CyclesPerLevel: 1, MaxLevel: 9},
			st: state{Level: 6, Cycles: 1, LastCard: insightCard}, in: ContinueMessage, args: scenario,
			wantCard:  `{"type":"level_up","new_level":7,"message":"Level 7: scenarios get harder."}`,
			wantState: state{Level: 7, Cycles: 0},
		},
		{
			name: "prompt answered with insight completes a cycle", st: state{Level: 1, Cycles: 0, LastCard: promptCard},
			in: "my answer", args: insight,
			wantState: state{Level: 1, Cycles: 1, CompletedCycles: 1},
		},
		{
			name: "reflection answered with insight completes a cycle", st: state{Level: 1, Cycles: 1, CompletedCycles: 1, LastCard: reflectCard},
			in: "fear", args: insight,
			wantState: state{Level: 1, Cycles: 2, CompletedCycles: 2},
		},
		{
			name: "prompt answered with another prompt is no cycle", st: state{Level: 1, LastCard: promptCard},
			in: "my answer", args: `{"card_type":"prompt","content":"Again.","is_iteration":true,"input_config":{"max_length":500}}`,
			wantState: state{Level: 1},
		},
		{
			name: "continue after scenario to insight is no cycle", st: state{Level: 1, LastCard: scenarioCard},
			in: ContinueMessage, args: insight,
			wantState: state{Level: 1},
		},
		{
			name: "fallback insight is no cycle", st: state{Level: 1, LastCard: promptCard},
			in: "my answer", args: `{"card_type":`,
			wantState: state{Level: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn := begin(t, New(tt.cfg), session(t, tt.st, nil), coach.TurnInput{Message: strPtr(tt.in)})
			pre := turn.Prelude()
			switch {
			case tt.wantCard == "" && len(pre) != 0:
				t.Errorf("Prelude() = %+v, want nothing", pre)
			case tt.wantCard != "" && (len(pre) != 1 || pre[0].Type != coach.EventCard || string(pre[0].Card) != tt.wantCard):
				t.Errorf("Prelude() = %+v, want one card event %s", pre, tt.wantCard)
			}
			for _, e := range pre {
				wantFrontendCard(t, e.Card)
			}
			feed(turn, toolFrags("call_1", tt.args))
			out := finish(t, turn)
			wantFrontendCard(t, out.Result)
			got := decode(t, out.State)
			if got.LastCard == nil || string(mustJSON(got.LastCard)) != string(out.Result) {
				t.Errorf("lastCard = %+v, want the result %s", got.LastCard, out.Result)
			}
			got.LastCard = nil
			if got != tt.wantState {
				t.Errorf("state = %+v, want %+v", got, tt.wantState)
			}
		})
	}
}

// TestLevelUpOnce plays the seed's example flow and checks the level_up card comes exactly once.
func TestLevelUpOnce(t *testing.T) {
	c := New(Config{})
	steps := []struct {
		in   coach.TurnInput
		args string
	}{
		{coach.TurnInput{Message: strPtr("Begin training.")}, `{"card_type":"scenario","content":"Board meeting."}`},
		{coach.TurnInput{Message: strPtr(ContinueMessage)}, `{"card_type":"prompt","content":"The CFO interrupts.","input_config":{"max_length":500}}`},
		{coach.TurnInput{Message: strPtr("I would acknowledge their point and...")}, `{"card_type":"insight","content":"Notice how you led with accommodation."}`},
		{coach.TurnInput{Message: strPtr(ContinueMessage)}, `{"card_type":"multiple_choice","content":"What drove that?","options":[{"id":"a","label":"A"},{"id":"b","label":"B"}]}`},
		{coach.TurnInput{Selected: strPtr("b")}, `{"card_type":"reflection","content":"Why did that feel safer?","input_config":{"max_length":200}}`},
		{coach.TurnInput{Message: strPtr("Because I wasn't confident in...")}, `{"card_type":"insight","content":"That's the pattern."}`},
		{coach.TurnInput{Message: strPtr(ContinueMessage)}, `{"card_type":"scenario","content":"Level 2 scene."}`},
		{coach.TurnInput{Message: strPtr(ContinueMessage)}, `{"card_type":"prompt","content":"Q2","input_config":{"max_length":500}}`},
	}
	s := session(t, state{Level: 1}, nil)
	var levelUps []int
	for i, st := range steps {
		turn := begin(t, c, s, st.in)
		for _, e := range turn.Prelude() {
			levelUps = append(levelUps, i)
			if string(e.Card) != `{"type":"level_up","new_level":2,"message":"Scenarios now include a second stakeholder with competing goals."}` {
				t.Errorf("turn %d: level_up card %s", i, e.Card)
			}
		}
		feed(turn, toolFrags("", st.args))
		out, err := turn.Finish()
		if err != nil || out.Fallback {
			t.Fatalf("turn %d: Finish = %+v, %v", i, out, err)
		}
		s.State, s.History = out.State, append(s.History, out.History...)
	}
	if len(levelUps) != 1 || levelUps[0] != 6 {
		t.Errorf("level_up cards at turns %v, want exactly one at turn 6 (after the second cycle)", levelUps)
	}
	if got := decode(t, s.State); got.Level != 2 || got.Cycles != 0 || got.CompletedCycles != 2 || got.LastCard.Type != TypePrompt {
		t.Errorf("final state = %+v, want level 2, 0 cycles at level, 2 completed, lastCard prompt", got)
	}
}

// TestLevelUpOfferedAgainAfterFailedTurn: a failed turn stores nothing, so the retried turn
// begins from the same state and offers the level_up card again.
func TestLevelUpOfferedAgainAfterFailedTurn(t *testing.T) {
	c := New(Config{})
	s := session(t, state{Level: 1, Cycles: 2, LastCard: insightCard}, nil)
	for i := range 2 {
		if pre := begin(t, c, s, coach.TurnInput{Message: strPtr(ContinueMessage)}).Prelude(); len(pre) != 1 {
			t.Errorf("attempt %d: Prelude() = %d events, want the level_up card", i, len(pre))
		}
	}
}
