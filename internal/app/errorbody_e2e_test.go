package app_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/apptest"
	"github.com/coachgw/coachgw/internal/config"
)

// TestEchoedErrorBodyNotLogged attacks the logs from a learner's side: an endpoint answers 400,
// 422 or 500 quoting the learner's message, in its error object or as a bare body, so the learner's message
// comes back in the error. No log line above debug may carry the learner's words.
func TestEchoedErrorBodyNotLogged(t *testing.T) {
	const words = "my diary says zq-private-7741"
	tests := []struct {
		name   string
		status int
		bare   bool
	}{
		{"400 error object", http.StatusBadRequest, false},
		{"400 bare body", http.StatusBadRequest, true},
		{"500 error object", http.StatusInternalServerError, false},
		{"422 error object", http.StatusUnprocessableEntity, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var req struct {
					Messages []struct {
						Content string `json:"content"`
					} `json:"messages"`
				}
				_ = json.NewDecoder(r.Body).Decode(&req)
				var last string
				if n := len(req.Messages); n > 0 {
					last = req.Messages[n-1].Content
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				if tt.bare {
					_, _ = io.WriteString(w, "cannot parse message: "+last)
					return
				}
				msg, _ := json.Marshal("could not process message: " + last)
				_, _ = io.WriteString(w, `{"error":{"message":`+string(msg)+`,"type":"invalid_request_error","code":"bad_input"}}`)
			}))
			defer endpoint.Close()
			g := apptest.Start(t, func(c *config.Config) {
				c.Upstreams = []config.Upstream{{Name: "echoing", BaseURL: endpoint.URL + "/v1", Model: "m", Profile: "openai"}}
			})
			s := g.Create("toulmin", nil)
			if tr := g.Turn(s.ID, apptest.Msg("Cities should ban cars, "+words+".")); tr.Last().Type != "error" {
				t.Fatalf("turn: %s, want an error", tr.Body)
			}
			sc := bufio.NewScanner(strings.NewReader(g.Log.String()))
			sc.Buffer(nil, 1<<20)
			var warned bool
			for sc.Scan() {
				var line struct {
					Level string `json:"level"`
				}
				_ = json.Unmarshal(sc.Bytes(), &line)
				if line.Level == "warn" || line.Level == "error" {
					warned = true
				}
				if line.Level != "debug" && line.Level != "trace" && strings.Contains(sc.Text(), "zq-private-7741") {
					t.Errorf("a %s line carries the learner's words: %s", line.Level, sc.Text())
				}
			}
			if !warned {
				t.Errorf("no warn line tells the operator of the failed turn:\n%s", g.Log.String())
			}
		})
	}
}
