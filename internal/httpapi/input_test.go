package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// moduleAnswer is a valid structured response for module sessions.
const moduleAnswer = `{"content":{"text_blocks":[{"type":"paragraph","content":"Ok."}]},"meta":{"response_type":"conversational"}}`

func msgBody(text string) string {
	b, _ := json.Marshal(map[string]string{"message": text})
	return string(b)
}

func TestHostileBodies(t *testing.T) {
	ts := startServer(t, func(d *Deps) { d.MaxBodyBytes = 64 << 10 })
	big := startServer(t, func(d *Deps) { d.MaxBodyBytes = 1 << 20 })
	toulminID := ts.create("toulmin")
	bigID := big.create("toulmin")
	turn := "/v1/sessions/" + toulminID + "/turns"
	tests := []struct {
		name        string
		srv         *testServer
		method      string
		path        string
		body        string
		contentType string
		wantStatus  int
		wantCode    string
		wantField   string
	}{
		{name: "body over the limit", method: "POST", path: turn, body: msgBody(strings.Repeat("a", 64<<10)),
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: codeBodyTooLarge},
		{name: "session body over the limit", method: "POST", path: "/v1/sessions", body: `{"contract":"toulmin","x":"` + strings.Repeat("a", 64<<10) + `"}`,
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: codeBodyTooLarge},
		{name: "draft body over the limit", method: "PUT", path: "/v1/sessions/" + toulminID + "/draft", body: `{"field":"claim","value":"` + strings.Repeat("a", 64<<10) + `"}`,
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: codeBodyTooLarge},
		{name: "100k brackets hit the body limit", method: "POST", path: turn, body: strings.Repeat("[", 100_000),
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: codeBodyTooLarge},
		{name: "100k brackets under a larger limit", srv: big, method: "POST", path: "/v1/sessions/" + bigID + "/turns", body: strings.Repeat("[", 100_000),
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "deep nesting inside a member", srv: big, method: "POST", path: "/v1/sessions/" + bigID + "/turns",
			body:       `{"form":{"id":"f","values":{"a":` + strings.Repeat(`{"a":`, 20_000) + `1` + strings.Repeat("}", 20_000) + `}}}`,
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "invalid UTF-8", method: "POST", path: turn, body: "{\"message\":\"caf\xe9\"}",
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "overlong UTF-8 encoding", method: "POST", path: turn, body: "{\"message\":\"\xc0\xaf\"}",
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "UTF-16 surrogate bytes", method: "POST", path: turn, body: "{\"message\":\"\xed\xa0\x80\"}",
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "raw control character in a string", method: "POST", path: turn, body: "{\"message\":\"a\x01b\"}",
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "escaped NUL", method: "POST", path: turn, body: `{"message":"a\u0000b"}`,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "message"},
		{name: "escaped ESC (terminal injection)", method: "POST", path: turn, body: `{"message":"\u001b[2J hi"}`,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "message"},
		{name: "escaped DEL", method: "POST", path: turn, body: `{"message":"a\u007fb"}`,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "message"},
		{name: "control character in selected", method: "POST", path: turn, body: `{"selected":"a\u0007"}`,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "selected"},
		{name: "control character in a draft", method: "PUT", path: "/v1/sessions/" + toulminID + "/draft", body: `{"field":"claim","value":"x\u0000"}`,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "value"},
		{name: "control character on the seed route", method: "POST", path: "/api/coach", body: `{"sessionId":"` + toulminID + `","message":"\u0000"}`,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "message"},
		{name: "line breaks and tabs are text", method: "POST", path: turn, body: `{"message":"line one\nline two\r\n\tindented"}`,
			wantStatus: http.StatusOK},
		{name: "text/plain", method: "POST", path: turn, body: msgBody("hi"), contentType: "text/plain",
			wantStatus: http.StatusUnsupportedMediaType, wantCode: codeUnsupportedMedia},
		{name: "form encoding", method: "POST", path: turn, body: "message=hi", contentType: "application/x-www-form-urlencoded",
			wantStatus: http.StatusUnsupportedMediaType, wantCode: codeUnsupportedMedia},
		{name: "no content type", method: "POST", path: turn, body: msgBody("hi"), contentType: "-",
			wantStatus: http.StatusUnsupportedMediaType, wantCode: codeUnsupportedMedia},
		{name: "a JSON look-alike media type", method: "POST", path: turn, body: msgBody("hi"), contentType: "application/json-patch+json",
			wantStatus: http.StatusUnsupportedMediaType, wantCode: codeUnsupportedMedia},
		{name: "JSON with a charset", method: "POST", path: turn, body: msgBody("hi"), contentType: "application/json; charset=utf-8",
			wantStatus: http.StatusOK},
		{name: "empty body", method: "POST", path: turn, body: " ",
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "two JSON values", method: "POST", path: turn, body: `{"message":"a"}{"message":"b"}`,
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "wrong member type", method: "POST", path: turn, body: `{"message":["a"]}`,
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request"},
		{name: "null body", method: "POST", path: turn, body: `null`,
			wantStatus: http.StatusUnprocessableEntity, wantCode: "invalid_input", wantField: "message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.srv
			if srv == nil {
				srv = ts
			}
			var h []string
			switch tt.contentType {
			case "":
			case "-":
				h = []string{"Content-Type", ""}
			default:
				h = []string{"Content-Type", tt.contentType}
			}
			r := srv.do(tt.method, tt.path, tt.body, h...)
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d %s, want %d", r.Status, clip(r.Body), tt.wantStatus)
			}
			if tt.wantCode == "" {
				return
			}
			var b errorBody
			if err := json.Unmarshal([]byte(r.Body), &b); err != nil || b.Error != tt.wantCode || b.Field != tt.wantField {
				t.Errorf("body %s, want error %q field %q", clip(r.Body), tt.wantCode, tt.wantField)
			}
		})
	}
	if n := ts.model.Calls(); n != 2 {
		t.Errorf("model calls = %d, want 2 (only the two accepted turns)", n)
	}
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestMessageLength checks the gateway's message limit (COACH_MAX_MESSAGE_CHARS, default 8000
// characters, not bytes) on module sessions, whose contract has no lower limit of its own.
func TestMessageLength(t *testing.T) {
	ts := startServer(t, nil)
	ts.model.answer = moduleAnswer
	tests := []struct {
		name       string
		message    string
		wantStatus int
	}{
		{"7999 characters", strings.Repeat("a", 7999), http.StatusOK},
		{"8000 characters", strings.Repeat("a", 8000), http.StatusOK},
		{"8000 three-byte characters", strings.Repeat("€", 8000), http.StatusOK},
		{"8001 characters", strings.Repeat("a", 8001), http.StatusUnprocessableEntity},
		{"10k characters", strings.Repeat("a", 10_000), http.StatusUnprocessableEntity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := ts.create("module")
			r := ts.do("POST", "/v1/sessions/"+id+"/turns", msgBody(tt.message))
			if r.Status != tt.wantStatus {
				t.Fatalf("status %d %s, want %d", r.Status, clip(r.Body), tt.wantStatus)
			}
			if tt.wantStatus == http.StatusOK {
				if !strings.Contains(r.Body, `"type":"result"`) {
					t.Errorf("stream %s, want a result", clip(r.Body))
				}
				return
			}
			var b errorBody
			if err := json.Unmarshal([]byte(r.Body), &b); err != nil || b.Error != "invalid_input" || b.Field != "message" {
				t.Errorf("body %s, want invalid_input on field message", r.Body)
			}
		})
	}
	toulminID := ts.create("toulmin")
	if r := ts.do("POST", "/v1/sessions/"+toulminID+"/turns", msgBody(strings.Repeat("a", 10_000))); r.Status != http.StatusUnprocessableEntity {
		t.Errorf("10k characters to a toulmin session: status %d, want 422", r.Status)
	}
}

// TestHostileSessionIDs sends ids that are not session ids, among them attempts at Redis key
// and protocol injection, to every route that takes one: each is "no such session" and none
// reaches the store.
func TestHostileSessionIDs(t *testing.T) {
	ts := startServer(t, nil)
	ids := []string{
		"abc}:lock",
		"*",
		"x\r\nFLUSHALL",
		"x\r\n*1\r\n$8\r\nFLUSHALL\r\n",
		"{x}",
		"coachgw:{" + strings.Repeat("a", 32) + "}:s",
		strings.Repeat("a", 33),
		strings.Repeat("a", 31),
		strings.Repeat("A", 32),
		strings.Repeat("g", 32),
		strings.Repeat("a", 31) + "\x00",
		"../" + strings.Repeat("a", 29),
		strings.Repeat("a", 10_000),
	}
	for _, id := range ids {
		t.Run(clip(strings.ToValidUTF8(id, "?")), func(t *testing.T) {
			p := "/v1/sessions/" + url.PathEscape(id)
			calls := []struct {
				method, path, body string
				want               int
			}{
				{"GET", p, "", http.StatusNotFound},
				{"POST", p + "/turns", `{"message":"hi"}`, http.StatusNotFound},
				{"PUT", p + "/draft", `{"field":"claim","value":"x"}`, http.StatusNotFound},
				{"POST", p + "/proposal", `{"action":"accept"}`, http.StatusNotFound},
				{"DELETE", p, "", http.StatusNoContent},
				{"POST", "/api/coach", `{"sessionId":` + jsonString(id) + `,"message":"hi"}`, http.StatusNotFound},
			}
			for _, c := range calls {
				r := ts.do(c.method, c.path, c.body)
				if r.Status != c.want {
					t.Errorf("%s %s: status %d %s, want %d", c.method, clip(c.path), r.Status, clip(r.Body), c.want)
				}
				// A ../ id is resolved by the client or the router into another route; the
				// rest must be the session's own 404.
				if c.want == http.StatusNotFound && !strings.HasPrefix(id, "../") && r.errorCode() != "session_not_found" {
					t.Errorf("%s %s: body %s, want session_not_found", c.method, clip(c.path), clip(r.Body))
				}
			}
		})
	}
	if asked := ts.store.Asked(); len(asked) != 0 {
		t.Errorf("the store was asked about %q; malformed ids must never reach it", asked)
	}
	if n := ts.model.Calls(); n != 0 {
		t.Errorf("model calls = %d, want 0", n)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
