package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/coachgw/coachgw/internal/qualify"
)

// TestRunQualify runs "coachgw qualify" as main does, on the embedded replay model: it reports
// the contract and exits cleanly when the bar is met, and with ErrBelowBar when it is not, as
// it is against an endpoint that refuses every call.
func TestRunQualify(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr error
		want    string
	}{
		{"replay model", nil, nil, "replay    toulmin   2"},
		{"endpoint that refuses connections", map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "COACH_MAX_ATTEMPTS": "1"},
			qualify.ErrBelowBar, "default   toulmin   2      0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"COACH_REPLAY_DELAY_MIN": "0s", "COACH_REPLAY_DELAY_MAX": "1ms"}
			for k, v := range tt.env {
				env[k] = v
			}
			var out bytes.Buffer
			err := run(context.Background(), []string{"qualify", "--contracts", "toulmin", "--sessions", "1", "--turns", "1", "--min-success", "0.95"},
				func(k string) string { return env[k] }, &out)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("run() = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("output does not contain %q:\n%s", tt.want, out.String())
			}
		})
	}
}
