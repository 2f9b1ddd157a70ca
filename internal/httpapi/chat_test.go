package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/coach"
)

// chatText is useChat's body for a learner message of text.
func chatText(text string) string {
	t, _ := json.Marshal(text)
	return `{"id":"c","messages":[{"id":"u","role":"user","parts":[{"type":"text","text":` + string(t) + `}]}],"trigger":"submit-message"}`
}

// TestChatPreStreamErrors checks that what is wrong before the stream starts is an ordinary JSON
// error with the same status and code as on the NDJSON route, and that nothing reaches the model.
func TestChatPreStreamErrors(t *testing.T) {
	ts := startServer(t, func(d *Deps) { withKeys(d); d.MaxBodyBytes = 4 << 10 })
	auth := []string{"Authorization", "Bearer " + keyAcme}
	toulminID := ts.create("toulmin", auth...)
	cardsID := ts.create("cards", auth...)
	busyID := ts.create("toulmin", auth...)
	if _, _, err := ts.store.Claim(context.Background(), "acme", busyID, time.Minute); err != nil {
		t.Fatal(err)
	}
	path := func(id string) string { return "/v1/sessions/" + id + "/chat" }
	select_ := `{"messages":[{"role":"user","parts":[{"type":"data-coach-select","data":{"selected":"z"}}]}]}`
	tests := []struct {
		name        string
		path, body  string
		headers     []string
		contentType string
		wantStatus  int
		wantCode    string
		wantField   string
	}{
		{name: "no API key", path: path(toulminID), body: chatText("hi"), headers: []string{},
			wantStatus: http.StatusUnauthorized, wantCode: "unauthorized"},
		{name: "another tenant's session", path: path(toulminID), body: chatText("hi"), headers: []string{"Authorization", "Bearer " + keyBeta},
			wantStatus: http.StatusNotFound, wantCode: "session_not_found"},
		{name: "unknown session", path: path(strings.Repeat("0", 32)), body: chatText("hi"),
			wantStatus: http.StatusNotFound, wantCode: "session_not_found"},
		{name: "malformed id", path: path("abc}:lock"), body: chatText("hi"),
			wantStatus: http.StatusNotFound, wantCode: "session_not_found"},
		{name: "not JSON", path: path(toulminID), body: `{"messages":[`,
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "trailing data", path: path(toulminID), body: chatText("hi") + `{}`,
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "text/plain", path: path(toulminID), body: chatText("hi"), contentType: "text/plain",
			wantStatus: http.StatusUnsupportedMediaType, wantCode: "unsupported_media_type"},
		{name: "over the body limit", path: path(toulminID), body: chatText(strings.Repeat("a", 4<<10)),
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: "body_too_large"},
		{name: "no learner message", path: path(toulminID), body: `{"messages":[]}`,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "messages"},
		{name: "control character in the text", path: path(toulminID), body: chatText("a\x1bb"),
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "message"},
		{name: "a selection the toulmin contract does not take", path: path(toulminID), body: select_,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "selected"},
		{name: "a selection before any card", path: path(cardsID), body: select_,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "selected"},
		{name: "another turn in flight", path: path(busyID), body: chatText("hi"),
			wantStatus: http.StatusConflict, wantCode: "session_busy"},
		{name: "GET", path: path(toulminID),
			wantStatus: http.StatusMethodNotAllowed, wantCode: "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			headers := tt.headers
			if headers == nil {
				headers = auth
			}
			if tt.contentType != "" {
				headers = append(headers[:len(headers):len(headers)], "Content-Type", tt.contentType)
			}
			method := http.MethodPost
			if tt.body == "" {
				method = http.MethodGet
			}
			calls := ts.model.Calls()
			r := ts.do(method, tt.path, tt.body, headers...)
			var b errorBody
			_ = json.Unmarshal([]byte(r.Body), &b)
			if r.Status != tt.wantStatus || b.Error != tt.wantCode || b.Field != tt.wantField {
				t.Errorf("%d %s, want %d %s naming %q", r.Status, r.Body, tt.wantStatus, tt.wantCode, tt.wantField)
			}
			if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want a JSON error body", ct)
			}
			if ts.model.Calls() != calls {
				t.Errorf("the model was called")
			}
		})
	}
}

// TestChatHeaders checks the stream's headers, and that a CORS preflight lets a browser app send
// useChat's request from an allowed origin.
func TestChatHeaders(t *testing.T) {
	const origin = "http://localhost:5173"
	ts := startServer(t, func(d *Deps) { d.CORSOrigins = []string{origin} })
	id := ts.create("toulmin")
	r := ts.do("POST", "/v1/sessions/"+id+"/chat", chatText("hi"), "Origin", origin)
	want := map[string]string{
		"Content-Type":                  "text/event-stream",
		"X-Vercel-Ai-Ui-Message-Stream": "v1",
		"Cache-Control":                 "no-cache",
		"X-Accel-Buffering":             "no",
		"Access-Control-Allow-Origin":   origin,
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Body, `data: {"type":"start","messageId":"`+r.Header.Get(HeaderTurn)+`"}`) || !strings.HasSuffix(r.Body, "data: [DONE]\n\n") {
		t.Errorf("%d %s, want a UI message stream", r.Status, r.Body)
	}
	pre := ts.do("OPTIONS", "/v1/sessions/"+id+"/chat", "", "Origin", origin,
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type")
	if pre.Status != http.StatusNoContent || pre.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Errorf("preflight: %d, allow-origin %q", pre.Status, pre.Header.Get("Access-Control-Allow-Origin"))
	}
}

// chatRegenerate is the body of the SDK's regenerate() after a turn on text: the messages up to
// the learner's last, with trigger regenerate-message.
func chatRegenerate(text string) string {
	return strings.Replace(chatText(text), `"submit-message"`, `"regenerate-message"`, 1)
}

// TestChatRegenerate checks that regenerate() runs the learner's last input again only when the
// turn that answered it stored nothing: after a failed turn it streams a new answer and stores
// the input once; after a stored turn (or the regenerated one) it is 422 naming the trigger and
// the model is not called.
func TestChatRegenerate(t *testing.T) {
	ts := startServer(t, nil)
	id := ts.create("toulmin")
	const good = `{"assistantText":"Tell me more.","step":"claim"}`
	steps := []struct {
		name       string
		answer     string
		body       string
		wantStatus int
		wantEnd    string // how the stream ends: "result" or "error"; "" for a JSON error
		wantCode   string
		wantInputs int // learner entries in the transcript afterwards
	}{
		{"the first message is answered", good, chatText("Cities should ban cars."), http.StatusOK, "result", "", 1},
		{"regenerating a stored turn", good, chatRegenerate("Cities should ban cars."), http.StatusUnprocessableEntity, "", "invalid_input", 1},
		{"the next message fails", "not json", chatText("Because of pollution."), http.StatusOK, "error", "", 1},
		{"regenerating the failed turn answers it", good, chatRegenerate("Because of pollution."), http.StatusOK, "result", "", 2},
		{"regenerating it again", good, chatRegenerate("Because of pollution."), http.StatusUnprocessableEntity, "", "invalid_input", 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			ts.model.answer = st.answer
			calls := ts.model.Calls()
			r := ts.do("POST", "/v1/sessions/"+id+"/chat", st.body)
			if r.Status != st.wantStatus {
				t.Fatalf("status %d %s, want %d", r.Status, r.Body, st.wantStatus)
			}
			switch st.wantEnd {
			case "":
				var b errorBody
				_ = json.Unmarshal([]byte(r.Body), &b)
				if b.Error != st.wantCode || b.Field != "trigger" {
					t.Errorf("error %s naming %q, want %s naming trigger", b.Error, b.Field, st.wantCode)
				}
				if ts.model.Calls() != calls {
					t.Errorf("the model was called")
				}
			case "result":
				if !strings.Contains(r.Body, `"type":"data-coach-result"`) {
					t.Errorf("no result part in %s", r.Body)
				}
			case "error":
				if !strings.Contains(r.Body, `"type":"data-coach-error"`) {
					t.Errorf("no error part in %s", r.Body)
				}
			}
			page, err := ts.store.Transcript(context.Background(), "", id, 0, 50)
			if err != nil {
				t.Fatal(err)
			}
			inputs := 0
			for _, e := range page.Entries {
				if e.Role == "learner" {
					inputs++
				}
			}
			if inputs != st.wantInputs {
				t.Errorf("%d learner entries stored, want %d", inputs, st.wantInputs)
			}
		})
	}
}

// TestChatMessages reads a session's transcript back as UI messages: the learner's message as a
// user message with its text, the coach's result as an assistant message with its text and
// result part, paged like /messages; another tenant's key gets 404 as for the session. The
// assistant message's id is the id of the turn that answered, which is also the messageId the
// chat route streamed it under and its X-Coach-Turn (the SDK tells a restored answer from its
// replay by it), and the transcript's entries name that turn.
func TestChatMessages(t *testing.T) {
	ts := startServer(t, withKeys)
	acme := []string{"Authorization", "Bearer " + keyAcme}
	id := ts.create("toulmin", acme...)
	posted := ts.do("POST", "/v1/sessions/"+id+"/chat", chatText("Cities should ban cars."), acme...)
	if posted.Status != http.StatusOK {
		t.Fatalf("turn: %d %s", posted.Status, posted.Body)
	}
	turn := posted.Header.Get(HeaderTurn)
	if want := `data: {"type":"start","messageId":"` + turn + `"}`; turn == "" || !strings.HasPrefix(posted.Body, want+"\n\n") {
		t.Fatalf("the stream opens with %.80q, want %q", posted.Body, want)
	}
	type page struct {
		Messages []struct {
			ID, Role string
			Parts    []struct {
				Type, Text string
				Data       json.RawMessage
			}
		}
		Next *int64
	}
	read := func(query string) page {
		t.Helper()
		r := ts.do("GET", "/v1/sessions/"+id+"/chat/messages"+query, "", acme...)
		if r.Status != http.StatusOK {
			t.Fatalf("GET chat/messages%s: %d %s, want 200", query, r.Status, r.Body)
		}
		var p page
		if err := json.Unmarshal([]byte(r.Body), &p); err != nil {
			t.Fatalf("%s: %v", r.Body, err)
		}
		return p
	}
	p := read("")
	if len(p.Messages) != 2 || p.Next != nil {
		t.Fatalf("got %d messages, next %v, want 2 and null", len(p.Messages), p.Next)
	}
	user, coachMsg := p.Messages[0], p.Messages[1]
	if user.ID != "msg-1" || user.Role != "user" || len(user.Parts) != 1 || user.Parts[0].Type != "text" || user.Parts[0].Text != "Cities should ban cars." {
		t.Errorf("first message %+v, want the learner's text as user message msg-1", user)
	}
	if coachMsg.ID != turn {
		t.Errorf("the assistant message's id %q, want the turn's %q", coachMsg.ID, turn)
	}
	if !strings.Contains(string(coachMsg.Parts[len(coachMsg.Parts)-1].Data), `"turn":"`+turn+`"`) {
		t.Errorf("data-coach-result %s, want it to name the turn %s as the streamed one does", coachMsg.Parts[len(coachMsg.Parts)-1].Data, turn)
	}
	var entries struct{ Messages []coach.TranscriptEntry }
	if r := ts.do("GET", "/v1/sessions/"+id+"/messages", "", acme...); r.Status != http.StatusOK || json.Unmarshal([]byte(r.Body), &entries) != nil ||
		len(entries.Messages) != 2 || entries.Messages[0].Turn != turn || entries.Messages[1].Turn != turn {
		t.Errorf("GET messages: %d %s; want both entries naming the turn %s", r.Status, r.Body, turn)
	}
	if coachMsg.Role != "assistant" || len(coachMsg.Parts) != 2 || coachMsg.Parts[0].Type != "text" || coachMsg.Parts[0].Text != "Tell me more." ||
		coachMsg.Parts[1].Type != "data-coach-result" || !strings.Contains(string(coachMsg.Parts[1].Data), `"assistantText":"Tell me more."`) {
		t.Errorf("second message %+v, want the assistant's text and its data-coach-result", coachMsg)
	}
	if p := read("?limit=1"); len(p.Messages) != 1 || p.Messages[0].Role != "assistant" || p.Next == nil || *p.Next != 2 {
		t.Errorf("limit=1: %+v, want the assistant message and next 2", p)
	}
	if p := read("?limit=1&before=2"); len(p.Messages) != 1 || p.Messages[0].Role != "user" || p.Next != nil {
		t.Errorf("limit=1&before=2: %+v, want the user message and next null", p)
	}
	tests := []struct {
		name, path string
		headers    []string
		wantStatus int
		wantCode   string
	}{
		{"another tenant's session", "/v1/sessions/" + id + "/chat/messages", []string{"Authorization", "Bearer " + keyBeta}, http.StatusNotFound, "session_not_found"},
		{"unknown session", "/v1/sessions/" + strings.Repeat("0", 32) + "/chat/messages", acme, http.StatusNotFound, "session_not_found"},
		{"bad limit", "/v1/sessions/" + id + "/chat/messages?limit=0", acme, http.StatusUnprocessableEntity, "invalid_input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("GET", tt.path, "", tt.headers...)
			if r.Status != tt.wantStatus || r.errorCode() != tt.wantCode {
				t.Errorf("status %d %s, want %d %s", r.Status, r.Body, tt.wantStatus, tt.wantCode)
			}
		})
	}
}
