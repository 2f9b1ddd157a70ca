package app_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// rawEvents lists a chat stream's events as they were sent.
func (r chatResponse) rawEvents() []string {
	out := make([]string, len(r.Events))
	for i, e := range r.Events {
		out[i] = e.Raw
	}
	return out
}

// resumeLines reads GET …/turns/current whole: the NDJSON resume of the session's turn.
func resumeLines(t *testing.T, g *apptest.Gateway, id string) (int, []apptest.Line) {
	t.Helper()
	resp, err := http.Get(g.URL + "/v1/sessions/" + id + "/turns/current")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []apptest.Line
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		l := apptest.Line{Raw: sc.Text()}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("resumed line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return resp.StatusCode, lines
}

// TestChatStreamReplaysACrisis reloads a crisis turn, and the held turn after it, through the
// chat route in each contract, the way useChat({resume: true}) does: the replay is the live
// stream event for event (the data-coach-safety part, the supportive text, the result and
// finish), and it takes the place of the answer restored from chat/messages.
func TestChatStreamReplaysACrisis(t *testing.T) {
	tests := []struct {
		contract string
		options  map[string]string
	}{
		{"toulmin", map[string]string{"locale": "en-US"}},
		{"cards", map[string]string{"locale": "en-US"}},
		{"module", map[string]string{"locale": "en-US", "module": "anxiety-basics"}},
	}
	g := apptest.Start(t, safetyConfig(false))
	for _, tt := range tests {
		t.Run(tt.contract, func(t *testing.T) {
			s := g.Create(tt.contract, tt.options)
			for i, message := range []string{"I don't want to be alive anymore.", "ok, what's next?"} {
				live := chat(t, g, s.ID, chatBody(textPart(message)))
				if live.Status != http.StatusOK || !strings.HasSuffix(live.kinds(), "data-coach-result finish") {
					t.Fatalf("turn %d: %d %q, want a stream ending in its result", i, live.Status, live.kinds())
				}
				live.data(t, "data-coach-safety")
				if len(live.texts(t)) == 0 {
					t.Fatalf("turn %d: events %q, want the supportive text", i, live.kinds())
				}
				// The turn log is written beside the turn, not before its answer ends: a reload
				// at once may come before the log names this turn.
				var replay chatResponse
				apptest.Eventually(t, "the log names the turn", func() bool {
					replay = chatStream(t, g, s.ID)
					return replay.Status == http.StatusOK && len(replay.Events) > 0 &&
						replay.Events[0].MessageID == live.Header.Get("X-Coach-Turn")
				})
				if got, want := strings.Join(replay.rawEvents(), "\n"), strings.Join(live.rawEvents(), "\n"); got != want {
					t.Errorf("turn %d replayed:\n%s\nwant the live stream:\n%s", i, got, want)
				}
				restored := restoreChat(t, g, s.ID)
				msgs := followStream(t, restored, replay)
				if len(msgs) != len(restored) || msgs[len(msgs)-1].ID != live.Header.Get("X-Coach-Turn") ||
					strings.Join(msgs[len(msgs)-1].Texts, "|") != strings.Join(live.texts(t), "|") {
					t.Errorf("turn %d: after the resume %+v, want the restored %+v with the replay in place of its last answer", i, msgs, restored)
				}
			}
			if n := len(g.LLM.Requests()); n != 0 {
				t.Errorf("%d model calls, want none", n)
			}
		})
	}
}

// TestChatStreamUnstoredTurn reloads a page after a turn that ended without being stored: one
// stopped with DELETE …/turns/current mid-answer, one that failed with an error line. The chat
// route's resume answers 204, as for no turn, so the chat keeps what it restored instead of
// ending in an error; chat/messages has no trace of the turn (the learner's message, shown as
// pending while the turn ran, is gone). The NDJSON resume still replays the turn, ending in its
// error line.
func TestChatStreamUnstoredTurn(t *testing.T) {
	tests := []struct {
		name  string
		reply fakellm.Reply
		stop  bool
		code  string
	}{
		{"stopped", stall(fakellm.Reply{Chunks: []string{`{"assistantText":"Say `, `more about `, `the air.","step":"claim"}`}}), true, "turn_cancelled"},
		{"failed", fakellm.Reply{Content: `{"assistantText":"Hi", oops`}, false, "coach_validation_failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := apptest.Start(t, nil)
			s := g.Create("toulmin", nil)
			g.LLM.Enqueue(fakellm.Reply{Chunks: []string{`{"assistantText":"Good `, `start.","step":"claim"}`}})
			first := chat(t, g, s.ID, chatBody(textPart("Cities should ban cars.")))
			before := restoreChat(t, g, s.ID)

			if tt.stop {
				g.LLM.Enqueue(tt.reply)
				turn := leaveMidAnswer(t, g, s.ID, chatBody(textPart("Cars make the air worse.")))
				var mid []uiMessage
				apptest.Eventually(t, "chat/messages shows the running turn's learner message", func() bool {
					mid = restoreChat(t, g, s.ID)
					return len(mid) == len(before)+1
				})
				if len(mid) != len(before)+1 || mid[len(mid)-1].ID != "pending-"+turn || strings.Join(mid[len(mid)-1].Texts, "|") != "Cars make the air worse." {
					t.Fatalf("chat/messages mid-answer: %+v, want %+v and the running turn's learner message", mid, before)
				}
				if code := g.Call("DELETE", "/v1/sessions/"+s.ID+"/turns/current", nil, nil); code != http.StatusNoContent {
					t.Fatalf("DELETE turns/current: %d, want 204", code)
				}
				// The NDJSON resume follows the turn to its last line, which it keeps.
				status, lines := resumeLines(t, g, s.ID)
				if status != http.StatusOK || len(lines) == 0 || lines[len(lines)-1].Error != tt.code || !strings.Contains(lines[len(lines)-1].Raw, turn) {
					t.Fatalf("NDJSON resume after the stop: %d %+v, want the turn's lines ending in %s", status, lines, tt.code)
				}
			} else {
				g.LLM.Enqueue(tt.reply, fakellm.Reply{Content: "not json"})
				if r := chat(t, g, s.ID, chatBody(textPart("Cars make the air worse."))); !strings.HasSuffix(r.kinds(), "data-coach-error error finish") {
					t.Fatalf("the failing turn: %q, want its error", r.kinds())
				}
				status, lines := resumeLines(t, g, s.ID)
				if status != http.StatusOK || len(lines) == 0 || lines[len(lines)-1].Error != tt.code {
					t.Fatalf("NDJSON resume after the failure: %d %+v, want the turn's lines ending in %s", status, lines, tt.code)
				}
			}

			if r := chatStream(t, g, s.ID); r.Status != http.StatusNoContent || r.Body != "" {
				t.Errorf("chat/stream after the %s turn: %d %q, want 204 and no body", tt.name, r.Status, r.Body)
			}
			after := restoreChat(t, g, s.ID)
			if len(after) != len(before) || after[len(after)-1].ID != first.Header.Get("X-Coach-Turn") {
				t.Errorf("chat/messages after the %s turn: %+v, want what it had before it: %+v", tt.name, after, before)
			}
			if v := g.Get(s.ID).Version; v != 2 {
				t.Errorf("the session's version %d, want 2: the %s turn stored nothing", v, tt.name)
			}
		})
	}
}

// TestChatStreamReplayLeavesOutSettledResets reloads a turn whose first attempt was cut after
// text went out: live, the stream discarded that text with a data-coach-reset; the replay has
// neither the reset nor the discarded text, only the answer that chat/messages restores, so a
// client that restored it and resumes gets no reset to act on again.
func TestChatStreamReplayLeavesOutSettledResets(t *testing.T) {
	g := apptest.Start(t, nil)
	s := g.Create("toulmin", nil)
	g.LLM.Enqueue(cutAfterText, fakellm.Reply{Content: apptest.Obj("assistantText", "Hello again.", "step", "claim")})
	live := chat(t, g, s.ID, chatBody(textPart("hi")))
	if !strings.Contains(live.kinds(), "data-coach-reset") {
		t.Fatalf("live events %q, want a reset", live.kinds())
	}
	replay := chatStream(t, g, s.ID)
	if want := "start text-start text-delta text-end data-coach-result finish"; replay.kinds() != want {
		t.Errorf("replayed events %q, want %q", replay.kinds(), want)
	}
	if got := replay.texts(t); len(got) != 1 || got[0] != "Hello again." {
		t.Errorf("replayed texts %q, want only the answer %q", got, "Hello again.")
	}
	if got, want := string(replay.data(t, "data-coach-result")), string(live.data(t, "data-coach-result")); got != want {
		t.Errorf("replayed result %s, want the live %s", got, want)
	}
	restored := restoreChat(t, g, s.ID)
	msgs := followStream(t, restored, replay)
	if len(msgs) != 2 || strings.Join(msgs[1].Texts, "|") != strings.Join(restored[1].Texts, "|") {
		t.Errorf("after the resume %+v, want the restored %+v", msgs, restored)
	}
}
