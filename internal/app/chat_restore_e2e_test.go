package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/fakellm"
)

// uiMessage is a message of a chat as a page restoring it holds it: a message of GET
// …/chat/messages, or one built from a stream.
type uiMessage struct {
	ID    string
	Role  string
	Texts []string
}

// restoreChat reads the session's conversation as GET …/chat/messages gives it to
// useChat({messages}).
func restoreChat(t *testing.T, g *apptest.Gateway, id string) []uiMessage {
	t.Helper()
	var page struct {
		Messages []struct {
			ID    string `json:"id"`
			Role  string `json:"role"`
			Parts []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"messages"`
	}
	if code := g.Call("GET", "/v1/sessions/"+id+"/chat/messages", nil, &page); code != http.StatusOK {
		t.Fatalf("GET chat/messages: %d", code)
	}
	out := make([]uiMessage, 0, len(page.Messages))
	for _, m := range page.Messages {
		u := uiMessage{ID: m.ID, Role: m.Role}
		for _, p := range m.Parts {
			if p.Type == "text" {
				u.Texts = append(u.Texts, p.Text)
			}
		}
		out = append(out, u)
	}
	return out
}

// chatStream reads GET …/chat/stream whole: what useChat({resume: true}) asks for on load.
func chatStream(t *testing.T, g *apptest.Gateway, id string) chatResponse {
	t.Helper()
	resp, err := http.Get(g.URL + "/v1/sessions/" + id + "/chat/stream")
	if err != nil {
		t.Fatal(err)
	}
	return readChat(t, resp)
}

// followStream adds a resumed stream to msgs as the AI SDK's Chat does on resumeStream (ai 5, 6
// and 7 alike): the stream builds a new assistant message whose id is its start event's
// messageId, and that message replaces the chat's last one when the ids are equal, else it is
// added after it.
func followStream(t *testing.T, msgs []uiMessage, r chatResponse) []uiMessage {
	t.Helper()
	if r.Status != http.StatusOK || len(r.Events) == 0 || r.Events[0].Type != "start" {
		t.Fatalf("the resumed stream: %d %q, want 200 opening with start", r.Status, r.kinds())
	}
	m := uiMessage{ID: r.Events[0].MessageID, Role: "assistant", Texts: r.texts(t)}
	if n := len(msgs); n > 0 && msgs[n-1].ID == m.ID {
		return append(msgs[:n-1:n-1], m)
	}
	return append(msgs, m)
}

// leaveMidAnswer posts body to the chat route and goes away (a reload) once the first text
// arrived; it returns the turn's id.
func leaveMidAnswer(t *testing.T, g *apptest.Gateway, id string, body any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(g.URL+"/v1/sessions/"+id+"/chat", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"type":"text-delta"`) {
			return resp.Header.Get("X-Coach-Turn")
		}
	}
	t.Fatalf("the turn ended before any text: %v", sc.Err())
	return ""
}

// stall pauses r near its end, long enough for a reload to come mid-answer.
func stall(r fakellm.Reply) fakellm.Reply {
	r.Fault = fakellm.Fault{StallAfter: len(r.Chunks) - 1, Stall: time.Second}
	return r
}

// TestChatRestoreThenResume reloads a page as the example app does (useChat with the messages of
// GET …/chat/messages and resume: true), in each contract: after an answer, and while the next
// answer is still streaming. An answer's message id is its turn's id in both routes, so the
// SDK's resume replaces a restored answer with its replay instead of showing it twice, and adds
// a running answer once, after the restored conversation, which ends with that turn's learner
// message, pending until the turn is stored and then there once.
func TestChatRestoreThenResume(t *testing.T) {
	moduleTwo := structured([]json.RawMessage{
		block("type", "heading", "content", "Stress"),
		block("type", "paragraph", "content", "Stress is the body's answer to a demand."),
	}, reporting())
	tests := []struct {
		contract      string
		options       map[string]string
		first, second fakellm.Reply
		bodies        [2]any
	}{
		{"toulmin", nil,
			fakellm.Reply{Chunks: []string{`{"assistantText":"Good `, `start.","step":"claim","nextQuestion":"Which cities?"}`}},
			fakellm.Reply{Chunks: []string{`{"assistantText":"Say `, `more about `, `the air.","step":"claim"}`}},
			[2]any{chatBody(textPart("Cities should ban cars.")), chatBody(textPart("Cars make the air worse."))}},
		{"cards", nil,
			cardCall(`{"card_type":"scenario","content":"A tense all-hands."}`),
			cardCall(`{"card_type":"prompt","content":"What do you say first?","input_config":{"max_length":300}}`),
			[2]any{chatBody(textPart("Begin training.")), chatBody(textPart("[Continue]"))}},
		{"module", map[string]string{"module": "anxiety-basics"},
			moduleReply(simpleResponse), moduleReply(moduleTwo),
			[2]any{chatBody(textPart("Hi.")), chatBody(textPart("What is stress?"))}},
	}
	for _, tt := range tests {
		t.Run(tt.contract, func(t *testing.T) {
			g := apptest.Start(t, nil)
			s := g.Create(tt.contract, tt.options)
			g.LLM.Enqueue(tt.first)
			posted := chat(t, g, s.ID, tt.bodies[0])
			turn := posted.Header.Get("X-Coach-Turn")
			if posted.Status != http.StatusOK || posted.Events[0].MessageID != turn || turn == "" {
				t.Fatalf("POST chat: %d, start %s, X-Coach-Turn %q; want the turn's id as the message's", posted.Status, posted.Events[0].Raw, turn)
			}

			// A reload after the answer, within COACH_RESUME_TTL: the restored answer and its
			// replay are one message.
			restored := restoreChat(t, g, s.ID)
			if len(restored) != 2 || restored[1].ID != turn || strings.Join(restored[1].Texts, "|") != strings.Join(posted.texts(t), "|") {
				t.Fatalf("restored %+v, want the learner's message and the answer %q with id %s", restored, posted.texts(t), turn)
			}
			msgs := followStream(t, restored, chatStream(t, g, s.ID))
			if len(msgs) != 2 || msgs[1].ID != turn || strings.Join(msgs[1].Texts, "|") != strings.Join(posted.texts(t), "|") {
				t.Errorf("after the resume %+v, want the same two messages: the replay replaces the restored answer", msgs)
			}

			// A reload mid-answer: the earlier messages are restored with the running turn's
			// learner message, marked pending, and the running answer comes once, after them,
			// from the resume.
			g.LLM.Enqueue(stall(tt.second))
			running := leaveMidAnswer(t, g, s.ID, tt.bodies[1])
			// The learner message is kept beside the turn's first line, not before it.
			apptest.Eventually(t, "chat/messages shows the running turn's learner message", func() bool {
				restored = restoreChat(t, g, s.ID)
				return len(restored) == 3
			})
			if len(restored) != 3 || restored[1].ID != turn || restored[2].ID != "pending-"+running || restored[2].Role != "user" {
				t.Fatalf("restored mid-answer %+v, want the first turn and the running turn's learner message (pending-%s)", restored, running)
			}
			replay := chatStream(t, g, s.ID)
			if got := replay.Header.Get("X-Coach-Turn"); got != running || replay.Events[0].MessageID != running {
				t.Fatalf("resume: X-Coach-Turn %q, start %s; want the running turn %s", got, replay.Events[0].Raw, running)
			}
			msgs = followStream(t, restored, replay)
			if len(msgs) != 4 || msgs[1].ID != turn || msgs[3].ID != running || len(msgs[3].Texts) == 0 {
				t.Fatalf("after the resume %+v, want the three restored messages and the running answer", msgs)
			}
			if v := replay.result(t).Session.Version; v != 3 {
				t.Errorf("the resumed turn stored version %d, want 3", v)
			}

			// Reloaded again once it ended: four messages, the learner's once and stored, the
			// last one replayed in place.
			restored = restoreChat(t, g, s.ID)
			if len(restored) != 4 || !strings.HasPrefix(restored[2].ID, "msg-") || restored[3].ID != running || strings.Join(restored[3].Texts, "|") != strings.Join(msgs[3].Texts, "|") {
				t.Fatalf("restored after the end %+v, want both turns, the second's learner message stored and its answer with id %s and text %q", restored, running, msgs[3].Texts)
			}
			if again := followStream(t, restored, chatStream(t, g, s.ID)); len(again) != 4 || again[3].ID != running {
				t.Errorf("after the resume %+v, want the same four messages", again)
			}
		})
	}
}
