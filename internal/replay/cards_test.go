package replay

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// drillSim plays the cards contract around the model: it keeps level, last card and counted
// cycles as the contract does (a cycle counts when an insight answers a prompt or a reflection;
// two counted cycles earn the next level), and a bounded history whose assistant messages are
// tool calls without content.
type drillSim struct {
	level, cycles int
	last          string
	options       []string
	history       []Message
}

const simMaxLevel, simCyclesPerLevel, simHistory = 5, 2, 40

// input returns what the learner sends to the card last shown.
func (s *drillSim) input(turn int) string {
	switch s.last {
	case "none":
		return "Begin training."
	case "prompt":
		return "I would acknowledge the delay today and commit to a new date by Friday, turn " + strconv.Itoa(turn)
	case "reflection":
		return "Because I wanted to look in control, turn " + strconv.Itoa(turn)
	case "multiple_choice":
		return `{"selected": "` + s.options[turn%len(s.options)] + `"}`
	}
	return "[Continue]"
}

// turn runs one turn and returns the decoded arguments and whether a level_up card preceded it.
func (s *drillSim) turn(t *testing.T, n int) (map[string]any, string, bool) {
	t.Helper()
	levelUp := false
	if s.cycles >= simCyclesPerLevel && s.level < simMaxLevel {
		s.level++
		s.cycles = 0
		levelUp = true
	}
	user := s.input(n)
	hist := s.history
	if cut := len(hist) - simHistory; cut > 0 {
		for cut < len(hist) && hist[cut].Role != "user" {
			cut++
		}
		hist = hist[cut:]
	}
	msgs := append([]Message{system("contract", "cards", "locale", "en", "level", strconv.Itoa(s.level),
		"max_level", strconv.Itoa(simMaxLevel), "last_card", s.last, "cycles_at_level", strconv.Itoa(s.cycles))}, hist...)
	msgs = append(msgs, Message{Role: "user", Content: user})

	a := Respond(msgs, "display_card")
	if a.ToolName != "display_card" || a.Content != "" {
		t.Fatalf("turn %d: got tool %q content %q, want a display_card call", n, a.ToolName, a.Content)
	}
	if !strings.HasPrefix(a.ToolArgs, `{"card_type":"`) || !strings.Contains(a.ToolArgs, `","content":"`) {
		t.Fatalf("turn %d: arguments do not start with card_type then content: %s", n, a.ToolArgs)
	}
	args := validate(t, "display-card.json", "display-card-args.json", a.ToolArgs)
	validate(t, "display-card-args.json", "display-card-args.json", a.ToolArgs)

	kind := str(args["card_type"])
	if kind == "insight" && (s.last == "prompt" || s.last == "reflection") {
		s.cycles++
	}
	s.options = nil
	if opts, ok := args["options"].([]any); ok {
		for _, o := range opts {
			s.options = append(s.options, str(o.(map[string]any)["id"]))
		}
	}
	s.last = kind
	s.history = append(s.history, Message{Role: "user", Content: user}, Message{Role: "assistant"}, Message{Role: "tool", Content: "displayed"})
	return args, user, levelUp
}

func TestCardsDrill(t *testing.T) {
	s := &drillSim{level: 1, last: "none"}
	cycle := []string{"scenario", "prompt", "insight", "multiple_choice", "reflection", "insight"}
	scenarios := map[string]bool{}
	var scenario *drill
	const turns = 36
	for n := 0; n < turns; n++ {
		args, user, levelUp := s.turn(t, n)
		kind := str(args["card_type"])
		content := str(args["content"])
		if want := cycle[n%len(cycle)]; kind != want {
			t.Fatalf("turn %d: got a %s card, want %s", n, kind, want)
		}
		if levelUp && kind != "scenario" {
			t.Errorf("turn %d: got a %s card after a level_up, want a scenario", n, kind)
		}
		if content == "" || str(args["drill_phase"]) == "" {
			t.Errorf("turn %d: got content %q drill_phase %q, want both", n, content, args["drill_phase"])
		}
		if _, ok := args["is_iteration"]; ok && args["is_iteration"] != false {
			t.Errorf("turn %d: got is_iteration %v, want false", n, args["is_iteration"])
		}
		cfg, _ := args["input_config"].(map[string]any)
		switch kind {
		case "scenario":
			scenario = findDrill(content)
			if scenario == nil {
				t.Fatalf("turn %d: scenario %q is not one of the drills", n, content)
			}
			if want := drills[min(s.level, len(drills))-1]; !containsDrill(want, scenario) {
				t.Errorf("turn %d: scenario %q is not a level %d scenario", n, content, s.level)
			}
			scenarios[content] = true
		case "prompt", "reflection":
			want := 500.0
			if kind == "reflection" {
				want = 200
			}
			if cfg == nil || cfg["max_length"] != want || str(cfg["placeholder"]) == "" {
				t.Errorf("turn %d: got input_config %v, want max_length %v and a placeholder", n, cfg, want)
			}
			if args["is_iteration"] != false {
				t.Errorf("turn %d: got is_iteration %v, want false", n, args["is_iteration"])
			}
			if kind == "prompt" && content != scenario.prompt {
				t.Errorf("turn %d: got prompt %q, want the prompt of scenario %q", n, content, scenario.scenario)
			}
			if kind == "reflection" {
				var sel struct{ Selected string }
				_ = json.Unmarshal([]byte(user), &sel)
				label := scenario.options[sel.Selected[0]-'a']
				if !strings.Contains(content, label) {
					t.Errorf("turn %d: reflection %q does not name the chosen option %q", n, content, label)
				}
			}
		case "multiple_choice":
			opts, _ := args["options"].([]any)
			if len(opts) < 3 || len(opts) > 4 || content != scenario.question {
				t.Errorf("turn %d: got %d options for %q, want 3-4 for the scenario's question %q", n, len(opts), content, scenario.question)
			}
			for i, o := range opts {
				if id := str(o.(map[string]any)["id"]); id != string(rune('a'+i)) {
					t.Errorf("turn %d: option %d has id %q, want %q", n, i, id, string(rune('a'+i)))
				}
			}
		case "insight":
			if !strings.Contains(content, strings.TrimSuffix(snippet(user, 8), "…")) || !strings.Contains(content, scenario.lesson) {
				t.Errorf("turn %d: insight %q should quote the answer %q and teach the scenario's lesson", n, content, user)
			}
		}
	}
	if s.level != simMaxLevel {
		t.Errorf("after %d turns: got level %d, want %d", turns, s.level, simMaxLevel)
	}
	if len(scenarios) < 6 {
		t.Errorf("got %d distinct scenarios in %d turns, want at least 6", len(scenarios), turns)
	}
}

func TestCardsScenarioBank(t *testing.T) {
	seen := map[string]bool{}
	for level, bank := range drills {
		for i, d := range bank {
			if len(d.options) < 3 || len(d.options) > 4 {
				t.Errorf("level %d drill %d: got %d options, want 3-4", level+1, i, len(d.options))
			}
			for name, s := range map[string]string{"phase": d.phase, "scenario": d.scenario, "prompt": d.prompt, "placeholder": d.placeholder, "question": d.question, "lesson": d.lesson} {
				if s == "" {
					t.Errorf("level %d drill %d: empty %s", level+1, i, name)
				}
			}
			seen[d.scenario] = true
		}
	}
	if len(seen) < 6 || len(drills) != 5 {
		t.Errorf("got %d distinct scenarios over %d levels, want at least 6 over 5", len(seen), len(drills))
	}
}

func TestCardsFromHistoryOnly(t *testing.T) {
	// Without cycles_at_level the selections in the history count the cycles.
	user := func(s string) Message { return Message{Role: "user", Content: s} }
	facts := func(last string) Message {
		return system("contract", "cards", "level", "2", "last_card", last)
	}
	bank := drills[1]
	tests := []struct {
		name     string
		msgs     []Message
		wantType string
		wantText string
	}{
		{"first insight leads to multiple choice", []Message{facts("insight"), user("[Continue]"), user("my answer"), user("[Continue]")}, "multiple_choice", bank[0].question},
		{"reflection insight leads to the next scenario", []Message{facts("insight"), user(`{"selected": "a"}`), user("why"), user("[Continue]")}, "scenario", bank[1].scenario},
		{"selection leads to a reflection on the same scenario", []Message{facts("multiple_choice"), user(`{"selected": "c"}`)}, "reflection", bank[0].options[2]},
		{"level up leads to a scenario", []Message{facts("level_up"), user("[Continue]")}, "scenario", bank[0].scenario},
		{"unknown last card starts over", []Message{facts("weird"), user("hello")}, "scenario", bank[0].scenario},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := Respond(tt.msgs, "display_card")
			args := validate(t, "display-card.json", "display-card-args.json", a.ToolArgs)
			if args["card_type"] != tt.wantType || !strings.Contains(str(args["content"]), tt.wantText) {
				t.Errorf("got %s %q, want %s containing %q", args["card_type"], args["content"], tt.wantType, tt.wantText)
			}
		})
	}
}

func TestSelection(t *testing.T) {
	tests := []struct {
		in     string
		want   string
		wantOK bool
	}{
		{`{"selected": "b"}`, "b", true},
		{`{"selected":"d"}`, "d", true},
		{`selected: c`, "c", true},
		{`I selected nothing`, "", false},
		{`[Continue]`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := selection(tt.in)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("selection(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func findDrill(scenario string) *drill {
	for _, bank := range drills {
		for i := range bank {
			if bank[i].scenario == scenario {
				return &bank[i]
			}
		}
	}
	return nil
}

func containsDrill(bank []drill, d *drill) bool {
	for i := range bank {
		if &bank[i] == d {
			return true
		}
	}
	return false
}
