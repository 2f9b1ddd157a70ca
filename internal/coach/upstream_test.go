package coach

import (
	"context"
	"testing"
	"time"
)

// slowEndpoint is a Model whose endpoint asks for deadlines of its own (Deadlines).
type slowEndpoint struct{ firstByte, idle time.Duration }

func (slowEndpoint) Stream(context.Context, ModelRequest, StreamHooks) (Stream, error) {
	return nil, context.Canceled
}

func (s slowEndpoint) Deadlines() (time.Duration, time.Duration) { return s.firstByte, s.idle }

// TestDeadlines checks that an endpoint's own deadlines lengthen the Service's, never shorten them.
func TestDeadlines(t *testing.T) {
	svc := &Service{opts: Options{FirstByteTimeout: 30 * time.Second, IdleTimeout: 20 * time.Second}}
	tests := []struct {
		name            string
		model           Model
		firstByte, idle time.Duration
	}{
		{"a model without deadlines", plainModel{}, 30 * time.Second, 20 * time.Second},
		{"a local server's", slowEndpoint{120 * time.Second, 60 * time.Second}, 120 * time.Second, 60 * time.Second},
		{"shorter than the Service's", slowEndpoint{time.Second, time.Second}, 30 * time.Second, 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb, idle := svc.deadlines(tt.model)
			if fb != tt.firstByte || idle != tt.idle {
				t.Errorf("deadlines = %v, %v; want %v, %v", fb, idle, tt.firstByte, tt.idle)
			}
		})
	}
}

// plainModel is a Model with no deadlines of its own.
type plainModel struct{}

func (plainModel) Stream(context.Context, ModelRequest, StreamHooks) (Stream, error) {
	return nil, context.Canceled
}

// TestCompletionCapSetting checks COACH_MAX_COMPLETION_TOKENS' order: the contract's entry,
// then the one for every contract, then the contract's derived cap.
func TestCompletionCapSetting(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want int
	}{
		{"derived", Options{}, 8081},
		{"every contract", Options{MaxCompletionTokens: 2048}, 2048},
		{"this contract", Options{MaxCompletionTokens: 2048, ContractCompletionTokens: map[string]int{"toulmin": 512}}, 512},
		{"another contract", Options{ContractCompletionTokens: map[string]int{"cards": 512}}, 8081},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&Service{opts: tt.opts}).completionCap("toulmin", 8081); got != tt.want {
				t.Errorf("completionCap = %d, want %d", got, tt.want)
			}
		})
	}
}
