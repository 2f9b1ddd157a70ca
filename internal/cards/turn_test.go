package cards

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// toolFrags streams args as one display_card call with id, cut at the given byte offsets (those past the end are ignored). The
// opening fragment carries the id and name and no arguments, as OpenAI's streams do.
func toolFrags(id, args string, cuts ...int) []coach.Fragment {
	frags := []coach.Fragment{{ToolCallID: id, ToolName: ToolName}}
	prev := 0
	for _, c := range append(cuts, len(args)) {
		if c = min(c, len(args)); c > prev {
			frags = append(frags, coach.Fragment{ToolArgs: args[prev:c]})
			prev = c
		}
	}
	return frags
}

// atIndex returns frags as pieces of the call with the given index.
func atIndex(index int, frags []coach.Fragment) []coach.Fragment {
	for i := range frags {
		frags[i].ToolIndex = index
	}
	return frags
}

// feed feeds frags to turn and returns the delta events it emitted.
func feed(turn coach.Turn, frags []coach.Fragment) []coach.Event {
	var got []coach.Event
	for _, f := range frags {
		if err := turn.Feed(f, func(e coach.Event) { got = append(got, e) }); err != nil {
			panic(err) // Feed is documented never to fail
		}
	}
	return got
}

func deltaText(t *testing.T, events []coach.Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		if e.Type != coach.EventDelta || e.Block != -1 {
			t.Errorf("event %+v, want a delta outside any block", e)
		}
		if e.Text == "" {
			t.Errorf("empty delta")
		}
		b.WriteString(e.Text)
	}
	return b.String()
}

func firstTurn(t *testing.T) *Turn {
	t.Helper()
	return begin(t, New(Config{}), session(t, state{Level: 1}, nil), coach.TurnInput{Message: strPtr("Begin training.")})
}

func TestFeedStreamsContent(t *testing.T) {
	const content = "Say \"no\" — then é\u00e9 😀 tab\tand\nline \\ slash / end."
	args := `{"content":"Say \"no\" \u2014 then \u00e9é \ud83d\ude00 tab\tand\nline \\ slash \/ end.","card_type":"insight","drill_phase":"content"}`
	var want any
	if err := json.Unmarshal([]byte(args), &want); err != nil {
		t.Fatal(err)
	}
	if got := want.(map[string]any)["content"]; got != content {
		t.Fatalf("test data: content decodes to %q, want %q", got, content)
	}
	// Every single cut, every cut pair around the escapes, and byte-at-a-time.
	var cases [][]int
	for i := 0; i <= len(args); i++ {
		cases = append(cases, []int{i})
	}
	for i := 12; i < 60; i++ {
		for j := i + 1; j < 64; j++ {
			cases = append(cases, []int{i, j})
		}
	}
	every := make([]int, len(args))
	for i := range every {
		every[i] = i
	}
	cases = append(cases, every)
	for _, cuts := range cases {
		turn := firstTurn(t)
		got := deltaText(t, feed(turn, toolFrags("call_1", args, cuts...)))
		if got != content {
			t.Fatalf("cuts %v: deltas = %q, want %q", cuts, got, content)
		}
		out, err := turn.Finish()
		if err != nil || out.Fallback {
			t.Fatalf("cuts %v: Finish = %+v, %v", cuts, out, err)
		}
		var card Card
		if err := json.Unmarshal(out.Result, &card); err != nil || card.Content != got {
			t.Fatalf("cuts %v: result content %q, want the deltas %q", cuts, card.Content, got)
		}
	}
}

func TestFeedStreamsOnlyRootContent(t *testing.T) {
	tests := []struct {
		name, args, want string
	}{
		{"content after other fields", `{"card_type":"multiple_choice","options":[{"id":"a","label":"content"}],"content":"Pick one."}`, "Pick one."},
		{"nested content is not streamed", `{"card_type":"insight","input_config":{"content":"no"},"content":"yes"}`, "yes"},
		{"a duplicate key is streamed once", `{"card_type":"insight","content":"one","content":"two"}`, "one"},
		{"invalid JSON stops the stream", `{"content":"abc" "card_type"}`, "abc"},
		{"a fenced answer is not streamed", "```json\n{\"card_type\":\"insight\",\"content\":\"x\"}\n```", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := deltaText(t, feed(firstTurn(t), toolFrags("c", tt.args, 3, 17, 30)))
			if got != tt.want {
				t.Errorf("deltas = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFeedPlainContentEmitsNothing(t *testing.T) {
	turn := firstTurn(t)
	if got := feed(turn, []coach.Fragment{{Content: `{"card_type":"insight",`}, {Content: `"content":"Hi"}`}}); len(got) != 0 {
		t.Errorf("plain content emitted %+v, want nothing", got)
	}
}

// checkInvalidOutput fails unless err is the coach_validation_failed error the engine answers
// with a corrective retry, its message containing hint.
func checkInvalidOutput(t *testing.T, out *coach.Outcome, err error, hint string) {
	t.Helper()
	var ce *coach.Error
	if !errors.As(err, &ce) || ce.Kind != coach.KindStream || ce.Code != coach.CodeValidationFailed {
		t.Fatalf("Finish = %+v, %v; want a %s stream error", out, err, coach.CodeValidationFailed)
	}
	if out != nil {
		t.Errorf("Finish outcome %+v next to the error, want none", out)
	}
	if !strings.Contains(ce.Message, hint) || strings.Contains(ce.Message, "\n") {
		t.Errorf("error message %q, want one line containing %q", ce.Message, hint)
	}
}

// finish finishes turn as the engine does once the corrective retry is used up: output Finish
// rejects becomes the fallback.
func finish(t *testing.T, turn *Turn) *coach.Outcome {
	t.Helper()
	out, err := turn.Finish()
	var ce *coach.Error
	if errors.As(err, &ce) && ce.Code == coach.CodeValidationFailed {
		out, err = turn.Fallback(err)
	}
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return out
}

// unusable are model outputs that yield no card, with the rule their fallback reports, a piece
// of the message the model is told and pieces of the raw response the log must show.
var unusable = []struct {
	name  string
	frags []coach.Fragment
	rule  string
	hint  string
	raw   []string
}{
	{"no tool call", []coach.Fragment{{Content: "Sure! Here is a scenario."}}, RuleFallbackNoToolCall,
		"you replied with plain text instead of calling display_card; call it exactly once", []string{"content=Sure! Here is a scenario."}},
	{"nothing at all", nil, RuleFallbackNoToolCall, "your reply was empty; call display_card exactly once", []string{"(empty response)"}},
	{"unparseable", toolFrags("call_9", `{"card_type":"insight","content":"cut o`, 10), RuleFallbackUnparsable,
		"the display_card arguments are not one valid JSON object", []string{"id=call_9", `"content":"cut o`}},
	{"tool call without arguments", toolFrags("call_9", ""), RuleFallbackUnparsable,
		"the display_card call has no arguments", []string{"id=call_9 name=display_card arguments="}},
	{"schema", toolFrags("call_9", `{"card_type":"poster","content":"x"}`), RuleFallbackSchema,
		"the display_card arguments do not fit its schema: card_type", []string{`"poster"`}},
	{"content over its maxLength", toolFrags("call_9", `{"card_type":"insight","content":"`+strings.Repeat("a", 8001)+`"}`, 4000), RuleFallbackSchema,
		"the display_card arguments do not fit its schema: content", []string{"id=call_9"}},
	{"option label over its maxLength", toolFrags("call_9", `{"card_type":"multiple_choice","content":"Pick","options":[{"id":"a","label":"`+strings.Repeat("b", 1001)+`"}]}`), RuleFallbackSchema,
		"the display_card arguments do not fit its schema", []string{"id=call_9"}},
	{"invalid card", toolFrags("call_9", `{"card_type":"multiple_choice","content":"Pick","options":[]}`), RuleFallbackInvalid,
		"the card would be rejected by the app: a multiple_choice card needs at least one option", []string{`"options":[]`}},
	{"invalid card with text", append(toolFrags("call_9", `{"card_type":"scenario","content":""}`), coach.Fragment{Content: "aside"}),
		RuleFallbackInvalid, "a scenario card needs non-empty content", []string{`"content":""`, "content=aside"}},
	{"invalid first call of two", append(toolFrags("call_9", `{"card_type":"multiple_choice","content":"Pick","options":[{"id":"a","label":""}]}`),
		atIndex(1, toolFrags("call_10", `{"card_type":"insight","content":"ok"}`))...),
		RuleFallbackInvalid, "options[0] needs a non-empty id and a non-empty label", []string{"id=call_9", "id=call_10"}},
}

func TestFinishRejectsUnusableOutput(t *testing.T) {
	for _, tt := range unusable {
		t.Run(tt.name, func(t *testing.T) {
			turn := firstTurn(t)
			feed(turn, tt.frags)
			out, err := turn.Finish()
			checkInvalidOutput(t, out, err, tt.hint)
			for _, r := range tt.raw {
				if !strings.Contains(turn.LastRaw(), r) {
					t.Errorf("LastRaw() = %q, want it to contain %q", turn.LastRaw(), r)
				}
			}
		})
	}
}

func TestFallback(t *testing.T) {
	for _, tt := range unusable {
		t.Run(tt.name, func(t *testing.T) {
			turn := firstTurn(t)
			feed(turn, tt.frags)
			_, cause := turn.Finish()
			out, err := turn.Fallback(cause)
			if err != nil {
				t.Fatalf("Fallback error %v, want the fallback outcome", err)
			}
			if !out.Fallback {
				t.Errorf("Fallback = false, want true")
			}
			if got, want := string(out.Result), `{"type":"insight","content":"Let's continue. What's on your mind?"}`; got != want {
				t.Errorf("Result = %s, want %s", got, want)
			}
			if !slices.Contains(out.Rules, tt.rule) || out.Rules[len(out.Rules)-1] != tt.rule {
				t.Errorf("Rules = %v, want %s last", out.Rules, tt.rule)
			}
			if want := "cards: " + tt.rule + ": " + cause.Error() + "\n"; !strings.HasPrefix(out.Diagnostic, want) {
				t.Errorf("Diagnostic = %q, want it to start with the cause %q", out.Diagnostic, want)
			}
			if !strings.HasSuffix(out.Diagnostic, "\n"+turn.LastRaw()) {
				t.Errorf("Diagnostic = %q, want it to end with the full response %q", out.Diagnostic, turn.LastRaw())
			}
			for _, r := range tt.raw {
				if !strings.Contains(out.Diagnostic, r) {
					t.Errorf("Diagnostic = %q, want it to contain %q", out.Diagnostic, r)
				}
			}
			st := decode(t, out.State)
			if st.LastCard == nil || !reflect.DeepEqual(*st.LastCard, fallbackCard()) {
				t.Errorf("lastCard = %+v, want the fallback card", st.LastCard)
			}
			st.LastCard = nil
			if st != (state{Level: 1}) {
				t.Errorf("state = %+v, want the turn's state unchanged but for lastCard", st)
			}
			h := out.History
			if len(h) != 3 || h[0].Content != "Begin training." || h[1].ToolCalls[0].Arguments != `{"card_type":"insight","content":"Let's continue. What's on your mind?"}` ||
				h[2].ToolCallID != h[1].ToolCalls[0].ID {
				t.Errorf("history = %+v, want the user's message and the fallback card as an answered display_card call", h)
			}
		})
	}
}

// TestFallbackDescribesTheLastAttempt plays the engine's sequence: a rejected attempt, Reset, a
// second rejected attempt, Fallback. The fallback reports the second attempt only.
func TestFallbackDescribesTheLastAttempt(t *testing.T) {
	turn := firstTurn(t)
	feed(turn, toolFrags("call_1", `{"card_type":"poster","content":"first attempt"}`))
	if _, err := turn.Finish(); err == nil {
		t.Fatal("Finish accepted a poster card")
	}
	turn.Reset()
	if got := turn.LastRaw(); got != "" {
		t.Errorf("LastRaw() after Reset = %q, want empty", got)
	}
	feed(turn, []coach.Fragment{{Content: "second attempt as text"}})
	_, cause := turn.Finish()
	checkInvalidOutput(t, nil, cause, "plain text")
	out, err := turn.Fallback(cause)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Rules, []string{RuleFallbackNoToolCall}) {
		t.Errorf("Rules = %v, want only the second attempt's %s", out.Rules, RuleFallbackNoToolCall)
	}
	if strings.Contains(out.Diagnostic, "first attempt") || !strings.HasSuffix(out.Diagnostic, "content=second attempt as text") {
		t.Errorf("Diagnostic = %q, want the second attempt's response alone", out.Diagnostic)
	}
	if id := out.History[1].ToolCalls[0].ID; id == "call_1" || !strings.HasPrefix(id, "call_") {
		t.Errorf("history call id %q, want a generated id (the second attempt made no call)", id)
	}
}

// TestFallbackWithoutFinish: Fallback still explains output that no Finish judged.
func TestFallbackWithoutFinish(t *testing.T) {
	tests := []struct {
		name  string
		frags []coach.Fragment
		rule  string
	}{
		{"unusable output", toolFrags("call_1", `{"card_type":"insight"}`), RuleFallbackSchema},
		{"a valid card", toolFrags("call_1", `{"card_type":"insight","content":"fine"}`), RuleFallbackInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn := firstTurn(t)
			feed(turn, tt.frags)
			out, err := turn.Fallback(nil)
			if err != nil || !out.Fallback || !slices.Equal(out.Rules, []string{tt.rule}) {
				t.Fatalf("Fallback(nil) = %+v, %v; want a fallback reporting %s", out, err, tt.rule)
			}
			if !strings.HasPrefix(out.Diagnostic, "cards: "+tt.rule+": ") || !strings.HasSuffix(out.Diagnostic, "id=call_1 name=display_card arguments="+tt.frags[1].ToolArgs) {
				t.Errorf("Diagnostic = %q, want the rule, the problem and the response", out.Diagnostic)
			}
		})
	}
}

func TestFinishSuccess(t *testing.T) {
	turn := firstTurn(t)
	feed(turn, toolFrags("call_abc", `{"card_type":"prompt","content":"What do you type?"}`, 5))
	out, err := turn.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if out.Fallback || out.Diagnostic != "" {
		t.Errorf("Fallback %v Diagnostic %q, want neither", out.Fallback, out.Diagnostic)
	}
	if !slices.Equal(out.Rules, []string{RuleDefaultMaxLength}) {
		t.Errorf("Rules = %v, want [%s]", out.Rules, RuleDefaultMaxLength)
	}
	want := []coach.Message{
		{Role: coach.RoleUser, Content: "Begin training."},
		{Role: coach.RoleAssistant, ToolCalls: []coach.ToolCall{{ID: "call_abc", Name: ToolName,
			Arguments: `{"card_type":"prompt","content":"What do you type?","input_config":{"max_length":500,"placeholder":""},"is_iteration":false}`}}},
		{Role: coach.RoleTool, ToolCallID: "call_abc", Content: ToolAck},
	}
	if !slices.EqualFunc(out.History, want, messageEqual) {
		t.Errorf("History = %+v\nwant      %+v", out.History, want)
	}
	if !strings.Contains(turn.LastRaw(), "call_abc") {
		t.Errorf("LastRaw() = %q, want the raw call", turn.LastRaw())
	}
}

func messageEqual(a, b coach.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.ToolCallID == b.ToolCallID && slices.Equal(a.ToolCalls, b.ToolCalls)
}

func TestFinishToolCallIDs(t *testing.T) {
	tests := []struct {
		name  string
		frags []coach.Fragment
		id    string // "" means a generated call_ id
		rules []string
	}{
		{"model id", toolFrags("call_x", `{"card_type":"insight","content":"a"}`), "call_x", nil},
		{"id repeated on every fragment", []coach.Fragment{
			{ToolCallID: "call_r", ToolName: ToolName, ToolArgs: `{"card_type":"insight",`},
			{ToolCallID: "call_r", ToolArgs: `"content":"a"}`},
		}, "call_r", nil},
		{"id and name repeated on every fragment", []coach.Fragment{
			{ToolCallID: "call_r", ToolName: ToolName, ToolArgs: `{"card_type":"insight",`},
			{ToolCallID: "call_r", ToolName: ToolName, ToolArgs: `"content":"a"}`},
		}, "call_r", nil},
		{"second call with an id after one without", append(toolFrags("", `{"card_type":"insight","content":"a"}`),
			atIndex(1, toolFrags("call_2", `{"card_type":"scenario","content":"b"}`))...), "", []string{RuleExtraToolCalls}},
		{"missing id", toolFrags("", `{"card_type":"insight","content":"a"}`), "", nil},
		{"no tool call", []coach.Fragment{{Content: "hi"}}, "", []string{RuleFallbackNoToolCall}},
		{"second call is ignored", append(toolFrags("call_1", `{"card_type":"insight","content":"a"}`),
			atIndex(1, toolFrags("call_2", `{"card_type":"scenario","content":"b"}`))...), "call_1", []string{RuleExtraToolCalls}},
		{"second call without id or name is ignored", append(toolFrags("", `{"card_type":"insight","content":"a"}`),
			atIndex(1, []coach.Fragment{{ToolArgs: `{"card_type":"scenario","content":"b"}`}})...), "", []string{RuleExtraToolCalls}},
		// vLLM with a named tool_choice (vllm-project/vllm #18412, #14951): the name on every
		// piece, no id; one call, because the index says so.
		{"name repeated on every piece without an id", []coach.Fragment{
			{ToolName: ToolName, ToolArgs: `{"card_type":"insight",`},
			{ToolName: ToolName, ToolArgs: `"content":"a"}`},
		}, "", nil},
		{"calls interleaved by index", []coach.Fragment{
			{ToolName: ToolName, ToolArgs: `{"card_type":"insight",`},
			{ToolIndex: 1, ToolName: ToolName, ToolArgs: `{"card_type":"scenario",`},
			{ToolArgs: `"content":"a"}`},
			{ToolIndex: 1, ToolArgs: `"content":"b"}`},
		}, "", []string{RuleExtraToolCalls}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			turn := firstTurn(t)
			deltas := deltaText(t, feed(turn, tt.frags))
			out := finish(t, turn)
			call := out.History[1].ToolCalls[0]
			switch {
			case tt.id != "" && call.ID != tt.id:
				t.Errorf("call id = %q, want %q", call.ID, tt.id)
			case tt.id == "" && (!strings.HasPrefix(call.ID, "call_") || len(call.ID) != 29):
				t.Errorf("call id = %q, want a generated call_<24 hex>", call.ID)
			}
			if out.History[2].ToolCallID != call.ID {
				t.Errorf("tool message answers %q, want %q", out.History[2].ToolCallID, call.ID)
			}
			if !slices.Equal(out.Rules, tt.rules) {
				t.Errorf("Rules = %v, want %v", out.Rules, tt.rules)
			}
			if !out.Fallback && deltas != "a" {
				t.Errorf("deltas = %q, want only the first call's content %q", deltas, "a")
			}
		})
	}
}

func TestResetDiscardsOutput(t *testing.T) {
	turn := firstTurn(t)
	feed(turn, append(toolFrags("call_1", `{"card_type":"insight","content":"first try, cut`), coach.Fragment{Content: "noise"}))
	if _, err := turn.Finish(); err == nil {
		t.Fatal("Finish accepted cut-off arguments")
	}
	turn.Reset()
	got := deltaText(t, feed(turn, toolFrags("call_2", `{"content":"second","card_type":"scenario"}`, 4)))
	if got != "second" {
		t.Errorf("deltas after Reset = %q, want %q", got, "second")
	}
	out, err := turn.Finish()
	if err != nil || out.Fallback {
		t.Fatalf("Finish = %+v, %v", out, err)
	}
	if string(out.Result) != `{"type":"scenario","content":"second"}` || out.History[1].ToolCalls[0].ID != "call_2" {
		t.Errorf("Result %s with call %s, want the second attempt", out.Result, out.History[1].ToolCalls[0].ID)
	}
	if strings.Contains(turn.LastRaw(), "first") || strings.Contains(turn.LastRaw(), "noise") {
		t.Errorf("LastRaw() = %q still holds the first attempt", turn.LastRaw())
	}
}
