package cards

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/coach/coachtest"
)

// checkConversation reports why msgs is not a conversation every OpenAI-compatible endpoint
// accepts: an optional leading system message, a user message first, and every assistant tool
// call answered by its tool message before anything else.
func checkConversation(msgs []coach.Message) error {
	pending := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case coach.RoleSystem:
			if i != 0 {
				return fmt.Errorf("message %d: system message after the start", i)
			}
		case coach.RoleUser:
			if len(pending) > 0 {
				return fmt.Errorf("message %d: user message while tool calls %v are unanswered", i, pending)
			}
		case coach.RoleAssistant:
			if len(pending) > 0 {
				return fmt.Errorf("message %d: assistant message while tool calls %v are unanswered", i, pending)
			}
			for _, c := range m.ToolCalls {
				if c.ID == "" || c.Name != ToolName {
					return fmt.Errorf("message %d: tool call %+v", i, c)
				}
				if _, _, cause, detail := parseArguments(c.Arguments); cause != "" {
					return fmt.Errorf("message %d: arguments %s: %s %s", i, c.Arguments, cause, detail)
				}
				pending[c.ID] = true
			}
		case coach.RoleTool:
			if !pending[m.ToolCallID] {
				return fmt.Errorf("message %d: tool message for %q answers no pending call", i, m.ToolCallID)
			}
			delete(pending, m.ToolCallID)
		default:
			return fmt.Errorf("message %d: role %q", i, m.Role)
		}
	}
	if j := slices.IndexFunc(msgs, func(m coach.Message) bool { return m.Role != coach.RoleSystem }); j >= 0 && msgs[j].Role != coach.RoleUser {
		return fmt.Errorf("message %d: the conversation starts with %s, not user", j, msgs[j].Role)
	}
	if len(pending) > 0 {
		return fmt.Errorf("tool calls %v are never answered", pending)
	}
	return nil
}

// TestSessionHistoryStaysValid plays a scripted 15-turn session through the engine, with
// corrective retries (two ending in the fallback card, one in a valid card), missing call ids,
// an extra tool call, two level-ups and both history bounds in play, and checks every request
// and the stored history after every turn.
func TestSessionHistoryStaysValid(t *testing.T) {
	type step struct {
		in       coach.TurnInput
		frags    []coach.Fragment
		retry    []coach.Fragment // the answer to the corrective retry, when frags is unusable
		levelUp  int              // the prelude's new_level, 0 for none
		fallback bool
		content  string // the text streamed after the last reset
		resets   int
		user     string // the user message the model is shown, checked when set
	}
	cont := coach.TurnInput{Message: strPtr(ContinueMessage)}
	say := func(s string) coach.TurnInput { return coach.TurnInput{Message: strPtr(s)} }
	steps := []step{
		{in: say("Begin training."), frags: toolFrags("call_1", `{"content":"You're in a board meeting.","card_type":"scenario"}`, 7, 20), content: "You're in a board meeting."},
		{in: cont, frags: toolFrags("", `{"content":"The CFO interrupts.","card_type":"prompt","input_config":{"max_length":500,"placeholder":"..."}}`, 3), content: "The CFO interrupts."},
		{in: say("I would acknowledge their point and..."), frags: toolFrags("call_3", `{"content":"Notice how you led with accommodation.","card_type":"insight"}`, 30), content: "Notice how you led with accommodation."},
		{in: cont, frags: toolFrags("call_4", `{"content":"What drove that response?","card_type":"multiple_choice","options":[{"id":"a","label":"Fear"},{"id":"b","label":"Care"}]}`), content: "What drove that response?"},
		{in: coach.TurnInput{Selected: strPtr("b")}, frags: toolFrags("call_5", `{"content":"Why did that feel safer?","card_type":"reflection","input_config":{"max_length":200}}`), content: "Why did that feel safer?"},
		{in: say("Because I wasn't confident in..."), frags: toolFrags("call_6", `{"content":"That's the pattern.","card_type":"insight"}`), content: "That's the pattern."},
		{in: cont, frags: []coach.Fragment{{Content: "Here is your next scenario: ..."}}, retry: []coach.Fragment{{Content: "Still no card."}}, levelUp: 2, fallback: true},
		{in: cont, frags: toolFrags("call_8", `{"content":"Two VPs want the same budget.","card_type":"prompt"}`), content: "Two VPs want the same budget."},
		{in: say("Split it."), frags: toolFrags("call_9", `{"content":"Hm","card_type":`), retry: toolFrags("call_9b", `{"content":"Hmm, let","card_type":"pro`),
			fallback: true, resets: 2, user: "Split it."},
		{in: cont, frags: toolFrags("call_10", `{"content":"Try again: what do you say?","card_type":"prompt","is_iteration":true,"input_config":{"max_length":300}}`), content: "Try again: what do you say?"},
		{in: say("Let's decide on criteria first."), frags: toolFrags("call_11", `{"content":"Better: criteria before positions.","card_type":"insight"}`), content: "Better: criteria before positions."},
		{in: cont, frags: append(toolFrags("call_12", `{"content":"Which criterion first?","card_type":"multiple_choice","options":[{"id":"x","label":"Revenue"},{"id":"y","label":"Risk"}]}`),
			atIndex(1, toolFrags("call_12b", `{"content":"ignored","card_type":"scenario"}`))...), content: "Which criterion first?"},
		{in: coach.TurnInput{Selected: strPtr("y")}, frags: toolFrags("call_13", `{"content":"Why","card_type":"essay"}`), retry: toolFrags("", `{"content":"Why risk?","card_type":"reflection"}`),
			content: "Why risk?", resets: 1, user: `{"selected": "y"}`},
		{in: say("Safety."), frags: toolFrags("call_14", `{"content":"Safety is a value, not a criterion.","card_type":"insight"}`), content: "Safety is a value, not a criterion."},
		{in: cont, frags: toolFrags("call_15", `{"content":"The board asks for your plan.","card_type":"scenario"}`), levelUp: 3, content: "The board asks for your plan."},
	}
	model := coachtest.NewModel()
	for _, s := range steps {
		model.Enqueue(coachtest.Fragments(s.frags...))
		if s.retry != nil {
			model.Enqueue(coachtest.Fragments(s.retry...))
		}
	}
	store := coachtest.NewMemStore()
	svc := coach.NewService(store, model, []coach.Contract{New(Config{HistoryMessages: 7})}, coach.Options{HistoryLimit: 10}, nil)
	ctx := context.Background()
	sess, err := svc.CreateSession(ctx, "t", Name, coach.NewSession{})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		first := model.Calls()
		run, err := svc.StartTurn(ctx, "t", sess.ID, s.in)
		if err != nil {
			t.Fatalf("turn %d: StartTurn: %v", i+1, err)
		}
		var events []coach.Event
		rep := run.Run(ctx, coach.EmitFunc(func(e coach.Event) error { events = append(events, e); return nil }))
		if rep.Err != nil {
			t.Fatalf("turn %d: %+v", i+1, rep)
		}
		var cards []string
		resets := 0
		for j, e := range events {
			switch e.Type {
			case coach.EventCard:
				if j != 0 {
					t.Errorf("turn %d: card event at position %d, want it first", i+1, j)
				}
				cards = append(cards, string(e.Card))
			case coach.EventReset:
				resets++
			}
		}
		last := events[len(events)-1]
		if last.Type != coach.EventResult || last.Fallback != s.fallback {
			t.Errorf("turn %d: last event %+v, want a result with Fallback %v", i+1, last, s.fallback)
		}
		if got := coachtest.DeltaText(events); got != s.content || resets != s.resets {
			t.Errorf("turn %d: %d resets and then deltas %q, want %d and %q", i+1, resets, got, s.resets, s.content)
		}
		wantCards := 0
		if s.levelUp > 0 {
			wantCards = 1
			if want := fmt.Sprintf(`"new_level":%d`, s.levelUp); len(cards) == 1 && !strings.Contains(cards[0], want) {
				t.Errorf("turn %d: card %s, want %s", i+1, cards[0], want)
			}
		}
		if len(cards) != wantCards {
			t.Errorf("turn %d: %d card events, want %d", i+1, len(cards), wantCards)
		}
		stored, err := store.Get(ctx, "t", sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkConversation(stored.History); err != nil {
			t.Errorf("turn %d: stored history: %v", i+1, err)
		}
		for _, m := range stored.History {
			if strings.Contains(m.Content, "could not be used") {
				t.Errorf("turn %d: stored history holds the correction %q", i+1, m.Content)
			}
		}
		reqs := model.Requests()[first:]
		want := 1
		if s.retry != nil {
			want = 2
		}
		if len(reqs) != want {
			t.Fatalf("turn %d: %d model calls, want %d", i+1, len(reqs), want)
		}
		req := reqs[0]
		if err := checkConversation(req.Messages); err != nil {
			t.Errorf("turn %d: request: %v", i+1, err)
		}
		if n := len(req.Messages); req.Messages[0].Role != coach.RoleSystem || req.Messages[n-1].Role != coach.RoleUser || n-2 > 7 {
			t.Errorf("turn %d: request has %d messages from %s to %s, want system, at most 7 of history, user", i+1, n, req.Messages[0].Role, req.Messages[n-1].Role)
		}
		if len(reqs) == 2 {
			retry := reqs[1].Messages
			n := len(retry)
			if err := checkConversation(retry); err != nil {
				t.Errorf("turn %d: retry request: %v", i+1, err)
			}
			// The failed reply comes back as the model's own message, before the correction.
			if n < 2 || !slices.EqualFunc(retry[:n-2], req.Messages, messageEqual) ||
				retry[n-2].Role != coach.RoleAssistant || strings.TrimSpace(retry[n-2].Content) == "" || retry[n-1].Role != coach.RoleUser ||
				!strings.Contains(retry[n-1].Content, "could not be used") || !strings.Contains(retry[n-1].Content, ToolName) {
				t.Errorf("turn %d: retry request ends with %+v, want the first request, the failed reply and a correction naming %s", i+1, retry[max(n-2, 0):], ToolName)
			}
		}
		if got := req.Messages[len(req.Messages)-1].Content; s.user != "" && got != s.user {
			t.Errorf("turn %d: user message %q, want %q", i+1, got, s.user)
		}
	}
	stored, err := store.Get(ctx, "t", sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	st := decode(t, stored.State)
	if st.Level != 3 || st.Cycles != 0 || st.CompletedCycles != 4 || st.LastCard == nil || st.LastCard.Type != TypeScenario {
		t.Errorf("final state %s, want level 3, no cycles at level, 4 completed, lastCard scenario", stored.State)
	}
}

// TestCheckConversation makes sure the property the session test relies on can fail.
func TestCheckConversation(t *testing.T) {
	call := func(id string) coach.Message {
		return coach.Message{Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: id, Name: ToolName, Arguments: fallbackCard().toolArguments()}}}
	}
	user := coach.Message{Role: coach.RoleUser, Content: "u"}
	ack := func(id string) coach.Message {
		return coach.Message{Role: coach.RoleTool, ToolCallID: id, Content: ToolAck}
	}
	tests := []struct {
		name string
		msgs []coach.Message
		ok   bool
	}{
		{"valid", []coach.Message{{Role: coach.RoleSystem}, user, call("1"), ack("1"), user}, true},
		{"starts with a tool call", []coach.Message{call("1"), ack("1"), user}, false},
		{"unanswered call before user", []coach.Message{user, call("1"), user}, false},
		{"unanswered call at the end", []coach.Message{user, call("1")}, false},
		{"tool message for another call", []coach.Message{user, call("1"), ack("2")}, false},
		{"orphan tool message", []coach.Message{user, ack("1")}, false},
		{"late system message", []coach.Message{user, {Role: coach.RoleSystem}}, false},
		{"bad arguments", []coach.Message{user, {Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: "1", Name: ToolName, Arguments: "{}"}}}, ack("1")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkConversation(tt.msgs); (err == nil) != tt.ok {
				t.Errorf("checkConversation = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
