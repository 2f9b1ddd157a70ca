package contracttest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/cards"
	"github.com/coachgw/coachgw/internal/config"
	"github.com/coachgw/coachgw/internal/fakellm"
	"github.com/coachgw/coachgw/internal/openapitest"
	"github.com/coachgw/coachgw/internal/redisstore"
	"github.com/coachgw/coachgw/internal/safety"
	"github.com/coachgw/coachgw/internal/schema"
)

// harness is a running gateway whose every answer is checked against api/openapi.yaml.
type harness struct {
	g *apptest.Gateway
	v *openapitest.Validator
	// auth, when set, is sent as every request's Authorization header.
	auth string
}

// answer is one checked exchange.
type answer struct {
	status int
	header http.Header
	body   []byte
	// lines are the decoded lines of an NDJSON answer.
	lines []apptest.Line
}

// send makes a request with a raw body (nil for none) through the validating client, so the
// exchange is checked against the document on t.
func (h *harness) send(t *testing.T, method, path, contentType string, body []byte) answer {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, h.g.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if h.auth != "" {
		req.Header.Set("Authorization", h.auth)
	}
	resp, err := h.v.Client(t).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: raw}
	if resp.Header.Get("Content-Type") == openapitest.NDJSON {
		for line := range bytes.Lines(raw) {
			var l apptest.Line
			if err := json.Unmarshal(line, &l); err != nil {
				t.Fatalf("line %q is not JSON: %v", line, err)
			}
			l.Raw = string(bytes.TrimSuffix(line, []byte("\n")))
			if err := apptest.CheckCard(l); err != nil {
				t.Error(err)
			}
			a.lines = append(a.lines, l)
		}
	}
	return a
}

// call sends body encoded as JSON (no body when nil).
func (h *harness) call(t *testing.T, method, path string, body any) answer {
	t.Helper()
	if body == nil {
		return h.send(t, method, path, "", nil)
	}
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return h.send(t, method, path, "application/json", b)
}

// create creates a session and returns its id.
func (h *harness) create(t *testing.T, body string) string {
	t.Helper()
	a := h.send(t, "POST", "/v1/sessions", "application/json", []byte(body))
	var s struct{ ID string }
	if a.status != http.StatusCreated || json.Unmarshal(a.body, &s) != nil || s.ID == "" {
		t.Fatalf("POST /v1/sessions %s: status %d body %s, want 201 with a session", body, a.status, a.body)
	}
	return s.ID
}

// kinds renders the line types of a stream, a run of deltas as one, e.g. "delta reset delta
// result": how many delta lines a text makes depends on how the model's stream was cut.
func (a answer) kinds() string {
	var k []string
	for _, l := range a.lines {
		switch {
		case l.Type == "error":
			k = append(k, "error:"+l.Error)
		case l.Type == "delta" && len(k) > 0 && k[len(k)-1] == "delta":
		default:
			k = append(k, l.Type)
		}
	}
	return strings.Join(k, " ")
}

func (a answer) last() apptest.Line {
	if len(a.lines) == 0 {
		return apptest.Line{}
	}
	return a.lines[len(a.lines)-1]
}

// wantError fails unless a is the JSON error status with code (and field, when not empty).
func wantError(t *testing.T, what string, a answer, status int, code, field string) {
	t.Helper()
	var e struct{ Error, Message, Field string }
	_ = json.Unmarshal(a.body, &e)
	if a.status != status || e.Error != code || e.Message == "" || (field != "" && e.Field != field) {
		t.Errorf("%s: status %d body %s, want %d %s (field %q) with a message", what, a.status, a.body, status, code, field)
	}
}

// wantStream fails unless a is a 200 stream of exactly the line types kinds.
func wantStream(t *testing.T, what string, a answer, kinds string) {
	t.Helper()
	if a.status != http.StatusOK || a.kinds() != kinds {
		t.Errorf("%s: status %d lines %q, want 200 with %q\n%s", what, a.status, a.kinds(), kinds, a.body)
	}
}

// wantResultSchema fails unless the result line's result follows the api schema name.
func wantResultSchema(t *testing.T, a answer, name string) {
	t.Helper()
	doc, err := schema.Decode(a.last().Result)
	if err == nil {
		err = schema.Load(name).Validate(doc)
	}
	if err != nil {
		t.Errorf("result %s does not follow api/schemas/%s: %v", a.last().Result, name, err)
	}
}

// cardCall is a display_card call streamed in 4-byte pieces.
func cardCall(args string) fakellm.Reply {
	return fakellm.Reply{ToolCall: &fakellm.ToolCall{Name: cards.ToolName, Arguments: args}, Chunks: chop(args, 4)}
}

// chop cuts s into pieces of n bytes, or a little more to keep a character whole.
func chop(s string, n int) []string {
	var out []string
	for s != "" {
		cut := min(n, len(s))
		for cut < len(s) && s[cut]&0xC0 == 0x80 {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}

// moduleID is the shipped learning module every module case uses.
const moduleID = "anxiety-basics"

const longClaim = "Private cars should be banned from city centres to cut pollution."

// proposalOutput is a toulmin answer with a proposal the guards keep on a step's second turn.
var proposalOutput = apptest.Obj("assistantText", "Try this wording.", "step", "claim", "confidence", 0.9,
	"proposedUpdate", map[string]string{"field": "claim", "value": longClaim, "rationale": "clear"})

// cases drive every documented route; each runs on the shared gateway.
var cases = []struct {
	name string
	run  func(t *testing.T, h *harness)
}{
	{"create sessions", func(t *testing.T, h *harness) {
		for _, body := range []string{
			`{"contract":"toulmin"}`,
			`{"contract":"cards","locale":"es"}`,
			`{"contract":"module","module":"` + moduleID + `","locale":"en"}`,
		} {
			a := h.send(t, "POST", "/v1/sessions", "application/json", []byte(body))
			if a.status != http.StatusCreated || !strings.HasPrefix(a.header.Get("Location"), "/v1/sessions/") {
				t.Errorf("POST %s: status %d Location %q, want 201 with the session's Location", body, a.status, a.header.Get("Location"))
			}
		}
	}},
	{"create errors", func(t *testing.T, h *harness) {
		tests := []struct {
			name, ct, body string
			status         int
			code           string
		}{
			{"malformed JSON", "application/json", `{"contract":`, 400, "invalid_request"},
			{"unknown contract", "application/json", `{"contract":"chess"}`, 400, "unknown_contract"},
			{"unknown locale", "application/json", `{"contract":"toulmin","locale":"fr"}`, 400, "invalid_request"},
			{"unknown module", "application/json", `{"contract":"module","module":"no-such-module"}`, 404, "module_not_found"},
			{"not JSON", "text/plain", `contract=toulmin`, 415, "unsupported_media_type"},
			{"too large", "application/json", `{"contract":"toulmin","locale":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "body_too_large"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				wantError(t, "POST /v1/sessions", h.send(t, "POST", "/v1/sessions", tt.ct, []byte(tt.body)), tt.status, tt.code, "")
			})
		}
	}},
	{"read and delete", func(t *testing.T, h *harness) {
		id := h.create(t, `{"contract":"toulmin"}`)
		if a := h.call(t, "GET", "/v1/sessions/"+id, nil); a.status != http.StatusOK {
			t.Errorf("GET: status %d, want 200", a.status)
		}
		if a := h.call(t, "DELETE", "/v1/sessions/"+id, nil); a.status != http.StatusNoContent || len(a.body) != 0 {
			t.Errorf("DELETE: status %d body %q, want 204 without a body", a.status, a.body)
		}
		wantError(t, "GET after DELETE", h.call(t, "GET", "/v1/sessions/"+id, nil), 404, "session_not_found", "")
		wantError(t, "GET of a malformed id", h.call(t, "GET", "/v1/sessions/not-an-id", nil), 404, "session_not_found", "")
		if a := h.call(t, "DELETE", "/v1/sessions/"+id, nil); a.status != http.StatusNoContent {
			t.Errorf("DELETE of a deleted session: status %d, want 204", a.status)
		}
	}},
	{"draft", func(t *testing.T, h *harness) {
		id := h.create(t, `{"contract":"toulmin"}`)
		path := "/v1/sessions/" + id + "/draft"
		a := h.call(t, "PUT", path, map[string]string{"field": "claim", "value": longClaim})
		if a.status != http.StatusOK || !bytes.Contains(a.body, []byte(longClaim)) {
			t.Errorf("PUT draft: status %d body %s, want 200 with the draft", a.status, a.body)
		}
		cardsID := h.create(t, `{"contract":"cards"}`)
		tests := []struct {
			name, path, ct, body string
			status               int
			code, field          string
		}{
			{"unknown field", path, "application/json", `{"field":"verdict","value":"x"}`, 422, "invalid_input", "field"},
			{"control character", path, "application/json", `{"field":"claim","value":"a\u0001b"}`, 422, "invalid_input", "value"},
			{"malformed JSON", path, "application/json", `{"field":`, 400, "invalid_request", ""},
			{"not JSON", path, "text/plain", `claim`, 415, "unsupported_media_type", ""},
			{"too large", path, "application/json", `{"field":"claim","value":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "body_too_large", ""},
			{"cards session", "/v1/sessions/" + cardsID + "/draft", "application/json", `{"field":"claim","value":"x"}`, 400, "invalid_request", ""},
			{"unknown session", "/v1/sessions/" + strings.Repeat("0", 32) + "/draft", "application/json", `{"field":"claim","value":"x"}`, 404, "session_not_found", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				wantError(t, "PUT draft", h.send(t, "PUT", tt.path, tt.ct, []byte(tt.body)), tt.status, tt.code, tt.field)
			})
		}
	}},
	{"proposal", func(t *testing.T, h *harness) {
		for _, action := range []string{"accept", "reject"} {
			t.Run(action, func(t *testing.T) {
				id := h.create(t, `{"contract":"toulmin"}`)
				path := "/v1/sessions/" + id + "/proposal"
				wantError(t, "no proposal yet", h.call(t, "POST", path, map[string]string{"action": action}), 409, "no_pending_proposal", "")
				h.g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Tell me more.", "step", "claim")}, fakellm.Reply{Content: proposalOutput})
				wantStream(t, "warm-up turn", h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("cars")), "delta result")
				a := h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg(longClaim))
				if !strings.Contains(string(a.last().Session.State), `"pendingProposal":{`) {
					t.Fatalf("turn with a proposal: state %s, want a pending proposal", a.last().Session.State)
				}
				a = h.call(t, "POST", path, map[string]string{"action": action})
				if a.status != http.StatusOK {
					t.Errorf("%s: status %d body %s, want 200", action, a.status, a.body)
				}
			})
		}
		id := h.create(t, `{"contract":"toulmin"}`)
		path := "/v1/sessions/" + id + "/proposal"
		cardsID := h.create(t, `{"contract":"cards"}`)
		tests := []struct {
			name, path, ct, body string
			status               int
			code, field          string
		}{
			{"unknown action", path, "application/json", `{"action":"maybe"}`, 422, "invalid_input", "action"},
			{"malformed JSON", path, "application/json", `{"action"`, 400, "invalid_request", ""},
			{"not JSON", path, "text/plain", `accept`, 415, "unsupported_media_type", ""},
			{"too large", path, "application/json", `{"action":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "body_too_large", ""},
			{"cards session", "/v1/sessions/" + cardsID + "/proposal", "application/json", `{"action":"accept"}`, 400, "invalid_request", ""},
			{"unknown session", "/v1/sessions/" + strings.Repeat("a", 32) + "/proposal", "application/json", `{"action":"accept"}`, 404, "session_not_found", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				wantError(t, "POST proposal", h.send(t, "POST", tt.path, tt.ct, []byte(tt.body)), tt.status, tt.code, tt.field)
			})
		}
	}},
	{"toulmin turns", func(t *testing.T, h *harness) {
		streams := []struct {
			name    string
			replies []fakellm.Reply
			body    string
			kinds   string
		}{
			{"recorded fixture", []fakellm.Reply{{Fixture: "toulmin-claim-first-turn"}}, `{"message":"Cities should ban cars."}`, ""},
			{"step the UI believes", []fakellm.Reply{{Content: apptest.Obj("assistantText", "Good.", "step", "claim", "nextQuestion", "Why?")}}, `{"message":"hi","step":"claim"}`, "delta result"},
			{"step mismatch", nil, `{"message":"hi","step":"warrant"}`, "error:coach_step_mismatch"},
			{"invalid output twice", []fakellm.Reply{
				{Chunks: []string{`{"assistantText":"Hi `, `there", oops`}},
				{Chunks: []string{`{"assistantText":"Hi `, `again", oops`}},
			}, `{"message":"hi"}`, "delta reset delta error:coach_validation_failed"},
			{"cut after text, recovered", []fakellm.Reply{
				{Chunks: []string{`{"assistantText":"Hello `, `there `, `friend."}`}, Fault: fakellm.Fault{Cut: true, CutAfter: 2}},
				{Chunks: []string{`{"assistantText":"Hello again.",`, `"step":"claim"}`}},
			}, `{"message":"hi"}`, "delta reset delta result"},
			{"upstream failure", []fakellm.Reply{{Fault: fakellm.Fault{Status: 400}}}, `{"message":"hi"}`, "error:coach_stream_failed"},
		}
		for _, tt := range streams {
			t.Run(tt.name, func(t *testing.T) {
				id := h.create(t, `{"contract":"toulmin"}`)
				h.g.LLM.Enqueue(tt.replies...)
				a := h.send(t, "POST", "/v1/sessions/"+id+"/turns", "application/json", []byte(tt.body))
				if tt.kinds == "" {
					if a.status != http.StatusOK || a.last().Type != "result" || len(a.lines) < 2 {
						t.Errorf("status %d lines %q, want deltas and a result", a.status, a.kinds())
					}
				} else {
					wantStream(t, tt.name, a, tt.kinds)
				}
				if a.last().Type == "result" {
					wantResultSchema(t, a, "coach-ai-result.json")
				}
			})
		}
		id := h.create(t, `{"contract":"toulmin"}`)
		path := "/v1/sessions/" + id + "/turns"
		errs := []struct {
			name, path, ct, body string
			status               int
			code, field          string
		}{
			{"malformed JSON", path, "application/json", `{"message":`, 400, "invalid_request", ""},
			{"not JSON", path, "text/plain", `hi`, 415, "unsupported_media_type", ""},
			{"too large", path, "application/json", `{"message":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "body_too_large", ""},
			{"message too long", path, "application/json", `{"message":"` + strings.Repeat("x", 8001) + `"}`, 422, "invalid_input", "message"},
			{"control character", path, "application/json", `{"message":"a\u0000b"}`, 422, "invalid_input", "message"},
			{"unknown session", "/v1/sessions/" + strings.Repeat("b", 32) + "/turns", "application/json", `{"message":"hi"}`, 404, "session_not_found", ""},
		}
		for _, tt := range errs {
			t.Run(tt.name, func(t *testing.T) {
				wantError(t, "POST turns", h.send(t, "POST", tt.path, tt.ct, []byte(tt.body)), tt.status, tt.code, tt.field)
			})
		}
	}},
	{"transcript and continue", func(t *testing.T, h *harness) {
		id := h.create(t, `{"contract":"toulmin"}`)
		base := "/v1/sessions/" + id
		page := func(t *testing.T, query string) (seqs []int64, next *int64, entries []map[string]json.RawMessage) {
			t.Helper()
			a := h.call(t, "GET", base+"/messages"+query, nil)
			var p struct {
				Messages []map[string]json.RawMessage
				Next     *int64
			}
			if a.status != http.StatusOK || json.Unmarshal(a.body, &p) != nil || p.Messages == nil {
				t.Fatalf("GET messages%s: status %d body %s, want 200 with a messages array", query, a.status, a.body)
			}
			for _, m := range p.Messages {
				var seq int64
				_ = json.Unmarshal(m["seq"], &seq)
				seqs = append(seqs, seq)
			}
			return seqs, p.Next, p.Messages
		}
		if seqs, next, _ := page(t, ""); len(seqs) != 0 || next != nil {
			t.Errorf("a new session's transcript: seqs %v next %v, want empty and null", seqs, next)
		}
		h.g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Tell me more.", "step", "claim")}, fakellm.Reply{Content: proposalOutput})
		wantStream(t, "warm-up turn", h.call(t, "POST", base+"/turns", apptest.Msg("cars")), "delta result")
		wantStream(t, "turn with a proposal", h.call(t, "POST", base+"/turns", apptest.Msg(longClaim)), "delta result")
		if a := h.call(t, "POST", base+"/proposal", map[string]string{"action": "accept"}); a.status != http.StatusOK {
			t.Fatalf("accept: status %d body %s", a.status, a.body)
		}
		h.g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Now the grounds.", "step", "grounds", "nextQuestion", "What evidence?")})
		a := h.call(t, "POST", base+"/turns", map[string]any{"continue": true, "step": "grounds"})
		wantStream(t, "continue turn", a, "delta result")
		if st := string(a.last().Session.State); !strings.Contains(st, `"step":"grounds"`) || strings.Contains(st, `"grounds":1`) {
			t.Errorf("state after the continue turn %s, want step grounds with no turn counted", st)
		}
		h.g.LLM.Enqueue(fakellm.Reply{Fault: fakellm.Fault{Status: 400}})
		wantStream(t, "failed turn", h.call(t, "POST", base+"/turns", apptest.Msg("evidence")), "error:coach_stream_failed")

		seqs, next, entries := page(t, "")
		if fmt.Sprint(seqs) != "[1 2 3 4 5 6 7]" || next != nil {
			t.Fatalf("transcript seqs %v next %v, want 1..7 and null (the failed turn adds nothing)", seqs, next)
		}
		want := []struct{ role, member, contains string }{
			{"learner", "input", `{"message":"cars"}`},
			{"coach", "result", `"Tell me more."`},
			{"learner", "input", longClaim},
			{"coach", "result", `"proposedUpdate"`},
			{"learner", "input", `{"action":"accept"}`},
			{"learner", "input", `"continue":true`},
			{"coach", "result", `"Now the grounds.`},
		}
		for i, w := range want {
			e := entries[i]
			if string(e["role"]) != `"`+w.role+`"` || !strings.Contains(string(e[w.member]), w.contains) {
				t.Errorf("entry %d = %v, want a %s entry whose %s has %s", i+1, e, w.role, w.member, w.contains)
			}
			if w.member == "result" && string(e["fallback"]) != "false" {
				t.Errorf("entry %d fallback = %s, want false", i+1, e["fallback"])
			}
		}
		for _, p := range []struct {
			query string
			seqs  string
			next  int64
		}{
			{"?limit=3", "[5 6 7]", 5},
			{"?limit=3&before=5", "[2 3 4]", 2},
			{"?limit=3&before=2", "[1]", 0},
		} {
			seqs, next, _ := page(t, p.query)
			if fmt.Sprint(seqs) != p.seqs || (next == nil) != (p.next == 0) || (next != nil && *next != p.next) {
				t.Errorf("page %s: seqs %v next %v, want %s next %d", p.query, seqs, next, p.seqs, p.next)
			}
		}
		for _, e := range []struct{ query, field string }{
			{"?limit=0", "limit"}, {"?limit=201", "limit"}, {"?limit=ten", "limit"}, {"?before=-3", "before"},
		} {
			wantError(t, "GET messages"+e.query, h.call(t, "GET", base+"/messages"+e.query, nil), 422, "invalid_input", e.field)
		}
		wantError(t, "GET messages of an unknown session", h.call(t, "GET", "/v1/sessions/"+strings.Repeat("e", 32)+"/messages", nil), 404, "session_not_found", "")
		wantError(t, "continue with a message", h.call(t, "POST", base+"/turns", map[string]any{"continue": true, "message": "hi"}), 422, "invalid_input", "continue")
		for _, other := range []string{`{"contract":"cards"}`, `{"contract":"module","module":"` + moduleID + `"}`} {
			oid := h.create(t, other)
			wantError(t, "continue on "+other, h.call(t, "POST", "/v1/sessions/"+oid+"/turns", map[string]any{"continue": true}), 422, "invalid_input", "continue")
		}
	}},
	{"busy session", func(t *testing.T, h *harness) {
		id := h.create(t, `{"contract":"toulmin"}`)
		h.g.LLM.Enqueue(fakellm.Reply{Chunks: []string{`{"assistantText":"Slow `, `answer.","step":"claim"}`},
			Fault: fakellm.Fault{StallAfter: 1, Stall: 5 * time.Minute}})
		open := h.g.OpenTurn(id, apptest.Msg("one"))
		if l, err := open.Next(); err != nil || l.Type != "delta" {
			t.Fatalf("first line of the open turn: %+v, %v; want a delta", l, err)
		}
		wantError(t, "second turn", h.call(t, "POST", "/v1/sessions/"+id+"/turns", apptest.Msg("two")), 409, "session_busy", "")
		wantError(t, "draft during a turn", h.call(t, "PUT", "/v1/sessions/"+id+"/draft", map[string]string{"field": "claim", "value": "x"}), 409, "session_busy", "")
		wantError(t, "proposal during a turn", h.call(t, "POST", "/v1/sessions/"+id+"/proposal", map[string]string{"action": "accept"}), 409, "session_busy", "")
		wantError(t, "coach route during a turn", h.call(t, "POST", "/api/coach", map[string]string{"sessionId": id, "message": "three"}), 409, "session_busy", "")
		// The client leaves: the gateway cancels the model call and frees the session.
		_ = open.Close()
		apptest.Eventually(t, "the session is free again", func() bool {
			return h.call(t, "PUT", "/v1/sessions/"+id+"/draft", map[string]string{"field": "claim", "value": longClaim}).status == http.StatusOK
		})
	}},
	{"coach route", func(t *testing.T, h *harness) {
		id := h.create(t, `{"contract":"toulmin"}`)
		h.g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Hi there.", "step", "claim")})
		a := h.call(t, "POST", "/api/coach", map[string]string{"sessionId": id, "message": "hello", "step": "claim"})
		wantStream(t, "/api/coach", a, "delta result")
		wantStream(t, "/api/coach step mismatch", h.call(t, "POST", "/api/coach", map[string]string{"sessionId": id, "message": "x", "step": "rebuttal"}), "error:coach_step_mismatch")
		tests := []struct {
			name, ct, body string
			status         int
			code, field    string
		}{
			{"no sessionId", "application/json", `{"message":"hi"}`, 422, "invalid_input", "sessionId"},
			{"unknown session", "application/json", `{"sessionId":"` + strings.Repeat("c", 32) + `","message":"hi"}`, 404, "session_not_found", ""},
			{"malformed JSON", "application/json", `{"sessionId":`, 400, "invalid_request", ""},
			{"not JSON", "text/plain", `hi`, 415, "unsupported_media_type", ""},
			{"too large", "application/json", `{"sessionId":"` + id + `","message":"` + strings.Repeat("y", 70<<10) + `"}`, 413, "body_too_large", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				wantError(t, "POST /api/coach", h.send(t, "POST", "/api/coach", tt.ct, []byte(tt.body)), tt.status, tt.code, tt.field)
			})
		}
	}},
	{"cards turns", func(t *testing.T, h *harness) {
		id := h.create(t, `{"contract":"cards"}`)
		path := "/v1/sessions/" + id + "/turns"
		steps := []struct {
			name  string
			reply fakellm.Reply
			body  any
			first string // the first line's type
		}{
			{"recorded scenario", fakellm.Reply{Fixture: "cards-scenario"}, apptest.Msg("Begin training."), "delta"},
			{"prompt", cardCall(`{"card_type":"prompt","content":"What do you say?","input_config":{"max_length":300}}`), apptest.Msg("[Continue]"), "delta"},
			{"insight completes the cycle", cardCall(`{"card_type":"insight","content":"You led with ownership."}`), apptest.Msg("I own the delay."), "delta"},
			{"level_up card first", cardCall(`{"card_type":"multiple_choice","content":"Pick one.","options":[{"id":"a","label":"Call"},{"id":"b","label":"Write"}]}`), apptest.Msg("[Continue]"), "card"},
			{"selected option", cardCall(`{"card_type":"reflection","content":"Why that one?"}`), map[string]string{"selected": "b"}, "delta"},
		}
		for _, st := range steps {
			ok := t.Run(st.name, func(t *testing.T) {
				h.g.LLM.Enqueue(st.reply)
				a := h.call(t, "POST", path, st.body)
				if a.status != http.StatusOK || a.last().Type != "result" || len(a.lines) < 2 || a.lines[0].Type != st.first {
					t.Errorf("status %d lines %q, want a result after a first %s line", a.status, a.kinds(), st.first)
				}
			})
			if !ok {
				t.FailNow()
			}
		}
		wantError(t, "reflection answer over max_length", h.call(t, "POST", path, apptest.Msg(strings.Repeat("z", 201))), 422, "invalid_input", "message")
		wantError(t, "selected after a reflection", h.call(t, "POST", path, map[string]string{"selected": "a"}), 422, "invalid_input", "selected")

		// An invalid card gets one corrective retry; when that fails too, the fallback card.
		fallback := h.create(t, `{"contract":"cards"}`)
		banner := cardCall(`{"content":"A banner card.","card_type":"banner"}`)
		h.g.LLM.Enqueue(banner, banner)
		a := h.call(t, "POST", "/v1/sessions/"+fallback+"/turns", apptest.Msg("Begin training."))
		if a.last().Type != "result" || !a.last().Fallback {
			t.Errorf("invalid card: lines %q last %s, want a fallback result", a.kinds(), a.last().Raw)
		}
	}},
	{"module turns", func(t *testing.T, h *harness) {
		id := h.create(t, `{"contract":"module","module":"`+moduleID+`"}`)
		path := "/v1/sessions/" + id + "/turns"
		h.g.LLM.Enqueue(fakellm.Reply{Fixture: "module-intro"})
		a := h.call(t, "POST", path, apptest.Msg("Hi, where do we start?"))
		if a.status != http.StatusOK || a.last().Type != "result" || a.lines[0].Block == nil {
			t.Fatalf("recorded intro: status %d lines %q, want block deltas and a result", a.status, a.kinds())
		}
		wantResultSchema(t, a, "structured-response.json")

		offer := apptest.Obj(
			"content", json.RawMessage(apptest.Obj(
				"text_blocks", []json.RawMessage{json.RawMessage(apptest.Obj("type", "paragraph", "content", "Which level resonates?"))},
				"forms", json.RawMessage(`[{"id":"levels","title":"Quick Reflection","optional":true,"fields":[`+
					`{"id":"level","type":"radio","label":"Which level?","options":[{"value":"physical","label":"Physical"},{"value":"mental","label":"Mental"}]},`+
					`{"id":"intensity","type":"number","label":"How intense (1-10)","min":1,"max":10}]}]`))),
			"meta", json.RawMessage(apptest.Obj("response_type", "assessment")))
		h.g.LLM.Enqueue(fakellm.Reply{Content: offer, Chunks: chop(offer, 5)})
		a = h.call(t, "POST", path, apptest.Msg("Ask me."))
		if a.last().Type != "result" || !strings.Contains(string(a.last().Result), `"forms"`) {
			t.Fatalf("form offer: lines %q last %s, want a result with the form", a.kinds(), a.last().Raw)
		}
		wantError(t, "form value not offered", h.call(t, "POST", path, map[string]any{"form": map[string]any{"id": "levels", "values": map[string]any{"level": "spiritual"}}}), 422, "invalid_input", "form.values.level")
		wantError(t, "selected in a module", h.call(t, "POST", path, map[string]string{"selected": "a"}), 422, "invalid_input", "selected")

		answer := apptest.Obj("content", json.RawMessage(apptest.Obj("text_blocks", []json.RawMessage{
			json.RawMessage(apptest.Obj("type", "heading", "content", "Your body", "level", 2)),
			json.RawMessage(apptest.Obj("type", "paragraph", "content", "Physical anxiety is common.")),
		})), "meta", json.RawMessage(apptest.Obj("response_type", "educational")))
		h.g.LLM.Enqueue(fakellm.Reply{Content: answer, Chunks: chop(answer, 6)})
		a = h.call(t, "POST", path, map[string]any{"form": map[string]any{"id": "levels", "values": map[string]any{"level": "physical", "intensity": 6}}})
		if a.status != http.StatusOK || a.last().Type != "result" {
			t.Errorf("form submission: status %d lines %q, want a result", a.status, a.kinds())
		}

		markdown := "Anxiety is a normal response — it *prepares* you for danger."
		h.g.LLM.Enqueue(fakellm.Reply{Content: markdown, Chunks: chop(markdown, 5)})
		a = h.call(t, "POST", path, apptest.Msg("What is it?"))
		if a.last().Type != "result" || !a.last().Fallback {
			t.Errorf("markdown answer: lines %q last %s, want a fallback result", a.kinds(), a.last().Raw)
		}
	}},
	{"chat turns", func(t *testing.T, h *harness) {
		// The AI SDK's chat route: the same turns, answered as a UI message stream, each event
		// checked against UIMessageChunk.
		chat := func(parts ...map[string]any) map[string]any {
			return map[string]any{"id": "chat", "trigger": "submit-message",
				"messages": []any{map[string]any{"id": "u", "role": "user", "parts": parts}}}
		}
		text := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
		wantEvents := func(what string, a answer, end string) {
			t.Helper()
			if a.status != http.StatusOK || !bytes.Contains(a.body, []byte(`data: {"type":"`+end+`"`)) {
				t.Errorf("%s: status %d body %s, want a stream with %s", what, a.status, clipBody(a.body), end)
			}
		}
		toulminID := h.create(t, `{"contract":"toulmin"}`)
		chatPath := "/v1/sessions/" + toulminID + "/chat"
		h.g.LLM.Enqueue(fakellm.Reply{Chunks: []string{`{"assistantText":"Hello `, `there `, `friend."}`}, Fault: fakellm.Fault{Cut: true, CutAfter: 2}},
			fakellm.Reply{Content: apptest.Obj("assistantText", "Hello again.", "step", "claim")})
		a := h.call(t, "POST", chatPath, chat(text("Cities should ban cars.")))
		wantEvents("toulmin after a reset", a, "data-coach-result")
		if !bytes.Contains(a.body, []byte(`"data-coach-reset"`)) {
			t.Errorf("toulmin after a cut: no data-coach-reset in %s", clipBody(a.body))
		}
		h.g.LLM.Enqueue(fakellm.Reply{Content: `{"assistantText":"Hi", oops`}, fakellm.Reply{Content: "not json"})
		wantEvents("unusable output", h.call(t, "POST", chatPath, chat(text("hi"))), "data-coach-error")
		// The SDK's regenerate() after that failed turn, which stored nothing, reruns its input
		// (v1.2); regenerating it again, now that it is stored, is the 422 in the table below.
		regenerate := chat(text("hi"))
		regenerate["trigger"] = "regenerate-message"
		h.g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Hi, what is your claim?", "step", "claim")})
		wantEvents("regenerate after a failed turn", h.call(t, "POST", chatPath, regenerate), "data-coach-result")

		cardsID := h.create(t, `{"contract":"cards"}`)
		cardsPath := "/v1/sessions/" + cardsID + "/chat"
		h.g.LLM.Enqueue(cardCall(`{"card_type":"multiple_choice","content":"Pick one.","options":[{"id":"a","label":"Call"},{"id":"b","label":"Write"}]}`))
		wantEvents("cards", h.call(t, "POST", cardsPath, chat(text("Begin training."))), "data-coach-result")
		h.g.LLM.Enqueue(cardCall(`{"card_type":"insight","content":"Writing leaves a record."}`))
		wantEvents("cards selection", h.call(t, "POST", cardsPath, chat(map[string]any{"type": "data-coach-select", "data": map[string]string{"selected": "b"}})), "data-coach-result")

		moduleID := h.create(t, `{"contract":"module","module":"`+moduleID+`"}`)
		h.g.LLM.Enqueue(fakellm.Reply{Fixture: "module-intro"})
		wantEvents("module", h.call(t, "POST", "/v1/sessions/"+moduleID+"/chat", chat(text("Hi, where do we start?"))), "data-coach-result")

		tests := []struct {
			name, path, ct, body string
			status               int
			code, field          string
		}{
			{"malformed JSON", chatPath, "application/json", `{"messages":`, 400, "invalid_request", ""},
			{"not JSON", chatPath, "text/plain", `hi`, 415, "unsupported_media_type", ""},
			{"too large", chatPath, "application/json", `{"messages":[],"id":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "body_too_large", ""},
			{"regenerate a stored turn", chatPath, "application/json", `{"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"regenerate-message"}`, 422, "invalid_input", "trigger"},
			{"no learner message", chatPath, "application/json", `{"messages":[]}`, 422, "invalid_input", "messages"},
			{"option not offered", cardsPath, "application/json", `{"messages":[{"role":"user","parts":[{"type":"data-coach-select","data":{"selected":"z"}}]}]}`, 422, "invalid_input", "selected"},
			{"unknown session", "/v1/sessions/" + strings.Repeat("0", 32) + "/chat", "application/json", `{"messages":[{"role":"user","parts":[{"type":"text","text":"hi"}]}]}`, 404, "session_not_found", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				wantError(t, "POST chat", h.send(t, "POST", tt.path, tt.ct, []byte(tt.body)), tt.status, tt.code, tt.field)
			})
		}
	}},
	{"resume, stop and the transcript as UI messages", func(t *testing.T, h *harness) {
		// v1.2: a finished turn is replayed on both resume routes; without a turn they are
		// 204, a stop finds nothing running, and the transcript reads back as UI messages in
		// all three contracts.
		base := "/v1/sessions/" + h.create(t, `{"contract":"toulmin"}`)
		for _, path := range []string{base + "/turns/current", base + "/chat/stream"} {
			if a := h.call(t, "GET", path, nil); a.status != http.StatusNoContent {
				t.Errorf("GET %s before any turn: status %d body %s, want 204", path, a.status, clipBody(a.body))
			}
		}
		h.g.LLM.Enqueue(fakellm.Reply{Content: apptest.Obj("assistantText", "Tell me more.", "step", "claim")})
		turn := h.call(t, "POST", base+"/turns", apptest.Msg("Cities should ban cars."))
		if a := h.call(t, "GET", base+"/turns/current?after=1&turn="+turn.header.Get("X-Coach-Turn"), nil); a.status != http.StatusOK || a.last().Type != "result" {
			t.Errorf("GET turns/current after the turn: status %d lines %q, want 200 ending with the result", a.status, a.kinds())
		}
		if a := h.call(t, "GET", base+"/chat/stream", nil); a.status != http.StatusOK || !bytes.Contains(a.body, []byte(`"data-coach-result"`)) {
			t.Errorf("GET chat/stream after the turn: status %d body %s, want 200 with the result part", a.status, clipBody(a.body))
		}
		wantError(t, "resume of another turn", h.call(t, "GET", base+"/turns/current?turn=other", nil), 404, "turn_not_found", "")
		wantError(t, "stop with nothing running", h.call(t, "DELETE", base+"/turns/current", nil), 404, "no_running_turn", "")
		wantError(t, "resume of an unknown session", h.call(t, "GET", "/v1/sessions/"+strings.Repeat("0", 32)+"/turns/current", nil), 404, "session_not_found", "")

		h.g.LLM.Enqueue(cardCall(`{"card_type":"multiple_choice","content":"Pick one.","options":[{"id":"a","label":"Call"},{"id":"b","label":"Write"}]}`))
		cards := "/v1/sessions/" + h.create(t, `{"contract":"cards"}`)
		h.call(t, "POST", cards+"/turns", apptest.Msg("Begin training."))
		h.g.LLM.Enqueue(fakellm.Reply{Fixture: "module-intro"})
		module := "/v1/sessions/" + h.create(t, `{"contract":"module","module":"`+moduleID+`"}`)
		h.call(t, "POST", module+"/turns", apptest.Msg("Hi, where do we start?"))
		for _, path := range []string{base, cards, module} {
			a := h.call(t, "GET", path+"/chat/messages?limit=10", nil)
			if a.status != http.StatusOK || !bytes.Contains(a.body, []byte(`"role":"user"`)) || !bytes.Contains(a.body, []byte(`"data-coach-result"`)) {
				t.Errorf("GET %s/chat/messages: status %d body %s, want a user and an assistant message", path, a.status, clipBody(a.body))
			}
		}
		wantError(t, "chat/messages of an unknown session", h.call(t, "GET", "/v1/sessions/"+strings.Repeat("0", 32)+"/chat/messages", nil), 404, "session_not_found", "")
	}},
	{"modules", func(t *testing.T, h *harness) {
		a := h.call(t, "GET", "/v1/modules", nil)
		if a.status != http.StatusOK || !bytes.Contains(a.body, []byte(`"`+moduleID+`"`)) {
			t.Errorf("GET /v1/modules: status %d body %s, want 200 listing %s", a.status, a.body, moduleID)
		}
		if a := h.call(t, "GET", "/v1/modules/"+moduleID, nil); a.status != http.StatusOK {
			t.Errorf("GET /v1/modules/%s: status %d, want 200", moduleID, a.status)
		}
		wantError(t, "unknown module", h.call(t, "GET", "/v1/modules/no-such-module", nil), 404, "module_not_found", "")
	}},
	{"operator routes", func(t *testing.T, h *harness) {
		// The shared gateway has no API keys: it is open, and every caller is its operator, so
		// that a fresh install can always clear a false positive.
		id := h.create(t, `{"contract":"toulmin"}`)
		if a := h.call(t, "POST", "/v1/sessions/"+id+"/safety", map[string]string{"action": "clear"}); a.status != http.StatusOK {
			t.Errorf("clear on a gateway without keys: status %d body %s, want 200", a.status, a.body)
		}

		const learnerKey, operatorKey = "contract-learner-key", "contract-operator-key"
		g := apptest.Start(t, func(c *config.Config) {
			c.APIKeys = []config.APIKey{
				{Tenant: "acme", Hash: sha256.Sum256([]byte(learnerKey))},
				{Tenant: "acme", Hash: sha256.Sum256([]byte(operatorKey)), Operator: true},
			}
		})
		learner := &harness{g: g, v: h.v, auth: "Bearer " + learnerKey}
		op := &harness{g: g, v: h.v, auth: "Bearer " + operatorKey}
		id = learner.create(t, `{"contract":"toulmin","learner":"learner-1"}`)
		clear := map[string]string{"action": "clear"}
		wantError(t, "clear with a learner key", learner.call(t, "POST", "/v1/sessions/"+id+"/safety", clear), 403, "forbidden", "")
		if a := op.call(t, "POST", "/v1/sessions/"+id+"/safety", clear); a.status != http.StatusOK || bytes.Contains(a.body, []byte(`"safety"`)) {
			t.Errorf("clear with the operator key: status %d body %s, want 200 and the session without safety", a.status, a.body)
		}
		wantError(t, "unknown action", op.call(t, "POST", "/v1/sessions/"+id+"/safety", map[string]string{"action": "lift"}), 422, "invalid_input", "action")
		wantError(t, "clear of an unknown session", op.call(t, "POST", "/v1/sessions/"+strings.Repeat("0", 32)+"/safety", clear), 404, "session_not_found", "")

		if a := h.call(t, "GET", "/v1/safety/events", nil); a.status != http.StatusOK {
			t.Errorf("events on a gateway without keys: status %d body %s, want 200", a.status, a.body)
		}
		wantError(t, "events with a learner key", learner.call(t, "GET", "/v1/safety/events", nil), 403, "forbidden", "")
		wantError(t, "events with a limit over 1000", op.call(t, "GET", "/v1/safety/events?limit=1001", nil), 422, "invalid_input", "limit")
		// The engine's records are not written yet on every profile: the gateway's own store
		// writes some, so that the answer's records are checked against the document too.
		want := 0
		if g.Config.RedisURL != "" {
			client, err := redisstore.Connect(context.Background(), g.Config.RedisURL)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			audit := redisstore.NewSafetyAudit(client, g.Config.RedisPrefix, time.Hour, 0)
			records := []safety.Record{
				{Time: time.Now().UTC(), Tenant: "acme", Session: id, Learner: safety.Learner{Ref: "learner-1"}, Turn: "t1", Stage: safety.StageInput,
					Classifier: safety.BuiltinName, Categories: []safety.Category{safety.CategorySuicide}, Severity: safety.SeverityHigh,
					Rules: []string{"en.passive"}, Action: safety.ActionCrisis, Mode: safety.ModeEnforce, LatencyMS: 0.2},
				{Time: time.Now().UTC(), Tenant: "acme", Session: id, Stage: safety.StageOutput, Classifier: "moderation",
					Ran: safety.Ran{NotRun: "timeout"}, Action: safety.ActionFailedOpen, Mode: safety.ModeEnforce, LatencyMS: 2000},
			}
			if err := audit.Audit(context.Background(), records); err != nil {
				t.Fatal(err)
			}
			want = len(records)
		}
		var page struct {
			Events []struct{ ID string }
			Next   string
		}
		a := op.call(t, "GET", "/v1/safety/events?limit=1", nil)
		if a.status != http.StatusOK || json.Unmarshal(a.body, &page) != nil || len(page.Events) != min(want, 1) {
			t.Fatalf("events: status %d body %s, want 200 with %d events", a.status, a.body, min(want, 1))
		}
		path := "/v1/safety/events"
		if page.Next != "" {
			path += "?after=" + page.Next
		}
		a = op.call(t, "GET", path, nil)
		if a.status != http.StatusOK || json.Unmarshal(a.body, &page) != nil || len(page.Events) != max(want-1, 0) {
			t.Errorf("events after the first: status %d body %s, want 200 with %d events", a.status, a.body, max(want-1, 0))
		}
		// Data rights: the learner's export holds the session; its erasure answers 204.
		wantError(t, "export with a learner key", learner.call(t, "GET", "/v1/learners/learner-1/export", nil), 403, "forbidden", "")
		wantError(t, "erasure with a learner key", learner.call(t, "DELETE", "/v1/learners/learner-1", nil), 403, "forbidden", "")
		wantError(t, "export of a malformed reference", op.call(t, "GET", "/v1/learners/a%20b/export", nil), 400, "invalid_request", "")
		if a := op.call(t, "GET", "/v1/learners/learner-1/export", nil); a.status != http.StatusOK || !bytes.Contains(a.body, []byte(id)) {
			t.Errorf("export with the operator key: status %d body %s, want 200 and the session", a.status, a.body)
		}
		if a := op.call(t, "DELETE", "/v1/learners/learner-1", nil); a.status != http.StatusNoContent {
			t.Errorf("erasure with the operator key: status %d body %s, want 204", a.status, a.body)
		}
		wantError(t, "the erased session", learner.call(t, "GET", "/v1/sessions/"+id, nil), 404, "session_not_found", "")
	}},
	{"operations", func(t *testing.T, h *harness) {
		for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
			if a := h.call(t, "GET", path, nil); a.status != http.StatusOK {
				t.Errorf("GET %s: status %d body %s, want 200", path, a.status, a.body)
			}
		}
	}},
}

// TestContract drives every route of the gateway and checks every answer against
// api/openapi.yaml; when all cases ran, every documented operation must have been reached.
func TestContract(t *testing.T) {
	v := openapitest.New(t)
	h := &harness{v: v, g: apptest.StartWith(t, apptest.Options{
		Config: func(c *config.Config) { c.CardsCyclesPerLevel = 1 },
		LLM:    fakellm.Options{Fixtures: os.DirFS("../../../testdata/streams")},
	})}
	// Coverage is only judged when every case ran, i.e. no -run pattern left one out.
	ran := 0
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ran++
			tc.run(t, h)
		})
	}
	if ran == len(cases) {
		if missed := v.Uncovered(); len(missed) > 0 {
			t.Errorf("operations of api/openapi.yaml no case reached: %v", missed)
		}
	}
}

// TestContractStoreDown checks the answers of a gateway whose Redis does not answer: every route
// that needs the store is a documented 503 store_unavailable, and readiness fails.
func TestContractStoreDown(t *testing.T) {
	// A port that was free a moment ago: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// No command retries: each request fails as soon as the connection is refused.
	dead := "redis://" + l.Addr().String() + "/0?max_retries=-1"
	_ = l.Close()
	h := &harness{v: openapitest.New(t), g: apptest.Start(t, func(c *config.Config) { c.RedisURL = dead })}
	id := strings.Repeat("d", 32)
	tests := []struct {
		method, path string
		body         any
		code         string
	}{
		{"POST", "/v1/sessions", map[string]string{"contract": "toulmin"}, "store_unavailable"},
		{"GET", "/v1/sessions/" + id, nil, "store_unavailable"},
		{"DELETE", "/v1/sessions/" + id, nil, "store_unavailable"},
		{"PUT", "/v1/sessions/" + id + "/draft", map[string]string{"field": "claim", "value": "x"}, "store_unavailable"},
		{"POST", "/v1/sessions/" + id + "/proposal", map[string]string{"action": "accept"}, "store_unavailable"},
		{"POST", "/v1/sessions/" + id + "/turns", apptest.Msg("hi"), "store_unavailable"},
		{"POST", "/api/coach", map[string]string{"sessionId": id, "message": "hi"}, "store_unavailable"},
		{"GET", "/v1/sessions/" + id + "/messages", nil, "store_unavailable"},
		{"GET", "/readyz", nil, "not_ready"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			wantError(t, tt.method+" "+tt.path, h.call(t, tt.method, tt.path, tt.body), http.StatusServiceUnavailable, tt.code, "")
		})
	}
}

// TestContractAuthAndRateLimit checks the answers of a gateway with API keys and a rate limit:
// a request without a valid key is a documented 401, one over the limit a documented 429.
func TestContractAuthAndRateLimit(t *testing.T) {
	const key = "contract-test-key"
	h := &harness{v: openapitest.New(t), g: apptest.Start(t, func(c *config.Config) {
		c.APIKeys = []config.APIKey{{Tenant: "acme", Hash: sha256.Sum256([]byte(key))}}
		c.RateLimit = 1
	})}
	send := func(t *testing.T, method, path, auth string, body any) answer {
		t.Helper()
		b, _ := json.Marshal(body)
		req, err := http.NewRequest(method, h.g.URL+path, bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := h.v.Client(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return answer{status: resp.StatusCode, header: resp.Header, body: raw}
	}
	create := map[string]string{"contract": "toulmin"}
	for _, auth := range []string{"", "Bearer wrong-key", "Basic " + key} {
		a := send(t, "POST", "/v1/sessions", auth, create)
		wantError(t, fmt.Sprintf("Authorization %q", auth), a, http.StatusUnauthorized, "unauthorized", "")
		if a.header.Get("WWW-Authenticate") == "" {
			t.Errorf("Authorization %q: 401 without WWW-Authenticate", auth)
		}
	}
	if a := send(t, "POST", "/v1/sessions", "Bearer "+key, create); a.status != http.StatusCreated {
		t.Errorf("with the key: status %d body %s, want 201", a.status, a.body)
	}
	a := send(t, "POST", "/v1/sessions", "Bearer "+key, create)
	wantError(t, "second session within the minute", a, http.StatusTooManyRequests, "rate_limited", "")
	if a.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if a := send(t, "GET", "/healthz", "", nil); a.status != http.StatusOK {
		t.Errorf("GET /healthz without a key: status %d, want 200", a.status)
	}
}

// clipBody shortens a body for a failure message.
func clipBody(b []byte) string {
	if len(b) > 600 {
		return string(b[:600]) + "…"
	}
	return string(b)
}
