package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
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

// TestToulminMessageLimit checks what docs/configuration.md says of the two limits: a toulmin message may
// have at most 4000 characters (the contract's own limit) however high COACH_MAX_MESSAGE_CHARS
// is, and at most COACH_MAX_MESSAGE_CHARS when that is lower.
func TestToulminMessageLimit(t *testing.T) {
	tests := []struct {
		name     string
		setting  int
		message  int
		want     int
		mentions string
	}{
		{"4000 under a higher setting", 20_000, 4000, http.StatusOK, ""},
		{"4001 under a higher setting", 20_000, 4001, http.StatusUnprocessableEntity, "4000"},
		{"the setting when lower", 100, 101, http.StatusUnprocessableEntity, "100"},
		{"at the lower setting", 100, 100, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, func(d *Deps) { d.MaxMessageChars = tt.setting; d.MaxBodyBytes = 1 << 20 })
			id := ts.create("toulmin")
			r := ts.do("POST", "/v1/sessions/"+id+"/turns", msgBody(strings.Repeat("é", tt.message)))
			if r.Status != tt.want {
				t.Fatalf("status %d %s, want %d", r.Status, clip(r.Body), tt.want)
			}
			if tt.want != http.StatusOK {
				var b errorBody
				if err := json.Unmarshal([]byte(r.Body), &b); err != nil || b.Field != "message" || !strings.Contains(b.Message, tt.mentions) {
					t.Errorf("body %s, want invalid_input on message mentioning %s", r.Body, tt.mentions)
				}
			}
		})
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
				{"GET", p + "/messages", "", http.StatusNotFound},
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

// formAnswer is a module answer that offers form "f": a free-text note and a checkbox.
const formAnswer = `{"content":{"text_blocks":[{"type":"paragraph","content":"Tell me."}],"forms":[{"id":"f","title":"F","fields":[` +
	`{"id":"note","type":"textarea","label":"Note"},{"id":"c","type":"checkbox","label":"C","options":[{"value":"a","label":"A"}]}]}]},` +
	`"meta":{"response_type":"assessment"}}`

// TestLearnerStrings sends every kind of learner-supplied string (message, selection, draft
// value, form id, form field names, form values and strings nested in them) with a control
// character, over the length limit, and with Unicode line separators: the first two are 422
// naming the field, the separators become "\n" before the text goes any further.
func TestLearnerStrings(t *testing.T) {
	ts := startServer(t, func(d *Deps) { d.MaxMessageChars = 100 })
	toulminID := ts.create("toulmin")
	moduleID := ts.create("module")
	turn := func(id string) string { return "/v1/sessions/" + id + "/turns" }
	chat := func(id string) string { return "/v1/sessions/" + id + "/chat" }
	chatBody := func(part string) string {
		return `{"messages":[{"id":"m","role":"user","parts":[` + part + `]}]}`
	}
	long := strings.Repeat("a", 101)
	tests := []struct {
		name, method, path, body string
		wantField                string
	}{
		{"message with ESC", "POST", turn(toulminID), `{"message":"a\u001bb"}`, "message"},
		{"message with a C1 control", "POST", turn(toulminID), `{"message":"a\u009bb"}`, "message"},
		{"message too long", "POST", turn(toulminID), msgBody(long), "message"},
		{"selected with NUL", "POST", turn(toulminID), `{"selected":"a\u0000"}`, "selected"},
		{"selected too long", "POST", turn(toulminID), `{"selected":"` + long + `"}`, "selected"},
		{"draft with BEL", "PUT", "/v1/sessions/" + toulminID + "/draft", `{"field":"claim","value":"a\u0007"}`, "value"},
		{"draft too long", "PUT", "/v1/sessions/" + toulminID + "/draft", `{"field":"claim","value":"` + long + `"}`, "value"},
		{"form id with ESC", "POST", turn(moduleID), `{"form":{"id":"f\u001b","values":{}}}`, "form.id"},
		{"form field name with NUL", "POST", turn(moduleID), `{"form":{"id":"f","values":{"n\u0000":"x"}}}`, "form.values.n\x00"},
		{"form value with control characters", "POST", turn(moduleID), `{"form":{"id":"f","values":{"note":"a\u0001\u001bb"}}}`, "form.values.note"},
		{"form value too long", "POST", turn(moduleID), `{"form":{"id":"f","values":{"note":"` + long + `"}}}`, "form.values.note"},
		{"form value nested in an array", "POST", turn(moduleID), `{"form":{"id":"f","values":{"c":["a","\u001b"]}}}`, "form.values.c"},
		{"form value nested in an object", "POST", turn(moduleID), `{"form":{"id":"f","values":{"c":{"k":["\u0085\u001b"]}}}}`, "form.values.c"},
		{"form key nested in an object", "POST", turn(moduleID), `{"form":{"id":"f","values":{"c":{"k\u0007":1}}}}`, "form.values.c"},
		{"form number too long", "POST", turn(moduleID), `{"form":{"id":"f","values":{"n":1` + strings.Repeat("0", 100) + `}}}`, "form.values.n"},
		{"form number nested too long", "POST", turn(moduleID), `{"form":{"id":"f","values":{"c":[0.` + strings.Repeat("0", 100) + `1]}}}`, "form.values.c"},
		{"form values too long together", "POST", turn(moduleID), `{"form":{"id":"f","values":{"note":"` + long[:60] + `","x":"` + long[:60] + `"}}}`, "form.values"},
		// The chat route's text and data parts are the same learner strings.
		{"chat text with ESC", "POST", chat(toulminID), chatBody(`{"type":"text","text":"a\u001bb"}`), "message"},
		{"chat text too long", "POST", chat(toulminID), chatBody(`{"type":"text","text":"` + long + `"}`), "message"},
		{"chat selection with NUL", "POST", chat(toulminID), chatBody(`{"type":"data-coach-select","data":{"selected":"a\u0000"}}`), "selected"},
		{"chat form value with controls", "POST", chat(moduleID), chatBody(`{"type":"data-coach-form","data":{"id":"f","values":{"note":"a\u0001\u001bb"}}}`), "form.values.note"},
		{"chat form id too long", "POST", chat(moduleID), chatBody(`{"type":"data-coach-form","data":{"id":"` + long + `","values":{}}}`), "form.id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.path, tt.body)
			var b errorBody
			if err := json.Unmarshal([]byte(r.Body), &b); r.Status != http.StatusUnprocessableEntity || err != nil || b.Error != "invalid_input" || b.Field != tt.wantField {
				t.Errorf("status %d body %s, want 422 invalid_input on field %q", r.Status, clip(r.Body), tt.wantField)
			}
		})
	}
	if n := ts.model.Calls(); n != 0 {
		t.Errorf("model calls = %d, want 0: refused input must not reach the model", n)
	}

	t.Run("separators become line breaks", func(t *testing.T) {
		lastUser := func() string {
			reqs := ts.model.Requests()
			msgs := reqs[len(reqs)-1].Messages
			return msgs[len(msgs)-1].Content
		}
		ts.model.answer = formAnswer
		r := ts.do("POST", turn(moduleID), `{"message":"one\u2028two\u2029three\u0085four"}`)
		if r.Status != http.StatusOK || !strings.Contains(r.Body, `"type":"result"`) {
			t.Fatalf("message turn: status %d %s", r.Status, clip(r.Body))
		}
		if got, want := lastUser(), "one\ntwo\nthree\nfour"; got != want {
			t.Errorf("message sent to the model = %q, want %q", got, want)
		}
		r = ts.do("POST", turn(moduleID), `{"form":{"id":"f","values":{"note":"x\u2028y","c":["a"]}}}`)
		if r.Status != http.StatusOK || !strings.Contains(r.Body, `"type":"result"`) {
			t.Fatalf("form turn: status %d %s", r.Status, clip(r.Body))
		}
		if got := lastUser(); strings.ContainsAny(got, "\u0085\u2028\u2029") || !strings.Contains(got, `"x\ny"`) {
			t.Errorf("form message sent to the model = %q, want the separator as a quoted line break", got)
		}
		r = ts.do("PUT", "/v1/sessions/"+toulminID+"/draft", `{"field":"claim","value":"p\u2029q"}`)
		if r.Status != http.StatusOK || !strings.Contains(r.Body, `"claim":"p\nq"`) {
			t.Errorf("draft: status %d %s, want the claim stored as \"p\\nq\"", r.Status, clip(r.Body))
		}
	})
}

// TestSeparatorsInFormNames sends form field names, at the top and nested in a value, with the
// Unicode line and paragraph separators. A name is matched, not rewritten, so it cannot be
// normalised as text is: the one check refuses it, naming the field, before any contract sees it.
func TestSeparatorsInFormNames(t *testing.T) {
	s := New(Deps{})
	tests := []struct {
		name   string
		values map[string]json.RawMessage
		field  string
	}{
		{"line separator in a name", map[string]json.RawMessage{"n\u2028": json.RawMessage(`"x"`)}, "form.values.n\u2028"},
		{"paragraph separator in a nested name", map[string]json.RawMessage{"c": json.RawMessage(`{"k\u2029":1}`)}, "form.values.c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := coach.TurnInput{Form: &coach.FormAnswer{ID: "f", Values: tt.values}}
			err := s.cleanTurn(&in)
			if e := coach.AsError(err); err == nil || e.Code != coach.CodeInvalidInput || e.Field != tt.field {
				t.Errorf("cleanTurn = %v, want invalid_input on field %q", err, tt.field)
			}
		})
	}
}
