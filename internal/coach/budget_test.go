package coach

import "testing"

func TestPlausible(t *testing.T) {
	tests := []struct {
		name             string
		u                Usage
		sent, got, limit int
		want             bool
	}{
		{"a usual report", Usage{PromptTokens: 300, CompletionTokens: 40}, 1200, 160, 1024, true},
		{"negative prompt", Usage{PromptTokens: -999000, CompletionTokens: 5}, 1200, 160, 1024, false},
		{"negative completion", Usage{PromptTokens: 300, CompletionTokens: -1}, 1200, 160, 1024, false},
		{"absurd for the bytes", Usage{PromptTokens: 1 << 40, CompletionTokens: 5}, 1200, 160, 1024, false},
		{"reasoning within the cap", Usage{PromptTokens: 300, CompletionTokens: 1024 + 16000}, 1200, 160, 1024, true},
		{"just over the slack", Usage{PromptTokens: 1200 + 160 + 1 + usageSlack}, 1200, 160, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := plausible(tt.u, tt.sent, tt.got, tt.limit); got != tt.want {
				t.Errorf("plausible(%+v, %d, %d, %d) = %v, want %v", tt.u, tt.sent, tt.got, tt.limit, got, tt.want)
			}
		})
	}
}

func TestEstimateTokens(t *testing.T) {
	for bytes, want := range map[int]int{0: 0, 1: 1, 4: 1, 5: 2, 4000: 1000, -3: 0} {
		if got := EstimateTokens(bytes); got != want {
			t.Errorf("EstimateTokens(%d) = %d, want %d", bytes, got, want)
		}
	}
}
