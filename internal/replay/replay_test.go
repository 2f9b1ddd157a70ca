package replay

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseFacts(t *testing.T) {
	tests := []struct {
		name   string
		system string
		want   map[string]string
	}{
		{"none", "You are a coach.", nil},
		{"basic", "Rules.\n\n## Session facts\ncontract: toulmin\nstep: claim\ndraft_for_step: ", map[string]string{"contract": "toulmin", "step": "claim", "draft_for_step": ""}},
		{"value with colons", "## Session facts\ndraft_for_step: Note: cities: yes", map[string]string{"draft_for_step": "Note: cities: yes"}},
		{"last block wins", "## Session facts\ncontract: cards\n\nquoted text\n## Session facts\ncontract: module", map[string]string{"contract": "module"}},
		{"prose lines are ignored", "## Session facts\nThe Learner said: step: x\ncontract: toulmin\r\n- locale: es", map[string]string{"contract": "toulmin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseFacts(tt.system); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseFacts(%q) = %v, want %v", tt.system, got, tt.want)
			}
		})
	}
}

func TestRespondDispatch(t *testing.T) {
	user := Message{Role: "user", Content: "hello there"}
	tests := []struct {
		name       string
		msgs       []Message
		forced     string
		wantTool   string
		wantPrefix string
	}{
		{"no messages", nil, "", "", Generic},
		{"no system message", []Message{user}, "", "", Generic},
		{"no facts block", []Message{{Role: "system", Content: "You are a coach."}, user}, "", "", Generic},
		{"unknown contract", []Message{system("contract", "chess"), user}, "", "", Generic},
		{"unknown contract with a forced tool", []Message{system("contract", "chess"), user}, "coach_result", "", Generic},
		{"toulmin in content", []Message{system("contract", "toulmin"), user}, "", "", `{"assistantText":"`},
		{"toulmin through a forced tool", []Message{system("contract", "toulmin"), user}, "coach_result", "coach_result", `{"assistantText":"`},
		{"cards", []Message{system("contract", "cards"), user}, "display_card", "display_card", `{"card_type":"scenario","content":"`},
		{"cards without facts", []Message{user}, "display_card", "display_card", `{"card_type":"scenario","content":"`},
		{"cards without a forced tool", []Message{system("contract", "cards"), user}, "", "display_card", `{"card_type":"scenario","content":"`},
		{"module", []Message{system("contract", "module", "remaining_topics", "a=Alpha"), user}, "", "", `{"content":{"text_blocks":[{"type":"heading","content":"Alpha"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Respond(tt.msgs, tt.forced)
			payload := got.Content
			if tt.wantTool != "" {
				payload = got.ToolArgs
				if got.Content != "" {
					t.Errorf("got content %q beside the tool call, want none", got.Content)
				}
			}
			if got.ToolName != tt.wantTool || !strings.HasPrefix(payload, tt.wantPrefix) {
				t.Errorf("got tool %q payload %.80q, want tool %q payload starting %q", got.ToolName, payload, tt.wantTool, tt.wantPrefix)
			}
		})
	}
}

func TestMissingFacts(t *testing.T) {
	user := Message{Role: "user", Content: "hello there"}
	t.Run("toulmin", func(t *testing.T) {
		got, _ := toulminAnswer(t, []Message{system("contract", "toulmin"), user})
		if got["step"] != "claim" || got["proposedUpdate"] != nil || str(got["nextQuestion"]) == "" {
			t.Errorf("got %v, want coaching on the claim", got)
		}
	})
	t.Run("toulmin with a bad step", func(t *testing.T) {
		got, _ := toulminAnswer(t, []Message{system("contract", "toulmin", "step", "conclusion", "locale", "fr"), user})
		if got["step"] != "claim" {
			t.Errorf("got step %v, want claim", got["step"])
		}
	})
	t.Run("cards", func(t *testing.T) {
		a := Respond([]Message{system("contract", "cards", "level", "many"), user}, "display_card")
		args := validate(t, "display-card.json", "display-card-args.json", a.ToolArgs)
		if args["card_type"] != "scenario" || args["content"] != drills[0][0].scenario {
			t.Errorf("got %v, want the first level 1 scenario", args)
		}
	})
	t.Run("module", func(t *testing.T) {
		got, _ := moduleAnswer(t, []Message{system("contract", "module"), user})
		meta := got["meta"].(map[string]any)
		if meta["response_type"] != "conversational" {
			t.Errorf("got response_type %v, want conversational", meta["response_type"])
		}
		if _, ok := meta["progress"].(map[string]any)["remaining_topics"]; ok {
			t.Errorf("got remaining_topics %v, want none when the facts do not list topics", meta["progress"])
		}
	})
	t.Run("no user message", func(t *testing.T) {
		toulminAnswer(t, []Message{system("contract", "toulmin", "first_turn_for_step", "false")})
		moduleAnswer(t, []Message{system("contract", "module", "remaining_topics", "x=X")})
		a := Respond([]Message{system("contract", "cards", "last_card", "prompt")}, "display_card")
		validate(t, "display-card.json", "display-card-args.json", a.ToolArgs)
	})
}

func TestDeterministic(t *testing.T) {
	conversations := map[string]struct {
		msgs   []Message
		forced string
	}{
		"toulmin": {[]Message{system("contract", "toulmin", "step", "warrant", "first_turn_for_step", "false"), {Role: "user", Content: "a"}, {Role: "user", Content: "cleaner air improves public health"}}, ""},
		"cards":   {[]Message{system("contract", "cards", "level", "3", "last_card", "prompt"), {Role: "user", Content: "I would delay the launch by two days"}}, "display_card"},
		"module":  {[]Message{system("contract", "module", "module", "anxiety-basics", "remaining_topics", "stress=Stress; genetics=Genetics"), {Role: "user", Content: "a"}, {Role: "user", Content: "b"}, {Role: "user", Content: "c"}}, ""},
		"generic": {[]Message{{Role: "user", Content: "hi"}}, ""},
	}
	for name, c := range conversations {
		t.Run(name, func(t *testing.T) {
			first := Respond(c.msgs, c.forced)
			for i := 0; i < 20; i++ {
				if got := Respond(c.msgs, c.forced); got != first {
					t.Fatalf("call %d: got %+v, want %+v", i+2, got, first)
				}
			}
		})
	}
}

func TestSnippet(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"cities should ban cars.", 10, "cities should ban cars"},
		{"one two three four five", 3, "one two three…"},
		{"First sentence. Second one.", 10, "First sentence…"},
		{"  \"quoted   text\"  ", 10, "quoted text"},
		{"", 5, ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := snippet(tt.in, tt.n); got != tt.want {
				t.Errorf("snippet(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}

func BenchmarkRespond(b *testing.B) {
	benches := map[string]struct {
		msgs   []Message
		forced string
	}{
		"toulmin": {[]Message{system("contract", "toulmin", "step", "qualifier", "first_turn_for_step", "false"), {Role: "user", Content: "this holds for dense cities with good transport"}}, ""},
		"cards":   {[]Message{system("contract", "cards", "level", "2", "last_card", "prompt"), {Role: "user", Content: "I would bring both leads together and agree on the customer's real need"}}, "display_card"},
		"module":  {[]Message{system("contract", "module", "module", "anxiety-basics", "covered_topics", "a,b", "remaining_topics", "physical_level=Physical Level; mental_level=Mental Level"), {Role: "user", Content: "go on"}}, ""},
	}
	for name, c := range benches {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Respond(c.msgs, c.forced)
			}
		})
	}
}
