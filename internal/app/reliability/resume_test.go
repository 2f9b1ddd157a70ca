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
// slow model: the model call on A is cancelled within a second, the turn's client and a reader
// on B both end with turn_cancelled, and nothing is stored.
func TestStopFromAnotherInstance(t *testing.T) {
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
	took := waitFor(t, "the model call on A is cancelled", 5*time.Second, func() bool { return a.LLM.Open() == 0 })
	if took > time.Second {
		t.Errorf("the model call was cancelled %v after the stop, want within a second", took)
	}
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
