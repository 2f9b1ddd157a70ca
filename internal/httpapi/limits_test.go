package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/coach"
)

// TestSessionLimits checks that every answer carrying a session reports the limits the gateway
// enforces, and that they are exact: a text of the reported length is taken, one character
// more is 422 invalid_input.
func TestSessionLimits(t *testing.T) {
	tests := []struct {
		name     string
		setting  int
		contract string
		answer   string
		want     coach.Limits
	}{
		{"module under a low setting", 500, "module", moduleAnswer, coach.Limits{MessageChars: 500}},
		{"cards under a low setting", 500, "cards", "", coach.Limits{MessageChars: 500}},
		{"toulmin under a low setting", 500, "toulmin", "", coach.Limits{MessageChars: 500, DraftChars: 500}},
		{"module by default", 0, "module", moduleAnswer, coach.Limits{MessageChars: 8000}},
		{"toulmin by default", 0, "toulmin", "", coach.Limits{MessageChars: 4000, DraftChars: 4000}},
		{"toulmin under a higher setting", 20_000, "toulmin", "", coach.Limits{MessageChars: 4000, DraftChars: 4000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startServer(t, func(d *Deps) { d.MaxMessageChars = tt.setting; d.MaxBodyBytes = 1 << 20 })
			if tt.answer != "" {
				ts.model.answer = tt.answer
			}
			id := ts.create(tt.contract)
			checkLimits(t, "get", ts.do("GET", "/v1/sessions/"+id, "").Body, tt.want)

			over := ts.do("POST", "/v1/sessions/"+id+"/turns", msgBody(strings.Repeat("é", tt.want.MessageChars+1)))
			if over.Status != http.StatusUnprocessableEntity || over.errorCode() != "invalid_input" {
				t.Errorf("message of %d characters: %d %s, want 422 invalid_input", tt.want.MessageChars+1, over.Status, clip(over.Body))
			}
			at := ts.do("POST", "/v1/sessions/"+id+"/turns", msgBody(strings.Repeat("é", tt.want.MessageChars)))
			if at.Status != http.StatusOK {
				t.Fatalf("message of %d characters: %d %s, want 200", tt.want.MessageChars, at.Status, clip(at.Body))
			}
			if tt.contract != "cards" { // the scripted model has no card to give
				checkLimits(t, "result line", resultSession(t, at.Body), tt.want)
			}

			if tt.want.DraftChars == 0 {
				return
			}
			draft := func(n int) response {
				b, _ := json.Marshal(map[string]string{"field": "claim", "value": strings.Repeat("x", n)})
				return ts.do("PUT", "/v1/sessions/"+id+"/draft", string(b))
			}
			if r := draft(tt.want.DraftChars + 1); r.Status != http.StatusUnprocessableEntity {
				t.Errorf("draft of %d characters: %d %s, want 422", tt.want.DraftChars+1, r.Status, clip(r.Body))
			}
			r := draft(tt.want.DraftChars)
			if r.Status != http.StatusOK {
				t.Fatalf("draft of %d characters: %d %s, want 200", tt.want.DraftChars, r.Status, clip(r.Body))
			}
			checkLimits(t, "draft", r.Body, tt.want)
		})
	}
}

// checkLimits checks the limits of the session in body.
func checkLimits(t *testing.T, what, body string, want coach.Limits) {
	t.Helper()
	var s struct{ Limits *coach.Limits }
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("%s: %v in %s", what, err, clip(body))
	}
	if s.Limits == nil || *s.Limits != want {
		t.Errorf("%s: limits %+v in %s, want %+v", what, s.Limits, clip(body), want)
	}
}

// resultSession returns the session of the stream's result line as JSON.
func resultSession(t *testing.T, stream string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Type    string
			Session json.RawMessage
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Type == "result" {
			return string(line.Session)
		}
	}
	t.Fatalf("no result line in %s", clip(stream))
	return ""
}
