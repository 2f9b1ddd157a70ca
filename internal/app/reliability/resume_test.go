package reliability_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/redisstore/redistest"
)

// slowAnswer is a toulmin answer streamed a word per chunk (the model's pause between chunks is
// twoGateways' delay), with a question for the guards to append.
func slowAnswer(text string) fakellm.Reply {
	words := strings.SplitAfter(text, " ")
	chunks := []string{`{"assistantText":"`}
	chunks = append(chunks, words...)
	chunks = append(chunks, `","step":"claim","nextQuestion":"Which cities?"}`)
	return fakellm.Reply{Chunks: chunks}
}

// resume opens GET …/turns/current on the gateway at base.
func resume(t *testing.T, base, id, query string) (*http.Response, []apptest.Line) {
	t.Helper()
	resp, err := http.Get(base + "/v1/sessions/" + id + "/turns/current" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []apptest.Line
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l apptest.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		l.Raw = sc.Text()
		lines = append(lines, l)
	}
	return resp, lines
}

// twoGateways starts two gateways on one real Redis and key prefix.
// The model pauses delay between chunks.
func twoGateways(t *testing.T, delay time.Duration, replies ...fakellm.Reply) (a, b *apptest.Gateway) {
	url := redistest.URL(t)
	if url == "" {
		t.Skip("two gateways share turns only through a real Redis")
	}
	prefix := redistest.Prefix(t, url)
	start := func() *apptest.Gateway {
		return apptest.StartWith(t, apptest.Options{Prefix: prefix, LLM: fakellm.Options{DelayMin: delay, DelayMax: delay}, Config: func(c *config.Config) {
			c.FirstByteTimeout, c.IdleTimeout, c.TurnTimeout = 30*time.Second, 30*time.Second, time.Minute
		}})
	}
	a, b = start(), start()
	for _, r := range replies {
		a.LLM.Enqueue(r)
	}
	return a, b
}

// TestResumeOnAnotherInstance starts a turn on gateway A, leaves after 3 lines, and reads the
// rest from gateway B: the turn runs to its end on A, B replays from line 3 and follows live to
// the result, and the result is stored.
func TestResumeOnAnotherInstance(t *testing.T) {
	text := "Cars in city centres make the air worse for everyone who lives there and walks there every day."
	a, b := twoGateways(t, 30*time.Millisecond, slowAnswer(text))
	s := a.Create("toulmin", nil)
	st := a.OpenTurn(s.ID, apptest.Msg("Cities should ban cars."))
	turn := st.Header.Get("X-Coach-Turn")
	if len(turn) != 32 {
		t.Fatalf("X-Coach-Turn = %q, want a turn id", turn)
	}
	var first []apptest.Line
	for len(first) < 3 {
		l, err := st.Next()
		if err != nil {
			t.Fatalf("line %d: %v", len(first), err)
		}
		first = append(first, l)
	}
	st.Close()

	resp, rest := resume(t, b.URL, s.ID, "?after=3&turn="+turn)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Coach-Turn") != turn {
		t.Fatalf("resume: status %d, X-Coach-Turn %q; want 200 and %s", resp.StatusCode, resp.Header.Get("X-Coach-Turn"), turn)
	}
	all := append(first, rest...)
	last := all[len(all)-1]
	if last.Type != "result" || !strings.Contains(last.Raw, `"turn":"`+turn+`"`) {
		t.Fatalf("resumed stream ended with %s, want the turn's result line", last.Raw)
	}
	var deltas strings.Builder
	for _, l := range all {
		if l.Type == "delta" {
			deltas.WriteString(l.Text)
		}
	}
	var r struct{ AssistantText string }
	_ = json.Unmarshal(last.Result, &r)
	if want := text + "\n\nWhich cities?"; deltas.String() != want || r.AssistantText != want {
		t.Errorf("deltas %q, result text %q; want both %q (the question streamed too)", deltas.String(), r.AssistantText, want)
	}
	if got := b.Get(s.ID); got.Version != 2 {
		t.Errorf("stored version %d, want 2: the turn outlived its client", got.Version)
	}

	// Replayed from the start, the same lines again, until the log expires.
	_, again := resume(t, b.URL, s.ID, "")
	if len(again) != len(all) {
		t.Errorf("a replay from 0 has %d lines, want %d", len(again), len(all))
	}
	if resp, _ := resume(t, b.URL, s.ID, "?turn=0123456789abcdef0123456789abcdef"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("resume of another turn: %d, want 404", resp.StatusCode)
	}
	if code := b.Call("DELETE", "/v1/sessions/"+s.ID+"/turns/current", nil, nil); code != http.StatusNotFound {
		t.Errorf("stop of an ended turn: %d, want 404 no_running_turn", code)
	}
	fresh := b.Create("toulmin", nil)
	if resp, _ := resume(t, b.URL, fresh.ID, ""); resp.StatusCode != http.StatusNoContent {
		t.Errorf("resume of a session without turns: %d, want 204", resp.StatusCode)
	}
}

// TestStopFromAnotherInstance stops, through gateway B, a turn that runs on gateway A with a
// slow model: the model call on A is cancelled long before its answer would end, the turn's
// client and a reader on B both end with turn_cancelled, and nothing is stored.
func TestStopFromAnotherInstance(t *testing.T) {
	// within is how soon after the stop the model call must be cancelled. The stop reaches A
	// through Redis at once on an idle machine; the bound leaves room for a loaded one (-race, a
	// browser test beside this one) and is half the answer's length (200 words 100 ms apart:
	// some 20 s), so a call left to run to its end still fails.
	const within = 10 * time.Second
	a, b := twoGateways(t, 100*time.Millisecond, slowAnswer(strings.Repeat("slowly ", 200)))
	s := a.Create("toulmin", nil)
	st := a.OpenTurn(s.ID, apptest.Msg("Cities should ban cars."))
	if l, err := st.Next(); err != nil || l.Type != "delta" {
		t.Fatalf("first line %+v, %v; want a delta", l, err)
	}
	readerDone := make(chan []apptest.Line, 1)
	go func() { _, lines := resume(t, b.URL, s.ID, ""); readerDone <- lines }()
	time.Sleep(200 * time.Millisecond) // the reader follows live

	if code := b.Call("DELETE", "/v1/sessions/"+s.ID+"/turns/current", nil, nil); code != http.StatusNoContent {
		t.Fatalf("stop: %d, want 204", code)
	}
	took := waitFor(t, "the model call on A is cancelled", within, func() bool { return a.LLM.Open() == 0 })
	t.Logf("the model call was cancelled %v after the stop", took.Round(time.Millisecond))
	tr, err := st.Rest()
	if err != nil {
		t.Fatal(err)
	}
	if l := tr.Last(); l.Type != "error" || l.Error != "turn_cancelled" {
		t.Errorf("the turn's client got %s last, want turn_cancelled", l.Raw)
	}
	select {
	case lines := <-readerDone:
		if l := lines[len(lines)-1]; l.Type != "error" || l.Error != "turn_cancelled" {
			t.Errorf("the reader on B got %s last, want turn_cancelled", l.Raw)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader on B never ended")
	}
	if got := b.Get(s.ID); got.Version != 1 {
		t.Errorf("stored version %d, want 1: a stopped turn stores nothing", got.Version)
	}
}

// chatMessage is a message of GET …/chat/messages, or one a resumed UI message stream built:
// its id, role and text.
type chatMessage struct {
	ID, Role, Text string
}

// restoreOn reads the session's conversation from GET …/chat/messages on gateway g.
func restoreOn(t *testing.T, g *apptest.Gateway, id string) []chatMessage {
	t.Helper()
	var page struct {
		Messages []struct {
			ID, Role string
			Parts    []struct{ Type, Text string }
		}
	}
	if code := g.Call("GET", "/v1/sessions/"+id+"/chat/messages", nil, &page); code != http.StatusOK {
		t.Fatalf("GET chat/messages: %d", code)
	}
	var out []chatMessage
	for _, m := range page.Messages {
		c := chatMessage{ID: m.ID, Role: m.Role}
		for _, p := range m.Parts {
			if p.Type == "text" {
				c.Text += p.Text
			}
		}
		out = append(out, c)
	}
	return out
}

// resumeChatOn reads GET …/chat/stream on gateway g whole and adds the message it streams to
// msgs as the AI SDK's Chat does on resumeStream: in place of the last message when the
// stream's start names that message's id, after it otherwise.
func resumeChatOn(t *testing.T, g *apptest.Gateway, id string, msgs []chatMessage) []chatMessage {
	t.Helper()
	resp, err := http.Get(g.URL + "/v1/sessions/" + id + "/chat/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET chat/stream: %d, want 200", resp.StatusCode)
	}
	var m chatMessage
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var e struct{ Type, MessageID, Delta string }
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			t.Fatalf("event %s: %v", data, err)
		}
		switch e.Type {
		case "start":
			m = chatMessage{ID: e.MessageID, Role: "assistant"}
		case "text-delta":
			m.Text += e.Delta
		}
	}
	if m.ID != resp.Header.Get("X-Coach-Turn") {
		t.Errorf("the stream's message id %q, want its X-Coach-Turn %q", m.ID, resp.Header.Get("X-Coach-Turn"))
	}
	if n := len(msgs); n > 0 && msgs[n-1].ID == m.ID {
		return append(msgs[:n-1:n-1], m)
	}
	return append(msgs, m)
}

// TestRestoreAndResumeOnAnotherInstance reloads a page on gateway B while its turn runs on A,
// the way useChat restores (GET …/chat/messages) and resumes (GET …/chat/stream): the earlier
// messages come once with the running turn's learner message (pending), the running answer once
// after them, and after its end the restored answer and its replay are one message (both carry
// the turn's id).
func TestRestoreAndResumeOnAnotherInstance(t *testing.T) {
	text := "Cars in city centres make the air worse for everyone who lives there and walks there every day."
	a, b := twoGateways(t, 30*time.Millisecond, slowAnswer("A first answer."), slowAnswer(text))
	s := a.Create("toulmin", nil)
	first := a.Turn(s.ID, apptest.Msg("Cities should ban cars."))
	firstTurn := first.Header.Get("X-Coach-Turn")

	st := a.OpenTurn(s.ID, apptest.Msg("Cars make the air worse."))
	turn := st.Header.Get("X-Coach-Turn")
	for i := 0; i < 3; i++ {
		if _, err := st.Next(); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
	}
	st.Close()

	restored := restoreOn(t, b, s.ID)
	if len(restored) != 3 || restored[0].Role != "user" || restored[1].ID != firstTurn ||
		restored[2] != (chatMessage{ID: "pending-" + turn, Role: "user", Text: "Cars make the air worse."}) {
		t.Fatalf("restored on B mid-answer: %+v; want the first turn, its answer's id %s, and the running turn's learner message, pending", restored, firstTurn)
	}
	msgs := resumeChatOn(t, b, s.ID, restored)
	want := text + "\n\nWhich cities?"
	if len(msgs) != 4 || msgs[1] != restored[1] || msgs[3].ID != turn || msgs[3].Text != want {
		t.Fatalf("after the resume on B: %+v; want the restored three and the running answer %q once, id %s", msgs, want, turn)
	}

	restored = restoreOn(t, b, s.ID)
	if len(restored) != 4 || restored[3].ID != turn || restored[3].Text != want {
		t.Fatalf("restored on B after the end: %+v; want both turns, the second's answer with id %s", restored, turn)
	}
	if again := resumeChatOn(t, b, s.ID, restored); len(again) != 4 || again[3] != restored[3] {
		t.Errorf("a resume after the end on B: %+v; want the replay in place of the restored answer", again)
	}
}
