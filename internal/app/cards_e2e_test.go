package app_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/cards"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/schema"
)

// fallbackCard is the seed's fallback insight card, as the result line carries it.
const fallbackCard = `{"type":"insight","content":"Let's continue. What's on your mind?"}`

// chop cuts s into pieces of n bytes (a little more only to keep a character whole): the small
// fragments a real endpoint streams.
func chop(s string, n int) []string {
	var out []string
	for s != "" {
		cut := min(n, len(s))
		for cut < len(s) && !utf8.RuneStart(s[cut]) {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// raw embeds already-encoded JSON in apptest.Obj.
func raw(s string) json.RawMessage { return json.RawMessage(s) }

// cardCall is a display_card call whose arguments stream in 4-byte pieces.
func cardCall(args string) fakellm.Reply {
	return fakellm.Reply{ToolCall: &fakellm.ToolCall{Name: cards.ToolName, Arguments: args}, Chunks: chop(args, 4)}
}

// jsonText encodes s as the gateway writes card text: without HTML escaping.
func jsonText(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// cardsState is the part of a cards session's state the tests read.
type cardsState struct {
	Level           int             `json:"level"`
	LastCard        json.RawMessage `json:"lastCard"`
	Cycles          int             `json:"cycles"`
	CompletedCycles int             `json:"completedCycles"`
}

func decodeCardsState(t *testing.T, s apptest.Session) cardsState {
	t.Helper()
	var st cardsState
	if err := json.Unmarshal(s.State, &st); err != nil {
		t.Fatalf("cards state %s: %v", s.State, err)
	}
	return st
}

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// checkCardStream fails unless tr is a 200 stream of card deltas, concatenating to content, and
// then exactly the result want.
func checkCardStream(t *testing.T, tr apptest.TurnResponse, content, want string) {
	t.Helper()
	if tr.Status != http.StatusOK {
		t.Fatalf("status %d body %s, want a 200 stream", tr.Status, tr.Body)
	}
	tr.CheckEnding(t)
	deltas := 0
	for _, l := range tr.Lines[:len(tr.Lines)-1] {
		if l.Type != "delta" || l.Text == "" || l.Block != nil {
			t.Errorf("line %s, want a non-empty delta without a block", l.Raw)
		}
		deltas++
	}
	if deltas < 2 {
		t.Errorf("%d delta lines, want the content relayed in pieces as it streams", deltas)
	}
	if got := tr.Text(); got != content {
		t.Errorf("concatenated deltas = %q, want the card content %q", got, content)
	}
	if res := tr.Last(); res.Type != "result" || string(res.Result) != want || res.Fallback {
		t.Errorf("last line = %s\nwant result %s (no fallback)", res.Raw, want)
	}
}

// lastUser returns the content of the last message of req, which must be the user's.
func lastUser(t *testing.T, req *fakellm.Request) string {
	t.Helper()
	m := req.Messages[len(req.Messages)-1]
	if m.Role != "user" {
		t.Errorf("the request's last message is %s, want the user's", m.Role)
	}
	return m.Content
}

// TestCardsDrillEachCardType plays the seed's example flow: every card type end to end, in one
// session, each turn answering the card before it.
func TestCardsDrillEachCardType(t *testing.T) {
	scenario := "You're two weeks into a new VP role at R&D. Your peer VP keeps missing commitments — \"again\".\nToday, they missed another deadline."
	steps := []struct {
		name     string
		body     any
		wantUser string // the user message the model is shown
		args     string
		content  string
		want     string
	}{
		{name: "scenario", body: apptest.Msg("Begin training."), wantUser: "Begin training.",
			args:    apptest.Obj("content", scenario, "card_type", "scenario", "drill_phase", "Problem-Solving"),
			content: scenario,
			want:    `{"type":"scenario","content":` + jsonText(scenario) + `,"drill_phase":"Problem-Solving"}`},
		{name: "prompt", body: apptest.Msg("[Continue]"), wantUser: "[Continue]",
			args: apptest.Obj("card_type", "prompt", "content", "The CEO just asked in the leadership Slack channel: 'What's the holdup?' What do you type?",
				"input_config", raw(apptest.Obj("max_length", 500, "placeholder", "Type your response...")),
				"drill_phase", "Executive Communication", "is_iteration", false),
			content: "The CEO just asked in the leadership Slack channel: 'What's the holdup?' What do you type?",
			want:    `{"type":"prompt","content":"The CEO just asked in the leadership Slack channel: 'What's the holdup?' What do you type?","input":{"type":"text","max_length":500,"placeholder":"Type your response..."},"drill_phase":"Executive Communication","is_iteration":false}`},
		{name: "insight", body: apptest.Msg("I'll sync with them and have an update by EOD."), wantUser: "I'll sync with them and have an update by EOD.",
			args:    apptest.Obj("content", "Notice what you just did. You promised a date you don't control.", "card_type", "insight", "drill_phase", "Executive Communication"),
			content: "Notice what you just did. You promised a date you don't control.",
			want:    `{"type":"insight","content":"Notice what you just did. You promised a date you don't control.","drill_phase":"Executive Communication"}`},
		{name: "multiple_choice", body: apptest.Msg("[Continue]"), wantUser: "[Continue]",
			args: apptest.Obj("card_type", "multiple_choice", "content", "What's your primary concern right now?", "options", raw(`[`+
				`{"id":"a","label":"How this makes me look to the CEO"},`+
				`{"id":"b","label":"Protecting my peer from public embarrassment"},`+
				`{"id":"c","label":"Getting the project unblocked"},`+
				`{"id":"d","label":"Understanding why they keep missing deadlines"}]`)),
			content: "What's your primary concern right now?",
			want:    `{"type":"multiple_choice","content":"What's your primary concern right now?","options":[{"id":"a","label":"How this makes me look to the CEO"},{"id":"b","label":"Protecting my peer from public embarrassment"},{"id":"c","label":"Getting the project unblocked"},{"id":"d","label":"Understanding why they keep missing deadlines"}]}`},
		{name: "reflection", body: map[string]string{"selected": "b"}, wantUser: `{"selected": "b"}`,
			args: apptest.Obj("card_type", "reflection", "content", "Why did protecting your peer feel safer?",
				"input_config", raw(apptest.Obj("max_length", 200, "placeholder", "Be honest with yourself..."))),
			content: "Why did protecting your peer feel safer?",
			want:    `{"type":"reflection","content":"Why did protecting your peer feel safer?","input":{"type":"text","max_length":200,"placeholder":"Be honest with yourself..."},"is_iteration":false}`},
		{name: "insight after the reflection", body: apptest.Msg("Because I wasn't confident in my own read."), wantUser: "Because I wasn't confident in my own read.",
			args:    apptest.Obj("card_type", "insight", "content", "That's the pattern: when uncertain, you protect relationships first."),
			content: "That's the pattern: when uncertain, you protect relationships first.",
			want:    `{"type":"insight","content":"That's the pattern: when uncertain, you protect relationships first."}`},
	}
	g := apptest.Start(t, nil)
	s := g.Create("cards", nil)
	for i, step := range steps {
		ok := t.Run(step.name, func(t *testing.T) {
			g.LLM.Enqueue(cardCall(step.args))
			tr := g.Turn(s.ID, step.body)
			checkCardStream(t, tr, step.content, step.want)
			if got, want := tr.Last().Session.Version, int64(i+2); got != want {
				t.Errorf("result session version = %d, want %d", got, want)
			}
			if st := decodeCardsState(t, g.Get(s.ID)); !sameJSON(st.LastCard, []byte(step.want)) {
				t.Errorf("stored lastCard = %s, want %s", st.LastCard, step.want)
			}
			reqs := g.LLM.Requests()
			if len(reqs) != i+1 {
				t.Fatalf("model calls = %d, want %d", len(reqs), i+1)
			}
			if got := lastUser(t, reqs[i]); got != step.wantUser {
				t.Errorf("user message sent upstream = %q, want %q", got, step.wantUser)
			}
		})
		if !ok {
			t.FailNow()
		}
	}
}

// TestCardsRequestForcesDisplayCard checks the upstream request: the display_card tool exactly as
// api/schemas/display-card.json, forced by tool_choice, and the cards session facts.
func TestCardsRequestForcesDisplayCard(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("cards", nil)
	g.LLM.Enqueue(cardCall(`{"card_type":"scenario","content":"A board meeting goes sideways."}`))
	if tr := g.Turn(s.ID, apptest.Msg("Begin training.")); tr.Last().Type != "result" {
		t.Fatalf("turn: %s", tr.Body)
	}
	file, err := os.ReadFile("../../api/schemas/display-card.json")
	if err != nil {
		t.Fatal(err)
	}
	var wantParams bytes.Buffer
	if err := json.Compact(&wantParams, file); err != nil {
		t.Fatal(err)
	}
	req := g.LLM.Requests()[0]
	if len(req.Tools) != 1 {
		t.Fatalf("tools = %+v, want display_card alone", req.Tools)
	}
	tool := req.Tools[0]
	if tool.Name != "display_card" || tool.Description != "Display a training card to the user. You MUST call this tool for every response." {
		t.Errorf("tool %q described %q, want display_card with the seed's description", tool.Name, tool.Description)
	}
	if string(tool.Parameters) != wantParams.String() {
		t.Errorf("tool parameters =\n%s\nwant api/schemas/display-card.json\n%s", tool.Parameters, wantParams.String())
	}
	if req.ToolChoice != "display_card" {
		t.Errorf("tool_choice forces %q, want display_card", req.ToolChoice)
	}
	if req.ResponseFormat != "" {
		t.Errorf("response_format = %q, want none next to a forced tool", req.ResponseFormat)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Content != "Begin training." {
		t.Fatalf("messages = %+v, want the system prompt and the user's message", req.Messages)
	}
	facts := "\n## Session facts\ncontract: cards\nlocale: en\nlevel: 1\nmax_level: 5\nlast_card: none\ncycles_at_level: 0"
	if !strings.HasSuffix(req.Messages[0].Content, facts) {
		t.Errorf("system prompt ends with\n%s\nwant it to end with%s", tail(req.Messages[0].Content, 200), facts)
	}
}

// tail returns the last n bytes of s, for messages.
func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// logLines decodes the gateway's JSON log lines of request id.
func logLines(t *testing.T, g *apptest.Gateway, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(g.Log.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["request_id"] == id {
			out = append(out, m)
		}
	}
	return out
}

// shape renders tr's lines with each run of deltas as one "delta", and returns the text of each
// run: e.g. "delta reset delta reset result" and the text each attempt streamed.
func shape(tr apptest.TurnResponse) (string, []string) {
	var kinds, runs []string
	for _, l := range tr.Lines {
		if l.Type == "delta" && len(kinds) > 0 && kinds[len(kinds)-1] == "delta" {
			runs[len(runs)-1] += l.Text
			continue
		}
		kinds = append(kinds, l.Type)
		if l.Type == "delta" {
			runs = append(runs, l.Text)
		}
	}
	return strings.Join(kinds, " "), runs
}

// checkCorrection fails unless the turn made exactly two model calls starting at request first,
// the second being the first with the failed reply (as the assistant's message) and the engine's
// correction appended, naming hint.
func checkCorrection(t *testing.T, g *apptest.Gateway, first int, hint string) {
	t.Helper()
	reqs := g.LLM.Requests()[first:]
	if len(reqs) != 2 {
		t.Fatalf("model calls = %d, want 2 (one corrective retry)", len(reqs))
	}
	retry := reqs[1].Messages
	if n := len(retry); n < 2 || !reflect.DeepEqual(retry[:n-2], reqs[0].Messages) ||
		retry[n-2].Role != "assistant" || strings.TrimSpace(retry[n-2].Content) == "" {
		t.Errorf("retry messages %+v, want the first request's %+v, the failed reply and the correction", retry, reqs[0].Messages)
	}
	if got := lastUser(t, reqs[1]); !strings.HasPrefix(got, "Your previous reply could not be used (") || !strings.Contains(got, hint) {
		t.Errorf("correction = %q, want the engine's correction naming %q", got, hint)
	}
	if reqs[1].ToolChoice != cards.ToolName {
		t.Errorf("retry tool_choice = %q, want display_card forced again", reqs[1].ToolChoice)
	}
}

// turnLogs waits for the turn log line of request id and returns it with the error line logged
// before it, if any.
func turnLogs(t *testing.T, g *apptest.Gateway, id string) (turn, errLine map[string]any) {
	t.Helper()
	apptest.Eventually(t, "the turn is logged", func() bool {
		turn, errLine = nil, nil
		for _, l := range logLines(t, g, id) {
			switch {
			case l["level"] == "error":
				errLine = l
			case l["message"] == "turn":
				turn = l
			}
		}
		return turn != nil
	})
	return turn, errLine
}

// checkNextTurnHistory plays a [Continue] turn after a turn that ended with card (as display_card
// arguments) and checks what the model is shown of that turn: one answered call, no correction.
func checkNextTurnHistory(t *testing.T, g *apptest.Gateway, id, args string) {
	t.Helper()
	g.LLM.Enqueue(cardCall(`{"card_type":"scenario","content":"A new scene opens."}`))
	next := g.Turn(id, apptest.Msg("[Continue]"))
	checkCardStream(t, next, "A new scene opens.", `{"type":"scenario","content":"A new scene opens."}`)
	if v := next.Last().Session.Version; v != 3 {
		t.Errorf("next turn stored version %d, want 3", v)
	}
	reqs := g.LLM.Requests()
	msgs := reqs[len(reqs)-1].Messages
	if len(msgs) != 5 || msgs[1].Content != "Begin training." || len(msgs[2].ToolCalls) != 1 ||
		!sameJSON([]byte(msgs[2].ToolCalls[0].Arguments), []byte(args)) || msgs[3].ToolCallID != msgs[2].ToolCalls[0].ID {
		t.Errorf("next request's history %+v, want the user's message, one display_card call with %s and its tool message", msgs[1:], args)
	}
}

// TestCardsFallback drives every cause of the seed's fallback card through the server. Unusable
// output gets one corrective retry with the problem fed back; only when the retry's answer is
// unusable too does the turn end with the fallback card, the last answer logged in full.
func TestCardsFallback(t *testing.T) {
	cutOff := cardCall(`{"card_type":"insight","content":"Cut off mid-sen`)
	tests := []struct {
		name  string
		reply fakellm.Reply
		retry *fakellm.Reply // the retry's answer; nil repeats reply
		shape string         // the lines, each run of deltas as one "delta"
		runs  []string       // the text of each run of deltas
		hint  string         // what the correction tells the model
		rule  string         // the last answer's fallback rule
		full  string         // the last answer, which the error log must show in full
		stale string         // text of the first answer that the log must not show
	}{
		{name: "no tool call (plain content)",
			reply: fakellm.Reply{Content: "Here is a scenario: you are a new VP.", Chunks: chop("Here is a scenario: you are a new VP.", 4)},
			shape: "result", hint: "plain text instead of calling display_card",
			rule: cards.RuleFallbackNoToolCall, full: "Here is a scenario: you are a new VP."},
		{name: "unparseable arguments",
			reply: cutOff,
			shape: "delta reset delta reset result", runs: []string{"Cut off mid-sen", "Cut off mid-sen"}, hint: "not one valid JSON object",
			rule: cards.RuleFallbackUnparsable, full: `{"card_type":"insight","content":"Cut off mid-sen`},
		{name: "schema failure: unknown card_type",
			reply: cardCall(`{"content":"A banner card.","card_type":"banner"}`),
			shape: "delta reset delta reset result", runs: []string{"A banner card.", "A banner card."}, hint: "card_type must be one of",
			rule: cards.RuleFallbackSchema, full: `{"content":"A banner card.","card_type":"banner"}`},
		{name: "schema failure: max_length is not an integer",
			reply: cardCall(`{"card_type":"prompt","content":"Type it.","input_config":{"max_length":"long"}}`),
			shape: "delta reset delta reset result", runs: []string{"Type it.", "Type it."}, hint: "input_config.max_length",
			rule: cards.RuleFallbackSchema, full: `{"card_type":"prompt","content":"Type it.","input_config":{"max_length":"long"}}`},
		{name: "validator: empty content",
			reply: cardCall(`{"card_type":"scenario","content":""}`),
			shape: "result", hint: "a scenario card needs non-empty content",
			rule: cards.RuleFallbackInvalid, full: `{"card_type":"scenario","content":""}`},
		{name: "validator: multiple_choice without options",
			reply: cardCall(`{"card_type":"multiple_choice","content":"Pick one.","options":[]}`),
			shape: "delta reset delta reset result", runs: []string{"Pick one.", "Pick one."}, hint: "needs at least one option",
			rule: cards.RuleFallbackInvalid, full: `{"card_type":"multiple_choice","content":"Pick one.","options":[]}`},
		{name: "validator: option without a label",
			reply: cardCall(`{"card_type":"multiple_choice","content":"Pick one.","options":[{"id":"a","label":""}]}`),
			shape: "delta reset delta reset result", runs: []string{"Pick one.", "Pick one."}, hint: "options[0] needs a non-empty id and a non-empty label",
			rule: cards.RuleFallbackInvalid, full: `{"card_type":"multiple_choice","content":"Pick one.","options":[{"id":"a","label":""}]}`},
		{name: "the last answer decides: cut off, then plain text",
			reply: cutOff, retry: &fakellm.Reply{Content: "Sorry, as text then.", Chunks: chop("Sorry, as text then.", 4)},
			shape: "delta reset result", runs: []string{"Cut off mid-sen"}, hint: "not one valid JSON object",
			rule: cards.RuleFallbackNoToolCall, full: "Sorry, as text then.", stale: "Cut off"},
	}
	g := apptest.Start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := g.Create("cards", nil)
			first := len(g.LLM.Requests())
			retry := tt.reply
			if tt.retry != nil {
				retry = *tt.retry
			}
			g.LLM.Enqueue(tt.reply, retry)
			tr := g.Turn(s.ID, apptest.Msg("Begin training."))
			if tr.Status != http.StatusOK {
				t.Fatalf("status %d body %s, want 200", tr.Status, tr.Body)
			}
			tr.CheckEnding(t)
			if got, runs := shape(tr); got != tt.shape || !slices.Equal(runs, tt.runs) {
				t.Errorf("lines %q with delta runs %q, want %q with %q", got, runs, tt.shape, tt.runs)
			}
			for _, l := range tr.Lines {
				if l.Type == "reset" && l.Reason != "invalid_output" {
					t.Errorf("reset line %s, want reason invalid_output", l.Raw)
				}
			}
			res := tr.Last()
			if res.Type != "result" || string(res.Result) != fallbackCard || !res.Fallback {
				t.Errorf("last line = %s\nwant result %s with \"fallback\":true", res.Raw, fallbackCard)
			}
			checkCorrection(t, g, first, tt.hint)
			if got := g.Get(s.ID); got.Version != 2 || !sameJSON(decodeCardsState(t, got).LastCard, []byte(fallbackCard)) {
				t.Errorf("stored session version %d state %s, want version 2 with the fallback card as lastCard", got.Version, got.State)
			}

			turn, found := turnLogs(t, g, tr.Header.Get("X-Request-Id"))
			if turn["outcome"] != "fallback" || turn["attempts"] != float64(2) {
				t.Errorf("turn log %v, want outcome fallback after 2 attempts", turn)
			}
			if found == nil {
				t.Fatalf("no error log of the fallback")
			}
			// The error line keeps an excerpt; the answer itself is logged, bounded, at debug.
			var resp string
			for _, l := range logLines(t, g, tr.Header.Get("X-Request-Id")) {
				if l["level"] == "debug" && l["message"] == "the unusable model output" {
					resp, _ = l["model_response"].(string)
				}
			}
			if !strings.Contains(resp, tt.full) {
				t.Errorf("debug log model_response = %q, want the full model response %q", resp, tt.full)
			}
			if tt.stale != "" && strings.Contains(resp, tt.stale) {
				t.Errorf("debug log model_response = %q, want the last answer alone, not %q", resp, tt.stale)
			}
			if excerpt, _ := found["model_response"].(string); excerpt == "" || len([]rune(excerpt)) > 200 {
				t.Errorf("error log model_response = %q, want a short excerpt (at most 200 characters)", excerpt)
			}
			if rules, _ := found["rules"].([]any); !slices.Contains(rules, any(tt.rule)) {
				t.Errorf("error log rules = %v, want %s", found["rules"], tt.rule)
			}

			// The session goes on: the fallback insight takes "[Continue]", and the model is
			// shown the fallback card, not the unusable answers or the correction.
			checkNextTurnHistory(t, g, s.ID, `{"card_type":"insight","content":"Let's continue. What's on your mind?"}`)
		})
	}
}

// TestCardsCorrectiveRetry: when the retry's answer is a valid card, that card is the turn's
// ordinary result, with no fallback and no error log.
func TestCardsCorrectiveRetry(t *testing.T) {
	valid := `{"content":"A board meeting goes sideways.","card_type":"scenario"}`
	want := `{"type":"scenario","content":"A board meeting goes sideways."}`
	tests := []struct {
		name  string
		reply fakellm.Reply
		shape string
		runs  []string
		hint  string
	}{
		{name: "schema failure, then a card",
			reply: cardCall(`{"content":"A banner card.","card_type":"banner"}`),
			shape: "delta reset delta result", runs: []string{"A banner card.", "A board meeting goes sideways."}, hint: "card_type must be one of"},
		{name: "plain text, then a card",
			reply: fakellm.Reply{Content: "Here is a scenario.", Chunks: chop("Here is a scenario.", 4)},
			shape: "delta result", runs: []string{"A board meeting goes sideways."}, hint: "plain text instead of calling display_card"},
	}
	g := apptest.Start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := g.Create("cards", nil)
			first := len(g.LLM.Requests())
			g.LLM.Enqueue(tt.reply, cardCall(valid))
			tr := g.Turn(s.ID, apptest.Msg("Begin training."))
			tr.CheckEnding(t)
			if got, runs := shape(tr); got != tt.shape || !slices.Equal(runs, tt.runs) {
				t.Errorf("lines %q with delta runs %q, want %q with %q", got, runs, tt.shape, tt.runs)
			}
			if res := tr.Last(); res.Type != "result" || string(res.Result) != want || res.Fallback || res.Session.Version != 2 {
				t.Errorf("last line = %s\nwant result %s stored as version 2, no fallback", res.Raw, want)
			}
			checkCorrection(t, g, first, tt.hint)
			if st := decodeCardsState(t, g.Get(s.ID)); !sameJSON(st.LastCard, []byte(want)) {
				t.Errorf("stored lastCard = %s, want %s", st.LastCard, want)
			}
			turn, errLine := turnLogs(t, g, tr.Header.Get("X-Request-Id"))
			if turn["outcome"] != "ok" || errLine != nil {
				t.Errorf("turn log %v, error log %v; want outcome ok and no error log", turn, errLine)
			}
			checkNextTurnHistory(t, g, s.ID, valid)
		})
	}
}

// TestCardsLevelUp completes one prompt→insight cycle (one cycle per level here) and checks that
// the next turn opens with the level_up card, before the model's card, and only that turn.
func TestCardsLevelUp(t *testing.T) {
	g := apptest.Start(t, func(c *config.Config) { c.CardsCyclesPerLevel = 1 })
	s := g.Create("cards", nil)
	msg, _ := json.Marshal(cards.DefaultLevels()[2])
	wantCard := `{"type":"card","card":{"type":"level_up","new_level":2,"message":` + string(msg) + `}}`
	steps := []struct {
		name      string
		body      any
		args      string
		levelUp   bool
		wantLevel int
	}{
		{"scenario", apptest.Msg("Begin training."), `{"card_type":"scenario","content":"A tense all-hands."}`, false, 1},
		{"prompt", apptest.Msg("[Continue]"), `{"card_type":"prompt","content":"What do you say?","input_config":{"max_length":300}}`, false, 1},
		{"insight completes the cycle", apptest.Msg("I own the delay."), `{"card_type":"insight","content":"You led with ownership."}`, false, 1},
		{"level up", apptest.Msg("[Continue]"), `{"card_type":"scenario","content":"Two stakeholders now disagree."}`, true, 2},
		{"no second level_up", apptest.Msg("[Continue]"), `{"card_type":"prompt","content":"Whom do you call first?","input_config":{"max_length":300}}`, false, 2},
		{"still none", apptest.Msg("The CFO."), `{"card_type":"insight","content":"You went for the money."}`, false, 2},
	}
	for i, step := range steps {
		ok := t.Run(step.name, func(t *testing.T) {
			g.LLM.Enqueue(cardCall(step.args))
			tr := g.Turn(s.ID, step.body)
			if tr.Status != http.StatusOK || tr.Last().Type != "result" {
				t.Fatalf("status %d, lines %q, want a result", tr.Status, tr.Kinds())
			}
			var cardLines []string
			for _, l := range tr.Lines {
				if l.Type == "card" {
					cardLines = append(cardLines, l.Raw)
				}
			}
			system := g.LLM.Requests()[i].Messages[0].Content
			if step.levelUp {
				if tr.Lines[0].Raw != wantCard || len(cardLines) != 1 {
					t.Errorf("lines %q, first %s\nwant exactly one first line %s", tr.Kinds(), tr.Lines[0].Raw, wantCard)
				}
				if !strings.Contains(system, "\nlevel: 2\n") || !strings.Contains(system, "just reached level 2") {
					t.Errorf("system prompt of the level-up turn does not describe level 2:\n%s", tail(system, 400))
				}
			} else if len(cardLines) != 0 {
				t.Errorf("card lines %q on a turn that does not level up", cardLines)
			}
			st := decodeCardsState(t, tr.Last().Session)
			if st.Level != step.wantLevel || string(st.LastCard) == "" || strings.Contains(string(st.LastCard), "level_up") {
				t.Errorf("state %s, want level %d and the model's card as lastCard", tr.Last().Session.State, step.wantLevel)
			}
		})
		if !ok {
			t.FailNow()
		}
	}
}

// TestCardsInputChecks sends inputs the last card does not take: each is a 422 naming the field,
// with no model call and the session unchanged.
func TestCardsInputChecks(t *testing.T) {
	scenario := `{"card_type":"scenario","content":"A scene."}`
	insight := `{"card_type":"insight","content":"A lesson."}`
	prompt := `{"card_type":"prompt","content":"Say it in 20.","input_config":{"max_length":20}}`
	reflection := `{"card_type":"reflection","content":"Why?"}`
	choice := `{"card_type":"multiple_choice","content":"Pick.","options":[{"id":"a","label":"A"},{"id":"b","label":"B"}]}`
	tests := []struct {
		name      string
		last      string // the card the input answers
		body      any
		wantField string // "" when the input is accepted
	}{
		{"selected id not offered", choice, map[string]string{"selected": "z"}, "selected"},
		{"free text after multiple_choice", choice, apptest.Msg("b"), "selected"},
		{"text and selected after multiple_choice", choice, map[string]string{"selected": "a", "message": "because"}, "message"},
		{"text longer than the prompt's max_length", prompt, apptest.Msg(strings.Repeat("x", 21)), "message"},
		{"text longer than the reflection's default max_length", reflection, apptest.Msg(strings.Repeat("y", 201)), "message"},
		{"blank answer to a prompt", prompt, apptest.Msg("   "), "message"},
		{"selected after a prompt", prompt, map[string]string{"selected": "a"}, "selected"},
		{"text after a scenario", scenario, apptest.Msg("ok"), "message"},
		{"text after an insight", insight, apptest.Msg("continue"), "message"},
		{"selected after an insight", insight, map[string]string{"selected": "a"}, "selected"},
		{"max_length counts characters, not bytes", prompt, apptest.Msg(strings.Repeat("é", 20)), ""},
		{"offered id accepted", choice, map[string]string{"selected": "b"}, ""},
	}
	g := apptest.Start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := g.Create("cards", nil)
			g.LLM.Enqueue(cardCall(tt.last))
			first := g.Turn(s.ID, apptest.Msg("Begin training."))
			if first.Last().Type != "result" || first.Last().Fallback {
				t.Fatalf("setting up the last card: %s", first.Body)
			}
			before := g.Get(s.ID)
			calls := len(g.LLM.Requests())
			if tt.wantField == "" {
				g.LLM.Enqueue(cardCall(insight))
				if tr := g.Turn(s.ID, tt.body); tr.Status != http.StatusOK || tr.Last().Type != "result" {
					t.Errorf("status %d lines %q, want the input accepted", tr.Status, tr.Kinds())
				}
				return
			}
			tr := g.Turn(s.ID, tt.body)
			var body struct{ Error, Field, Message string }
			_ = json.Unmarshal([]byte(tr.Body), &body)
			if tr.Status != http.StatusUnprocessableEntity || body.Error != "invalid_input" || body.Field != tt.wantField {
				t.Errorf("status %d body %s, want 422 invalid_input on field %q", tr.Status, tr.Body, tt.wantField)
			}
			if n := len(g.LLM.Requests()) - calls; n != 0 {
				t.Errorf("model calls = %d, want none", n)
			}
			if after := g.Get(s.ID); after.Version != before.Version || !bytes.Equal(after.State, before.State) {
				t.Errorf("session changed: version %d→%d, state %s→%s", before.Version, after.Version, before.State, after.State)
			}
		})
	}
}

// TestCardsHistoryForStrictEndpoints plays a drill, a fallback included, and checks that the
// history the model is sent is one a strict endpoint accepts: every assistant tool call answered
// by its tool message before the next user message.
func TestCardsHistoryForStrictEndpoints(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("cards", nil)
	turns := []struct {
		body  any
		reply fakellm.Reply
	}{
		{apptest.Msg("Begin training."), cardCall(`{"card_type":"scenario","content":"A board meeting."}`)},
		{apptest.Msg("[Continue]"), cardCall(`{"card_type":"multiple_choice","content":"Your concern?","options":[{"id":"a","label":"Optics"},{"id":"b","label":"My peer"}]}`)},
		{map[string]string{"selected": "b"}, cardCall(`{"card_type":"prompt","content":"What do you write?"}`)},
		{apptest.Msg("We're on it."), fakellm.Reply{Content: "Plain text instead of a card."}},
		{apptest.Msg("[Continue]"), cardCall(`{"card_type":"reflection","content":"Why that?","input_config":{"max_length":150}}`)},
		{apptest.Msg("Fear."), cardCall(`{"card_type":"insight","content":"Fear drives it."}`)},
		{apptest.Msg("[Continue]"), cardCall(`{"card_type":"scenario","content":"Next drill."}`)},
	}
	for i, turn := range turns {
		g.LLM.Enqueue(turn.reply)
		if turn.reply.ToolCall == nil {
			// Plain text again on the corrective retry: the turn ends with the fallback card.
			g.LLM.Enqueue(turn.reply)
		}
		if tr := g.Turn(s.ID, turn.body); tr.Last().Type != "result" {
			t.Fatalf("turn %d: %s", i+1, tr.Body)
		}
	}
	reqs := g.LLM.Requests()
	if len(reqs) != len(turns)+1 {
		t.Fatalf("model calls = %d, want %d (one corrective retry)", len(reqs), len(turns)+1)
	}
	msgs := reqs[len(reqs)-1].Messages
	var roles []string
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if msgs[0].Role != "system" {
		t.Fatalf("roles %v, want the system prompt first", roles)
	}
	display := schema.Load(cards.SchemaFile)
	ids := map[string]bool{}
	sawSelected := false
	for i := 1; i < len(msgs); {
		if msgs[i].Role != "user" {
			t.Fatalf("message %d is %s in roles %v, want a user message", i, msgs[i].Role, roles)
		}
		if msgs[i].Content == `{"selected": "b"}` {
			sawSelected = true
		}
		i++
		if i == len(msgs) {
			break
		}
		a := msgs[i]
		if a.Role != "assistant" || len(a.ToolCalls) != 1 {
			t.Fatalf("message %d = %+v, want an assistant message with one tool call", i, a)
		}
		tc := a.ToolCalls[0]
		if tc.ID == "" || ids[tc.ID] || tc.Name != "display_card" {
			t.Errorf("tool call %+v: want display_card with a fresh, non-empty id", tc)
		}
		ids[tc.ID] = true
		doc, err := schema.Decode([]byte(tc.Arguments))
		if err == nil {
			err = display.Validate(doc)
		}
		if err != nil {
			t.Errorf("tool call arguments %s do not fit display-card.json: %v", tc.Arguments, err)
		}
		i++
		if i == len(msgs) || msgs[i].Role != "tool" || msgs[i].ToolCallID != tc.ID {
			t.Fatalf("message %d after the tool call %s: roles %v, want its tool message", i, tc.ID, roles)
		}
		i++
	}
	if len(ids) != len(turns)-1 {
		t.Errorf("%d tool calls in the history, want %d", len(ids), len(turns)-1)
	}
	if !sawSelected {
		t.Errorf(`no user message {"selected": "b"} in the history`)
	}
	if last := msgs[len(msgs)-1]; last.Role != "user" || last.Content != "[Continue]" {
		t.Errorf("last message = %+v, want the user's [Continue]", last)
	}
}

// fixtureGateway starts a gateway whose scripted model can replay testdata/streams.
func fixtureGateway(t *testing.T) *apptest.Gateway {
	return apptest.StartWith(t, apptest.Options{LLM: fakellm.Options{Fixtures: os.DirFS("../../testdata/streams")}})
}

// TestCardsFixtureReplay replays the recorded OpenAI stream of a scenario card (finish_reason
// "stop" although a tool was called, a role-only first event) and checks the card and the tool
// call id kept in the history.
func TestCardsFixtureReplay(t *testing.T) {
	g := fixtureGateway(t)
	s := g.Create("cards", nil)
	g.LLM.Enqueue(fakellm.Reply{Fixture: "cards-scenario"})
	content := "You're two weeks into a new VP role. Your first big initiative is stalling because a peer VP keeps missing commitments. You've mentioned it twice in 1:1s. Today, they missed another deadline."
	tr := g.Turn(s.ID, apptest.Msg("Begin training."))
	checkCardStream(t, tr, content, `{"type":"scenario","content":`+jsonText(content)+`,"drill_phase":"Problem-Solving"}`)

	g.LLM.Enqueue(cardCall(`{"card_type":"prompt","content":"What do you do?"}`))
	if tr := g.Turn(s.ID, apptest.Msg("[Continue]")); tr.Last().Type != "result" {
		t.Fatalf("second turn: %s", tr.Body)
	}
	msgs := g.LLM.Requests()[1].Messages
	const id = "call_Wd3kQ8vLmN2pXr7sTy5uZa1b"
	if len(msgs) != 5 || len(msgs[2].ToolCalls) != 1 || msgs[2].ToolCalls[0].ID != id || msgs[3].ToolCallID != id {
		t.Errorf("history %+v, want the recorded call %s and its tool message", msgs[1:], id)
	}
}

// TestToulminFixtureReplay replays the recorded toulmin stream. It lives here, with the other
// fixture replays, because toulmin_e2e_test.go belongs to another engineer.
func TestToulminFixtureReplay(t *testing.T) {
	g := fixtureGateway(t)
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(fakellm.Reply{Fixture: "toulmin-claim-first-turn"})
	tr := g.Turn(s.ID, apptest.Msg("Remote work is good."))
	tr.CheckEnding(t)
	text := `Thanks for sharing your topic. Right now "remote work is good" reads more like a subject than a claim: a reader can't yet tell what exactly you want them to accept, or why anyone would disagree.`
	question := "Who is remote work good for, and in what way — could you put that into one sentence that someone might reasonably dispute?"
	// v1.2: the appended question is streamed too, so the deltas add up to the visible text.
	if got, want := tr.Text(), text+"\n\n"+question; got != want {
		t.Errorf("concatenated deltas = %q, want assistantText %q", got, want)
	}
	var r struct {
		AssistantText string   `json:"assistantText"`
		Step          string   `json:"step"`
		Confidence    *float64 `json:"confidence"`
		NextQuestion  string   `json:"nextQuestion"`
		Proposed      any      `json:"proposedUpdate"`
	}
	if err := json.Unmarshal(tr.Last().Result, &r); err != nil {
		t.Fatalf("result %s: %v", tr.Last().Raw, err)
	}
	if r.AssistantText != text+"\n\n"+question || r.Step != "claim" || r.Confidence == nil || *r.Confidence != 0.3 ||
		r.NextQuestion != question || r.Proposed != nil {
		t.Errorf("result = %s, want the recorded answer with the question appended", tr.Last().Result)
	}
	if v := tr.Last().Session.Version; v != 2 {
		t.Errorf("stored version %d, want 2", v)
	}
}

// TestCardsToleratedOutput checks model output that is odd but usable: it yields the card, not
// the fallback.
func TestCardsToleratedOutput(t *testing.T) {
	tests := []struct {
		name    string
		reply   fakellm.Reply
		content string // what the deltas concatenate to
		want    string
	}{
		{name: "text before the tool call",
			reply: fakellm.Reply{Content: "Sure, here is your card.", ToolCall: &fakellm.ToolCall{Name: "display_card",
				Arguments: `{"card_type":"scenario","content":"A quiet office."}`}, Chunks: chop(`{"card_type":"scenario","content":"A quiet office."}`, 4)},
			content: "A quiet office.", want: `{"type":"scenario","content":"A quiet office."}`},
		{name: "strict-mode nulls for absent fields",
			reply:   cardCall(`{"card_type":"scenario","content":"A quiet office.","input_config":null,"options":null,"drill_phase":null,"is_iteration":null}`),
			content: "A quiet office.", want: `{"type":"scenario","content":"A quiet office."}`},
		{name: "prompt without max_length takes the default",
			reply:   cardCall(`{"card_type":"prompt","content":"Reply to the CEO."}`),
			content: "Reply to the CEO.", want: `{"type":"prompt","content":"Reply to the CEO.","input":{"type":"text","max_length":500,"placeholder":""},"is_iteration":false}`},
		{name: "max_length written as a float",
			reply:   cardCall(`{"card_type":"reflection","content":"Why?","input_config":{"max_length":300.0}}`),
			content: "Why?", want: `{"type":"reflection","content":"Why?","input":{"type":"text","max_length":300,"placeholder":""},"is_iteration":false}`},
		{name: "escapes split across fragments",
			reply: fakellm.Reply{ToolCall: &fakellm.ToolCall{Name: "display_card"},
				Chunks: chop(`{"card_type":"insight","content":"Caf\u00e9 \ud83d\ude00 \"talk\"\\n"}`, 3)},
			content: "Café 😀 \"talk\"\\n", want: `{"type":"insight","content":"Café 😀 \"talk\"\\n"}`},
		{name: "fields the card type lacks are dropped",
			reply:   cardCall(`{"card_type":"insight","content":"A lesson.","input_config":{"max_length":9},"options":[{"id":"a","label":"A"}],"is_iteration":true}`),
			content: "A lesson.", want: `{"type":"insight","content":"A lesson."}`},
	}
	g := apptest.Start(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := g.Create("cards", nil)
			g.LLM.Enqueue(tt.reply)
			tr := g.Turn(s.ID, apptest.Msg("Begin training."))
			tr.CheckEnding(t)
			if got := tr.Text(); got != tt.content {
				t.Errorf("concatenated deltas = %q, want %q", got, tt.content)
			}
			if res := tr.Last(); string(res.Result) != tt.want || res.Fallback {
				t.Errorf("last line = %s\nwant result %s", res.Raw, tt.want)
			}
		})
	}
}

// TestCardsRecoversFromACutStream cuts the stream after part of the content went out: the turn
// resets, the second call's card is the result, and the history holds one tool call.
func TestCardsRecoversFromACutStream(t *testing.T) {
	args := `{"content":"The board wants an answer by noon.","card_type":"scenario"}`
	cut := cardCall(args)
	cut.Fault = fakellm.Fault{Cut: true, CutAfter: 8}
	g := apptest.Start(t, nil)
	s := g.Create("cards", nil)
	g.LLM.Enqueue(cut, cardCall(args))
	tr := g.Turn(s.ID, apptest.Msg("Begin training."))
	tr.CheckEnding(t)
	if k := tr.Kinds(); !strings.HasPrefix(k, "delta") || strings.Count(k, "reset") != 1 {
		t.Errorf("lines %q, want deltas, one reset, deltas and the result", k)
	}
	if got := tr.Text(); got != "The board wants an answer by noon." {
		t.Errorf("deltas after the reset = %q, want the whole content once", got)
	}
	if res := tr.Last(); string(res.Result) != `{"type":"scenario","content":"The board wants an answer by noon."}` || res.Session.Version != 2 {
		t.Errorf("last line = %s, want the scenario stored as version 2", res.Raw)
	}
	g.LLM.Enqueue(cardCall(`{"card_type":"insight","content":"Noted."}`))
	g.Turn(s.ID, apptest.Msg("[Continue]"))
	if msgs := g.LLM.Requests()[2].Messages; len(msgs) != 5 || len(msgs[2].ToolCalls) != 1 || msgs[3].Role != "tool" {
		t.Errorf("history after a recovered turn = %+v, want user, one tool call, its tool message, user", msgs[1:])
	}
}
