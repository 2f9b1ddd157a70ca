package app

import (
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/coachgw/coachgw/internal/breaker"
	"github.com/coachgw/coachgw/internal/coach"
	"github.com/coachgw/coachgw/internal/config"
)

// TestJudgeResolution: COACH_SAFETY_JUDGE=auto runs the judge on the first model endpoint
// (with COACH_SAFETY_JUDGE_MODEL in place of its model when set), or on COACH_SAFETY_JUDGE_URL;
// off runs none.
func TestJudgeResolution(t *testing.T) {
	a := &App{log: zerolog.Nop(), upstreams: []upstream{
		{Upstream: coach.Upstream{Name: "first", ModelName: "m1"}, baseURL: "http://127.0.0.1:1/v1", apiKey: "k1"},
		{Upstream: coach.Upstream{Name: "second", ModelName: "m2"}, baseURL: "http://127.0.0.1:2/v1"},
	}}
	tests := []struct {
		name string
		cfg  func(*config.Config)
		want string // "" for no judge
	}{
		{"auto", func(*config.Config) {}, "URL:http://127.0.0.1:1/v1/chat/completions Model:m1"},
		{"auto, another model", func(c *config.Config) { c.SafetyJudgeModel = "small" }, "URL:http://127.0.0.1:1/v1/chat/completions Model:small"},
		{"own endpoint", func(c *config.Config) { c.SafetyJudgeURL, c.SafetyJudgeModel = "http://127.0.0.1:3/v1", "j" }, "URL:http://127.0.0.1:3/v1/chat/completions Model:j"},
		{"off", func(c *config.Config) { c.SafetyJudge = "off" }, ""},
	}
	for _, tt := range tests {
		cfg := config.Default()
		tt.cfg(&cfg)
		j := a.judge(cfg, breaker.Options{})
		switch {
		case tt.want == "" && j != nil:
			t.Errorf("%s: judge %v, want none", tt.name, j)
		case tt.want != "" && (j == nil || !strings.Contains(j.String(), tt.want)):
			t.Errorf("%s: judge %v, want %s", tt.name, j, tt.want)
		}
	}
}
