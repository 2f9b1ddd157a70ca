package coach_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// historyContract is echoContract whose requests carry the session's history before the
// learner's message, behind a system prompt, as the real contracts' do.
type historyContract struct{ echoContract }

func (c historyContract) Begin(s *coach.Session, in coach.TurnInput) (coach.Turn, error) {
	t, err := c.echoContract.Begin(s, in)
	if err != nil {
		return nil, err
	}
	return &historyTurn{t.(*echoTurn), s.History}, nil
}

type historyTurn struct {
	*echoTurn
	history []coach.Message
}

func (t *historyTurn) Request() coach.ModelRequest {
	msgs := []coach.Message{{Role: coach.RoleSystem, Content: "system"}}
	msgs = append(msgs, t.history...)
	return coach.ModelRequest{Messages: append(msgs, coach.Message{Role: coach.RoleUser, Content: t.msg}), MaxTokens: 1000}
}

// contextFull is llama-server's refusal of a prompt that does not fit its context window, as
// the openai adapter classifies it.
var contextFull = &coach.ModelError{Class: coach.ClassRefused, ContextFull: true,
	Err: errors.New("400: request (8314 tokens) exceeds the available context size (8192 tokens), try increasing it")}

// TestContextWindowRetry checks the turns whose prompt fills the endpoint's context window: a
// refusal for the prompt's size, or a reply cut at finish_reason "length" far short of the
// token cap. The next attempt sends the newer half of the conversation (the one after, none of
// it), never the failed reply, which would make the request longer still; a reply cut at the
// cap itself is a reply too long, corrected with the reply shown, as before.
func TestContextWindowRetry(t *testing.T) {
	cutByWindow := script{frags: []string{`{"a":"short`}, finish: coach.FinishLength, usage: &coach.Usage{PromptTokens: 8072, CompletionTokens: 120}}
	cutAtCap := script{frags: []string{`{"a":"long`}, finish: coach.FinishLength, usage: &coach.Usage{PromptTokens: 900, CompletionTokens: 1000}}
	ok := script{frags: []string{"fine."}}
	tests := []struct {
		name    string
		scripts []script
		// history is the number of history messages each request carries (the session has 6).
		history []int
		// echoed says which requests show the model a failed reply.
		echoed  []bool
		outcome string
	}{
		{name: "refused: half the history, then all of it", scripts: []script{{openErr: contextFull}, {openErr: contextFull}, ok},
			history: []int{6, 2, 0}, echoed: []bool{false, false, false}, outcome: "ok"},
		{name: "cut by the window: retried without the reply", scripts: []script{cutByWindow, ok},
			history: []int{6, 2}, echoed: []bool{false, false}, outcome: "ok"},
		{name: "corrective retry refused: retried without the reply", scripts: []script{{frags: []string{"no period"}}, {openErr: contextFull}, ok},
			history: []int{6, 6, 2}, echoed: []bool{false, true, false}, outcome: "ok"},
		{name: "cut at the cap: the usual corrective retry", scripts: []script{cutAtCap, ok},
			history: []int{6, 6}, echoed: []bool{false, true}, outcome: "ok"},
		{name: "refused three times: the turn ends", scripts: []script{{openErr: contextFull}, {openErr: contextFull}, {openErr: contextFull}},
			history: []int{6, 2, 0}, echoed: []bool{false, false, false}, outcome: coach.CodeStreamFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModel{}
			svc, _, sess := newTestService(t, m, testOptions(), historyContract{})
			for i := range 3 {
				m.scripts = append(m.scripts, script{frags: []string{fmt.Sprintf("answer %d.", i)}})
				if _, rep := runTurn(t, svc, sess.ID); rep.Outcome != "ok" {
					t.Fatalf("turn %d: outcome %q (%v)", i, rep.Outcome, rep.Err)
				}
			}
			first := len(m.requests)
			m.scripts = append(m.scripts, tt.scripts...)
			events, rep := runTurn(t, svc, sess.ID)
			if rep.Outcome != tt.outcome {
				t.Fatalf("outcome = %q (%v), lines %s; want %s", rep.Outcome, rep.Err, lines(events), tt.outcome)
			}
			reqs := m.requests[first:]
			if len(reqs) != len(tt.history) {
				t.Fatalf("model calls = %d, want %d", len(reqs), len(tt.history))
			}
			for i, req := range reqs {
				msgs := req.Messages
				if msgs[0].Role != coach.RoleSystem {
					t.Errorf("request %d starts with %s, want the system prompt", i, msgs[0].Role)
				}
				// The turn's own message is the last "hi": a correction follows it.
				turnMsg := len(msgs) - 1
				for turnMsg > 0 && msgs[turnMsg].Content != "hi" {
					turnMsg--
				}
				if got := turnMsg - 1; got != tt.history[i] {
					t.Errorf("request %d carries %d history messages (%+v), want %d", i, got, msgs, tt.history[i])
				}
				echoed := slices.ContainsFunc(msgs[turnMsg+1:], func(m coach.Message) bool { return m.Role == coach.RoleAssistant })
				if echoed != tt.echoed[i] {
					t.Errorf("request %d shows a failed reply: %v, want %v (%+v)", i, echoed, tt.echoed[i], msgs)
				}
			}
		})
	}
}

// TestSqueezeKeepsToolResults checks that dropping conversation never separates a tool call
// from its result: a cut falls only before a user message.
func TestSqueezeKeepsToolResults(t *testing.T) {
	msgs := []coach.Message{
		{Role: coach.RoleSystem, Content: "s"},
		{Role: coach.RoleUser, Content: "u1"}, {Role: coach.RoleAssistant, Content: "a1"},
		{Role: coach.RoleUser, Content: "u2"}, {Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: "c"}}}, {Role: coach.RoleTool, ToolCallID: "c"}, {Role: coach.RoleAssistant, Content: "a2"},
		{Role: coach.RoleUser, Content: "now"},
	}
	tests := []struct {
		level int
		want  []string // the roles and contents left, "role:content"
	}{
		{level: 1, want: []string{"system:s", "user:u2", "assistant:", "tool:", "assistant:a2", "user:now"}},
		{level: 2, want: []string{"system:s", "user:now"}},
	}
	for _, tt := range tests {
		var got []string
		for _, m := range coach.Squeeze(slices.Clone(msgs), tt.level) {
			got = append(got, m.Role+":"+m.Content)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("squeeze level %d = %v, want %v", tt.level, got, tt.want)
		}
	}
}

// TestContextWindowFit checks the first attempt on an endpoint whose context window is known:
// a request whose prompt (at one token per 4 bytes) and completion cap would not fit it is sent
// with the newer half of the conversation, or none of it, before the endpoint can refuse it.
func TestContextWindowFit(t *testing.T) {
	answer := strings.Repeat("word ", 80) + "." // 401 bytes: about 100 tokens
	tests := []struct {
		name    string
		window  int
		history int // history messages the request carries (the session has 6)
	}{
		{name: "unknown window", window: 0, history: 6},
		{name: "all fits", window: 1 << 20, history: 6},
		{name: "half fits", window: 1000 + 160, history: 2},
		{name: "none fits", window: 1000 + 20, history: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &fakeModel{}
			svc := coach.New(coach.Deps{Store: newStoreFake(), Upstreams: []coach.Upstream{{Name: "a", Model: m, ContextWindow: tt.window}},
				Contracts: []coach.Contract{historyContract{}}, Options: testOptions()})
			sess, err := svc.CreateSession(context.Background(), "", "echo", coach.NewSession{})
			if err != nil {
				t.Fatal(err)
			}
			for range 4 {
				m.scripts = append(m.scripts, script{frags: []string{answer}})
				if _, rep := runTurn(t, svc, sess.ID); rep.Outcome != "ok" {
					t.Fatalf("outcome %q (%v)", rep.Outcome, rep.Err)
				}
			}
			last := m.requests[len(m.requests)-1].Messages
			if got := len(last) - 2; got != tt.history {
				t.Errorf("the fourth turn's request carries %d history messages, want %d", got, tt.history)
			}
		})
	}
}
